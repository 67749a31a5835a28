"""The state topic against the real broker: chunked snapshots, the last committed one restored,
aborted ones ignored, a cache offset beyond the end recognised, a restore up to a mark; commits
that write their changes, restored bit for bit (from the topic, or a cache and the changes after
it); a topic of another format refused; true parts written again after newer ones rejected,
changes that follow no valid part refused rather than rolled back, unsigned parts
(`--insecure-state`) restored without a key and refused with one, a rotated key needed until a
snapshot is signed with the new one. Forged records against a
serving member: tests/kafka/test_kafka_forged.py."""

from __future__ import annotations

import copy
import json
import pickle
from types import SimpleNamespace

import pytest
from kafka import KafkaConsumer

from river_cw import AROW
from streams.kafka import changelog, state_topic
from streams.kafka.client import KafkaSettings, create_topics
from streams.kafka.config import ServeConfig, Topics
from streams.kafka.envelope import StateKeys
from streams.kafka.learner import PartitionState
from streams.kafka.outputs import Outputs
from streams.kafka.store import StateStore
from tests.kafka.kafka_support import KEY_TEXT, KEYS, assert_same_model, read_topic

pytestmark = pytest.mark.kafka


def big_state(features: int, batches: int) -> PartitionState:
    model = AROW(covariance="diagonal")  # a changelog writes a diagonal engine's changes
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
        state_topic.write_snapshot(outputs, topic, 1, large, KEYS)
        outputs.commit({}, None)
        restored = state_topic.restore(settings, topic, 1, KEYS)
        assert restored.records >= 4 and restored.state.batches == 1
        restored = restored.state
        assert_same_model(restored.model, large.model, [{"feature-7": 1.0, "other": 1.0}])

        manifest = state_topic.write_snapshot(outputs, topic, 1, small, KEYS)
        outputs.commit({}, None)
        state_topic.write_snapshot(outputs, topic, 1, aborted, KEYS)
        outputs.abort()  # as a crash inside the transaction would
    finally:
        outputs.close()
    restored = state_topic.restore(settings, topic, 1, KEYS).state
    assert restored.batches == 2
    assert_same_model(restored.model, small.model, [{"feature-7": 1.0, "other": 1.0}])
    after = manifest.delivery.offset + 1  # what a local cache remembers
    nothing_newer = state_topic.restore(settings, topic, 1, KEYS, start=after)
    assert (nothing_newer.state, nothing_newer.records) == (None, 0)
    assert state_topic.restore(settings, topic, 1, KEYS, start=after + 1000).records == -1
    empty = state_topic.restore(settings, topic, 0, KEYS)
    assert (empty.state, empty.records) == (None, 0)


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
            state_topic.write_snapshot(old, topic, 1, big_state(10, batches), KEYS)
            old.commit({}, None)
        first = state_topic.mark(old, topic, 1)  # an earlier owner's mark: not a snapshot
        state_topic.write_snapshot(old, topic, 1, big_state(10, 6), KEYS)
        old.commit({}, None)
        state_topic.write_snapshot(
            old, topic, 1, big_state(10, 7), KEYS
        )  # open when the new owner fences it
        old.flush()
        new = Outputs(settings, transactional_id=f"{topic}-1")
        until = state_topic.mark(new, topic, 1)
        state_topic.write_snapshot(
            new, topic, 1, big_state(10, 8), KEYS
        )  # after the mark: not read
        new.commit({}, None)
    finally:
        old.close()
        if new is not None:
            new.close()
    assert until > first

    def unreliable(self, partitions):  # the restore must not depend on the broker's word
        raise AssertionError("end_offsets asked")

    monkeypatch.setattr(KafkaConsumer, "end_offsets", unreliable)
    restored = state_topic.restore(settings, topic, 1, KEYS, until=until)
    assert restored.state.batches == 6 and restored.records == 2 * 6  # chunk, manifest; no marks
    assert (
        state_topic.restore(settings, topic, 1, KEYS, start=first, until=until).state.batches == 6
    )
    assert state_topic.restore(settings, topic, 1, KEYS, start=until + 1, until=until).records == -1


def commit(outputs, store, state) -> state_topic.Written:
    """One exactly-once commit of `state` through `store`: what it wrote."""
    part = store.write(outputs, state)
    outputs.commit({}, None)
    store.saved(state, part)
    return part


