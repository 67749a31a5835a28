"""Examples read back from a Kafka topic, as a file reader gives them: what `evaluate` scores.

`TopicExamples` reads the committed records of an examples topic (and of a labels topic, if
any) in the order of `streams.kafka.ordered`, and decodes them with the example schema
(`streams.io.schema`; the server's messages, `streams.kafka.messages`), features allowed to
hold strings as in a file. A record that is not an example raises `BadRecord`, naming its topic,
partition and offset, or with ``on_error="skip"`` is skipped and counted (`n_skipped`, the first
errors kept in `errors`), as a malformed line of a file is.

Every read starts at the beginning of the topics and stops at the ends they had when the first
read started (with `follow`, the first read alone goes on past them): a second pass gives the
same records in the same order, so that `river-cw evaluate` can count a topic before it scores
it, as it does a file, without holding its records.

Iterating gives ``(x, y)`` pairs, every example with its label; `answers` gives river's
questions and answers (`river.stream.simulate_qa`'s form) when labels come on a topic of their
own: ``(i, x, None)`` when example i arrives and ``(i, x, y)`` when its label does, joined by id
as the server joins them (`streams.kafka.learner`): a label that comes first waits for its
example, an example that carries its label is answered at once, and an example whose label never
comes is asked and never answered. The examples waiting for a label are kept until it comes (to
the end of the read, for one whose label never comes); a second example with the same id
replaces the first, which is then never answered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from streams.io.schema import SCHEMA, Schema, SchemaError, loads
from streams.kafka.client import KafkaSettings
from streams.kafka.ordered import every_partition, log_ends, ordered_records

__all__ = ["BadRecord", "TopicExamples"]

MAX_KEPT_ERRORS = 100


class BadRecord(ValueError):
    """A record of a topic that cannot be read as an example (or a label).

    Parameters
    ----------
    topic
        The record's topic.
    partition
        Its partition.
    offset
        Its offset.
    reason
        What is wrong, in words.
    """

    def __init__(self, topic: str, partition: int, offset: int, reason: str):
        super().__init__(f"topic {topic!r}, partition {partition}, offset {offset}: {reason}")
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.reason = reason


class TopicExamples:
    """The examples of a topic, read from its beginning (see the module).

    Parameters
    ----------
    settings
        The connection (`streams.kafka.client.KafkaSettings`).
    topic
        The examples topic.
    labels_topic
        A topic of labels, ``{"id": ..., "label": ...}``, joined to the examples by id; use
        `answers` then.
    schema
        Where the id, label, text and features are in a record.
    on_error
        ``"raise"`` a `BadRecord` at the first bad record, or ``"skip"`` and count it.
    follow
        After the records the topics held at the start, read those written since, until
        `stopped()` or `idle_timeout` seconds without a record (the first read only).
    idle_timeout
        With `follow`, stop after that many seconds without a record (None: never).
    stopped
        Called between fetches: True ends the stream (a Ctrl-C).

    Examples
    --------

    With the demo broker at 127.0.0.1:9092 and examples on topic ``sms``:

    ```python
    stream = TopicExamples(KafkaSettings("127.0.0.1:9092"), "sms", on_error="skip")
    for x, y in stream:
        ...
    print(stream.n_records, stream.n_skipped)
    ```

    """

    def __init__(
        self,
        settings: KafkaSettings,
        topic: str,
        *,
        labels_topic: str | None = None,
        schema: Schema = SCHEMA,
        on_error: str = "raise",
        follow: bool = False,
        idle_timeout: float | None = None,
        stopped: Callable[[], bool] = lambda: False,
    ):
        if on_error not in ("raise", "skip"):
            raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
        self.settings = settings
        self.topic = topic
        self.labels_topic = labels_topic
        self.schema = schema
        self.on_error = on_error
        self.follow = follow
        self.idle_timeout = idle_timeout
        self.stopped = stopped
        self.source = f"topic {topic!r}" + (f" and {labels_topic!r}" if labels_topic else "")
        self.ends: dict | None = None  # where every read stops: the ends at the first one
        self._reset()

    def __repr__(self) -> str:
        return f"TopicExamples({self.topic!r})"

    def _reset(self) -> None:
        self.n_records = 0  # examples and labels read (bad ones included)
        self.n_skipped = 0
        self.errors: list[BadRecord] = []

    def __iter__(self) -> Iterator[tuple[dict, object]]:
        """The ``(x, y)`` pairs of the examples topic, in order; every example needs a label."""
        if self.labels_topic is not None:
            raise ValueError("labels come on a topic of their own: read the answers")
        self._reset()
        for record in self._records():
            example = self._example(record, need_label=True, need_id=False)
            if example is not None:
                yield example.x, example.label

    def answers(self) -> Iterator[tuple[int, dict, object]]:
        """River's questions and answers: ``(i, x, None)`` as example i arrives, ``(i, x, y)``
        when its label is known (see the module)."""
        self._reset()
        waiting: dict[str, tuple[int, dict]] = {}  # id -> (i, x) of an example without label
        early: dict[str, object] = {}  # id -> label that came before its example
        i = 0
        for record in self._records():
            if record.topic == self.labels_topic:
                found = self._label(record)
                if found is None:
                    continue
                id_, label = found
                if id_ in waiting:
                    j, x = waiting.pop(id_)
                    yield j, x, label
                else:
                    early.pop(id_, None)  # the latest label of an id counts, as in the server
                    early[id_] = label
                continue
            example = self._example(record, need_label=False, need_id=True)
            if example is None:
                continue
            yield i, example.x, None
            label = example.label if example.label is not None else early.pop(example.id, None)
            if label is not None:
                yield i, example.x, label
            else:
                waiting.pop(example.id, None)  # a former example of the id is given up
                waiting[example.id] = (i, example.x)
            i += 1

    def _records(self) -> Iterator:
        topics = [self.topic] + ([self.labels_topic] if self.labels_topic else [])
        first = self.ends is None
        if first:
            self.ends = log_ends(self.settings, every_partition(self.settings, topics))
        for record in ordered_records(
            self.settings,
            topics,
            ends=self.ends,
            follow=self.follow and first,
            idle_timeout=self.idle_timeout,
            stopped=self.stopped,
        ):
            self.n_records += 1
            yield record

    def _example(self, record, need_label: bool, need_id: bool):
        try:
            return self.schema.parse(
                _decoded(record), need_label=need_label, need_id=need_id, strings=True
            )
        except SchemaError as error:
            return self._reject(record, str(error))

    def _label(self, record):
        try:
            decoded = _decoded(record)
            if not isinstance(decoded, dict):
                self.schema.parse(decoded)  # raises the schema's reason
            return self.schema.parse_id(decoded), self.schema.parse_label(decoded)
        except SchemaError as error:
            return self._reject(record, str(error))

    def _reject(self, record, reason: str) -> None:
        error = BadRecord(record.topic, record.partition, record.offset, reason)
        if self.on_error == "raise":
            raise error
        self.n_skipped += 1
        if len(self.errors) < MAX_KEPT_ERRORS:
            self.errors.append(error)


def _decoded(record):
    if record.value is None:
        raise SchemaError("empty message (no value)")
    return loads(record.value)
