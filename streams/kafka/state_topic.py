"""Partition state in a compacted Kafka topic, so that any member on any machine restores it.

Partition p of the examples topic keeps its `PartitionState` in partition p of the state topic
(`<topic>.state`, `cleanup.policy=compact`) as a changelog: every commit writes, inside the
transaction of the outputs and offsets it goes with, either a *snapshot* (the whole state) or
its *changes* since the previous commit (`streams.kafka.changelog`: the weights that moved and
the small rest of the state), so that a commit writes in proportion to what it changed, not to
the model. A part is its bytes (`streams.kafka.state_codec`: the models in river-cw's versioned
state format) sealed (`encode`) and cut in chunks of at most `CHUNK_BYTES`
(records with key `<name>/c<i>` and a `batches` header) and closed by a manifest (key `<name>`,
JSON `{"format": 3, "kind": ..., "batches": n, "chunks": k, "bytes": size}`), where n is the
state's `batches` (its commits so far). A snapshot is named `p`; the changes of the i-th commit
after a snapshot `p/changes/<i>`. A snapshot deletes (tombstones, in its transaction) the
changes before it and the chunks of the previous snapshot beyond its own, so that compaction,
which keeps the last value of each key, keeps the last snapshot and the changes after it: what
a restore must read, a snapshot and at most `--snapshot-share` of it more (on a broker that has
not compacted yet, the older parts too; they are skipped).

`restore` reads the partition with `streams.kafka.committed.CommittedReader` (aborted parts
are dropped even on brokers that do not list aborted transactions) and folds it: a snapshot
replaces the state, changes apply to the state of the commit before theirs (`batches` n - 1)
and are skipped otherwise. The state restored is that of the last committed part; if it cannot
be rebuilt (changes whose predecessor is missing) `StateError` says so. Where the log ends
depends on the broker's word (Tansu's ListOffsets understates it) and on timing, so a
partition's new owner does not rely on it: once its producer has fenced the previous owner it
appends a `mark` (key `p/mark`) and reads up to it. Every part ever committed lies before the
mark, so the restore cannot stop short of the last one, which would make a server learn again
what its partition had learned (and, when mixing, publish a second contribution to a round).

Anyone allowed to produce to the state topic can write to it, and a part may hold a pickle (a
model the versioned format does not describe), which runs code on load. So `encode` seals every
part (`streams.kafka.envelope`) in its `context`: the format, the topic, the partition, the
part's name and kind and its commit number `batches`. `restore` verifies each part when its
manifest comes, and decodes only the parts of the state it rebuilds, at the end. A record that is malformed, incomplete or does not verify (forged,
altered, or a true part copied to another partition, topic, name or commit number), a manifest
of another format, and a part whose commit number is not above the last valid part's (a true
part written again after a newer one: a rollback; the cached state's number counts as read) is
logged, reported to `rejected` and ignored. A restore never returns a state older than the last
valid part read: when that part cannot be rebuilt (forged records can push the true parts
before it out, as compaction keeps the last record of each key) or when records were rejected
and no valid snapshot is left, `StateError` says so rather than start the partition afresh.
A state topic of an earlier format only (1: whole snapshots, before the changelog; 2: pickles
of the library's classes, before the versioned format) is refused with `StateError` in one line
naming the migration: `river-cw inspect --export` with the version that wrote it, then `serve
--init-model` on a new state topic (docs/guide/kafka.md, "Upgrades").
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from streams.kafka import changelog, state_codec
from streams.kafka.client import KafkaSettings, log_reaches
from streams.kafka.committed import CommittedReader
from streams.kafka.envelope import Forged, StateKeys
from streams.kafka.learner import PartitionState
from streams.kafka.outputs import Delivery

CHUNK_BYTES = 900_000  # under the producer's 1 MiB request limit
FORMAT = 3
# as Kafka Streams configures a changelog topic: compacted, its records timed by their writer
TOPIC_CONFIG = {"cleanup.policy": "compact", "message.timestamp.type": "CreateTime"}
SNAPSHOT, CHANGES = "snapshot", "changes"

log = logging.getLogger(__name__)


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


def context(topic: str, partition: int, name: str, kind: str, batches: int) -> str:
    """Where a part belongs: what its envelope is bound to."""
    return f"river-cw state {FORMAT}|{topic}|{partition}|{name}|{kind}|{batches}"


def encode(keys: StateKeys, where: str, payload: bytes) -> bytes:
    """The bytes of a part: `payload` (`streams.kafka.state_codec`'s bytes of a snapshot or of
    changes) sealed with `keys` in the context `where`."""
    return keys.seal(where, payload)


def write_snapshot(
    outputs, topic: str, partition: int, state, keys: StateKeys, obsolete=()
) -> Written:
    """Send the whole `state`, sealed with `keys`, with `outputs`
    (`streams.kafka.outputs.Outputs`, inside its open transaction if it is transactional).
    `obsolete`, the ``(name, chunks)`` of the parts it makes useless (those of
    `Restored.parts`), are deleted with it (tombstones: compaction then drops them, so that a
    restore does not read them)."""
    name = str(partition)
    payload = state_codec.encode(state)
    written = _write(outputs, topic, partition, SNAPSHOT, name, state.batches, payload, keys)
    for old, chunks in obsolete:
        start = written.chunks if old == name else 0  # the snapshot's own are new
        for i in range(start, chunks):
            outputs.send(topic, None, f"{old}/c{i}".encode(), partition=partition)
        if old != name:
            outputs.send(topic, None, old.encode(), partition=partition)
    return written


def write_changes(
    outputs, topic: str, partition: int, state, changes, number: int, keys: StateKeys
) -> Written:
    """Send `changes` (`streams.kafka.changelog.changes` of `state`), the `number`-th since the
    last snapshot, as `write_snapshot` sends a snapshot."""
    name = f"{partition}/changes/{number}"
    return _write(outputs, topic, partition, CHANGES, name, state.batches, changes.data, keys)


def _write(outputs, topic, partition, kind, name, batches, payload, keys) -> Written:
    data = encode(keys, context(topic, partition, name, kind, batches), payload)
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

    state: PartitionState | None = None
    records: int = 0
    snapshot_bytes: int = 0
    changes_bytes: int = 0
    changes: int = 0
    parts: list = field(default_factory=list)


class _Fold:
    """The records of a partition read so far, from `state` (a cached state) on: the last
    valid snapshot's payload and the changes that follow on it, each verified when its manifest
    comes and decoded only at the end (a log that was not compacted holds many snapshots)."""

    def __init__(self, topic: str, partition: int, keys: StateKeys, state=None, rejected=None):
        self.topic, self.partition, self.keys = topic, partition, keys
        self.where = f"{topic}/{partition}"
        self.report = rejected or (lambda: None)
        self.changes_name = re.compile(rf"{partition}/changes/[0-9]+")
        self.state = state
        self.base = None if state is None else state.batches  # that of the last snapshot read
        self.snapshot: bytes | None = None  # its payload (None: `state` is the base)
        self.snapshot_bytes = 0
        self.snapshot_part: tuple[str, int] | None = None  # its (name, chunks)
        self.changes: list[tuple] = []  # (payload, size, (name, chunks)) after it
        self.chunks: dict[str, tuple[str, list]] = {}  # part name -> (batches, chunks)
        self.last = self.base  # the batches of the last valid part read
        self.read = self.rejected = 0
        self.formats: set = set()  # those of the manifests of another format

    def add(self, record) -> None:
        """Take a record of the partition (neither a mark nor a tombstone); one that is
        rejected (see the module) is logged, reported and ignored."""
        self.read += 1
        try:
            self._add(record)
        except (Forged, ValueError, KeyError, TypeError, AttributeError) as error:
            self.rejected += 1
            self.report()
            log.warning(
                "%s: record at offset %d rejected (%s): ignored", self.where, record.offset, error
            )

    def _add(self, record) -> None:
        if record.key is None:
            raise ValueError("a record without a key")
        key = record.key.decode()
        name, chunk, index = key.rpartition("/c")
        if chunk and index.isdigit():
            self._kind(name)
            header = dict(record.headers).get("batches")
            if header is None:
                raise ValueError(f"chunk {key} has no batches header")
            batches = header.decode()
            held = self.chunks.get(name)
            if held is None or held[0] != batches or index == "0":
                held = self.chunks[name] = (batches, [])
            held[1].append(record.value)
        else:
            self._manifest(key, record.value)

    def _kind(self, name: str) -> str:
        """The kind of the part named `name`: `ValueError` for no part of this partition."""
        if name == str(self.partition):
            return SNAPSHOT
        if self.changes_name.fullmatch(name):
            return CHANGES
        raise ValueError(f"no part of partition {self.partition} is named {name!r}")

    def _manifest(self, name: str, value: bytes) -> None:
        kind = self._kind(name)
        held = self.chunks.pop(name, None)
        manifest = json.loads(value)
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            version = manifest.get("format", 1) if isinstance(manifest, dict) else "unknown"
            self.formats.add(str(version))
            raise ValueError(f"a manifest of format {version}, not {FORMAT}")
        batches, chunks = manifest["batches"], manifest["chunks"]
        if manifest["kind"] != kind or not isinstance(batches, int):
            raise ValueError(f"the manifest of {name} is no {kind} manifest of a commit")
        data = b"" if held is None else b"".join(held[1])
        whole = held is not None and held[0] == str(batches) and len(held[1]) == chunks
        if not whole or len(data) != manifest["bytes"]:
            raise ValueError(f"the manifest of {name} (commit {batches}) follows no whole part")
        payload = self.keys.open(context(self.topic, self.partition, name, kind, batches), data)
        if self.last is not None and batches <= self.last:
            raise ValueError(f"the {kind} of commit {batches} after commit {self.last}: a replay")
        self.last = batches
        size = len(data) + len(value)  # as `Written.bytes` counts it
        if kind == SNAPSHOT:
            self.base, self.snapshot, self.snapshot_bytes = batches, payload, size
            self.snapshot_part, self.changes = (name, chunks), []
        elif self.base is not None and self.base + len(self.changes) == batches - 1:
            self.changes.append((payload, size, (name, chunks)))

    def result(self) -> Restored:
        """The state of the last valid part read, rebuilt: `StateError` if it cannot be."""
        rejected = (
            f"{self.rejected} records were rejected (forged, altered, written under another "
            "state key or by a server without one)"
        )
        rebuilt = None if self.base is None else self.base + len(self.changes)
        if self.last is not None and rebuilt != self.last:
            raise StateError(
                f"{self.where}: the changes of commit {self.last} do not follow on a snapshot "
                f"or on changes read before them (the last state that can be rebuilt is that "
                f"of commit {rebuilt}); "
                + (
                    f"{rejected}: forged records can push true ones out of a compacted topic"
                    if self.rejected
                    else "was the topic written by something else, or compacted by a broker "
                    "that broke the order?"
                )
            )
        if self.base is None and self.formats:
            raise StateError(
                f"{self.where} holds state of format {', '.join(sorted(self.formats))}, written "
                f"by an earlier river-cw; this one reads format {FORMAT}: migrate with the "
                f"version that wrote it, `river-cw inspect --topic EXAMPLES --state-topic "
                f"{self.topic} --partition {self.partition} --export model.pkl`, then "
                "`river-cw serve --init-model model.pkl` on a new state topic"
            )
        if self.base is None and self.rejected:
            raise StateError(
                f"{self.where} holds no valid snapshot: {rejected}; give the key that wrote the "
                "state first in the key file, or delete the state topic (and the local cache) "
                "and the consumer group's offsets to start the partition over"
            )
        state = self.state
        try:  # verified: written by a server holding the key
            if self.snapshot is not None:
                state = state_codec.decode(self.snapshot).state()
            for payload, _, _ in self.changes:
                state = changelog.apply(state, state_codec.decode(payload))
        except ValueError as error:  # a part of a later version, say
            raise StateError(f"{self.where}: {error}") from None
        parts = [part for *_, part in self.changes]
        return Restored(
            state,
            records=self.read,
            snapshot_bytes=self.snapshot_bytes,
            changes_bytes=sum(size for _, size, _ in self.changes),
            changes=len(self.changes),
            parts=parts if self.snapshot_part is None else [self.snapshot_part, *parts],
        )


def restore(
    settings: KafkaSettings,
    topic: str,
    partition: int,
    keys: StateKeys,
    start: int = 0,
    timeout: float = 120.0,
    until: int | None = None,
    state=None,
    rejected: Callable[[], None] | None = None,
) -> Restored:
    """The last committed state of `partition` in `topic` whose parts verify under `keys`, from
    offset `start` on (with `state`, the state committed before `start`: a cache) as a
    `Restored`; its `records` is -1 when `start` lies beyond the partition's end (a cache from
    another broker or topic). With `until` (a `mark`'s offset) every record before it is read;
    without, up to where the log seems to end. `rejected()` is called for each record ignored
    (see the module). `StateError` past `timeout` s, or when the valid parts read do not make
    the state of the last one."""
    reader = CommittedReader(settings, topic, [partition], fetch_bytes=4 * CHUNK_BYTES)
    fold = _Fold(topic, partition, keys, state, rejected)
    try:
        if until is not None:  # every record before the mark: read until its batch is passed
            if start > until:
                return Restored(state, -1)
        elif not log_reaches(settings, topic, partition, start):
            return Restored(state, -1)
        reader.seek(partition, start)
        deadline = time.monotonic() + timeout
        mark_key = _mark_key(partition)
        while (
            reader.position(partition) <= until
            if until is not None
            else not reader.at_end(partition)
        ):
            for record in reader.poll(100):
                after_mark = until is not None and record.offset > until
                # a tombstone is read where compaction has not dropped it yet
                if not (after_mark or record.key == mark_key or record.value is None):
                    fold.add(record)
            if time.monotonic() > deadline:
                raise StateError(
                    f"restoring {topic}/{partition} took more than {timeout:.0f} s "
                    f"({fold.read} records read)"
                )
    finally:
        reader.close()
    return fold.result()
