"""Read only committed records of transactional topics: the broker's way where it can, ours where not.

A `read_committed` consumer gets records up to the last stable offset (no open transaction is
visible) and relies on the broker's list of aborted transactions to drop their records. Two
paths, chosen once per broker (`committed_reads`) and read through `CommittedReader`:

- ``"broker"``: librdkafka's (confluent-kafka's) `isolation.level=read_committed`, a supported
  API, for brokers that list aborted transactions (Apache Kafka does).
- ``"client"``: `committed_consumer`, for the demo broker: Tansu 0.6 never sends that list, so a
  read_committed consumer also returns records of aborted transactions (and kafka-python's saw
  its last stable offset stuck behind committed transactions). It applies Kafka's rule on the
  client alone: the records of a transactional batch are held until their producer's control
  marker, then returned (commit) or dropped (abort); records written outside transactions are
  returned at once. It reads with isolation `read_uncommitted`, so it depends on neither the
  broker's list nor its last stable offset.

No client shows control markers through its documented API (librdkafka never shows them to
its caller; kafka-python parses them in its fetcher), so the client path replaces kafka-python's
per-fetch record parser on its consumer: a private part of kafka-python. That is why
pyproject.toml pins kafka-python to `KAFKA_PYTHON_TESTED`, the versions this path was tested
on, and why `committed_consumer` refuses any other version (tests/kafka/test_kafka_committed.py
fails on one too). The broker path uses no private name.

`KafkaSettings.committed_reads` (``river-cw serve|tail|inspect|evaluate --committed-reads``)
picks a path; ``"auto"`` takes the client path on the demo broker, recognised by the cluster id
Tansu gives itself unless told otherwise (`DEMO_CLUSTER_IDS`), the broker path elsewhere.

>>> consumer = committed_consumer(bootstrap_servers="127.0.0.1:1", api_version=(3, 0))
>>> consumer.config["isolation_level"]
'read_uncommitted'
>>> consumer.close()

On the client path a transactional record is returned once its transaction is committed, so
records of several producers may come out of offset order. A marker ends only its producer's
records before it in the log, as in Kafka: after a `seek` back, an earlier transaction's marker
read again leaves alone the records held from further on (a rewound reader once returned a dead
producer's open transaction as committed, the marker of its previous transaction read again),
and records read again are held once. Records held when you `seek` elsewhere are returned when
their marker comes, if it does.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, KafkaError
from confluent_kafka import TopicPartition as Partition
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer, TopicPartition
from kafka.consumer.fetcher import ConsumerRecord, Fetcher

from streams.kafka.client import BrokerUnavailable, KafkaSettings, TopicError, check_connection
from streams.kafka.config import COMMITTED_READS

__all__ = ["CommittedReader", "committed_consumer", "committed_reads"]

log = logging.getLogger(__name__)

DEMO_CLUSTER_IDS = frozenset({"tansu_cluster"})  # Tansu's own cluster id
KAFKA_PYTHON_TESTED = ("3.0.12",)  # the versions the client path was tested on (pyproject.toml)
POLL_MS = 100
WHOLE_FETCH = 1 << 30  # kafka-python's max_poll_records: a poll returns whole fetches

READS = {  # each path, as the server's start says it
    "broker": "librdkafka's read_committed (a broker that lists aborted transactions)",
    "client": "the client-side filter of commit and abort markers (a broker that does not list "
    "aborted transactions: the demo broker)",
}

_chosen: dict[str, str] = {}  # bootstrap servers -> the path "auto" chose there


def committed_reads(settings: KafkaSettings) -> str:
    """The path of committed reads on the broker of `settings`, ``"broker"`` or ``"client"``:
    `settings.committed_reads`, or for ``"auto"`` what the broker's cluster id says (asked once
    per process and bootstrap address).

    Parameters
    ----------
    settings
        The connection, its `committed_reads` one of ``"auto"``, ``"broker"``, ``"client"``.

    Examples
    --------

    ```python
    committed_reads(KafkaSettings("127.0.0.1:9092"))  # "client" on the demo broker
    ```

    """
    if settings.committed_reads not in COMMITTED_READS:
        raise ValueError(
            f"committed reads must be one of {COMMITTED_READS}, got {settings.committed_reads!r}"
        )
    if settings.committed_reads != "auto":
        return settings.committed_reads
    key = settings.bootstrap_servers
    if key not in _chosen:
        check_connection(settings)
        admin = AdminClient(settings.librdkafka())
        cluster = admin.list_topics(timeout=settings.connect_timeout_ms / 1000).cluster_id
        _chosen[key] = "client" if cluster in DEMO_CLUSTER_IDS else "broker"
    return _chosen[key]


@dataclass(frozen=True)
class Record:
    """A committed record as `CommittedReader.poll` returns it, whichever client read it
    (`timestamp`: milliseconds since the epoch, as its producer or the broker stamped it)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: list
    timestamp: int


