"""The server's record collector: a producer of outputs, in Kafka transactions or not.

`Outputs` writes predictions, dead letters, state snapshots and mixing contributions. With a
`transactional_id` every write goes into the transaction open at the time (`begin`, then
`commit` with the consumed offsets); a newer producer with the same id fences this one
(`Fenced`). Without, `flush` blocks until the broker has acknowledged every write.

A transactional call that cannot complete (the broker stopped answering, the transaction was
aborted under it) raises `CommitFailed` after `KafkaSettings.transaction_timeout_ms`, or at once
when `interrupt` is set: the caller drops what the transaction held and restores the partition
from its last committed state. librdkafka (confluent-kafka) produces: see `streams.kafka.client`.
"""

from __future__ import annotations

import threading
import time

from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition

from streams.kafka.client import BrokerUnavailable, KafkaSettings

__all__ = ["CommitFailed", "Delivery", "Fenced", "Outputs"]

_FENCED = {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}


class Fenced(RuntimeError):
    """A newer producer with the same transactional id exists: this server lost the partition."""


class CommitFailed(RuntimeError):
    """A transaction could not be committed (nor its fate learned): its writes do not count."""


class Delivery:
    """Where a record landed: its `offset` once the producer flushed or committed it (a
    failed delivery fails the flush or the commit instead)."""

    __slots__ = ("_offset", "error")

    def __init__(self):
        self._offset: int | None = None
        self.error = None

    def __call__(self, error, message) -> None:  # librdkafka's delivery report
        self.error = error
        if error is None:
            self._offset = message.offset()

    @property
    def offset(self) -> int:
        if self._offset is None:
            raise RuntimeError(f"no offset: the record is not delivered ({self.error})")
        return self._offset


