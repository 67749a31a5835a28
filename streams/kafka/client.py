"""Kafka plumbing (kafka-python): connection settings, topic creation, a source, and sinks.

The source reads co-partitioned topics (the examples topic and, optionally, the labels topic,
with the same number of partitions and both keyed by example id, so that an example and its
label land in the same partition number). It works in one of two modes:

- consumer group (`group_id`): partitions are split between the members; the range assignor
  gives each member the same partition numbers of both topics. On every rebalance, inside
  `poll`, `on_revoke` (the member still owns them: save now) or `on_lost` (it was evicted
  from the group: another member may own them already) and then `on_assign` are called with
  partition numbers.
- static (`partitions`, or all of them): no group, no rebalances; restarts are immediate.

It never commits offsets itself: the caller keeps its own offsets and `seek`s to them (the
server commits them inside its transactions, through `Outputs`). `Outputs` writes a server's
outputs, in Kafka transactions or not.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.errors import (
    KafkaError,
    KafkaTimeoutError,
    ProducerFencedError,
    TopicAlreadyExistsError,
)
from kafka.structs import OffsetAndMetadata

Callback = Callable[[set[int]], None]


class BrokerUnavailable(RuntimeError):
    """No Kafka broker answered at the bootstrap address."""


class TopicError(RuntimeError):
    """A topic is missing or the topics are not co-partitioned."""


@dataclass(frozen=True)
class KafkaSettings:
    """Connection and group settings.

    kafka-python's group defaults make joins slow (the rebalance waits up to
    max_poll_interval_ms, 300 s); these defaults let two members split partitions in ~3 s.
    A member must poll again within max_poll_interval_ms, checkpoint included.
    """

    bootstrap_servers: str = "127.0.0.1:9092"
    session_timeout_ms: int = 6000
    heartbeat_interval_ms: int = 1000
    max_poll_interval_ms: int = 10000
    connect_timeout_ms: int = 10000  # give up at start when no broker answers within this
    fetch_max_wait_ms: int = 100

    def _common(self) -> dict:
        return {
            "bootstrap_servers": self.bootstrap_servers,
            "bootstrap_timeout_ms": self.connect_timeout_ms,
        }


def _connect(factory: Callable, settings: KafkaSettings, **config):
    try:
        return factory(**settings._common(), **config)
    except KafkaTimeoutError as error:
        raise BrokerUnavailable(
            f"cannot reach a Kafka broker at {settings.bootstrap_servers} "
            f"within {settings.connect_timeout_ms} ms ({error})"
        ) from None


def create_topics(
    bootstrap_servers: str, topics: dict[str, int], configs: dict[str, str] | None = None
) -> None:
    """Create topics (name -> number of partitions, with topic `configs`); existing ones are
    left as they are."""
    settings = KafkaSettings(bootstrap_servers)
    admin = _connect(KafkaAdminClient, settings)
    try:
        for name, partitions in topics.items():
            try:
                admin.create_topics([NewTopic(name, partitions, 1, topic_configs=configs or {})])
            except TopicAlreadyExistsError:
                pass
    finally:
        admin.close()


def topic_partitions(settings: KafkaSettings, topic: str) -> list[int]:
    """The partition numbers of `topic`; `TopicError` when it does not exist."""
    consumer = _connect(KafkaConsumer, settings)
    try:
        partitions = consumer.partitions_for_topic(topic)
    finally:
        consumer.close(autocommit=False)
    if not partitions:
        raise TopicError(f"topic {topic!r} does not exist on the broker")
    return sorted(partitions)


def log_reaches(settings: KafkaSettings, topic: str, partition: int, offset: int) -> bool:
    """Whether `topic`/`partition` holds records up to `offset` (its end is at least there).

    Tansu's ListOffsets answers the base offset of the log's last batch + 1 (an understatement)
    and its fetch replies' high watermarks are unreliable, so past that answer the record at
    `offset - 1` is fetched.
    """
    if offset <= 0:
        return True
    consumer = _connect(
        KafkaConsumer,
        settings,
        enable_auto_commit=False,
        auto_offset_reset="latest",
        fetch_max_wait_ms=settings.fetch_max_wait_ms,
    )
    tp = TopicPartition(topic, partition)
    try:
        consumer.assign([tp])
        if consumer.end_offsets([tp])[tp] >= offset:
            return True
        consumer.seek(tp, offset - 1)
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            if consumer.poll(timeout_ms=100).get(tp):
                return True
            if consumer.position(tp) > offset - 1:  # moved past it: a control marker
                return True
        return False
    finally:
        consumer.close(autocommit=False)


class _Listener(ConsumerRebalanceListener):
    """Passes rebalances on as partition numbers; keeps what a callback raised, which
    kafka-python turns into a bare KafkaError, so that `poll` raises it as it was."""

    def __init__(self, source: KafkaSource):
        self.source = source

    def _call(self, assigned: set[int], revoked: set[int] = frozenset(), lost: bool = False):
        try:
            self.source._set_assignment(assigned, revoked, lost)
        except Exception as error:
            self.source._callback_error = error
            raise

    def on_partitions_revoked(self, revoked):
        self._call(set(), {tp.partition for tp in revoked})

    def on_partitions_lost(self, lost):
        self._call(set(), {tp.partition for tp in lost}, lost=True)

    def on_partitions_assigned(self, assigned):
        self._call({tp.partition for tp in assigned})


class KafkaSource:
    """Records of co-partitioned `topics`, by consumer group or static assignment."""

    def __init__(
        self,
        settings: KafkaSettings,
        topics: list[str],
        *,
        group_id: str | None = None,
        partitions: Iterable[int] | None = None,
    ):
        if group_id is not None and partitions is not None:
            raise ValueError("give a consumer group or static partitions, not both")
        self.topics = list(topics)
        self.group_id = group_id
        self.partitions: set[int] = set()  # assigned partition numbers (the same in every topic)
        self._static = None if partitions is None else set(partitions)
        self._on_assign = self._on_revoke = self._on_lost = lambda partitions: None
        self._callback_error: Exception | None = None
        self._consumer = _connect(
            KafkaConsumer,
            settings,
            group_id=group_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=settings.session_timeout_ms,
            heartbeat_interval_ms=settings.heartbeat_interval_ms,
            max_poll_interval_ms=settings.max_poll_interval_ms,
            fetch_max_wait_ms=settings.fetch_max_wait_ms,
            partition_assignment_strategy=(RangePartitionAssignor,),
        )
        try:
            self._count = self._check_topics()
        except BaseException:
            self.close()
            raise

    @property
    def partition_count(self) -> int:
        """Partitions of each topic (the same in every topic)."""
        return self._count

    def start(self, on_assign: Callback, on_revoke: Callback, on_lost: Callback) -> None:
        """Join the group (callbacks run inside `poll`) or take the static partitions now."""
        self._on_assign, self._on_revoke, self._on_lost = on_assign, on_revoke, on_lost
        if self.group_id is not None:
            self._consumer.subscribe(self.topics, listener=_Listener(self))
            return
        wanted = set(range(self._count)) if self._static is None else self._static
        if not wanted <= set(range(self._count)):
            raise TopicError(
                f"topic {self.topics[0]!r} has partitions 0..{self._count - 1}, "
                f"asked for {sorted(wanted)}"
            )
        self._consumer.assign([TopicPartition(t, p) for t in self.topics for p in sorted(wanted)])
        self._set_assignment(wanted)

    def _check_topics(self) -> int:
        counts = {}
        for topic in self.topics:
            partitions = self._consumer.partitions_for_topic(topic)
            if not partitions:
                raise TopicError(f"topic {topic!r} does not exist on the broker")
            counts[topic] = len(partitions)
        if len(set(counts.values())) > 1:
            raise TopicError(
                f"topics must have the same number of partitions (co-partitioned by id), "
                f"got {counts}"
            )
        return counts[self.topics[0]]

    def _set_assignment(
        self, assigned: set[int], revoked: set[int] = frozenset(), lost: bool = False
    ) -> None:
        if revoked & self.partitions:
            (self._on_lost if lost else self._on_revoke)(revoked & self.partitions)
            self.partitions -= revoked
        new = assigned - self.partitions
        self.partitions |= assigned
        if new:
            self._on_assign(new)

    def poll(self, timeout_ms: int) -> list:
        """Records of one fetch, in offset order within each topic-partition."""
        try:
            batches = self._consumer.poll(timeout_ms=timeout_ms)
        except KafkaError:
            if self._callback_error is not None:
                raise self._callback_error from None
            raise
        return [record for records in batches.values() for record in records]

    def seek(self, topic: str, partition: int, offset: int | None) -> None:
        """Read `topic`/`partition` from `offset` next; None means from the beginning."""
        tp = TopicPartition(topic, partition)
        if offset is None:
            self._consumer.seek_to_beginning(tp)
        else:
            self._consumer.seek(tp, offset)

    def lag(self) -> int | None:
        """Messages behind the high watermarks of the assigned partitions, if known yet.

        Uses the high watermark of the last fetch (Tansu 0.6's ListOffsets answers the base
        offset of the last batch + 1, not the log end, so `end_offsets` would understate it).
        """
        total = 0
        for tp in self._consumer.assignment():
            high = self._consumer.highwater(tp)
            if high is None:
                return None
            total += max(0, high - self._consumer.position(tp))
        return total

    def close(self) -> None:
        """Leave the group without calling back: the caller has saved what it wanted to."""
        self._on_assign = self._on_revoke = self._on_lost = lambda partitions: None
        self._consumer.close(autocommit=False)


class Outputs:
    """A producer of a server's outputs: predictions, dead letters and state snapshots.

    With `transactional_id` every write goes into the transaction open at the time (`begin`,
    `commit` with the consumed offsets); a newer producer with the same id fences this one
    (`Fenced`). Without, `flush` blocks until the broker has acknowledged every write.

    A dead letter forwards the record's key and value as they came, unless together they exceed
    `forward_limit` bytes (the producer's request limit is 1 MiB): then only the first
    `head_bytes` of each are kept; the `size` header tells the original value's size.
    """

    forward_limit = 1_000_000
    head_bytes = 1024

    def __init__(self, settings: KafkaSettings, transactional_id: str | None = None):
        config = {"acks": "all", "linger_ms": 5, "max_request_size": 1_048_576}
        if transactional_id is not None:
            config["transactional_id"] = transactional_id
        self._producer = _connect(KafkaProducer, settings, **config)
        self.transactional = transactional_id is not None
        self.in_transaction = False
        self._sent: list = []  # futures since the last flush
        if self.transactional:
            self._call(self._producer.init_transactions)  # aborts what a dead owner left open

    def _call(self, method, *args):
        try:
            return method(*args)
        except ProducerFencedError:
            raise Fenced("another server took this partition over") from None
        except KafkaError as error:
            raise BrokerUnavailable(f"Kafka transaction failed: {error}") from None

    def begin(self) -> None:
        if self.transactional and not self.in_transaction:
            self._call(self._producer.begin_transaction)
            self.in_transaction = True

    def commit(self, offsets: dict[TopicPartition, int], group_id: str | None) -> None:
        """Commit the open transaction with the consumed `offsets` of `group_id` (none: no
        offsets)."""
        if not self.in_transaction:
            return
        if offsets:
            committed = {tp: OffsetAndMetadata(offset, "", -1) for tp, offset in offsets.items()}
            self._call(self._producer.send_offsets_to_transaction, committed, group_id)
        self._call(self._producer.commit_transaction)
        self.in_transaction = False
        self._check_sent()

    def abort(self) -> None:
        """Abort the open transaction: its writes are dropped by committed readers."""
        if self.in_transaction:
            self._call(self._producer.abort_transaction)
            self.in_transaction = False
            self._sent.clear()

    def send(self, topic: str, **message):
        self.begin()
        try:
            future = self._producer.send(topic, **message)
        except ProducerFencedError:
            raise Fenced("another server took this partition over") from None
        except KafkaError as error:
            raise BrokerUnavailable(f"could not send to {topic!r}: {error}") from None
        self._sent.append(future)
        return future

    def dead_letter(self, topic: str, record, reason: str) -> None:
        """Forward `record` (key and value bytes, cut to their heads when over-large), with the
        reason, its origin and its size in headers."""
        key, value = record.key, record.value
        size = len(value or b"")
        headers = [
            ("reason", reason[:10_000].encode("utf-8", "backslashreplace")),
            ("topic", record.topic.encode()),
            ("partition", str(record.partition).encode()),
            ("offset", str(record.offset).encode()),
            ("size", str(size).encode()),
        ]
        if len(key or b"") + size > self.forward_limit:
            key = None if key is None else key[: self.head_bytes]
            value = value[: self.head_bytes]
            headers.append(("truncated", str(self.head_bytes).encode()))
        self.send(topic, key=key, value=value, headers=headers)

    def flush(self) -> None:
        """Wait until every message sent so far is acknowledged; raise if any was not."""
        self._call(self._producer.flush)
        self._check_sent()

    def _check_sent(self) -> None:
        failed = [future.exception for future in self._sent if future.failed()]
        self._sent.clear()
        if failed:
            if isinstance(failed[0], ProducerFencedError):
                raise Fenced("another server took this partition over")
            raise BrokerUnavailable(f"{len(failed)} messages were not delivered: {failed[0]}")

    def close(self) -> None:
        """Close; an open transaction is left to be aborted by the next owner (or expire)."""
        self._producer.close(timeout=5)


class Fenced(RuntimeError):
    """A newer producer with the same transactional id exists: this server lost the partition."""
