"""The server's input: records of co-partitioned topics, by consumer group or static assignment.

The topics are the examples topic and, optionally, the labels topic, with the same number of
partitions and both keyed by example id, so that an example and its label land in the same
partition number. `KafkaSource` works in one of two modes:

- consumer group (`group_id`): partitions are split between the members; the range assignor
  gives each member the same partition numbers of both topics. On every rebalance, inside
  `poll`, `on_revoke` (the member still owns them: save now) or `on_lost` (it was evicted
  from the group: another member may own them already) and then `on_assign` are called with
  partition numbers.
- static (`partitions`, or all of them): no group, no rebalances; restarts are immediate.

It never commits offsets itself: the caller keeps its own offsets and `seek`s to them (inside
`on_assign`: where reading starts), and commits them inside its transactions with the
consumer's `group_metadata` (`streams.kafka.outputs.Outputs.commit`). librdkafka
(confluent-kafka) reads the records: see `streams.kafka.client` for why.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)

from streams.kafka.client import BrokerUnavailable, KafkaSettings, TopicError, check_connection

__all__ = ["KafkaSource"]

Callback = Callable[[set[int]], None]


class KafkaSource:
    """Records (confluent-kafka `Message`s) of co-partitioned `topics`; the offsets of a static
    source or a group without one of its own are committed under `offsets_group`."""

    def __init__(
        self,
        settings: KafkaSettings,
        topics: Iterable[str],
        *,
        group_id: str | None = None,
        partitions: Iterable[int] | None = None,
        offsets_group: str | None = None,
        batch: int = 1000,
    ):
        if group_id is not None and partitions is not None:
            raise ValueError("give a consumer group or static partitions, not both")
        self.topics = list(topics)
        self.group_id = group_id
        self.batch = batch
        self.partitions: set[int] = set()  # assigned partition numbers (the same in every topic)
        self.assigned_at: float | None = None  # monotonic time of the first assignment
        self._static = None if partitions is None else set(partitions)
        self._on_assign: Callback = _ignore
        self._on_revoke: Callback = _ignore
        self._on_lost: Callback = _ignore
        self._starts: dict[tuple[str, int], int] | None = None  # offsets chosen in on_assign
        check_connection(settings)  # BrokerUnavailable, saying why
        self._consumer = Consumer(
            settings.librdkafka(
                **{
                    "group.id": group_id or offsets_group or "river-cw",
                    "enable.auto.commit": False,
                    "enable.auto.offset.store": False,
                    "auto.offset.reset": "earliest",
                    "session.timeout.ms": settings.session_timeout_ms,
                    "heartbeat.interval.ms": settings.heartbeat_interval_ms,
                    "max.poll.interval.ms": settings.max_poll_interval_ms,
                    "fetch.wait.max.ms": settings.fetch_max_wait_ms,
                    "partition.assignment.strategy": "range",
                }
            )
        )
        try:
            self._count = self._check_topics(settings)
        except BaseException:
            self._consumer.close()
            raise

    @property
    def partition_count(self) -> int:
        """Partitions of each topic (the same in every topic)."""
        return self._count

    def _check_topics(self, settings: KafkaSettings) -> int:
        try:
            metadata = self._consumer.list_topics(timeout=settings.connect_timeout_ms / 1000)
        except KafkaException as error:
            raise BrokerUnavailable(
                f"cannot reach a Kafka broker at {settings.bootstrap_servers} within "
                f"{settings.connect_timeout_ms} ms ({error.args[0].str()})"
            ) from None
        counts = {}
        for topic in self.topics:
            found = metadata.topics.get(topic)
            if found is None or found.error is not None or not found.partitions:
                raise TopicError(f"topic {topic!r} does not exist on the broker")
            counts[topic] = len(found.partitions)
        if len(set(counts.values())) > 1:
            raise TopicError(
                f"topics must have the same number of partitions (co-partitioned by id), "
                f"got {counts}"
            )
        return counts[self.topics[0]]

    def start(self, on_assign: Callback, on_revoke: Callback, on_lost: Callback) -> None:
        """Join the group (callbacks run inside `poll`) or take the static partitions now."""
        self._on_assign, self._on_revoke, self._on_lost = on_assign, on_revoke, on_lost
        if self.group_id is not None:
            self._consumer.subscribe(
                self.topics,
                on_assign=self._assigned,
                on_revoke=self._revoked,
                on_lost=self._lost,
            )
            return
        wanted = set(range(self._count)) if self._static is None else self._static
        if not wanted <= set(range(self._count)):
            raise TopicError(
                f"topic {self.topics[0]!r} has partitions 0..{self._count - 1}, "
                f"asked for {sorted(wanted)}"
            )
        self._assign(wanted)

    def _assigned(self, consumer, partitions: list[TopicPartition]) -> None:
        self._assign({tp.partition for tp in partitions})

    def _assign(self, partitions: set[int]) -> None:
        """Call `on_assign` for the new partitions, then read each from where it `seek`ed."""
        new = partitions - self.partitions
        self.partitions |= partitions
        self._starts = {}
        try:
            if new:
                self._on_assign(new)
        finally:
            starts, self._starts = self._starts, None
        if self.assigned_at is None:
            self.assigned_at = time.monotonic()
        self._consumer.assign(
            [
                TopicPartition(t, p, starts.get((t, p), OFFSET_BEGINNING))
                for t in self.topics
                for p in sorted(self.partitions)
            ]
        )

    def _revoked(self, consumer, partitions: list[TopicPartition]) -> None:
        self._take_away({tp.partition for tp in partitions}, self._on_revoke)

    def _lost(self, consumer, partitions: list[TopicPartition]) -> None:
        self._take_away({tp.partition for tp in partitions}, self._on_lost)

    def _take_away(self, partitions: set[int], callback: Callback) -> None:
        owned = partitions & self.partitions
        self.partitions -= partitions
        try:
            if owned:
                callback(owned)
        finally:
            self._consumer.unassign()

    def poll(self, timeout_ms: int) -> list:
        """The records ready (up to `batch`; waiting up to `timeout_ms` for a first one), in
        offset order within each partition."""
        # consume(n, timeout) would wait for n records: wait for one, then take what is ready
        messages = self._consumer.consume(self.batch, 0)
        if not messages:
            first = self._consumer.poll(timeout_ms / 1000)
            if first is None:
                return []
            messages = [first, *self._consumer.consume(self.batch - 1, 0)]
        if not any(map(Message.error, messages)):
            return messages
        # events, not records: a deleted topic ends serving
        for error in filter(None, map(Message.error, messages)):
            if error.fatal() or error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise TopicError(f"reading {self.topics}: {error.str()}")
        return [m for m in messages if m.error() is None]

    def seek(self, topic: str, partition: int, offset: int | None) -> None:
        """Read `topic`/`partition` from `offset` next; None means from the beginning."""
        start = OFFSET_BEGINNING if offset is None else offset
        if self._starts is not None:  # inside on_assign: where reading starts
            self._starts[(topic, partition)] = start
        else:
            self._consumer.seek(TopicPartition(topic, partition, start))

    def committed(self, partition: int, timeout: float) -> dict[str, int]:
        """The offsets the consumer's group has committed for `partition` of each topic (a
        topic without one is left out); within `timeout` s, else `BrokerUnavailable`."""
        try:
            found = self._consumer.committed(
                [TopicPartition(t, partition) for t in self.topics], timeout=timeout
            )
        except KafkaException as error:
            raise BrokerUnavailable(
                f"cannot read the committed offsets of partition {partition}: {error.args[0].str()}"
            ) from None
        return {tp.topic: tp.offset for tp in found if tp.offset >= 0}

    def group_metadata(self):
        """The consumer's group metadata, for offsets committed in a transaction."""
        return self._consumer.consumer_group_metadata()

    def lag(self) -> dict[int, int] | None:
        """Per assigned partition, messages behind the high watermarks of the last fetches
        (summed over the topics); None until every partition has been fetched from.

        Tansu 0.6's ListOffsets answers the base offset of the last batch + 1, not the log end,
        so the watermarks of the fetch replies are used (`cached`), not a query."""
        lag: dict[int, int] = {}
        assignment = self._consumer.assignment()
        if not assignment:
            return {} if not self.partitions else None
        for tp in self._consumer.position(assignment):
            _, high = self._consumer.get_watermark_offsets(tp, cached=True)
            if high < 0 or tp.offset < 0:
                return None
            lag[tp.partition] = lag.get(tp.partition, 0) + max(0, high - tp.offset)
        return lag

    def close(self) -> None:
        """Leave the group without calling back: the caller has saved what it wanted to."""
        self._on_assign = self._on_revoke = self._on_lost = _ignore
        self._consumer.close()


def _ignore(partitions: set[int]) -> None:
    return None
