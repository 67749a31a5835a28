"""Read only committed records of transactional topics, honouring commit/abort markers.

A `read_committed` consumer gets records up to the last stable offset (no open transaction is
visible) and relies on the broker's list of aborted transactions to drop their records. Tansu
0.6 never sends that list, so kafka-python's consumer also returns records of aborted
transactions, and its last stable offset was seen stuck behind committed transactions.
`committed_consumer` applies Kafka's rule on the client alone: the records of a transactional
batch are held until their producer's control marker, then returned (commit) or dropped
(abort); records written outside transactions are returned at once. It reads with isolation
`read_uncommitted`, so it depends on neither the broker's list nor its last stable offset.

>>> consumer = committed_consumer(bootstrap_servers="127.0.0.1:1", api_version=(3, 0))
>>> type(consumer._fetcher.PartitionRecords).__name__, consumer.config["isolation_level"]
('type', 'read_uncommitted')
>>> consumer.close()

It works on kafka-python 3's fetcher (its per-fetch record parser is replaced on this consumer
only); a transactional record is returned once its transaction is committed, so records of
several producers may come out of offset order. A marker ends only its producer's records
before it in the log, as in Kafka: after a `seek` back, an earlier transaction's marker read
again leaves alone the records held from further on (a rewound reader once returned a dead
producer's open transaction as committed, the marker of its previous transaction read again),
and records read again are held once. Records held when you `seek` elsewhere are returned when
their marker comes, if it does.
"""

from __future__ import annotations

from kafka import KafkaConsumer
from kafka.consumer.fetcher import ConsumerRecord, Fetcher

__all__ = ["committed_consumer"]


def committed_consumer(*topics: str, **config) -> KafkaConsumer:
    """A `KafkaConsumer` (same arguments) that returns committed transactional records only.

    Use it to read what ``river-cw serve`` wrote under exactly-once (its predictions and dead
    letters): a plain consumer also returns the records of aborted transactions, such as those
    a killed server had written since its last commit, on a broker that does not list them.

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
                    waiting = held.setdefault((tp, batch.producer_id), {})
                    for record in _records(tp, batch, self):
                        if record.offset >= self.fetch_offset:
                            waiting[record.offset] = record
                self.next_fetch_offset = batch.next_offset
            self.drain()

    consumer._fetcher.PartitionRecords = PartitionRecords
    return consumer


def _ended(held: dict, key, marker_offset: int) -> list:
    """The records of `held[key]` before the marker at `marker_offset`, in offset order, taken
    out of it."""
    waiting = held.get(key, {})
    ended = [waiting.pop(offset) for offset in sorted(o for o in waiting if o < marker_offset)]
    if not waiting:
        held.pop(key, None)
    return ended


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