def serve_config(topic: str, **kwargs) -> ServeConfig:
    return ServeConfig(Topics("t", state=topic), KEYS, **kwargs)


def test_commits_write_the_changes_and_a_restore_rebuilds_the_state_bit_for_bit(
    kafka_broker, topic_name
):
    """A big model: the first commit is a snapshot, the next ones write what they touched (a
    few hundred bytes, not the megabytes of the model), every `snapshot_every` commits a
    snapshot again, which deletes the changes before it (compaction keeps the snapshot alone);
    aborted changes are ignored; the state restored is the offline one."""
    settings = KafkaSettings(kafka_broker.bootstrap_servers)
    topic = topic_name("state")
    create_topics(settings.bootstrap_servers, {topic: 2}, state_topic.TOPIC_CONFIG)
    live, offline = big_state(60_000, 0), big_state(60_000, 0)
    store = StateStore(
        settings,
        serve_config(topic, snapshot_every=4),
        AROW(covariance="diagonal"),
        'AROW(covariance="diagonal")',
    )
    outputs = Outputs(settings, transactional_id=f"{topic}-writer")
    parts, kinds = [], []
    try:
        for i in range(9):
            for model in (live.model, offline.model):
                model.learn_one({f"feature-{i}": 1.0, f"new-{i}": 2.0}, i % 2 == 0)
            live.learned += 1
            parts.append(commit(outputs, store, live))
            kinds.append(store.written[1].last_kind)
        live.model.learn_one({"aborted": 1.0}, True)  # written, then the transaction aborted
        live.learned += 1
        store.write(outputs, live)
        outputs.abort()
    finally:
        outputs.close()
    sizes = [part.bytes for part in parts]
    assert kinds == ["snapshot", "changes", "changes", "changes"] * 2 + ["snapshot"]
    assert min(sizes[i] for i in (0, 4, 8)) > 1_000_000  # the whole model
    assert max(sizes[i] for i in (1, 2, 3, 5, 6, 7)) < 3_000  # 3 weights and the header
    restored = state_topic.restore(settings, topic, 1, KEYS)
    assert (restored.state.batches, restored.changes) == (9, 0)
    assert restored.snapshot_bytes == sizes[8]
    assert restored.state.learned == 9
    assert_same_model(restored.state.model, offline.model, [{"new-3": 1.0, "feature-7": 1.0}])
    live_keys = {}  # what compaction keeps: each key's last committed value, unless deleted
    for record in read_topic(settings.bootstrap_servers, topic):
        if record.partition == 1:
            live_keys[record.key.decode()] = record.value is not None
    snapshot = {"1", *(f"1/c{i}" for i in range(parts[8].chunks))}
    assert {key for key, live in live_keys.items() if live} == snapshot
    before_last = state_topic.restore(settings, topic, 1, KEYS, until=parts[7].delivery.offset)
    assert before_last.state.batches == 8 and before_last.changes == 3
    assert before_last.changes_bytes == sum(sizes[5:8])


def test_a_restore_from_a_cache_reads_the_changes_after_it(kafka_broker, topic_name, tmp_path):
    settings = KafkaSettings(kafka_broker.bootstrap_servers)
    topic = topic_name("state")
    create_topics(settings.bootstrap_servers, {topic: 2}, state_topic.TOPIC_CONFIG)
    config = serve_config(topic, checkpoint_dir=tmp_path, snapshot_share=10.0)
    live, offline = big_state(1000, 0), big_state(1000, 0)
    live.model_spec = "AROW()"
    store = StateStore(settings, config, AROW(), "AROW()")
    outputs = Outputs(settings, transactional_id=f"{topic}-1")
    try:
        for i in range(5):
            for model in (live.model, offline.model):
                model.learn_one({f"feature-{i}": -1.0, f"new-{i}": 1.0}, i % 3 == 0)
            commit(outputs, store, live)
    finally:
        outputs.close()
    new = Outputs(settings, transactional_id=f"{topic}-1")
    try:
        restored = StateStore(settings, config, AROW(), "AROW()").restore(new, 1)
    finally:
        new.close()
    assert restored.source == "cache"  # the snapshot of the first commit, and 4 changes
    assert restored.records == 4 * 2 and restored.state.batches == 5
    assert_same_model(restored.state.model, offline.model, [{"new-1": 1.0, "feature-4": 1.0}])


