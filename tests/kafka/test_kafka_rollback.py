"""A rollback by replay, against the real broker: a true old snapshot written to the state topic
again, left alone by compaction in place of the newer state, is refused at restore (the group's
committed offsets are further on), counted, said in one line, and never served: no prediction
is written twice.

The demo broker does not compact, so the compacted topic is made as compaction leaves it: the
state topic deleted and created again holding only the replayed records (the true old snapshot's
chunks and manifest, copied byte for byte as anyone who can read and produce to the topic can),
while the consumer group keeps its committed offsets.
"""

from __future__ import annotations

import json
import logging

import pytest
from confluent_kafka.admin import AdminClient

from river_cw import AROW
from streams.kafka import state_topic
from streams.kafka.client import KafkaSettings, create_topics
from tests.kafka.kafka_support import (
    ServerThread,
    model_server,
    produce_examples,
    read_all,
    read_topic,
    serve_until,
    synthetic,
    wait_until,
)
from tests.kafka.test_kafka_forged import copied, send

pytestmark = pytest.mark.kafka


def recreate(bootstrap: str, topic: str) -> None:
    """Delete `topic` and create it again, empty, as the server creates a state topic."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.delete_topics([topic])[topic].result(timeout=10)
    wait_until(lambda: topic not in admin.list_topics(timeout=5).topics, what="deleted")
    create_topics(bootstrap, {topic: 1}, state_topic.TOPIC_CONFIG)


def test_a_replayed_old_snapshot_is_refused_and_nothing_is_predicted_twice(
    kafka_broker, topic_name, caplog
):
    caplog.set_level(logging.INFO, logger="streams.kafka")
    bootstrap = kafka_broker.bootstrap_servers
    topic = topic_name("rollback")
    state = state_topic.state_topic(topic)
    create_topics(bootstrap, {topic: 1, f"{topic}.predictions": 1})
    settings = KafkaSettings(bootstrap, connect_timeout_ms=5000)
    produce_examples(bootstrap, topic, synthetic(0, 120))
    serving = {"checkpoint_every": 40, "snapshot_every": 1}  # every commit a whole snapshot
    first = model_server(AROW(), settings, topic, None, **serving)
    serve_until(first, read_all(first, topic, 120), what="120 read")

    old = copied(bootstrap, state, 0, "0")  # the first committed snapshot: 40 examples read
    assert json.loads(old[-1][2])["batches"] == 1
    recreate(bootstrap, state)
    send(bootstrap, state, old)  # what compaction keeps of a replay: the old snapshot alone
    assert state_topic.restore(settings, state, 0, first.store.keys).state.offsets == {topic: 40}

    produce_examples(bootstrap, topic, synthetic(120, 150))
    second = model_server(AROW(), settings, topic, None, **serving)
    running = ServerThread(second)
    try:
        wait_until(lambda: second.metrics.refused == {0: 1}, what="the old state refused")
        assert 0 not in second.tasks and not second.ready()
    finally:
        running.stop()

    (line,) = [r.getMessage() for r in caplog.records if "refused the restored state" in r.message]
    assert line == (
        f"partition 0: refused the restored state, which has read {topic} up to offset 40 where "
        f"group 'river-cw.{topic}' committed 120 with the last state: an older state (a replayed "
        "snapshot? see docs/security.md); the partition is not served"
    )
    predictions = [json.loads(r.value)["id"] for r in read_topic(bootstrap, f"{topic}.predictions")]
    assert predictions == [str(i) for i in range(120)]  # each once; none of the replayed 40..119
