"""Examples and labels written to topics in the server's format: what `river-cw produce` sends.

`ExampleWriter` sends each example (`streams.kafka.messages.encode_example`) and each label
(`encode_label`) keyed by its id, so that a label lands in its example's partition (the Java
client's partitioner, murmur2, as kafka-python's), through an idempotent librdkafka producer: no
record is written twice or out of order within a partition. Every record is stamped with the
clock's time (never earlier than the previous record's) and numbered in the order sent, in the
header `streams.kafka.ordered.SEQUENCE_HEADER`, so that a replay ordered by timestamp and then
that number (`streams.kafka.ordered`) reads them back in the order they were sent, across
partitions and topics, however fast they were sent: no record is stamped ahead of the clock,
which a broker may refuse (Kafka's ``message.timestamp.after.max.ms``). `written` counts what
the broker acknowledged, per topic and partition, with the first and last offsets.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import Producer

from streams.kafka.client import KafkaSettings, TopicError, topic_partitions
from streams.kafka.messages import encode_example, encode_label
from streams.kafka.ordered import SEQUENCE_HEADER

__all__ = ["DeliveryFailed", "ExampleWriter", "Written"]


class DeliveryFailed(RuntimeError):
    """The broker did not acknowledge a record."""


@dataclass
class Written:
    """What one partition received: how many records, and their first and last offsets.

    Parameters
    ----------
    records
        The records acknowledged.
    first
        The smallest offset (None before the first record).
    last
        The largest offset.

    Examples
    --------

    >>> written = Written()
    >>> for offset in (7, 8, 9):
    ...     written.add(offset)
    >>> written
    Written(records=3, first=7, last=9)
    """

    records: int = 0
    first: int | None = None
    last: int | None = None

    def add(self, offset: int) -> None:
        """Count a record written at `offset`.

        Parameters
        ----------
        offset
            Where it was written.
        """
        self.records += 1
        self.first = offset if self.first is None else min(self.first, offset)
        self.last = offset if self.last is None else max(self.last, offset)


class ExampleWriter:
    """Send examples to `topic` and their labels to `labels_topic` (or inside the examples).

    Parameters
    ----------
    settings
        The connection (`streams.kafka.client.KafkaSettings`).
    topic
        The examples topic; it must exist (`TopicError` otherwise).
    labels_topic
        The labels topic, if labels are sent apart; it must exist, with as many partitions.

    Examples
    --------

    With the demo broker at 127.0.0.1:9092 and a topic ``sms``:

    ```python
    with ExampleWriter(KafkaSettings("127.0.0.1:9092"), "sms") as writer:
        writer.example(0, {"text": "see you at lunch?"}, "ham")
    print(writer.written)  # {('sms', 0): Written(records=1, first=0, last=0)}
    ```

    """

    def __init__(self, settings: KafkaSettings, topic: str, labels_topic: str | None = None):
        self.topics = [topic] + ([labels_topic] if labels_topic else [])
        counts = {name: len(topic_partitions(settings, name)) for name in self.topics}
        if len(set(counts.values())) > 1:  # a label would land away from its example
            raise TopicError(
                f"topics must have the same number of partitions (co-partitioned by id), "
                f"got {counts}"
            )
        self.topic = topic
        self.labels_topic = labels_topic
        self.written: dict[tuple[str, int], Written] = {}
        self._failures: list[str] = []
        self._stamp = 0  # the previous record's time (ms) and number
        self._sequence = -1
        self._producer = Producer(
            settings.librdkafka(
                **{
                    "enable.idempotence": True,
                    "linger.ms": 5,
                    "partitioner": "murmur2_random",
                    "error_cb": self._error,
                }
            )
        )

    def __enter__(self) -> ExampleWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.flush()

    def example(self, id: int | str, x: dict, label=None) -> None:
        """Send an example (with its label, or None when it comes on the labels topic).

        Parameters
        ----------
        id
            The example's id, its key.
        x
            Its features, or ``{"text": str}``.
        label
            Its label, or None.
        """
        self._send(self.topic, id, encode_example(id, x, label))

    def label(self, id: int | str, label) -> None:
        """Send a label to the labels topic.

        Parameters
        ----------
        id
            The id of its example, its key.
        label
            The label.
        """
        if self.labels_topic is None:
            raise ValueError("no labels topic: send the label with its example")
        self._send(self.labels_topic, id, encode_label(id, label))

    def flush(self, timeout: float = 60.0) -> None:
        """Wait until the broker has acknowledged every record; `DeliveryFailed` otherwise.

        Parameters
        ----------
        timeout
            Seconds to wait.
        """
        left = self._producer.flush(timeout)
        if left:
            self._failures.append(f"{left:,} records not acknowledged within {timeout:g} s")
        if self._failures:
            raise DeliveryFailed(f"not every record was written: {self._failures[0]}")

    def _send(self, topic: str, id, value: bytes) -> None:
        self._stamp = max(time.time_ns() // 1_000_000, self._stamp)
        self._sequence += 1
        while True:
            try:
                self._producer.produce(
                    topic,
                    value=value,
                    key=str(id).encode("utf-8"),
                    timestamp=self._stamp,
                    headers=[(SEQUENCE_HEADER, str(self._sequence).encode("ascii"))],
                    on_delivery=self._delivered,
                )
                break
            except BufferError:  # the local queue is full: wait for acknowledgements
                self._producer.poll(0.1)
        self._producer.poll(0)
        if self._failures:
            raise DeliveryFailed(f"not every record was written: {self._failures[0]}")

    def _delivered(self, error, message) -> None:
        if error is not None:
            self._failures.append(f"{message.topic()}: {error.str()}")
            return
        key = (message.topic(), message.partition())
        self.written.setdefault(key, Written()).add(message.offset())

    def _error(self, error) -> None:
        if error.fatal():
            self._failures.append(error.str())
