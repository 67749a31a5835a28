"""Forged records in the state and models topics, against the real broker: never unpickled.

Each forged record carries a pickle whose loading would create a file (`Trap`): raw, sealed under
another key, sealed with the servers' own key but for another partition or round (a true record
copied elsewhere), cut short, or an old snapshot or old changes written again (a rollback); with
malformed records around them. A member serving, and a member restarting, ignores them, counts them in
its metrics and serves on, exactly once; a partition left with no valid snapshot stops the
server with `StateError`, as `river-cw serve` reports it.
"""

from __future__ import annotations

import json
import pickle
import time

import pytest
from kafka import KafkaProducer, TopicPartition

from river_cw import AROW
from streams import cli
from streams.kafka import models_topic, state_codec, state_topic
from streams.kafka.client import KafkaSettings, create_topics
from streams.kafka.committed import committed_consumer
from streams.kafka.envelope import StateKeys
from streams.kafka.learner import PartitionState
from tests.kafka.kafka_support import (
    KEYS,
    ServerThread,
    assert_exactly_once,
    model_server,
    produce_examples,
    read_all,
    read_topic,
    serve_until,
    synthetic,
    wait_until,
)

pytestmark = pytest.mark.kafka
OTHER = StateKeys([b"someone else's key, as long as ours"])


