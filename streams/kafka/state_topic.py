"""Partition state in a compacted Kafka topic, so that any member on any machine restores it.

Partition p of the examples topic keeps its `PartitionState` in partition p of the state topic
(`<topic>.state`, `cleanup.policy=compact`) as a changelog: every commit writes, inside the
transaction of the outputs and offsets it goes with, either a *snapshot* (the whole state) or
its *changes* since the previous commit (`streams.kafka.changelog`: the weights that moved and
the small rest of the state), so that a commit writes in proportion to what it changed, not to
the model. A part is its encoded bytes (`encode`) cut in chunks of at most `CHUNK_BYTES`
(records with key `<name>/c<i>` and a `batches` header) and closed by a manifest (key `<name>`,
JSON `{"format": 2, "kind": ..., "batches": n, "chunks": k, "bytes": size}`), where n is the
state's `batches` (its commits so far). A snapshot is named `p`; the changes of the i-th commit
after a snapshot `p/changes/<i>`. A snapshot deletes (tombstones, in its transaction) the
changes before it and the chunks of the previous snapshot beyond its own, so that compaction,
which keeps the last value of each key, keeps the last snapshot and the changes after it: what
a restore must read, a snapshot and at most `--snapshot-share` of it more (on a broker that has
not compacted yet, the older parts too; they are skipped).

`restore` reads the partition with `streams.kafka.committed.committed_consumer` (aborted parts
are dropped even on brokers that do not list aborted transactions) and folds it: a snapshot
replaces the state, changes apply to the state of the commit before theirs (`batches` n - 1)
and are skipped otherwise. The state restored is that of the last committed part; if it cannot
be rebuilt (changes whose predecessor is missing) `StateError` says so. Where the log ends
depends on the broker's word (Tansu's ListOffsets understates it) and on timing, so a
partition's new owner does not rely on it: once its producer has fenced the previous owner it
appends a `mark` (key `p/mark`) and reads up to it. Every part ever committed lies before the
mark, so the restore cannot stop short of the last one, which would make a server learn again
what its partition had learned (and, when mixing, publish a second contribution to a round).

Every part's bytes go through `encode` and come back through `decode`, one place for the
format. A manifest of another format (format 1, river-cw 0.x, wrote one whole pickle per
commit) is refused with `StateError`: migrate as the README says (`river-cw inspect --export`
with the old version, then `serve --init-model`). Pickle runs code on load: read only state
topics you wrote.
"""

from __future__ import annotations

import json
import pickle
import time
from dataclasses import dataclass, field

from kafka import TopicPartition

from streams.kafka import changelog
from streams.kafka.client import KafkaSettings, log_reaches
from streams.kafka.committed import committed_consumer
from streams.kafka.outputs import Delivery

CHUNK_BYTES = 900_000  # under the producer's 1 MiB request limit
FORMAT = 2
TOPIC_CONFIG = {"cleanup.policy": "compact"}
SNAPSHOT, CHANGES = "snapshot", "changes"


class StateError(RuntimeError):
    """The state topic cannot be read back in time, or holds something else."""


def state_topic(examples_topic: str) -> str:
    return f"{examples_topic}.state"


def chunked(data: bytes) -> list[bytes]:
    """`data` cut in record values of at most `CHUNK_BYTES` (one empty chunk for no data)."""
    return [data[i : i + CHUNK_BYTES] for i in range(0, len(data), CHUNK_BYTES)] or [b""]


@dataclass(frozen=True)
class Written:
    """A part sent: the `Delivery` of its manifest, its bytes (the values of its chunks and
    manifest), its name and its chunks."""

    delivery: Delivery
    bytes: int
    name: str
    chunks: int


def encode(kind: str, partition: int, batches: int, payload) -> bytes:
    """The bytes of a part: `payload` (a `PartitionState` for a snapshot, ``(header, weights)``
    for changes) of `partition` after `batches` commits."""
    return pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)


def decode(kind: str, partition: int, batches: int, data: bytes):
    """The payload `encode` turned into `data`."""
    return pickle.loads(data)