class Outputs:
    """A producer of a server's outputs (see the module docstring).

    A dead letter forwards the record's key and value as they came, unless together they exceed
    `forward_limit` bytes (the producer's request limit is 1 MiB): then only the first
    `head_bytes` of each are kept; the `size` header tells the original value's size.
    """

    forward_limit = 1_000_000
    head_bytes = 1024

    def __init__(
        self,
        settings: KafkaSettings,
        transactional_id: str | None = None,
        interrupt: threading.Event | None = None,
    ):
        properties = {
            "linger.ms": 5,
            "message.max.bytes": 1_100_000,  # a dead letter at the forward limit, headers and all
            "partitioner": "murmur2_random",  # the Java client's partitions for a key
        }
        if transactional_id is not None:  # a failed write fails the commit: no reports needed
            properties["transactional.id"] = transactional_id
            properties["transaction.timeout.ms"] = settings.transaction_timeout_ms
        else:  # every record's report, for `flush` to tell a failed write
            properties["acks"] = "all"
            properties["message.timeout.ms"] = settings.transaction_timeout_ms
            properties["on_delivery"] = self._delivered
        self._producer = Producer(settings.librdkafka(**properties))
        self.transactional = transactional_id is not None
        self.in_transaction = False
        self._timeout = settings.transaction_timeout_ms / 1000
        self._interrupt = interrupt or threading.Event()
        self._failed: list = []  # delivery errors since the last flush
        if self.transactional:  # fences and aborts what a previous owner left open
            try:
                self._call(self._producer.init_transactions)
            except CommitFailed as error:
                self._producer.close()
                raise BrokerUnavailable(
                    f"cannot start transactions on {settings.bootstrap_servers}: {error}"
                ) from None

    def _delivered(self, error, message) -> None:
        if error is not None:
            self._failed.append(error)

    def _call(self, method, *args) -> None:
        """A transactional call, retried while librdkafka says it may be, until the
        transaction timeout or `interrupt`."""
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                return method(*args, min(5.0, self._timeout))
            except KafkaException as exception:
                error = exception.args[0]
                if error.code() in _FENCED:
                    raise Fenced("another server took this partition over") from None
                if error.txn_requires_abort():
                    self._abort_quietly()
                    raise CommitFailed(f"the transaction was aborted: {error.str()}") from None
                if not error.retriable() or time.monotonic() > deadline or self._interrupt.is_set():
                    raise CommitFailed(error.str()) from None

    def _abort_quietly(self) -> None:
        try:
            self._producer.abort_transaction(min(5.0, self._timeout))
        except KafkaException:
            pass
        self.in_transaction = False

    def begin(self) -> None:
        if self.transactional and not self.in_transaction:
            try:
                self._producer.begin_transaction()
            except KafkaException as exception:
                if exception.args[0].code() in _FENCED:
                    raise Fenced("another server took this partition over") from None
                raise CommitFailed(exception.args[0].str()) from None
            self.in_transaction = True

    def commit(self, offsets: dict[tuple[str, int], int], group_metadata) -> None:
        """Commit the open transaction with the consumed `offsets` ((topic, partition) -> next
        offset) of the consumer whose `group_metadata` is given (no offsets: none)."""
        if not self.in_transaction:
            return
        if offsets:
            self._call(
                self._producer.send_offsets_to_transaction,
                [TopicPartition(t, p, o) for (t, p), o in offsets.items()],
                group_metadata,
            )
        self._call(self._producer.commit_transaction)
        self.in_transaction = False
        self._producer.poll(0)  # the delivery reports left
        self._failed.clear()  # a failed write fails the commit itself

    def abort(self) -> None:
        """Abort the open transaction: its writes are dropped by committed readers."""
        if self.in_transaction:
            self._call(self._producer.abort_transaction)
            self.in_transaction = False
            self._failed.clear()

    def send(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        partition: int = -1,
        headers: list | None = None,
        delivery: Delivery | None = None,
    ) -> None:
        """Write a record (`partition` -1: by its key); `delivery` learns where it landed."""
        if self.transactional and not self.in_transaction:
            self.begin()
        options: dict = {} if headers is None else {"headers": headers}
        if delivery is not None:  # librdkafka calls a record's callback instead of ours

            def report(error, message, delivery=delivery) -> None:
                delivery(error, message)
                self._delivered(error, message)

            options["on_delivery"] = report
        while True:
            try:
                self._producer.produce(topic, value, key, partition, **options)
                return
            except BufferError:  # the local queue is full: let librdkafka send some
                self._producer.poll(0.1)
            except KafkaException as exception:
                if exception.args[0].code() in _FENCED:
                    raise Fenced("another server took this partition over") from None
                raise BrokerUnavailable(
                    f"could not send to {topic!r}: {exception.args[0].str()}"
                ) from None

    def send_many(self, topic: str, records: list[tuple[bytes, bytes]]) -> None:
        """Write (key, value) records to `topic`, each to the partition of its key: `send`
        without a Python call per record where the producer takes it at once."""
        if self.transactional and not self.in_transaction:
            self.begin()
        produce = self._producer.produce
        for key, value in records:
            try:
                produce(topic, value, key)
            except (BufferError, KafkaException):  # a full queue, or a fault: as `send` says
                self.send(topic, value, key)

    def dead_letter(self, topic: str, record, reason: str) -> None:
        """Forward `record` (key and value bytes, cut to their heads when over-large), with the
        reason, its origin and its size in headers."""
        key, value = record.key(), record.value()
        size = len(value or b"")
        headers = [
            ("reason", reason[:10_000].encode("utf-8", "backslashreplace")),
            ("topic", record.topic().encode()),
            ("partition", str(record.partition()).encode()),
            ("offset", str(record.offset()).encode()),
            ("size", str(size).encode()),
        ]
        if len(key or b"") + size > self.forward_limit:
            key = None if key is None else key[: self.head_bytes]
            value = value[: self.head_bytes]
            headers.append(("truncated", str(self.head_bytes).encode()))
        self.send(topic, value, key, headers=headers)

    def flush(self) -> None:
        """Wait until every record sent so far is acknowledged; raise if any was not."""
        left = self._producer.flush(self._timeout)
        failed, self._failed = self._failed, []
        if left:
            raise BrokerUnavailable(f"{left} messages not acknowledged in {self._timeout:.0f} s")
        if failed:
            raise BrokerUnavailable(f"{len(failed)} messages were not delivered: {failed[0].str()}")

    def close(self) -> None:
        """Close at once: an open transaction is aborted (here if the broker answers within a
        second, else by the broker or the next owner), records not yet sent are dropped."""
        if self.in_transaction:
            try:
                self._producer.abort_transaction(1.0)
            except KafkaException:
                pass
            self.in_transaction = False
        self._producer.purge()
        self._producer.flush(0)
        del self._producer  # destroyed here (`Producer.close` would wait for a fenced abort)
