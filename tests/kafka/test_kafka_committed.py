"""`streams.kafka.committed.committed_consumer` against the real broker: a transaction's control marker
ends only that producer's records before it in the log, however the consumer moves."""

from __future__ import annotations

import time

import pytest
from kafka import TopicPartition

from streams.kafka.client import KafkaSettings, create_topics
from streams.kafka.committed import committed_consumer
from streams.kafka.outputs import Delivery, Outputs
from tests.kafka.kafka_support import produce

pytestmark = pytest.mark.kafka


def keys_until(consumer, last: bytes, timeout: float = 30.0) -> list[str]:
    """The keys `consumer` returns, in order, up to the record keyed `last` (a record written
    outside transactions after what the test looks at): a condition, not a time window."""
    keys, deadline = [], time.monotonic() + timeout
    while not keys or keys[-1] != last.decode():
        assert time.monotonic() < deadline, f"{last!r} not read in {timeout} s: {keys}"
        for records in consumer.poll(timeout_ms=100).values():
            keys += [record.key.decode() for record in records]
    return keys


def test_a_marker_read_again_after_a_seek_back_ends_only_the_records_before_it(
    kafka_broker, topic_name
):
    # what a models topic reader saw when a member rewound to read a round again: an owner's
    # committed contribution, then its next one in a transaction it died in, held open
    settings = KafkaSettings(kafka_broker.bootstrap_servers)
    topic = topic_name("committed")
    create_topics(settings.bootstrap_servers, {topic: 1})
    tp = TopicPartition(topic, 0)
    owner = Outputs(settings, transactional_id=f"{topic}-0")
    consumer = committed_consumer(
        bootstrap_servers=settings.bootstrap_servers, auto_offset_reset="earliest"
    )
    try:
        consumer.assign([tp])
        delivery = Delivery()
        owner.send(topic, b"", b"committed", partition=0, delivery=delivery)
        owner.commit({}, None)
        first = delivery.offset
        owner.send(topic, b"", b"open", partition=0)
        owner.flush()  # in the log, its transaction open
        produce(settings.bootstrap_servers, topic, [b""], [b"s1"])  # outside transactions
        assert keys_until(consumer, b"s1") == ["committed", "s1"]  # "open" is held
        consumer.seek(tp, first + 1)  # the first transaction's commit marker, read again
        assert keys_until(consumer, b"s1") == ["s1"]  # it ends nothing after it
        consumer.seek(tp, first)
        assert keys_until(consumer, b"s1") == ["committed", "s1"]
        successor = Outputs(settings, transactional_id=f"{topic}-0")  # aborts "open"
        successor.send(topic, b"", b"next", partition=0)
        successor.commit({}, None)
        produce(settings.bootstrap_servers, topic, [b""], [b"s2"])
        assert keys_until(consumer, b"s2") == ["next", "s2"]
        consumer.seek(tp, 0)
        assert keys_until(consumer, b"s2") == ["committed", "s1", "next", "s2"]
        successor.close()
    finally:
        owner.close()
        consumer.close()
