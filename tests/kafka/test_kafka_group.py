"""Servers in one consumer group split the partitions; each partition's state lives in the state
topic, so a partition moves to another member (on another machine: separate local directories,
or none) without being learned twice or replayed from offset 0."""

from __future__ import annotations

import logging
import re
import subprocess
import sys

import pytest

from river_cw import AROW
from streams.kafka import checkpoint
from streams.kafka.client import KafkaSettings, create_topics
from tests.conftest import read_jsonl, shuffled
from tests.kafka.kafka_support import (
    REPO,
    ServerThread,
    assert_exactly_once,
    model_server,
    produce_examples,
    stored_state,
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
    members = [  # one with a local cache, one without
        ServerThread(
            model_server(AROW(), settings, topic, directory, group_id=group, checkpoint_every=100)
        )
        for directory in (tmp_path, None)
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
        learned = lambda: sum(  # noqa: E731
            s.learned for m in members for s in m.server.states.values()
        )
        wait_until(lambda: learned() == len(examples), what="every example learned")
        assert owned() == split  # no rebalance while serving
    finally:
        for member in members:
            member.server.stop()
        for member in members:
            member.stop()
    assert_exactly_once(kafka_broker.bootstrap_servers, topic, examples, PARTITIONS, AROW)


def test_a_surviving_member_takes_over_a_killed_members_partition_from_the_state_topic(
    kafka_broker, topic_name, tmp_path, caplog
):
    """The victim (its own local cache) is killed with -9 mid-stream; the survivor (no local
    directory) restores its partition from the state topic, not from offset 0."""
    caplog.set_level(logging.INFO, logger="streams.kafka")
    rows = shuffled(read_jsonl("spambase.jsonl.gz"), seed=6)[:1000]
    examples = [(i, row["x"], row["label"]) for i, row in enumerate(rows)]
    topic, group = topic_name("failover"), topic_name("failover-id")
    create_topics(kafka_broker.bootstrap_servers, {topic: 2, f"{topic}.predictions": 1})
    survivor = ServerThread(
        model_server(
            AROW(),
            KafkaSettings(kafka_broker.bootstrap_servers, **FAST_FAILOVER),
            topic,
            None,
            group_id=group,
            checkpoint_every=100,
            model_spec="AROW()",
        )
    )
    victim_log = tmp_path / "victim.log"
    with open(victim_log, "wb") as log:
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
                str(tmp_path / "victim"),
                "--checkpoint-every",
                "100",
                "--checkpoint-seconds",
                "600",  # its last 50 stay in an open transaction until it is killed
                "--session-timeout-ms",
                "3000",
                "--heartbeat-interval-ms",
                "500",
                "--log-seconds",
                "0.1",
            ],
            cwd=REPO,
            stdout=log,
            stderr=log,
        )
    states = lambda: dict(survivor.server.states)  # noqa: E731
    try:

        def split() -> bool:  # what the victim restored, the survivor owns the other
            found = re.findall(r"partition (\d): (?:restored|no stored)", victim_log.read_text())
            return bool(found) and set(states()) == {1 - int(found[-1])}

        wait_until(split, timeout=40, what="one partition each")
        (mine,), theirs = states(), 1 - next(iter(states()))
        half = [e for e in examples if e[0] < 500]
        produce_examples(kafka_broker.bootstrap_servers, topic, half, partitions=lambda i: i % 2)
        stored = lambda: stored_state(kafka_broker.bootstrap_servers, topic, theirs)  # noqa: E731
        wait_until(
            lambda: states()[mine].learned == 250 and getattr(stored(), "learned", 0) == 200,
            what="the first half",
        )
        wait_until(  # the victim learns its last 50 (in a transaction never committed)
            lambda: "learned 250," in victim_log.read_text(), what="the victim's last 50"
        )
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

    restored = re.search(
        rf"partition {theirs}: restored from the state topic \(\d+ records read\) in [\d.]+ s: "
        rf"offsets \{{'{topic}': (\d+)\}}, (\d+) learned",
        caplog.text,
    )
    assert restored and restored[1] == restored[2] == "200", caplog.text
    assert_exactly_once(kafka_broker.bootstrap_servers, topic, examples, 2, AROW)


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
