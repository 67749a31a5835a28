"""One partition's learning, without a broker: join examples and labels, predict, learn.

`PartitionLearner` takes the raw values of a partition's records (examples and delayed labels)
and returns what should be written for each as events (`Prediction`, `DeadLetter`); the Kafka
loop (`streams.kafka.server`) only moves bytes. It hands over a poll's records at once
(`examples`, `labels`: one call, one loop, the predictions as (key, value) pairs ready for the
producer); `example` and `label` take one record. Its `PartitionState` is everything the partition's
learning depends on, so saving and restoring it (a checkpoint file, the state topic) resumes
exactly where it stopped.

>>> from river_cw import AROW
>>> learner = PartitionLearner(PartitionState("t", 0, AROW()), model_spec="AROW()")
>>> [type(e).__name__ for e in learner.example(b'{"id": 1, "x": {"a": 1}, "label": true}')]
['Prediction']
>>> learner.example(b'{"id": 2, "x": {"a": 1}, "label": 1.5}')[0].reason
"wrong type: 'label' must be a string, integer or boolean, got float 1.5"
>>> learner.label(b'{"id": "3", "label": false}'), learner.state.pending_labels
([], {'3': (False, 1)})
>>> (learner.state.learned, learner.state.dead_letters)
(1, 1)
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from streams.kafka.messages import InvalidMessage, decode_example, decode_label, encode_prediction

__all__ = ["DeadLetter", "PartitionLearner", "PartitionState", "Prediction"]

_MISSING = object()


@dataclass
class PartitionState:
    """Everything one partition's learning depends on (plain, picklable data).

    `offsets` maps each input topic to the next offset to read: the model has learned from
    exactly the records before them. Pending examples and labels are kept oldest first.
    `scored`/`correct` count labelled examples whose prediction was made before learning
    (prequential accuracy). `model_spec` says what model this is, to refuse a restart with
    another one; `batches` counts the transactions committed for this partition. `mixing` is
    the partition's place in the mixing rounds (`streams.models.mixing.MixState`) when the server mixes
    the partitions' models; every example learned is recorded there.
    """

    topic: str  # the examples topic
    partition: int
    model: Any
    offsets: dict[str, int] = field(default_factory=dict)
    pending_examples: dict = field(default_factory=dict)  # id -> (x, prediction)
    pending_labels: dict = field(default_factory=dict)  # id -> (label, examples seen then)
    predicted: int = 0
    learned: int = 0
    dead_letters: int = 0
    expired: int = 0  # pending examples or labels dropped past max_pending
    scored: int = 0
    correct: int = 0
    examples_seen: int = 0
    model_spec: str | None = None
    batches: int = 0
    mixing: Any = None  # a `streams.models.mixing.MixState` when the partitions' models are mixed

    @property
    def accuracy(self) -> float | None:
        """Prequential accuracy: predictions made before learning that were right."""
        return self.correct / self.scored if self.scored else None


@dataclass(frozen=True)
class Prediction:
    """Write `value` (a JSON prediction) to the predictions topic with key `key`."""

    key: bytes
    value: bytes


@dataclass(frozen=True)
class DeadLetter:
    """Send the record to the dead-letter topic with this reason; `kind` says which step
    refused it: "invalid" (decoding, schema), "predict", "too_large" (its prediction), "learn"
    or "error" (anything else)."""

    reason: str
    kind: str = "invalid"


class _Refused(InvalidMessage):
    """A record refused at a step other than decoding."""

    def __init__(self, kind: str, reason: str):
        super().__init__(reason)
        self.kind = kind


def _failure(error: BaseException, limit: int = 500) -> str:
    """One line naming an exception and its message, cut at `limit` characters."""
    text = " ".join(f"{type(error).__name__}: {error}".split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class PartitionLearner:
    """Predict and learn one partition's records; every failure of one record is a `DeadLetter`.

    `max_pending` bounds the unlabelled examples and the early labels kept (oldest dropped and
    counted in `expired`). `max_output_bytes` refuses a prediction too large to send.
    `recent_accuracy` is the prequential accuracy of the last `recent` examples learned here.
    """

    def __init__(
        self,
        state: PartitionState,
        *,
        model_spec: str | None = None,
        max_pending: int = 100_000,
        max_output_bytes: int = 1_000_000,
        recent: int = 1000,
    ):
        self.state = state
        if state.model_spec is None:
            state.model_spec = model_spec
        self.max_pending = max_pending
        self.max_output_bytes = max_output_bytes
        self.recent: deque = deque(maxlen=recent)

    @property
    def recent_accuracy(self) -> float | None:
        return sum(self.recent) / len(self.recent) if self.recent else None

    def example(self, value: bytes | None) -> list:
        """Events for a record of the examples topic."""
        predictions, dead = self.examples([value])
        return [Prediction(*predictions[0])] if predictions else [dead[0][1]]

    def label(self, value: bytes | None) -> list:
        """Events for a record of the labels topic."""
        return [letter for _, letter in self.labels([value])]

    def examples(self, values: list) -> tuple[list[tuple[bytes, bytes]], list]:
        """The records of the examples topic with these `values`, in order: the predictions to
        write, (key, value) pairs, and the dead letters, (index of the record, `DeadLetter`)."""
        predictions, dead = [], []
        for i, value in enumerate(values):
            try:
                predictions.append(self._example(value))
            except Exception as error:
                dead.append((i, self._dead_letter(error)))
        return predictions, dead

    def labels(self, values: list) -> list:
        """The records of the labels topic with these `values`, in order: the dead letters,
        (index of the record, `DeadLetter`)."""
        dead = []
        for i, value in enumerate(values):
            try:
                self._label(value)
            except Exception as error:
                dead.append((i, self._dead_letter(error)))
        return dead

    def _dead_letter(self, error: Exception) -> DeadLetter:
        self.state.dead_letters += 1
        if isinstance(error, InvalidMessage):
            return DeadLetter(str(error), getattr(error, "kind", "invalid"))
        return DeadLetter(_failure(error), "error")

    def _example(self, value) -> tuple[bytes, bytes]:
        state = self.state
        id, x, label = decode_example(value)
        try:
            probabilities = state.model.predict_proba_one(x)
            prediction = state.model.predict_one(x)
            message = encode_prediction(
                id, prediction, probabilities, state.learned, state.partition
            )
        except Exception as error:
            raise _Refused("predict", f"the model cannot predict it: {_failure(error)}") from None
        key = id.encode("utf-8")
        if len(key) + len(message) > self.max_output_bytes:
            raise _Refused(
                "too_large",
                f"its prediction would be {len(key) + len(message):,} bytes "
                f"(at most {self.max_output_bytes:,})",
            )
        early = state.pending_labels.pop(id, None)
        if label is None and early:
            label = early[0]
        if label is None:
            self._remember(state.pending_examples, id, (x, prediction))
        else:
            self._learn(x, label, prediction)
        state.predicted += 1
        state.examples_seen += 1
        return key, message

    def _label(self, value) -> None:
        message = decode_label(value)
        pending = self.state.pending_examples.pop(message.id, _MISSING)
        if pending is _MISSING:
            self._remember(
                self.state.pending_labels, message.id, (message.label, self.state.examples_seen)
            )
        else:
            x, prediction = pending
            self._learn(x, message.label, prediction)

    def _learn(self, x, label, prediction) -> None:
        try:
            self.state.model.learn_one(x, label)
        except Exception as error:
            raise _Refused("learn", f"the model cannot learn it: {_failure(error)}") from None
        self.state.learned += 1
        if self.state.mixing is not None:
            self.state.mixing.record(x, label)
        right = prediction == label
        self.state.scored += 1
        self.state.correct += right
        self.recent.append(right)

    def _remember(self, pending: dict, key, value) -> None:
        pending.pop(key, None)
        pending[key] = value
        while len(pending) > self.max_pending:
            del pending[next(iter(pending))]
            self.state.expired += 1

    def stale_labels(self, after: int) -> int:
        """Labels that have waited for their example while `after` or more examples came:
        most likely keyed differently from their examples (another partition)."""
        seen = self.state.examples_seen
        return sum(1 for _, since in self.state.pending_labels.values() if seen - since >= after)
