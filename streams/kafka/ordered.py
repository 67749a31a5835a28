"""The committed records of whole topics, in one deterministic order: what a replay reads.

`ordered_records` reads every partition of some topics from the beginning through the committed
path (`streams.kafka.committed.CommittedReader`, on the path `committed_reads` chooses once at
the start: librdkafka's read_committed on a broker that lists aborted transactions, the
client-side filter on the demo broker; records of aborted transactions never come out) and
yields the records in the order of their keys (`order_key`): timestamp, then the sequence number
of the `SEQUENCE_HEADER` header, then topic (in the order given), then partition, then offset.
On a topic of one partition that is the log's order; across partitions and topics it is the
order in which they were written, as their producer stamped them: `river-cw produce`
(`streams.kafka.writer`) stamps its records with the clock's time and numbers them in the order
it sends them, so they come back in that order, however many share a millisecond; records of
other producers, without the header, stamped alike fall back on topic, partition and offset. A
read is repeatable: it stops at the end each partition had when it started (`log_ends`), or at
the ends it is given (those of a previous read, so that a second pass reads the same records).
Both paths give the same records in the same order, but for transactions open at the start:
librdkafka's read_committed ends a partition before the first of them (its last stable offset),
the client-side filter at the log's end, records written outside transactions after them
included.

With `follow`, the records written after that end come next, as they arrive (sorted by key within
each fetch), until `stopped()` says so or nothing has come for `idle_timeout` seconds.

Memory is bounded: a fetch brings at most `FETCH_BYTES` (the demo broker fills Kafka's default
of 50 MB, and a long topic then took 40 MB more than a short one), and a partition whose
buffered records run more than `BUFFERED` ahead of the others is left out of the reader's
assignment until they catch up, then read on from where it was (`CommittedReader.read_only`; not
with kafka-python's `pause`: in 3.0.12 a partition resumed while another is paused can stay
parked forever behind the fetcher's in-line records, and the read then stalls).
"""

from __future__ import annotations

import heapq
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence

from kafka import TopicPartition

from streams.kafka.client import KafkaSettings, topic_partitions
from streams.kafka.committed import CommittedReader

__all__ = ["SEQUENCE_HEADER", "every_partition", "log_ends", "order_key", "ordered_records"]

SEQUENCE_HEADER = "river-cw-sequence"
"""The header of a record's number among those its producer sent (decimal ASCII), which orders
records stamped in the same millisecond."""
BUFFERED = 10_000  # records held per partition before it is left out
FETCH_BYTES = 1 << 20  # a fetch's most bytes (Kafka's default, 50 MB, the demo broker fills)
POLL_MS = 100


def order_key(record, topics: Sequence[str]) -> tuple[int, int, int, int, int]:
    """Where a record comes in a replay: (timestamp, sequence number, topic's rank in `topics`,
    partition, offset); the sequence number is that of the `SEQUENCE_HEADER` header, -1 for a
    record without it.

    Parameters
    ----------
    record
        A record (`streams.kafka.committed.Record`, or kafka-python's `ConsumerRecord`).
    topics
        The topics read, in the order that breaks ties.

    Examples
    --------

    >>> from streams.kafka.committed import Record
    >>> headers = [(SEQUENCE_HEADER, b"17")]
    >>> record = Record("sms", 2, 41, b"7", b"{}", headers, timestamp=1700000000000)
    >>> order_key(record, ["sms.labels", "sms"])
    (1700000000000, 17, 1, 2, 41)
    """
    return (
        record.timestamp,
        _sequence(record),
        topics.index(record.topic),
        record.partition,
        record.offset,
    )


def _sequence(record) -> int:
    for key, value in record.headers or ():
        if key == SEQUENCE_HEADER:
            try:
                return int(value)
            except ValueError:
                return -1
    return -1


def every_partition(settings: KafkaSettings, topics: Sequence[str]) -> list[TopicPartition]:
    """Every partition of `topics` (kafka-python `TopicPartition`s); `TopicError` for a
    missing topic.

    Parameters
    ----------
    settings
        The connection.
    topics
        The topics.

    Examples
    --------

    With the demo broker at 127.0.0.1:9092 and a topic ``sms`` of 2 partitions:

    ```python
    every_partition(KafkaSettings("127.0.0.1:9092"), ["sms"])
    # [TopicPartition(topic='sms', partition=0), TopicPartition(topic='sms', partition=1)]
    ```
    """
    return [TopicPartition(t, p) for t in topics for p in topic_partitions(settings, t)]


