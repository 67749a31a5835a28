"""Partition state in a compacted Kafka topic, so that any member on any machine restores it.

Partition p of the examples topic keeps its `PartitionState` in partition p of the state topic
(`<topic>.state`, `cleanup.policy=compact`). A snapshot is the state's pickle cut in chunks of at
most `CHUNK_BYTES` (records with key `p/c<i>`) followed by a manifest (key `p`, JSON
`{"snapshot": n, "chunks": k, "bytes": size}`), all written inside the transaction that commits
the outputs and offsets the state goes with: a snapshot is visible exactly when its batch is.
Compaction keeps the last value of each key, so the last snapshot survives whole.

`restore` reads the partition with `streams.kafka.committed.committed_consumer` (aborted snapshots
are dropped even on brokers that do not list aborted transactions) up to its end, and returns
the last complete snapshot. Where that end is depends on the broker's word (Tansu's ListOffsets
understates it) and on timing, so a partition's new owner does not rely on it: once its
producer has fenced the previous owner it appends a `mark` (key `p/mark`) and reads up to it.
Every snapshot ever committed lies before the mark, so the restore cannot stop short of the
last one, which would make a server learn again what its partition had learned (and, when
mixing, publish a second contribution to a round).

Pickle runs code on load, and anyone allowed to produce to the state topic can write to it. So
a snapshot's pickle is sealed (`streams.kafka.envelope`) in the context of its topic, partition
and snapshot number before it is cut in chunks, and `restore` verifies each complete snapshot
when its manifest comes: a record that is malformed or does not verify, or a snapshot numbered
no higher than the last valid one (an old snapshot written again: a rollback), is logged,
reported to `rejected` and ignored; the last valid snapshot is restored, and only its bytes are
unpickled. When records were rejected and no valid snapshot is left (compaction keeps the last
record of each key, so forged records can push the true ones out), `restore` raises
`StateError` rather than start the partition afresh.
"""

from __future__ import annotations

import json
import logging
import pickle
import time
from collections.abc import Callable

from kafka import TopicPartition

from streams.kafka.client import KafkaSettings, log_reaches
from streams.kafka.committed import committed_consumer
from streams.kafka.envelope import Forged, StateKeys
from streams.kafka.outputs import Delivery

CHUNK_BYTES = 900_000  # under the producer's 1 MiB request limit
FORMAT = "river-cw state 1"
TOPIC_CONFIG = {"cleanup.policy": "compact"}

log = logging.getLogger(__name__)


class StateError(RuntimeError):
    """The state topic cannot be read back in time, or holds something else."""


def state_topic(examples_topic: str) -> str:
    return f"{examples_topic}.state"


def chunked(data: bytes) -> list[bytes]:
    """`data` cut in record values of at most `CHUNK_BYTES` (one empty chunk for no data)."""
    return [data[i : i + CHUNK_BYTES] for i in range(0, len(data), CHUNK_BYTES)] or [b""]


def context(topic: str, partition: int, snapshot: int) -> str:
    """Where a snapshot belongs: what its envelope is bound to."""
    return f"{FORMAT}|{topic}|{partition}|{snapshot}"


def write(outputs, topic: str, partition: int, state, keys: StateKeys):
    """Send a snapshot of `state`, sealed with `keys`, with `outputs`
    (`streams.kafka.outputs.Outputs`, inside its open transaction if it is transactional); the
    `Delivery` of the manifest."""
    snapshot = state.batches
    data = keys.seal(
        context(topic, partition, snapshot),
        pickle.dumps({"format": FORMAT, "state": state}, protocol=pickle.HIGHEST_PROTOCOL),
    )
    chunks = chunked(data)
    for i, chunk in enumerate(chunks):
        outputs.send(
            topic,
            chunk,
            f"{partition}/c{i}".encode(),
            partition=partition,
            headers=[("snapshot", str(snapshot).encode())],
        )
    manifest = {"snapshot": snapshot, "chunks": len(chunks), "bytes": len(data)}
    delivery = Delivery()
    outputs.send(
        topic,
        json.dumps(manifest).encode(),
        str(partition).encode(),
        partition=partition,
        delivery=delivery,
    )
    return delivery


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