class CommittedReader:
    """Committed records of partitions of one topic or more, by the path `committed_reads`
    chooses.

    A partition is named by its number (one of `topic`'s) or by a ``(topic, partition)`` pair
    (kafka-python's `TopicPartition` is one), in the arguments and in `seek`, `position`,
    `at_end`, `read_only` and `ends`.

    Parameters
    ----------
    settings
        The connection.
    topic
        The topic whose partitions are named by number (None: every partition is a pair).
    partitions
        The partitions read, each from its beginning until `seek` says otherwise.
    fetch_bytes
        The most bytes fetched at once (at least the largest record), and on the broker path
        about the most held ahead of `poll` per partition.

    Examples
    --------

    With ``river-cw serve --topic examples`` serving on a broker at 127.0.0.1:9092:

    ```python
    reader = CommittedReader(KafkaSettings("127.0.0.1:9092"), "examples.predictions", [0])
    for record in reader.poll(1000):  # `Record`s: topic, partition, offset, key, value, ...
        print(record.offset, json.loads(record.value))
    reader.close()
    ```

    """

    def __init__(
        self,
        settings: KafkaSettings,
        topic: str | None,
        partitions: Iterable,
        fetch_bytes: int = 1 << 20,
    ):
        self.path = committed_reads(settings)
        self.topic = topic
        self.partitions = sorted(self._key(p) for p in partitions)
        self._next = dict.fromkeys(self.partitions, 0)  # the offset after the last one passed
        self._pending = dict.fromkeys(self.partitions, OFFSET_BEGINNING)  # where to start, once
        self._wanted = set(self.partitions)  # read from the next poll (`read_only`)
        self._assigned: set = set()
        self._ended: set = set()  # read up to the end the broker reported last (librdkafka)
        if self.path == "broker":
            self._consumer = Consumer(
                settings.librdkafka(
                    **{
                        "group.id": "river-cw.committed-reader",  # never joined nor committed
                        "enable.auto.commit": False,
                        "isolation.level": "read_committed",
                        "enable.partition.eof": True,
                        "fetch.wait.max.ms": settings.fetch_max_wait_ms,
                        "max.partition.fetch.bytes": fetch_bytes,
                        "fetch.max.bytes": fetch_bytes,
                        "queued.max.messages.kbytes": max(fetch_bytes >> 10, 1),
                    }
                )
            )
        else:
            self._kafka = committed_consumer(
                **settings.kafka_python(
                    enable_auto_commit=False,
                    auto_offset_reset="earliest",
                    fetch_max_wait_ms=settings.fetch_max_wait_ms,
                    max_partition_fetch_bytes=fetch_bytes,
                    fetch_max_bytes=fetch_bytes,
                    max_poll_records=WHOLE_FETCH,
                )
            )
            self._still = dict.fromkeys(self.partitions, 0)  # polls without moving, at the end
            self._moved: dict = {}  # whether the last poll moved each partition
            self._end: dict = {}  # the end offsets asked since the last seek

    def _key(self, partition) -> tuple[str, int]:
        if isinstance(partition, int):
            if self.topic is None:
                raise TypeError(f"partition {partition}: name it (topic, partition)")
            return (self.topic, partition)
        topic, number = partition
        return (topic, number)

    def seek(self, partition, offset: int) -> None:
        """Read `partition` from `offset` next.

        Parameters
        ----------
        partition
            One of the partitions read.
        offset
            The first offset to read.
        """
        key = self._key(partition)
        self._next[key] = offset
        self._ended.discard(key)
        if key not in self._assigned:
            self._pending[key] = offset
        elif self.path == "broker":
            self._consumer.seek(Partition(*key, offset))
        else:
            self._kafka.seek(TopicPartition(*key), offset)
            self._end[key] = None
            self._still[key] = 0

    def seek_to_end(self) -> None:
        """Read only records written from now on."""
        for key in self.partitions:
            self._ended.discard(key)
            if key not in self._assigned:
                self._pending[key] = OFFSET_END
            elif self.path == "broker":
                self._consumer.seek(Partition(*key, OFFSET_END))
            else:
                self._kafka.seek_to_end(TopicPartition(*key))

    def read_only(self, partitions: Iterable) -> None:
        """Fetch only `partitions` (some of those read) from now on: the others keep their
        positions, read on from there once given back; what was fetched of them and not yet
        polled is dropped, so that records are held for the partitions read only.

        Parameters
        ----------
        partitions
            The partitions to fetch.
        """
        self._wanted = {self._key(p) for p in partitions}

    def _sync(self) -> None:
        """Assign the partitions wanted, each from its pending start or where it was left
        (at each poll: librdkafka seeks assigned partitions only, so a `seek` before the first
        poll is where it starts)."""
        dropped, added = self._assigned - self._wanted, self._wanted - self._assigned
        if not dropped and not added:
            return
        if self.path == "broker":
            if dropped:
                self._consumer.incremental_unassign([Partition(*k) for k in dropped])
            starts = [Partition(*k, self._pending.pop(k, self._next[k])) for k in added]
            if starts:
                self._consumer.incremental_assign(starts)
        else:
            for key in dropped:
                self._next[key] = self._kafka.position(TopicPartition(*key))
            self._kafka.assign([TopicPartition(*k) for k in self._wanted])
            for key in added:
                tp, start = TopicPartition(*key), self._pending.pop(key, self._next[key])
                if start == OFFSET_BEGINNING:
                    self._kafka.seek_to_beginning(tp)
                elif start == OFFSET_END:
                    self._kafka.seek_to_end(tp)
                else:
                    self._kafka.seek(tp, start)
                self._end[key] = None
                self._still[key] = 0
        self._assigned = set(self._wanted)

    def poll(self, timeout_ms: int) -> list[Record]:
        """The committed records ready (`Record`s), waiting up to `timeout_ms` for some.

        Parameters
        ----------
        timeout_ms
            How long to wait for a first record.
        """
        self._sync()
        if self.path == "broker":
            return self._poll_broker(timeout_ms)
        return self._poll_client(timeout_ms)

    def _poll_broker(self, timeout_ms: int) -> list[Record]:
        messages = self._consumer.consume(1000, timeout_ms / 1000)
        records = []
        for message in messages:
            error, topic, p, offset = (
                message.error(),
                message.topic(),
                message.partition(),
                message.offset(),
            )
            if error is not None and error.code() != KafkaError._PARTITION_EOF:
                if error.fatal() or error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                    raise TopicError(f"reading {topic or self.topic}: {error.str()}")
                continue  # a fault librdkafka retries
            if topic is None or p is None or offset is None:
                continue
            key = (topic, p)
            if key not in self._assigned or offset < self._next[key]:
                continue  # fetched before a `read_only` or a `seek`
            if error is not None:  # the end reached, control markers passed
                self._ended.add(key)
                self._next[key] = offset
                continue
            self._ended.discard(key)
            self._next[key] = offset + 1
            headers = message.headers() or []
            records.append(
                Record(
                    topic,
                    p,
                    offset,
                    message.key(),
                    message.value(),
                    list(headers),
                    message.timestamp()[1],
                )
            )
        return records

    def _poll_client(self, timeout_ms: int) -> list[Record]:
        before = {k: self.position(k) for k in self._assigned}
        records = []
        for batch in self._kafka.poll(timeout_ms=timeout_ms).values():
            for r in batch:
                records.append(
                    Record(
                        r.topic, r.partition, r.offset, r.key, r.value, list(r.headers), r.timestamp
                    )
                )
        for key in self._assigned:  # control markers move the position without records
            self._moved[key] = self.position(key) != before[key]
        return records

    def position(self, partition) -> int:
        """The offset after the last record of `partition` read or passed (where it starts,
        before the first poll that reads it: 0 for its beginning).

        Parameters
        ----------
        partition
            One of the partitions read.
        """
        key = self._key(partition)
        if self.path == "client" and key in self._assigned:
            return self._kafka.position(TopicPartition(*key))
        return max(self._next[key], 0)

    def at_end(self, partition) -> bool:
        """Whether `partition` was read up to its end as the broker reports it (call it after
        each `poll`: on the client path, the end is past once three polls have not moved).

        Parameters
        ----------
        partition
            One of the partitions read.
        """
        key = self._key(partition)
        if self.path == "broker":
            return key in self._ended
        # Tansu's ListOffsets answers the base offset of the log's last batch + 1: read at least
        # up to it, then until the position stops moving (markers move it without records)
        end = self._end.get(key)
        if end is None:  # asked only by a reader that looks for the end
            tp = TopicPartition(*key)
            end = self._end[key] = self._kafka.end_offsets([tp])[tp]
        behind = self.position(key) < end
        moved = self._moved.pop(key, False)
        self._still[key] = 0 if moved or behind else self._still[key] + 1
        return self._still[key] >= 3

    def ends(self, timeout_ms: int) -> dict[tuple[str, int], int]:
        """Where a read of each partition up to now stops (then `seek` where to read): on the
        broker path the last stable offset, before any transaction still open (librdkafka's
        read_committed returns nothing past it until that transaction ends); on the client
        path the log's end, control markers included (the records of a transaction open now
        are held until its marker, past that end). `BrokerUnavailable` past `timeout_ms`.

        The offsets Kafka lists are exact. The demo broker's understate them: it lists the
        base offset of the log's last batch + 1 (under read_committed, 0 while a transaction is
        open), so each partition is read from the offset listed - 1 up to where the reader
        stops: the end of its fetch (client path), the end librdkafka reports (broker path).

        Parameters
        ----------
        timeout_ms
            How long to wait for the last records.
        """
        self.read_only(self.partitions)
        if self.path == "broker":
            listed = {
                k: self._consumer.get_watermark_offsets(
                    Partition(*k), timeout=timeout_ms / 1000, cached=False
                )[1]
                for k in self.partitions
            }
        else:
            tps = [TopicPartition(*k) for k in self.partitions]
            listed = {tuple(tp): end for tp, end in self._kafka.end_offsets(tps).items()}
        for key in self.partitions:
            self.seek(key, max(listed[key] - 1, 0))
        if self.path == "broker":
            waiting = set(self.partitions)
            done = lambda key: key in self._ended  # noqa: E731
        else:  # a poll returns whole fetches, so the position passes the last batch at once
            waiting = {k for k in self.partitions if listed[k] > 0}
            done = lambda key: self.position(key) >= listed[key]  # noqa: E731
        deadline = time.monotonic() + timeout_ms / 1000
        while waiting:
            self.poll(POLL_MS)
            waiting = {k for k in waiting if not done(k)}
            if waiting and time.monotonic() > deadline:
                raise BrokerUnavailable(
                    f"cannot read the last records of {sorted(waiting)} within {timeout_ms} ms"
                )
        return {k: self.position(k) for k in self.partitions}

    def close(self) -> None:
        if self.path == "broker":
            self._consumer.close()
        else:
            self._kafka.close(autocommit=False)