def test_a_state_topic_of_another_format_is_refused_with_the_way_to_migrate(
    kafka_broker, topic_name
):
    settings = KafkaSettings(kafka_broker.bootstrap_servers)
    topic = topic_name("state")
    create_topics(settings.bootstrap_servers, {topic: 1}, state_topic.TOPIC_CONFIG)
    outputs = Outputs(settings, transactional_id=f"{topic}-old")
    try:  # what river-cw wrote before the changelog: a sealed pickle, a manifest without format
        payload = pickle.dumps({"format": "river-cw state 1", "state": big_state(10, 1)})
        data = KEYS.seal(f"river-cw state 1|{topic}|0|1", payload)
        outputs.send(topic, data, b"0/c0", partition=0, headers=[("snapshot", b"1")])
        manifest = {"snapshot": 1, "chunks": 1, "bytes": len(data)}
        outputs.send(topic, json.dumps(manifest).encode(), b"0", partition=0)
        outputs.commit({}, None)
    finally:
        outputs.close()
    with pytest.raises(state_topic.StateError, match=r"format 1.*format 3.*inspect.*--init-model"):
        state_topic.restore(settings, topic, 0, KEYS)


def test_a_state_topic_of_pickles_is_refused_in_one_line_naming_the_migration(
    kafka_broker, topic_name
):
    """Format 2: the changelog's parts as pickles of the library's classes, before the versioned
    format."""
    settings = KafkaSettings(kafka_broker.bootstrap_servers)
    topic = topic_name("state")
    create_topics(settings.bootstrap_servers, {topic: 1}, state_topic.TOPIC_CONFIG)
    outputs = Outputs(settings, transactional_id=f"{topic}-old")
    try:
        data = KEYS.seal(f"river-cw state 2|{topic}|0|0|snapshot|1", pickle.dumps(big_state(10, 1)))
        outputs.send(topic, data, b"0/c0", partition=0, headers=[("batches", b"1")])
        manifest = {"format": 2, "kind": "snapshot", "batches": 1, "chunks": 1, "bytes": len(data)}
        outputs.send(topic, json.dumps(manifest).encode(), b"0", partition=0)
        outputs.commit({}, None)
    finally:
        outputs.close()
    with pytest.raises(state_topic.StateError) as refused:
        state_topic.restore(settings, topic, 0, KEYS)
    message = str(refused.value)
    assert "\n" not in message and "format 2" in message and "reads format 3" in message
    assert f"--state-topic {topic} --partition 0 --export model.pkl" in message
    assert "river-cw serve --init-model model.pkl" in message


@pytest.fixture
def writer(kafka_broker, topic_name):
    """Settings, a new state topic of two partitions, and a transactional producer to it."""
    settings = KafkaSettings(kafka_broker.bootstrap_servers)
    topic = topic_name("state")
    create_topics(settings.bootstrap_servers, {topic: 2}, state_topic.TOPIC_CONFIG)
    outputs = Outputs(settings, transactional_id=f"{topic}-writer")
    yield settings, topic, outputs
    outputs.close()


def write_commits(outputs, topic: str, state, commits, keys=KEYS, abort=()) -> list:
    """Commit `state` after learning a new feature each time, as a `StateStore` would: a
    snapshot at commit 1, then the changes since the last commit (the commits in `abort` are
    written, then aborted). The ``(changes, written part)`` of each commit."""
    written = []
    for batches in commits:
        state.model.learn_one({f"new-{batches}": 1.0}, batches % 2 == 0)
        state.batches = batches
        if batches == 1:
            changes, part = None, state_topic.write_snapshot(outputs, topic, 1, state, keys)
        else:
            changes = changelog.changes(state)
            number = batches - 1  # the n-th changes since the snapshot of commit 1
            part = state_topic.write_changes(outputs, topic, 1, state, changes, number, keys)
        if batches in abort:
            outputs.abort()
            continue
        outputs.commit({}, None)
        changelog.mark(state)
        written.append((changes, part))
    return written