def restore(
    settings: KafkaSettings,
    topic: str,
    partition: int,
    keys: StateKeys,
    start: int = 0,
    timeout: float = 120.0,
    until: int | None = None,
    rejected: Callable[[], None] | None = None,
    newer_than: int = -1,
):
    """The last committed snapshot of `partition` in `topic` from offset `start` on that
    verifies under `keys`, and the number of records read, or (None, n) when there is none; n
    is -1 when `start` lies beyond the partition's end (a cache from another broker or topic).
    With `until` (a `mark`'s offset) every record before it is read; without, up to where the
    log seems to end. `rejected()` is called for each record ignored (see the module
    docstring), as is a snapshot numbered `newer_than` or lower (the number of a cached state
    that `start` follows). `StateError` past `timeout` s, or when records were rejected and no
    valid snapshot is left."""
    consumer = committed_consumer(
        **settings.kafka_python(
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=settings.fetch_max_wait_ms,
            max_partition_fetch_bytes=4 * CHUNK_BYTES,
        )
    )
    tp = TopicPartition(topic, partition)
    snapshots = _Snapshots(topic, partition, keys, rejected, newer_than)
    try:
        consumer.assign([tp])
        if until is not None:  # every record before the mark: read until its batch is passed
            if start > until:
                return None, -1
        else:
            # Tansu's ListOffsets answers the base offset of the last batch + 1 and its fetch
            # replies' high watermark may be another partition's: read at least up to the
            # former, then until the position stops moving (control markers move it without
            # records)
            if not log_reaches(settings, topic, partition, start):
                return None, -1
            end = consumer.end_offsets([tp])[tp]
        consumer.seek(tp, start)
        deadline = time.monotonic() + timeout
        still = 0
        mark_key = _mark_key(partition)
        while consumer.position(tp) <= until if until is not None else still < 3:
            position = consumer.position(tp)
            for records in consumer.poll(timeout_ms=100).values():
                for record in records:
                    after_mark = until is not None and record.offset > until
                    if not (after_mark or record.key == mark_key):
                        snapshots.add(record)
            if until is None:
                moved = consumer.position(tp) != position
                still = 0 if moved or consumer.position(tp) < end else still + 1
            if time.monotonic() > deadline:
                raise StateError(
                    f"restoring {topic}/{partition} took more than {timeout:.0f} s "
                    f"({snapshots.read} records read)"
                )
    finally:
        consumer.close(autocommit=False)
    if snapshots.found is None:
        if snapshots.rejected:
            raise StateError(
                f"{topic}/{partition} holds no valid snapshot: {snapshots.rejected} records were "
                "rejected (forged, altered, written under another state key or by a server "
                "without one); give the key that wrote the state first in the key file, or "
                "delete the state topic (and the local cache) to start the partition over"
            )
        return None, snapshots.read
    payload = pickle.loads(snapshots.found)  # verified: written by a server holding the key
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise StateError(f"{topic}/{partition} holds no {FORMAT!r} snapshot")
    return payload["state"], snapshots.read


class _Snapshots:
    """The chunks of a partition's records gathered into snapshots, each verified at its
    manifest; `found` is the payload of the last valid one (never unpickled here)."""

    def __init__(self, topic: str, partition: int, keys: StateKeys, rejected, newer_than: int):
        self.topic, self.partition, self.keys = topic, partition, keys
        self.report = rejected or (lambda: None)
        self.found: bytes | None = None
        self.number = newer_than  # the last valid snapshot's
        self.read = self.rejected = 0
        self._chunks: list[bytes] = []
        self._snapshot: str | None = None

    def add(self, record) -> None:
        self.read += 1
        try:
            self._add(record)
        except (Forged, ValueError, KeyError, TypeError, AttributeError) as error:
            self.rejected += 1
            self.report()
            log.warning(
                "%s/%d: record at offset %d rejected (%s): ignored",
                self.topic,
                self.partition,
                record.offset,
                error,
            )

    def _add(self, record) -> None:
        key = record.key.decode()
        if key != str(self.partition):
            number = dict(record.headers)["snapshot"].decode()
            if number != self._snapshot or key.endswith("/c0"):
                self._chunks, self._snapshot = [], number
            self._chunks.append(record.value)
            return
        manifest = json.loads(record.value)
        snapshot = manifest["snapshot"]
        data = b"".join(self._chunks)
        if str(snapshot) != self._snapshot or len(data) != manifest["bytes"]:
            raise ValueError(f"the manifest of snapshot {snapshot} follows no complete snapshot")
        payload = self.keys.open(context(self.topic, self.partition, snapshot), data)
        if snapshot <= self.number:
            raise ValueError(f"snapshot {snapshot} comes after snapshot {self.number}: a replay")
        self.found, self.number = payload, snapshot
