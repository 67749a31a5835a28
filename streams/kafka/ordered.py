"""The committed records of whole topics, in one deterministic order: what a replay reads.

`ordered_records` reads every partition of some topics from the beginning through the committed
path (`streams.kafka.committed`: records of aborted transactions never come out) and yields the
records in the order of their keys (`order_key`): timestamp, then topic (in the order given),
then partition, then offset. On a topic of one partition that is the log's order; across
partitions and topics it is the order in which they were written, as their producer stamped them
(`river-cw produce` stamps its records with strictly increasing times, so they come back in
the order it wrote them); records stamped alike fall back on topic, partition and offset. A read
is repeatable: it stops at the end each partition had when it started (`log_ends`).

With `follow`, the records written after that end come next, as they arrive (sorted by key within
each fetch), until `stopped()` says so or nothing has come for `idle_timeout` seconds.

Memory is bounded: a partition whose buffered records run more than `BUFFERED` ahead of the
others is paused until they catch up.
"""

from __future__ import annotations

import heapq
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence

from kafka import TopicPartition

from streams.kafka.client import BrokerUnavailable, KafkaSettings, topic_partitions
from streams.kafka.committed import committed_consumer

__all__ = ["log_ends", "order_key", "ordered_records"]

BUFFERED = 10_000  # records held per partition before it is paused
POLL_MS = 100
WHOLE_FETCH = 1 << 30  # max_poll_records: no limit


def order_key(record, topics: Sequence[str]) -> tuple[int, int, int, int]:
    """Where a record comes in a replay: (timestamp, topic's rank in `topics`, partition,
    offset).

    Parameters
    ----------
    record
        A record (kafka-python's `ConsumerRecord`).
    topics
        The topics read, in the order that breaks ties.

    Examples
    --------

    >>> from kafka.consumer.fetcher import ConsumerRecord
    >>> record = ConsumerRecord("sms", 2, -1, 41, 1700000000000, 0, b"7", b"{}", [], None, 1, 2, -1)
    >>> order_key(record, ["sms.labels", "sms"])
    (1700000000000, 1, 2, 41)
    """
    return (record.timestamp, topics.index(record.topic), record.partition, record.offset)


def log_ends(settings: KafkaSettings, partitions: Sequence[TopicPartition]) -> dict:
    """The offset after the last record of each partition, now (control markers included).

    Kafka's ListOffsets answers that end; the demo broker's answers the base offset of the
    log's last batch + 1, an understatement: the last batch is fetched from there, and the
    consumer's position after it is the end (a poll returns whole fetches: `max_poll_records`
    would otherwise cut the batch short).

    Parameters
    ----------
    settings
        The connection.
    partitions
        The partitions (kafka-python `TopicPartition`s).

    Examples
    --------

    With the demo broker at 127.0.0.1:9092 and a topic ``sms``:

    ```python
    log_ends(KafkaSettings("127.0.0.1:9092"), [TopicPartition("sms", 0)])
    # {TopicPartition(topic='sms', partition=0): 1423}
    ```
    """
    consumer = committed_consumer(
        **settings.kafka_python(
            enable_auto_commit=False,
            fetch_max_wait_ms=settings.fetch_max_wait_ms,
            max_poll_records=WHOLE_FETCH,
        )
    )
    try:
        consumer.assign(list(partitions))
        listed = consumer.end_offsets(list(partitions))
        waiting = {tp for tp in partitions if listed[tp] > 0}
        for tp in waiting:
            consumer.seek(tp, listed[tp] - 1)
        deadline = time.monotonic() + settings.connect_timeout_ms / 1000
        while waiting:
            consumer.poll(timeout_ms=POLL_MS)
            waiting = {tp for tp in waiting if consumer.position(tp) < listed[tp]}
            if waiting and time.monotonic() > deadline:
                raise BrokerUnavailable(
                    f"cannot read the last records of {sorted(map(tuple, waiting))} within "
                    f"{settings.connect_timeout_ms} ms"
                )
        return {tp: consumer.position(tp) if listed[tp] > 0 else 0 for tp in partitions}
    finally:
        consumer.close(autocommit=False)


def ordered_records(
    settings: KafkaSettings,
    topics: Sequence[str],
    *,
    follow: bool = False,
    idle_timeout: float | None = None,
    stopped: Callable[[], bool] = lambda: False,
) -> Iterator:
    """The committed records (kafka-python `ConsumerRecord`s) of every partition of `topics`,
    in `order_key` order up to the ends the partitions had at the start; with `follow`, then
    the records written since, as they come. `TopicError` for a missing topic.

    Parameters
    ----------
    settings
        The connection.
    topics
        The topics to read, every partition of each; on equal timestamps, the earlier topic's
        record comes first.
    follow
        After the end each partition had at the start, go on with the records written since.
    idle_timeout
        With `follow`, stop after that many seconds without a record (None: never).
    stopped
        Called between fetches: True ends the records.

    Examples
    --------

    With the demo broker at 127.0.0.1:9092 and topics ``sms`` and ``sms.labels``:

    ```python
    for record in ordered_records(KafkaSettings("127.0.0.1:9092"), ["sms", "sms.labels"]):
        print(record.topic, record.partition, record.offset, record.value)
    ```
    """
    topics = list(topics)
    partitions = [TopicPartition(t, p) for t in topics for p in topic_partitions(settings, t)]
    ends = log_ends(settings, partitions)
    consumer = committed_consumer(
        **settings.kafka_python(
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=settings.fetch_max_wait_ms,
        )
    )
    try:
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        yield from _history(consumer, topics, partitions, ends, stopped)
        if follow:
            for tp in partitions:  # a fetch may have gone past the end: read on from it
                consumer.seek(tp, ends[tp])
            consumer.resume(*partitions)
            yield from _live(consumer, topics, idle_timeout, stopped)
    finally:
        consumer.close(autocommit=False)


def _history(consumer, topics, partitions, ends, stopped) -> Iterator:
    """The records before `ends`, merged by key: the smallest head is taken while every
    partition still being read has one (its next record may come first otherwise)."""
    buffers: dict = {tp: deque() for tp in partitions}
    reading = {tp for tp in partitions if ends[tp] > 0}
    heads: list = []  # (key, tp) of each partition's first buffered record
    while not stopped():
        while heads and all(buffers[tp] for tp in reading):
            _, tp = heapq.heappop(heads)
            yield buffers[tp].popleft()
            if buffers[tp]:
                heapq.heappush(heads, (order_key(buffers[tp][0], topics), tp))
        if not reading:
            return
        for tp, records in consumer.poll(timeout_ms=POLL_MS).items():
            kept = [r for r in records if r.offset < ends[tp]]
            if kept and not buffers[tp]:
                heapq.heappush(heads, (order_key(kept[0], topics), tp))
            buffers[tp].extend(kept)
        for tp in list(reading):
            if consumer.position(tp) >= ends[tp]:
                reading.discard(tp)
                consumer.pause(tp)
            elif len(buffers[tp]) > BUFFERED:
                consumer.pause(tp)
            else:
                consumer.resume(tp)


def _live(consumer, topics, idle_timeout, stopped) -> Iterator:
    """The records written after the start, fetch by fetch, until stopped or idle."""
    last = time.monotonic()
    while not stopped():
        fetched = [r for records in consumer.poll(timeout_ms=POLL_MS).values() for r in records]
        now = time.monotonic()
        if fetched:
            last = now
            yield from sorted(fetched, key=lambda r: order_key(r, topics))
        elif idle_timeout is not None and now - last >= idle_timeout:
            return