def write_snapshot(outputs, topic: str, partition: int, state, obsolete=()) -> Written:
    """Send the whole `state` with `outputs` (`streams.kafka.outputs.Outputs`, inside its open
    transaction if it is transactional). `obsolete`, the ``(name, chunks)`` of the parts it
    makes useless (those of `Restored.parts`), are deleted with it (tombstones: compaction then
    drops them, so that a restore does not read them)."""
    written = _write(outputs, topic, partition, SNAPSHOT, str(partition), state.batches, state)
    for name, chunks in obsolete:
        start = written.chunks if name == str(partition) else 0  # the snapshot's own are new
        for i in range(start, chunks):
            outputs.send(topic, None, f"{name}/c{i}".encode(), partition=partition)
        if name != str(partition):
            outputs.send(topic, None, name.encode(), partition=partition)
    return written


def write_changes(outputs, topic: str, partition: int, state, changes, number: int) -> Written:
    """Send `changes` (`streams.kafka.changelog.changes` of `state`), the `number`-th since the
    last snapshot, as `write_snapshot` sends a snapshot."""
    name = f"{partition}/changes/{number}"
    return _write(outputs, topic, partition, CHANGES, name, state.batches, changes)


def _write(outputs, topic: str, partition: int, kind: str, name: str, batches: int, payload):
    data = encode(kind, partition, batches, payload)
    chunks = chunked(data)
    header = [("batches", str(batches).encode())]
    for i, chunk in enumerate(chunks):
        outputs.send(topic, chunk, f"{name}/c{i}".encode(), partition=partition, headers=header)
    manifest = {
        "format": FORMAT,
        "kind": kind,
        "batches": batches,
        "chunks": len(chunks),
        "bytes": len(data),
    }
    delivery = Delivery()
    value = json.dumps(manifest).encode()
    outputs.send(topic, value, name.encode(), partition=partition, delivery=delivery)
    return Written(delivery, len(data) + len(value), name, len(chunks))


def mark(outputs, topic: str, partition: int) -> int:
    """Append a mark to `partition` of `topic` with `outputs` (committed at once when they are
    transactional, else acknowledged) and return its offset: `restore`'s `until`."""
    delivery = Delivery()
    outputs.send(topic, b"", _mark_key(partition), partition=partition, delivery=delivery)
    if outputs.transactional:
        outputs.commit({}, None)
    else:
        outputs.flush()
    return delivery.offset


def _mark_key(partition: int) -> bytes:
    return f"{partition}/mark".encode()


@dataclass
class Restored:
    """What `restore` read: the state (None: none committed), the records read (-1: `start`
    lies beyond the partition's end), and since the state's last snapshot the bytes of that
    snapshot (0 when it was not read: restored from a cache) and of the changes after it, their
    count, and the ``(name, chunks)`` of these parts (the next snapshot deletes them)."""

    state: object = None
    records: int = 0
    snapshot_bytes: int = 0
    changes_bytes: int = 0
    changes: int = 0
    parts: list = field(default_factory=list)


