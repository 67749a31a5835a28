"""The state topic against the real broker: chunked snapshots, the last committed one restored,
aborted ones ignored, a cache offset beyond the end recognised, a restore up to a mark."""

from __future__ import annotations

import pickle

import pytest
from kafka import KafkaConsumer

from river_cw import AROW
from streams.kafka import state_topic
from streams.kafka.client import KafkaSettings, create_topics
from streams.kafka.learner import PartitionState
from streams.kafka.outputs import Outputs
from tests.kafka_support import KEYS, assert_same_model

pytestmark = pytest.mark.kafka


def big_state(features: int, batches: int) -> PartitionState:
    model = AROW()
    model.learn_one({f"feature-{j}": 1.0 for j in range(features)}, True)
    model.learn_one({"other": 1.0}, False)
    return PartitionState("t", 1, model, offsets={"t": batches}, batches=batches)


def test_snapshots_are_chunked_and_only_committed_ones_restored(kafka_broker, topic_name):
    settings = KafkaSettings(kafka_broker.bootstrap_servers)
    topic = topic_name("state")
    create_topics(settings.bootstrap_servers, {topic: 2}, state_topic.TOPIC_CONFIG)
    outputs = Outputs(settings, transactional_id=f"{topic}-writer")
    large, small, aborted = big_state(60_000, 1), big_state(10, 2), big_state(20, 3)
    assert len(pickle.dumps(large)) > 2 * state_topic.CHUNK_BYTES  # three chunks or more
    try:
        state_topic.write(outputs, topic, 1, large, KEYS)
        outputs.commit({}, None)
        restored, read = state_topic.restore(settings, topic, 1, KEYS)
        assert read >= 4 and restored.batches == 1
        assert_same_model(restored.model, large.model, [{"feature-7": 1.0, "other": 1.0}])

        manifest = state_topic.write(outputs, topic, 1, small, KEYS)
        outputs.commit({}, None)
        state_topic.write(outputs, topic, 1, aborted, KEYS)
        outputs.abort()  # as a crash inside the transaction would
    finally:
        outputs.close()
    restored, _ = state_topic.restore(settings, topic, 1, KEYS)
    assert restored.batches == 2
    assert_same_model(restored.model, small.model, [{"feature-7": 1.0, "other": 1.0}])
    after = manifest.offset + 1  # what a local cache remembers
    assert state_topic.restore(settings, topic, 1, KEYS, start=after)[0] is None  # nothing newer
    assert state_topic.restore(settings, topic, 1, KEYS, start=after + 1000) == (None, -1)
    assert state_topic.restore(settings, topic, 0, KEYS) == (None, 0)


def test_a_restore_up_to_a_mark_reads_every_snapshot_before_it_whatever_the_log_end_looks_like(
    kafka_broker, topic_name, monkeypatch
):
    settings = KafkaSettings(kafka_broker.bootstrap_servers)
    topic = topic_name("state")
    create_topics(settings.bootstrap_servers, {topic: 2}, state_topic.TOPIC_CONFIG)
    old = Outputs(settings, transactional_id=f"{topic}-1")
    new = None
    try:
        for batches in range(1, 6):
            state_topic.write(old, topic, 1, big_state(10, batches), KEYS)
            old.commit({}, None)
        first = state_topic.mark(old, topic, 1)  # an earlier owner's mark: not a snapshot
        state_topic.write(old, topic, 1, big_state(10, 6), KEYS)
        old.commit({}, None)
        state_topic.write(
            old, topic, 1, big_state(10, 7), KEYS
        )  # open when the new owner fences it
        old.flush()
        new = Outputs(settings, transactional_id=f"{topic}-1")
        until = state_topic.mark(new, topic, 1)
        state_topic.write(new, topic, 1, big_state(10, 8), KEYS)  # after the mark: not read
        new.commit({}, None)
    finally:
        old.close()
        if new is not None:
            new.close()
    assert until > first

    def unreliable(self, partitions):  # the restore must not depend on the broker's word
        raise AssertionError("end_offsets asked")

    monkeypatch.setattr(KafkaConsumer, "end_offsets", unreliable)
    restored, read = state_topic.restore(settings, topic, 1, KEYS, until=until)
    assert restored.batches == 6 and read == 2 * 6  # a chunk and a manifest each, no marks
    assert state_topic.restore(settings, topic, 1, KEYS, start=first, until=until)[0].batches == 6
    assert state_topic.restore(settings, topic, 1, KEYS, start=until + 1, until=until) == (None, -1)


def test_a_snapshot_written_again_later_is_a_rollback_and_is_rejected(kafka_broker, topic_name):
    """A true snapshot replayed after a later one (by anyone who copied its records) is not
    restored: snapshot numbers only grow, from the number of the cached state on."""
    settings = KafkaSettings(kafka_broker.bootstrap_servers)
    topic = topic_name("state")
    create_topics(settings.bootstrap_servers, {topic: 2}, state_topic.TOPIC_CONFIG)
    outputs = Outputs(settings, transactional_id=f"{topic}-writer")
    try:
        for batches in (1, 2):
            manifest = state_topic.write(outputs, topic, 1, big_state(10, batches), KEYS)
            outputs.commit({}, None)
        state_topic.write(outputs, topic, 1, big_state(10, 1), KEYS)  # snapshot 1 again
        outputs.commit({}, None)
    finally:
        outputs.close()
    rejected = []
    restored, _ = state_topic.restore(settings, topic, 1, KEYS, rejected=lambda: rejected.append(1))
    assert restored.batches == 2 and rejected == [1]
    after = manifest.offset + 1  # a cache of snapshot 2
    with pytest.raises(state_topic.StateError, match="holds no valid snapshot: 1 records"):
        state_topic.restore(settings, topic, 1, KEYS, start=after, newer_than=2)
