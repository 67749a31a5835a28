"""Two servers in one consumer group split the partitions, each partition with its own state."""

from __future__ import annotations

import json

from river_cw import AROW
from streams import checkpoint
from streams.consumer import ModelServer
from streams.kafka_io import KafkaSettings, create_topics
from streams.messages import encode_example
from tests.conftest import read_jsonl, shuffled
from tests.kafka_support import ServerThread, assert_same_model, offline, produce, read_topic, wait_until

PARTITIONS = 4


def test_two_members_split_partitions_and_learn_each_exactly_once(kafka_broker, topic_name, tmp_path):
    rows = shuffled(read_jsonl("spambase.jsonl.gz"), seed=5)[:2000]
    examples = [(i, row["x"], row["label"]) for i, row in enumerate(rows)]
    topic, group = topic_name("group"), topic_name("group-id")
    create_topics(kafka_broker.bootstrap_servers, {topic: PARTITIONS, f"{topic}.predictions": 1})
    # DESIGN.md's short group timeouts: both members get their partitions within seconds
    settings = KafkaSettings(kafka_broker.bootstrap_servers, session_timeout_ms=6000,
                             heartbeat_interval_ms=1000, max_poll_interval_ms=10000)
    members = [
        ServerThread(ModelServer(
            AROW(), settings, examples_topic=topic, predictions_topic=f"{topic}.predictions",
            dead_letter_topic=f"{topic}.dead", group_id=group, checkpoint_dir=tmp_path,
            checkpoint_every=100,
        ))
        for _ in range(2)
    ]
    owned = lambda: [set(m.server.states) for m in members]  # noqa: E731
    try:
        wait_until(lambda: sorted(map(len, owned())) == [2, 2] and set.union(*owned()) == set(range(4)),
                   timeout=40, what="two members with two partitions each")
        split = owned()
        produce(kafka_broker.bootstrap_servers, topic, [encode_example(*e) for e in examples],
                keys=[e[0] for e in examples], partitions=[e[0] % PARTITIONS for e in examples])
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
    assert sorted(json.loads(r.value)["id"] for r in predictions) == list(range(len(examples)))