class _Fold:
    """The parts read so far, from `state` (a cached state) on: the last snapshot's bytes and
    the changes that follow on it, decoded only at the end (a log that was not compacted holds
    many snapshots)."""

    def __init__(self, topic: str, partition: int, state=None):
        self.where = f"{topic}/{partition}"
        self.partition = partition
        self.state = state
        self.base = None if state is None else state.batches  # that of the last snapshot read
        self.snapshot = None  # its bytes (None: `state` is the base)
        self.snapshot_bytes = 0
        self.snapshot_part = None  # its (name, chunks)
        self.changes: list[tuple] = []  # (batches, data, size, (name, chunks)) after it
        self.chunks: dict[bytes, tuple[str, list]] = {}  # part name -> (batches, chunks)
        self.last = self.base  # the batches of the last part read

    def chunk(self, key: bytes, record) -> None:
        name, _, index = key.rpartition(b"/c")
        batches = dict(record.headers).get("batches", b"").decode()
        held = self.chunks.get(name)
        if held is None or held[0] != batches or index == b"0":
            held = self.chunks[name] = (batches, [])
        held[1].append(record.value)

    def manifest(self, key: bytes, value: bytes) -> None:
        manifest = json.loads(value)
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            version = manifest.get("format", 1) if isinstance(manifest, dict) else "unknown"
            raise StateError(
                f"{self.where} holds state of format {version}, this server reads format "
                f"{FORMAT}: migrate with the version that wrote it (`river-cw inspect "
                "--partition P --export model.pkl`, then `river-cw serve --init-model "
                "model.pkl` on a new state topic; see the README)"
            )
        batches, kind = manifest["batches"], manifest["kind"]
        if kind not in (SNAPSHOT, CHANGES):
            raise StateError(f"{self.where} holds a part of an unknown kind: {kind!r}")
        held = self.chunks.pop(key, None)
        if held is None or held[0] != str(batches):
            return
        data = b"".join(held[1])
        if len(held[1]) != manifest["chunks"] or len(data) != manifest["bytes"]:
            return
        self.last = batches
        size = len(data) + len(value)  # as `Written.bytes` counts it
        part = (key.decode(), manifest["chunks"])
        if kind == SNAPSHOT:
            self.base, self.snapshot, self.snapshot_bytes = batches, data, size
            self.snapshot_part, self.changes = part, []
        elif self.base is not None and self.base + len(self.changes) == batches - 1:
            self.changes.append((batches, data, size, part))

    def result(self) -> Restored:
        """The state of the last part read, rebuilt: `StateError` if it cannot be."""
        rebuilt = None if self.base is None else self.base + len(self.changes)
        if self.last is not None and rebuilt != self.last:
            raise StateError(
                f"{self.where}: the changes of commit {self.last} do not follow on a snapshot "
                f"or on changes read before them (the last state that can be rebuilt is that "
                f"of commit {rebuilt}); was the topic written by something else, or compacted "
                "by a broker that broke the order?"
            )
        state = self.state
        if self.snapshot is not None:
            state = decode(SNAPSHOT, self.partition, self.base, self.snapshot)
        for batches, data, _, _ in self.changes:
            state = changelog.apply(state, *decode(CHANGES, self.partition, batches, data))
        parts = [part for *_, part in self.changes]
        return Restored(
            state,
            snapshot_bytes=self.snapshot_bytes,
            changes_bytes=sum(size for _, _, size, _ in self.changes),
            changes=len(self.changes),
            parts=parts if self.snapshot_part is None else [self.snapshot_part, *parts],
        )


def restore(
    settings: KafkaSettings,
    topic: str,
    partition: int,
    start: int = 0,
    timeout: float = 120.0,
    until: int | None = None,
    state=None,
) -> Restored:
    """The last committed state of `partition` in `topic`, from offset `start` on (with
    `state`, the state committed before `start`: a cache) as a `Restored`; its `records` is -1
    when `start` lies beyond the partition's end (a cache from another broker or topic). With
    `until` (a `mark`'s offset) every record before it is read; without, up to where the log
    seems to end. `StateError` past `timeout` s, or when the parts read do not make a state."""
    consumer = committed_consumer(
        bootstrap_servers=settings.bootstrap_servers,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=settings.fetch_max_wait_ms,
        max_partition_fetch_bytes=4 * CHUNK_BYTES,
    )
    tp = TopicPartition(topic, partition)
    fold = _Fold(topic, partition, state)
    try:
        consumer.assign([tp])
        if until is not None:  # every record before the mark: read until its batch is passed
            if start > until:
                return Restored(state, -1)
        else:
            # Tansu's ListOffsets answers the base offset of the last batch + 1 and its fetch
            # replies' high watermark may be another partition's: read at least up to the
            # former, then until the position stops moving (control markers move it without
            # records)
            if not log_reaches(settings, topic, partition, start):
                return Restored(state, -1)
            end = consumer.end_offsets([tp])[tp]
        consumer.seek(tp, start)
        deadline = time.monotonic() + timeout
        read, still = 0, 0
        mark_key = _mark_key(partition)
        prefix = f"{partition}".encode()
        while consumer.position(tp) <= until if until is not None else still < 3:
            position = consumer.position(tp)
            for records in consumer.poll(timeout_ms=100).values():
                for record in records:
                    key = record.key or b""
                    after_mark = until is not None and record.offset > until
                    foreign = key.split(b"/")[0] != prefix
                    if after_mark or key == mark_key or foreign or record.value is None:
                        continue  # a tombstone is read where compaction has not dropped it
                    read += 1
                    last = key.rpartition(b"/")[2]
                    if last[:1] == b"c" and last[1:].isdigit():
                        fold.chunk(key, record)
                    else:
                        fold.manifest(key, record.value)
            if until is None:
                moved = consumer.position(tp) != position
                still = 0 if moved or consumer.position(tp) < end else still + 1
            if time.monotonic() > deadline:
                raise StateError(
                    f"restoring {topic}/{partition} took more than {timeout:.0f} s "
                    f"({read} records read)"
                )
    finally:
        consumer.close(autocommit=False)
    restored = fold.result()
    restored.records = read
    return restored