def test_a_part_written_again_after_a_newer_one_is_a_rollback_and_is_rejected(writer, caplog):
    """A true snapshot or true changes written again after a later commit (by anyone who
    copied their records) are not restored: commit numbers only grow, from the number of the
    cached state on."""
    settings, topic, outputs = writer
    state = big_state(10, 0)
    written = write_commits(outputs, topic, state, [1, 2, 3])
    cached = copy.deepcopy(state)  # a cache of commit 3
    # the changes of commit 2 again, byte for byte; a snapshot of commit 1 again
    again = SimpleNamespace(batches=2)
    state_topic.write_changes(outputs, topic, 1, again, written[1][0], 1, KEYS)
    state_topic.write_snapshot(outputs, topic, 1, big_state(10, 1), KEYS)
    outputs.commit({}, None)
    rejected = []
    restored = state_topic.restore(settings, topic, 1, KEYS, rejected=lambda: rejected.append(1))
    assert restored.state.batches == 3 and restored.changes == 2 and len(rejected) == 2
    assert_same_model(restored.state.model, cached.model, [{"new-2": 1.0, "feature-7": 1.0}])
    assert "the changes of commit 2 after commit 3: a replay" in caplog.text
    assert "the snapshot of commit 1 after commit 3: a replay" in caplog.text
    after = written[2][1].delivery.offset + 1
    restored = state_topic.restore(
        settings, topic, 1, KEYS, start=after, state=cached, rejected=lambda: rejected.append(1)
    )
    assert restored.state is cached and len(rejected) == 4


def test_changes_that_follow_no_valid_part_stop_the_restore_rather_than_roll_it_back(writer):
    """When the changes of a commit are gone (compaction keeps the last record of a key, so a
    forged record written under their name pushes them out: an aborted transaction stands in
    for that here) and forged ones are in their place, the changes after them cannot be
    applied, and the state before them is not the last committed: `StateError`."""
    settings, topic, outputs = writer
    state = big_state(10, 0)
    other = StateKeys([b"someone else's key, as long as ours"])
    write_commits(outputs, topic, state, [1, 2, 3], abort=[3])
    state.batches = 3  # the forged changes of commit 3, in place of the true ones
    state_topic.write_changes(outputs, topic, 1, state, changelog.changes(state), 2, other)
    outputs.commit({}, None)
    write_commits(outputs, topic, state, [4])
    with pytest.raises(
        state_topic.StateError,
        match=r"changes of commit 4 do not follow .* that of commit 2\); 1 records were rejected",
    ):
        state_topic.restore(settings, topic, 1, KEYS)


def test_insecure_state_is_written_and_restored_unsigned_and_refused_by_a_keyed_reader(writer):
    """`--insecure-state`: the changelog's parts are sealed without a tag and restored without
    a check; a server that holds a key rejects every one of them."""
    settings, topic, outputs = writer
    state = big_state(10, 0)
    write_commits(outputs, topic, state, [1, 2, 3], keys=StateKeys.insecure())
    restored = state_topic.restore(settings, topic, 1, StateKeys.insecure())
    assert restored.state.batches == 3 and restored.changes == 2
    assert_same_model(restored.state.model, state.model, [{"new-2": 1.0, "feature-7": 1.0}])
    with pytest.raises(state_topic.StateError, match="holds no valid snapshot: 3 records"):
        state_topic.restore(settings, topic, 1, KEYS)


def test_a_rotated_key_is_needed_until_a_snapshot_is_signed_with_the_new_one(writer):
    """Rotation (docs/security.md): with the new key first and the old one kept, parts signed
    with either verify; changes signed with the new key still need the old one (the snapshot
    they follow is signed with it) until a snapshot is signed with the new one."""
    settings, topic, outputs = writer
    state = big_state(10, 0)
    new = b"the operator's next key, 32 bytes or more"
    rotated, only_new = StateKeys([new, KEY_TEXT.encode()]), StateKeys([new])
    write_commits(outputs, topic, state, [1, 2])
    write_commits(outputs, topic, state, [3], keys=rotated)
    assert state_topic.restore(settings, topic, 1, rotated).state.batches == 3
    with pytest.raises(state_topic.StateError, match="the changes of commit 3 do not follow"):
        state_topic.restore(settings, topic, 1, only_new)
    state.batches = 4
    state_topic.write_snapshot(outputs, topic, 1, state, rotated)
    outputs.commit({}, None)
    restored = state_topic.restore(settings, topic, 1, only_new)
    assert restored.state.batches == 4
    assert_same_model(restored.state.model, state.model, [{"new-2": 1.0, "feature-7": 1.0}])