def log_ends(settings: KafkaSettings, partitions: Sequence[TopicPartition]) -> dict:
    """Where a committed read of each partition up to now stops: the offset after its last
    record, control markers included; on the path of librdkafka's read_committed, before the
    first transaction still open (`streams.kafka.committed.CommittedReader.ends`, which also
    says how the demo broker's understated offsets are made exact).

    Parameters
    ----------
    settings
        The connection.
    partitions
        The partitions (kafka-python `TopicPartition`s, or ``(topic, partition)`` pairs).

    Examples
    --------

    With the demo broker at 127.0.0.1:9092 and a topic ``sms``:

    ```python
    log_ends(KafkaSettings("127.0.0.1:9092"), [TopicPartition("sms", 0)])
    # {TopicPartition(topic='sms', partition=0): 1423}
    ```
    """
    reader = CommittedReader(settings, None, partitions, fetch_bytes=FETCH_BYTES)
    try:
        ends = reader.ends(settings.connect_timeout_ms)
    finally:
        reader.close()
    return {tp: ends[tuple(tp)] for tp in partitions}


def ordered_records(
    settings: KafkaSettings,
    topics: Sequence[str],
    *,
    ends: Mapping[TopicPartition, int] | None = None,
    follow: bool = False,
    idle_timeout: float | None = None,
    stopped: Callable[[], bool] = lambda: False,
) -> Iterator:
    """The committed records (`streams.kafka.committed.Record`s) of every partition of `topics`,
    in `order_key` order up to the ends the partitions had at the start (or `ends`); with
    `follow`, then the records written since, as they come. `TopicError` for a missing topic.

    Parameters
    ----------
    settings
        The connection; its `committed_reads` picks the path (see the module).
    topics
        The topics to read, every partition of each; on equal timestamps and sequence numbers,
        the earlier topic's record comes first.
    ends
        Where to stop in each partition of `topics` (`log_ends` of an earlier read, so that
        this one reads the same records); default: the ends now.
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
    if ends is None:
        ends = log_ends(settings, every_partition(settings, topics))
    ends = {(tp[0], tp[1]): end for tp, end in ends.items()}
    reader = CommittedReader(settings, None, ends, fetch_bytes=FETCH_BYTES)
    try:
        yield from _history(reader, topics, ends, stopped)
        if follow:
            reader.read_only(ends)
            for tp, end in ends.items():  # a fetch may have gone past the end: read on from it
                reader.seek(tp, end)
            yield from _live(reader, topics, idle_timeout, stopped)
    finally:
        reader.close()


def _history(reader: CommittedReader, topics, ends, stopped) -> Iterator:
    """The records before `ends`, merged by key: the smallest head is taken while every
    partition still being read has one (its next record may come first otherwise). A partition
    is read while it has `BUFFERED` records or fewer waiting and has not reached its end."""
    buffers: dict = {tp: deque() for tp in ends}
    reading = {tp for tp, end in ends.items() if end > 0}
    heads: list = []  # (key, tp) of each partition's first buffered record
    while not stopped():
        reading = {tp for tp in reading if reader.position(tp) < ends[tp]}
        while heads and all(buffers[tp] for tp in reading):  # all, once none is read further
            _, tp = heapq.heappop(heads)
            yield buffers[tp].popleft()
            if buffers[tp]:
                heapq.heappush(heads, (order_key(buffers[tp][0], topics), tp))
        if not reading:
            return
        reader.read_only(tp for tp in reading if len(buffers[tp]) <= BUFFERED)
        for record in reader.poll(POLL_MS):
            tp = (record.topic, record.partition)
            if record.offset < ends[tp]:
                if not buffers[tp]:
                    heapq.heappush(heads, (order_key(record, topics), tp))
                buffers[tp].append(record)


def _live(reader: CommittedReader, topics, idle_timeout, stopped) -> Iterator:
    """The records written after the start, fetch by fetch, until stopped or idle."""
    last = time.monotonic()
    while not stopped():
        fetched = reader.poll(POLL_MS)
        now = time.monotonic()
        if fetched:
            last = now
            yield from sorted(fetched, key=lambda r: order_key(r, topics))
        elif idle_timeout is not None and now - last >= idle_timeout:
            return