def committed_consumer(*topics: str, **config) -> KafkaConsumer:
    """A `KafkaConsumer` (same arguments) that returns committed transactional records only.

    Use it to read what ``river-cw serve`` wrote under exactly-once (its predictions and dead
    letters) on a broker that does not list aborted transactions (the demo broker): a plain
    consumer there also returns the records of aborted transactions, such as those a killed
    server had written since its last commit. On a broker that lists them (Apache Kafka),
    ``KafkaConsumer(isolation_level="read_committed")`` does the same with kafka-python's
    supported API. `RuntimeError` on a kafka-python this was not tested with (see the module).

    Parameters
    ----------
    *topics
        Topics to subscribe to (or `assign` partitions later, as with `KafkaConsumer`).
    **config
        `KafkaConsumer`'s settings (``bootstrap_servers``, ``group_id``, ``auto_offset_reset``,
        ``consumer_timeout_ms``...); ``isolation_level`` is set to ``"read_uncommitted"``.

    Examples
    --------

    With a broker at 127.0.0.1:9092 and ``river-cw serve --topic examples`` serving on it (the
    Kafka guide runs this in the tests):

    ```python
    consumer = committed_consumer(
        "examples.predictions",
        bootstrap_servers="127.0.0.1:9092",
        auto_offset_reset="earliest",
        consumer_timeout_ms=5000,  # the loop ends after 5 s without a record
    )
    for record in consumer:
        print(json.loads(record.value))
    ```

    """
    _check_kafka_python()
    consumer = KafkaConsumer(*topics, isolation_level="read_uncommitted", **config)
    held: dict = {}  # (topic-partition, producer id) -> {offset: record} waiting for a marker

    class PartitionRecords(Fetcher.PartitionRecords):
        def _maybe_skip_record(self, record):
            return False  # `_unpack_records` skips what lies before the fetch offset

        def _unpack_records(self, tp, records, key_deserializer, value_deserializer):
            # next_fetch_offset (the consumer's position after a `take`) only passes what has
            # been returned or is held
            for batch in _batches(records):
                if batch.next_offset <= self.fetch_offset:
                    continue
                if batch.magic < 2 or not batch.is_transactional:
                    for record in _records(tp, batch, self):
                        if record.offset >= self.fetch_offset:
                            self.next_fetch_offset = record.offset + 1
                            yield record
                elif batch.is_control_batch:
                    marker = next(iter(batch), None)
                    ended = _ended(held, (tp, batch.producer_id), batch.base_offset)
                    if marker is not None and not marker.abort:
                        yield from ended
                    else:
                        for _ in ended:  # aborted: dropped
                            pass
                else:
                    waiting = held.setdefault((tp, batch.producer_id), {})
                    for record in _records(tp, batch, self):
                        if record.offset >= self.fetch_offset:
                            waiting[record.offset] = record
                self.next_fetch_offset = batch.next_offset
            self.drain()

    consumer._fetcher.PartitionRecords = PartitionRecords
    return consumer


