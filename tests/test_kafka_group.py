"""Servers in one consumer group split the partitions; each partition has its own state and
checkpoint, so a partition moves to another member without being learned twice."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time

import pytest

from river_cw import AROW
from streams import checkpoint
from streams.kafka_io import KafkaSettings, create_topics
from tests.conftest import read_jsonl, shuffled
from tests.kafka_support import (
    REPO,
    ServerThread,
    assert_same_model,
    offline,
    model_server,
    produce_examples,
    read_topic,
    wait_until,
)

pytestmark = pytest.mark.kafka
PARTITIONS = 4
# the dead member is noticed after its session timeout: keep it short where one is killed
FAST_FAILOVER = {"session_timeout_ms": 3000, "heartbeat_interval_ms": 500}


def test_two_members_split_partitions_and_learn_each_exactly_once(
    kafka_broker, topic_name, tmp_path
):
    rows = shuffled(read_jsonl("spambase.jsonl.gz"), seed=5)[:2000]
    examples = [(i, row["x"], row["label"]) for i, row in enumerate(rows)]
    topic, group = topic_name("group"), topic_name("group-id")
    create_topics(kafka_broker.bootstrap_servers, {topic: PARTITIONS, f"{topic}.predictions": 1})
    # DESIGN.md's short group timeouts: both members get their partitions within seconds
    settings = KafkaSettings(
        kafka_broker.bootstrap_servers,
        session_timeout_ms=6000,
        heartbeat_interval_ms=1000,
        max_poll_interval_ms=10000,
    )
    members = [
        ServerThread(
            model_server(
                AROW(),
                settings,
                topic,
                tmp_path,
                group_id=group,
                checkpoint_every=100,
            )
        )
        for _ in range(2)
    ]
    owned = lambda: [set(m.server.states) for m in members]  # noqa: E731
    try:
        wait_until(
            lambda: sorted(map(len, owned())) == [2, 2] and set.union(*owned()) == set(range(4)),
            timeout=40,
            what="two members with two partitions each",
        )
        split = owned()
        produce_examples(
            kafka_broker.bootstrap_servers, topic, examples, partitions=lambda i: i % PARTITIONS
        )
        learned = lambda: sum(s.learned for m in members for s in list(m.server.states.values()))  # noqa: E731
        wait_until(lambda: learned() == len(examples), what="every example learned")
        assert owned() == split  # no rebalance while serving
    finally:
        for member in members:
            member.server.stop()
        for member in members:
            member.stop()

    for p in range(PARTITIONS):
        mine = [e for e in examples if e[0] % PARTITIONS == p]
        state = checkpoint.load(tmp_path / f"{topic}-{p}.ckpt")
        assert (state.learned, state.offsets) == (len(mine), {topic: len(mine)})
        reference, _ = offline(AROW(), mine)
        assert_same_model(state.model, reference, [x for _, x, _ in mine[:200]])
    predictions = read_topic(kafka_broker.bootstrap_servers, f"{topic}.predictions", len(examples))
    assert sorted(int(json.loads(r.value)["id"]) for r in predictions) == list(range(len(examples)))


def test_a_surviving_member_resumes_a_killed_members_partition_from_its_checkpoint(
    kafka_broker, topic_name, tmp_path, caplog
):
    caplog.set_level(logging.INFO, logger="streams.consumer")
    rows = shuffled(read_jsonl("spambase.jsonl.gz"), seed=6)[:1000]
    examples = [(i, row["x"], row["label"]) for i, row in enumerate(rows)]
    topic, group = topic_name("failover"), topic_name("failover-id")
    create_topics(kafka_broker.bootstrap_servers, {topic: 2, f"{topic}.predictions": 1})
    survivor = ServerThread(
        model_server(
            AROW(),
            KafkaSettings(kafka_broker.bootstrap_servers, **FAST_FAILOVER),
            topic,
            tmp_path,
            group_id=group,
            checkpoint_every=100,
        )
    )
    log = open(tmp_path / "victim.log", "wb")
    victim = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streams.cli",
            "serve",
            "--model",
            "AROW()",
            "--topic",
            topic,
            "--bootstrap-servers",
            kafka_broker.bootstrap_servers,
            "--group-id",
            group,
            "--checkpoint-dir",
            str(tmp_path),
            "--checkpoint-every",
            "100",
            "--session-timeout-ms",
            "3000",
            "--heartbeat-interval-ms",
            "500",
        ],
        cwd=REPO,
        stdout=log,
        stderr=log,
    )
    log.close()
    states = lambda: dict(survivor.server.states)  # noqa: E731
    try:
        wait_until(
            lambda: len(states()) == 1 and "partition" in (tmp_path / "victim.log").read_text(),
            timeout=40,
            what="one partition each",
        )
        (mine,), theirs = states(), 1 - next(iter(states()))
        half = [e for e in examples if e[0] < 500]
        produce_examples(kafka_broker.bootstrap_servers, topic, half, partitions=lambda i: i % 2)
        their_checkpoint = tmp_path / f"{topic}-{theirs}.ckpt"
        wait_until(
            lambda: (
                states()[mine].learned == 250
                and their_checkpoint.exists()
                and checkpoint.load(their_checkpoint).learned == 200
            ),
            what="the first half",
        )
        time.sleep(0.5)  # the victim learns its last 50, which no checkpoint holds yet
        victim.kill()
        victim.wait()
        rest = [e for e in examples if e[0] >= 500]
        produce_examples(kafka_broker.bootstrap_servers, topic, rest, partitions=lambda i: i % 2)
        wait_until(
            lambda: (
                sorted(states()) == [0, 1] and sum(s.learned for s in states().values()) == 1000
            ),
            timeout=40,
            what="the survivor to learn both partitions",
        )
    finally:
        victim.kill()
        victim.wait()
        survivor.stop()

    assert (
        f"partition {theirs}: resuming from checkpoint at offsets {{'{topic}': 200}}" in caplog.text
    )
    reference = {}
    for p in (0, 1):
        part = [e for e in examples if e[0] % 2 == p]
        state = checkpoint.load(tmp_path / f"{topic}-{p}.ckpt")
        assert (state.learned, state.offsets) == (500, {topic: 500})
        model, reference[p] = offline(AROW(), part)
        assert_same_model(state.model, model, [x for _, x, _ in part[:200]])
    predictions = [
        json.loads(r.value)
        for r in read_topic(kafka_broker.bootstrap_servers, f"{topic}.predictions", len(examples))
    ]
    assert {p["id"] for p in predictions} == {str(i) for i in range(1000)}
    for p in predictions:  # repeats (the victim's unsaved 50) are identical to the first ones
        assert p == reference[int(p["id"]) % 2][p["id"]] | {"partition": int(p["id"]) % 2}


def test_an_unreadable_checkpoint_stops_a_group_member_with_its_own_error(
    kafka_broker, topic_name, tmp_path
):
    topic = topic_name("unreadable")
    create_topics(kafka_broker.bootstrap_servers, {topic: 1})
    (tmp_path / f"{topic}-0.ckpt").write_bytes(b"not a pickle")
    server = model_server(
        AROW(),
        KafkaSettings(kafka_broker.bootstrap_servers),
        topic,
        tmp_path,
        group_id=topic_name("group-id"),
    )
    with pytest.raises(checkpoint.CheckpointError, match=f"{topic}-0.ckpt is unreadable"):
        server.run()  # raised inside kafka-python's rebalance callback, passed on as it was
