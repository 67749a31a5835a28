"""Committed reads (`streams.kafka.committed`) against the real broker: the path chosen for it, the
client-side filter (a transaction's control marker ends only that producer's records before it in
the log, however the consumer moves) on the kafka-python versions it was tested with only, and
librdkafka's read_committed, which on the demo broker holds open transactions back but returns
aborted ones (why the demo broker takes the client-side filter)."""

from __future__ import annotations

import dataclasses
import time
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from kafka import TopicPartition
from packaging.requirements import Requirement

from streams.kafka import committed, state_topic
from streams.kafka.client import KafkaSettings, create_topics
from streams.kafka.committed import CommittedReader, committed_consumer, committed_reads
from streams.kafka.outputs import Delivery, Outputs
from tests.kafka.kafka_support import KEYS, produce
from tests.kafka.test_kafka_state import big_state

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


def test_a_reader_dropped_part_way_through_a_commit_leaves_the_rest_held():
    """A marker hands its transaction's held records over one by one, each taken out of the
    held ones as it goes, while the consumer's position stays at the marker: a reader dropped
    part-way reads the marker again and gets the rest. Taken out all at once, the records not
    yet handed over were lost with the reader: one way a run of the Kafka guide's `tail` could
    miss one prediction, as it did once (the cause not reproduced)."""
    key = ("topic-0", 7)  # (topic-partition, producer id)
    held = {key: {10: "a", 11: "b", 12: "c", 20: "next transaction's"}}
    first = committed._ended(held, key, 13)
    assert next(first) == "a"
    del first  # dropped after one record
    assert list(committed._ended(held, key, 13)) == ["b", "c"]  # the marker read again
    assert held == {key: {20: "next transaction's"}}
    assert list(committed._ended(held, key, 21)) == ["next transaction's"]
    assert held == {}


def test_kafka_python_is_pinned_to_the_versions_the_client_filter_was_tested_with():
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    (pin,) = [
        Requirement(r)
        for r in pyproject["project"]["optional-dependencies"]["kafka"]
        if Requirement(r).name == "kafka-python"
    ]
    assert set(pin.specifier.filter(committed.KAFKA_PYTHON_TESTED)) == set(
        committed.KAFKA_PYTHON_TESTED
    )
    assert metadata.version("kafka-python") in committed.KAFKA_PYTHON_TESTED  # fails on others


def test_the_client_filter_refuses_an_untested_kafka_python(monkeypatch):
    monkeypatch.setattr(committed.metadata, "version", lambda name: "3.1.0")
    with pytest.raises(RuntimeError, match=r"tested with kafka-python 3\.0\.12, not 3\.1\.0"):
        committed_consumer(bootstrap_servers="127.0.0.1:1")


def test_the_demo_broker_takes_the_client_filter_unless_told(kafka_broker):
    settings = KafkaSettings(kafka_broker.bootstrap_servers)
    assert committed_reads(settings) == "client"  # Tansu's cluster id
    assert committed_reads(dataclasses.replace(settings, committed_reads="broker")) == "broker"
    with pytest.raises(ValueError, match="committed reads must be one of"):
        committed_reads(dataclasses.replace(settings, committed_reads="sometimes"))


def read_keys(reader: CommittedReader, last: bytes, timeout: float = 30.0) -> list[str]:
    """`keys_until` for a `CommittedReader`."""
    keys, deadline = [], time.monotonic() + timeout
    while not keys or keys[-1] != last.decode():
        assert time.monotonic() < deadline, f"{last!r} not read in {timeout} s: {keys}"
        keys += [record.key.decode() for record in reader.poll(100)]
    return keys


def test_both_paths_hold_open_transactions_and_only_the_client_filter_drops_aborted_ones(
    kafka_broker, topic_name
):
    settings = KafkaSettings(kafka_broker.bootstrap_servers)
    topic = topic_name("paths")
    create_topics(settings, {topic: 1})
    owner = Outputs(settings, transactional_id=f"{topic}-0")
    try:
        owner.send(topic, b"", b"committed", partition=0)
        owner.commit({}, None)
        owner.send(topic, b"", b"aborted", partition=0)
        owner.flush()
        owner.abort()
        owner.send(topic, b"", b"committed again", partition=0)
        owner.commit({}, None)
        owner.send(topic, b"", b"open", partition=0)
        owner.flush()  # in the log, its transaction open
        produce(settings, topic, [b""], [b"plain"])  # outside transactions, after them all
        found = {}
        for path in ("client", "broker"):
            reader = CommittedReader(
                dataclasses.replace(settings, committed_reads=path), topic, [0]
            )
            try:
                found[path] = read_keys(reader, b"plain", timeout=5) if path == "client" else []
                if path == "broker":  # librdkafka stops at the open transaction: "plain" waits
                    deadline = time.monotonic() + 2
                    while time.monotonic() < deadline:
                        found[path] += [r.key.decode() for r in reader.poll(100)]
            finally:
                reader.close()
    finally:
        owner.close()  # aborts "open"
    assert found["client"] == ["committed", "committed again", "plain"]
    # Tansu lists no aborted transaction: read_committed returns "aborted" there
    assert found["broker"] == ["committed", "aborted", "committed again"]


def test_a_restore_through_librdkafkas_read_committed(kafka_broker, topic_name):
    """Where no transaction was aborted, the broker path restores what the client filter does,
    up to the mark."""
    settings = KafkaSettings(kafka_broker.bootstrap_servers)
    topic = topic_name("restore-paths")
    create_topics(settings, {topic: 1}, state_topic.TOPIC_CONFIG)
    owner = Outputs(settings, transactional_id=f"{topic}-0")
    try:
        for batches in range(1, 4):
            state_topic.write_snapshot(owner, topic, 0, big_state(10, batches), KEYS)
            owner.commit({}, None)
        until = state_topic.mark(owner, topic, 0)
    finally:
        owner.close()
    restored = {
        path: state_topic.restore(
            dataclasses.replace(settings, committed_reads=path), topic, 0, KEYS, until=until
        )
        for path in ("client", "broker")
    }
    assert restored["broker"].state.batches == restored["client"].state.batches == 3
    assert restored["broker"].records == restored["client"].records == 2 * 3
    without_mark = state_topic.restore(
        dataclasses.replace(settings, committed_reads="broker"), topic, 0, KEYS
    )
    assert without_mark.state.batches == 3