def _check_kafka_python() -> None:
    """`RuntimeError` unless the installed kafka-python is one the client path was tested on
    (it replaces a private part of kafka-python's fetcher: see the module)."""
    version = metadata.version("kafka-python")
    if version not in KAFKA_PYTHON_TESTED:
        raise RuntimeError(
            f"committed reads on a broker that does not list aborted transactions (the demo "
            f"broker) were tested with kafka-python {', '.join(KAFKA_PYTHON_TESTED)}, not "
            f"{version}: install that version (pyproject.toml pins it)"
        )


def _ended(held: dict, key, marker_offset: int):
    """The records of `held[key]` before the marker at `marker_offset`, in offset order, each
    taken out of it as it is handed over. The consumer's position stays at the marker until
    every one is, so a reader dropped part-way (its records fetched again from the marker) finds
    the rest still held; taken out all at once, they were lost with it."""
    waiting = held.get(key, {})
    for offset in sorted(o for o in waiting if o < marker_offset):
        yield waiting.pop(offset)
    if not waiting:
        held.pop(key, None)


def _batches(records):
    batch = records.next_batch()
    while batch is not None:
        yield batch
        batch = records.next_batch()


def _records(tp, batch, parsed):
    for record in batch:
        parsed.records_read += 1
        parsed.bytes_read += record.size_in_bytes
        yield ConsumerRecord(
            tp.topic,
            tp.partition,
            getattr(batch, "leader_epoch", -1),
            record.offset,
            record.timestamp,
            record.timestamp_type,
            record.key,
            record.value,
            record.headers,
            record.checksum,
            -1 if record.key is None else len(record.key),
            -1 if record.value is None else len(record.value),
            -1,
        )