class Trap:
    """Unpickling a pickle of a `Trap` creates the file at `path`."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return open, (self.path, "w")


def send(bootstrap: str, topic: str, records: list[tuple]) -> None:
    """Produce (partition, key, value, headers) records outside any transaction, as anyone
    allowed to produce to `topic` can."""
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for partition, key, value, headers in records:
        producer.send(topic, value=value, key=key, partition=partition, headers=headers)
    producer.flush()
    producer.close()


def forged_part(partition: int, name: str, kind: str, batches: int, data: bytes) -> list[tuple]:
    """A part in one chunk and its manifest, as `state_topic` lays them out."""
    manifest = {
        "format": state_topic.FORMAT,
        "kind": kind,
        "batches": batches,
        "chunks": 1,
        "bytes": len(data),
    }
    return [
        (partition, f"{name}/c0".encode(), data, [("batches", str(batches).encode())]),
        (partition, name.encode(), json.dumps(manifest).encode(), []),
    ]


def forged_snapshot(partition: int, snapshot: int, data: bytes) -> list[tuple]:
    """A snapshot of commit `snapshot`: `forged_part`."""
    return forged_part(partition, str(partition), state_topic.SNAPSHOT, snapshot, data)


def snapshot_context(state: str, partition: int, snapshot: int) -> str:
    """The context of the snapshot of commit `snapshot` of `partition` in topic `state`."""
    return state_topic.context(state, partition, str(partition), state_topic.SNAPSHOT, snapshot)


def forged_states(topic: str, partition: int, trap: Trap, replay: bool = True) -> list[tuple]:
    """Records rejected at restore: four snapshots that do not verify, two malformed records
    and, with `replay`, a true snapshot 1 written again (a rollback, rejected after a later
    one); `topic` is the examples topic."""
    state = state_topic.state_topic(topic)
    evil = pickle.dumps(trap)
    here = lambda n: snapshot_context(state, partition, n)  # noqa: E731
    records = [
        *forged_snapshot(partition, 1000, evil),  # no envelope at all
        *forged_snapshot(partition, 1001, OTHER.seal(here(1001), evil)),
        *forged_snapshot(partition, 1002, KEYS.seal(here(1002), evil)[:-1]),  # cut short
        *forged_snapshot(partition, 1003, KEYS.seal(snapshot_context(state, 1, 1003), evil)),
        (partition, str(partition).encode(), b"{not json", []),
        (partition, None, evil, []),
    ]
    if replay:
        old = PartitionState(topic, partition, AROW(), offsets={topic: 0}, batches=1)
        records += forged_snapshot(
            partition, 1, state_topic.encode(KEYS, here(1), state_codec.encode(old))
        )
    return records


def test_the_trap_is_armed(tmp_path):
    """What the other tests forge would create the file if it were ever unpickled."""
    path = tmp_path / "armed"
    pickle.loads(pickle.dumps(Trap(path))).close()
    assert path.exists()


def test_a_restarted_member_ignores_forged_snapshots_and_serves_on_exactly_once(
    kafka_broker, topic_name, tmp_path, caplog
):
    bootstrap = kafka_broker.bootstrap_servers
    topic = topic_name("forged-state")
    create_topics(bootstrap, {topic: 2, f"{topic}.predictions": 2})
    stream = synthetic(0, 300)
    settings = KafkaSettings(bootstrap, connect_timeout_ms=5000)
    produce_examples(bootstrap, topic, stream[:200], partitions=lambda i: i % 2)
    first = model_server(AROW(), settings, topic, None, checkpoint_every=40, model_spec="AROW()")
    serve_until(first, read_all(first, topic, 100, (0, 1)), what="100 read in each partition")

    trap = tmp_path / "pwned"
    send(bootstrap, state_topic.state_topic(topic), forged_states(topic, 0, Trap(trap)))
    produce_examples(bootstrap, topic, stream[200:], partitions=lambda i: i % 2)
    second = model_server(AROW(), settings, topic, None, checkpoint_every=40, model_spec="AROW()")
    serve_until(second, read_all(second, topic, 150, (0, 1)), what="150 read in each partition")

    assert not trap.exists()
    assert second.metrics.rejected == {(state_topic.state_topic(topic), 0): 7}
    assert "record at offset" in caplog.text and "does not verify" in caplog.text
    assert "a replay" in caplog.text and "not a river-cw envelope" in caplog.text
    assert_exactly_once(bootstrap, topic, stream, 2, AROW)
    code = cli.main(["inspect", "--bootstrap-servers", bootstrap, "--topic", topic])
    assert code == 0 and not trap.exists()


def test_a_partition_with_no_valid_snapshot_left_stops_the_server(
    kafka_broker, topic_name, tmp_path, capsys
):
    bootstrap = kafka_broker.bootstrap_servers
    topic = topic_name("forged-only")
    create_topics(bootstrap, {topic: 1, state_topic.state_topic(topic): 1})
    produce_examples(bootstrap, topic, synthetic(0, 10))
    trap = tmp_path / "pwned"
    forged = forged_states(topic, 0, Trap(trap), replay=False)
    send(bootstrap, state_topic.state_topic(topic), forged)

    code = cli.main(
        ["serve", "--bootstrap-servers", bootstrap, "--topic", topic, "--model", "AROW()"]
    )
    error = capsys.readouterr().err
    assert code == 1
    assert f"river-cw serve: error: {topic}.state/0 holds no valid snapshot: 6 records" in error
    assert "delete the state topic" in error
    code = cli.main(["inspect", "--bootstrap-servers", bootstrap, "--topic", topic])
    assert code == 1 and "holds no valid snapshot" in capsys.readouterr().err
    assert not trap.exists()
    assert read_topic(bootstrap, f"{topic}.predictions") == []  # nothing served


def copied(bootstrap: str, topic: str, partition: int, name: str) -> list[tuple]:
    """The records of the first committed part `name` in `partition` of `topic` (its chunks,
    then its manifest) as `send` takes them: what anyone who can read the topic can copy."""
    consumer = committed_consumer(
        bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False
    )
    consumer.assign([TopicPartition(topic, partition)])
    records: list[tuple] = []
    deadline = time.monotonic() + 30
    try:
        while not records or records[-1][1] != name.encode():
            assert time.monotonic() < deadline, f"no part {name} in {topic}/{partition}"
            for batch in consumer.poll(timeout_ms=200).values():
                for r in batch:
                    whole = bool(records) and records[-1][1] == name.encode()
                    key = r.key or b""
                    if not whole and name.encode() in (key, key.rpartition(b"/c")[0]):
                        records.append((partition, key, r.value, list(r.headers)))
    finally:
        consumer.close(autocommit=False)
    return records


def test_a_restarted_member_rejects_forged_and_replayed_change_records(
    kafka_broker, topic_name, tmp_path, caplog
):
    """The changes of a commit forged or copied: unsigned, signed under another key, a true
    change of partition 1 copied to partition 0, a true old change of partition 0 written again
    after newer ones (a replay), and the bytes of that old change under the name and commit
    number of the next changes (in place of a newer one). A restarted member rejects each one,
    restores the state its commits left, and serves on exactly once."""
    bootstrap = kafka_broker.bootstrap_servers
    topic = topic_name("forged-changes")
    state = state_topic.state_topic(topic)
    create_topics(bootstrap, {topic: 2, f"{topic}.predictions": 2})
    stream = synthetic(0, 300)
    settings = KafkaSettings(bootstrap, connect_timeout_ms=5000)
    produce_examples(bootstrap, topic, stream[:200], partitions=lambda i: i % 2)
    serving = {"checkpoint_every": 20, "snapshot_share": 100.0, "model_spec": "AROW()"}
    first = model_server(AROW(), settings, topic, None, **serving)  # a snapshot, then changes
    serve_until(first, read_all(first, topic, 100, (0, 1)), what="100 read in each partition")

    stored = state_topic.restore(settings, state, 0, KEYS)
    assert stored.changes >= 2
    last, name = stored.state.batches, f"0/changes/{stored.changes + 1}"  # those of the next
    replayed = copied(bootstrap, state, 0, "0/changes/1")
    moved = [
        (0, key.replace(b"1/", b"0/", 1), value, headers)
        for _, key, value, headers in copied(bootstrap, state, 1, "1/changes/1")
    ]
    trap = tmp_path / "pwned"
    evil = pickle.dumps((Trap(trap), []))
    here = state_topic.context(state, 0, name, state_topic.CHANGES, last + 1)
    send(
        bootstrap,
        state,
        [
            *forged_part(0, name, state_topic.CHANGES, last + 1, evil),
            *forged_part(0, name, state_topic.CHANGES, last + 1, OTHER.seal(here, evil)),
            *moved,
            *replayed,
            *forged_part(0, name, state_topic.CHANGES, last + 1, replayed[0][2]),
        ],
    )
    produce_examples(bootstrap, topic, stream[200:], partitions=lambda i: i % 2)
    second = model_server(AROW(), settings, topic, None, **serving)
    serve_until(second, read_all(second, topic, 150, (0, 1)), what="150 read in each partition")

    assert not trap.exists()
    assert second.metrics.rejected == {(state, 0): 5}
    assert "not a river-cw envelope" in caplog.text and "does not verify" in caplog.text
    assert f"after commit {last}: a replay" in caplog.text
    assert_exactly_once(bootstrap, topic, stream, 2, AROW)
    code = cli.main(["inspect", "--bootstrap-servers", bootstrap, "--topic", topic])
    assert code == 0 and not trap.exists()


def forged_contributions(topic: str, trap: Trap) -> list[tuple]:
    """Six records of the models topic rejected when read: four contributions that do not
    verify, one incomplete, one malformed manifest; and stray chunks under the names of the
    true contributions of the next rounds, which must not void them. `topic`: the examples
    topic."""
    models = models_topic.models_topic(topic)
    evil = pickle.dumps({"format": models_topic.FORMAT, "contribution": trap})
    records = []
    for name, data in (
        ("1/0", evil),
        ("1/1", OTHER.seal(models_topic.context(models, 1, 1), evil)),
        ("2/0", KEYS.seal(models_topic.context(models, 2, 1), evil)),  # partition 1's, as 0's
        ("3/1", KEYS.seal(models_topic.context(models, 3, 1), evil)[:-1]),
    ):
        round_, partition = map(int, name.split("/"))
        manifest = {"round": round_, "partition": partition, "chunks": 1, "bytes": len(data)}
        records += [
            (0, f"{name}/c0".encode(), data, []),
            (0, name.encode(), json.dumps(manifest).encode(), []),
        ]
    incomplete = {"round": 4, "partition": 0, "chunks": 2, "bytes": len(evil)}
    records += [
        (0, b"4/0/c0", evil, []),
        (0, b"4/0", json.dumps(incomplete).encode(), []),
        (0, b"5/0", b"\xff", []),
    ]
    strays = [(0, f"{r}/{p}/c9".encode(), b"stray", []) for r in range(100) for p in (0, 1)]
    return strays + records


@pytest.mark.slow
def test_forged_contributions_are_ignored_while_mixing_and_after_a_restart(
    kafka_broker, topic_name, tmp_path
):
    bootstrap = kafka_broker.bootstrap_servers
    topic = topic_name("forged-models")
    models = models_topic.models_topic(topic)
    create_topics(bootstrap, {topic: 2, f"{topic}.predictions": 1, models: 1})
    settings = KafkaSettings(bootstrap, connect_timeout_ms=5000)
    stream = synthetic(0, 600)
    trap = tmp_path / "pwned"

    def member():
        return model_server(
            AROW(r=10000),
            settings,
            topic,
            None,
            checkpoint_every=50,
            checkpoint_seconds=0.5,
            mix={"method": "kl", "every": 20, "seconds": 0.3},
            model_spec="AROW(r=10000)",
        )

    def mixed(server, count: int):
        def condition():
            states = server.states
            return len(states) == 2 and all(s.mixing.examples == count for s in states.values())

        return condition

    running = ServerThread(first := member())
    try:
        produce_examples(bootstrap, topic, stream[:200], partitions=lambda i: i % 2)
        wait_until(mixed(first, 200), 60, "200 examples mixed")
        send(bootstrap, models, forged_contributions(topic, Trap(trap)))  # while it serves
        wait_until(lambda: first.metrics.rejected.get((models, 0)) == 6, 30, "6 rejected")
        produce_examples(bootstrap, topic, stream[200:400], partitions=lambda i: i % 2)
        wait_until(mixed(first, 400), 60, "400 examples mixed")
    finally:
        running.stop()

    send(bootstrap, models, forged_contributions(topic, Trap(trap)))  # for the next member
    produce_examples(bootstrap, topic, stream[400:], partitions=lambda i: i % 2)
    running = ServerThread(second := member())
    try:
        wait_until(mixed(second, 600), 60, "600 examples mixed after the restart")
    finally:
        running.stop()

    assert not trap.exists()
    assert second.metrics.rejected == {(models, 0): 6}
    predictions = [json.loads(r.value) for r in read_topic(bootstrap, f"{topic}.predictions")]
    assert sorted(int(p["id"]) for p in predictions) == list(range(len(stream)))
