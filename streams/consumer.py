"""Serve and learn a river classifier on a Kafka topic; checkpoints make learning exactly-once.

For every example the server writes `{id, prediction, probabilities, model_version, partition}`
to the predictions topic (`model_version` = examples the model had learned), then learns it if
it is labelled. Unlabelled examples wait (in memory and in the checkpoint, oldest dropped past
`max_pending`) for their label on the labels topic; a label that comes first waits for its
example. One record never stops the server: whatever fails in decoding, predicting or learning
it sends it to the dead-letter topic with the reason, and its offset is passed like any other.
Only infrastructure faults (no broker, an unreadable checkpoint) end `run` with an exception.

State is per partition: partition p of the examples topic and of the labels topic feed one model,
with its offsets and pending examples, saved in its own checkpoint file `<topic>-<p>.ckpt`. With
several servers in a consumer group each owns some partitions; on a rebalance the old owner
saves the state and the new one loads it. Each partition's model learns from that partition
alone, so it ends equal to an offline run over the partition in offset order; use one
partition for one model over the whole stream.

Exactly-once learning: the model learns only from records before the offsets stored beside it
in the same atomic checkpoint, and a (re)started server seeks to those offsets, ignoring Kafka's
committed offsets (it never commits any). So after a crash at any point, even kill -9, the
records after the last checkpoint are read again and applied to the model that had not yet
seen them. Outputs are at-least-once: predictions and dead letters of those records are
written again (deduplicate by id downstream if needed). Before a checkpoint is written, all
outputs up to it are acknowledged by the broker, so none is lost.

Every checkpoint is a consistent snapshot (a model and the offsets it has learned up to), so
whichever one a server loads, nothing is learned twice or skipped. A member evicted from the
group (it did not poll within max_poll_interval_ms) drops its partitions without saving, as
another member may own them already. Keep processing a poll's records (up to 500) plus a
checkpoint well under max_poll_interval_ms.

With a labels topic, learning order depends on how the two topics interleave when read, so
"equals an offline run" holds for the order in which labels were joined; with labels inside
the examples, it holds for the partition order.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from streams import checkpoint
from streams.kafka_io import BrokerUnavailable, KafkaSettings, KafkaSource, RecordTooLarge, Sink
from streams.messages import (
    Example,
    InvalidMessage,
    LabelMessage,
    decode_example,
    decode_label,
    encode_prediction,
)

log = logging.getLogger(__name__)

_MISSING = object()


def _failure(error: BaseException, limit: int = 500) -> str:
    """One line naming an exception and its message, cut at `limit` characters."""
    text = " ".join(f"{type(error).__name__}: {error}".split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class PartitionState:
    """Everything one partition's learning depends on; saved as one checkpoint."""

    topic: str  # the examples topic
    partition: int
    model: Any
    offsets: dict[str, int] = field(default_factory=dict)  # topic -> next offset to read
    pending_examples: dict = field(default_factory=dict)  # id -> x, oldest first
    pending_labels: dict = field(default_factory=dict)  # id -> label, oldest first
    predicted: int = 0
    learned: int = 0
    dead_letters: int = 0
    expired: int = 0  # pending examples or labels dropped past max_pending


class ModelServer:
    """Predict, learn and checkpoint; `run` until `stop`, or until idle for `idle_timeout` s."""

    def __init__(
        self,
        model,
        settings: KafkaSettings,
        *,
        examples_topic: str,
        predictions_topic: str,
        dead_letter_topic: str,
        labels_topic: str | None = None,
        group_id: str | None = None,
        partitions: Iterable[int] | None = None,
        checkpoint_dir: str | Path = "checkpoints",
        checkpoint_every: int = 1000,
        checkpoint_seconds: float = 30.0,
        max_pending: int = 100_000,
        idle_timeout: float | None = None,
        log_seconds: float = 10.0,
        poll_timeout_ms: int = 200,
    ):
        self.model = model
        self.settings = settings
        self.examples_topic = examples_topic
        self.labels_topic = labels_topic
        self.predictions_topic = predictions_topic
        self.dead_letter_topic = dead_letter_topic
        self.group_id = group_id
        self.partitions = None if partitions is None else list(partitions)
        self.checkpoint_dir = Path(checkpoint_dir)
        self.checkpoint_every = checkpoint_every
        self.checkpoint_seconds = checkpoint_seconds
        self.max_pending = max_pending
        self.idle_timeout = idle_timeout
        self.log_seconds = log_seconds
        self.poll_timeout_ms = poll_timeout_ms
        self.states: dict[int, PartitionState] = {}
        self._stop = threading.Event()
        self._dirty: set[int] = set()
        self._since_checkpoint = 0
        self._last_checkpoint = self._last_record = time.monotonic()

    def checkpoint_path(self, partition: int) -> Path:
        return self.checkpoint_dir / f"{self.examples_topic}-{partition}.ckpt"

    def stop(self) -> None:
        """Ask `run` to checkpoint and return after the current message (thread/signal safe)."""
        self._stop.set()

    def run(self) -> dict[int, PartitionState]:
        """Serve until stopped; returns the final states. Raises `BrokerUnavailable` at start."""
        topics = [self.examples_topic] + ([self.labels_topic] if self.labels_topic else [])
        self.source = KafkaSource(
            self.settings, topics, group_id=self.group_id, partitions=self.partitions
        )
        try:
            self.sink = Sink(self.settings, self.predictions_topic, self.dead_letter_topic)
        except BaseException:
            self.source.close()
            raise
        consumed, started = 0, time.monotonic()
        last_log = (consumed, started)
        try:
            self.source.start(self._assign, self._revoke, self._lose)
            while not self._stop.is_set():
                records = self.source.poll(self.poll_timeout_ms)
                for record in records:
                    if self._stop.is_set():
                        break
                    self._handle(record)
                    consumed += 1
                    if self._checkpoint_due():
                        self.checkpoint()
                now = time.monotonic()
                if records:
                    self._last_record = now
                elif self.idle_timeout is not None and now - self._last_record >= self.idle_timeout:
                    log.info("no message for %.1f s: stopping", self.idle_timeout)
                    break
                if self._checkpoint_due():
                    self.checkpoint()
                if now - last_log[1] >= self.log_seconds:
                    self._log_progress(consumed - last_log[0], now - last_log[1])
                    last_log = (consumed, now)
            self.checkpoint()
            self._log_progress(consumed, time.monotonic() - started, final=True)
        finally:
            self.source.close()
            self.sink.close()
        return self.states

    # --- partitions -------------------------------------------------------------------------

    def _assign(self, partitions: set[int]) -> None:
        for p in sorted(partitions):
            state = checkpoint.load(self.checkpoint_path(p))
            if state is None:
                state = PartitionState(self.examples_topic, p, copy.deepcopy(self.model))
                log.info("partition %d: no checkpoint, reading from the beginning", p)
            else:
                if (state.topic, state.partition) != (self.examples_topic, p):
                    raise checkpoint.CheckpointError(
                        f"{self.checkpoint_path(p)} holds {state.topic}/{state.partition}, "
                        f"not {self.examples_topic}/{p}"
                    )
                log.info(
                    "partition %d: resuming from checkpoint at offsets %s (%d learned, %d pending)",
                    p,
                    state.offsets,
                    state.learned,
                    len(state.pending_examples),
                )
            for topic in self.source.topics:
                self.source.seek(topic, p, state.offsets.get(topic))
            self.states[p] = state
        self._last_record = time.monotonic()

    def _revoke(self, partitions: set[int]) -> None:
        self.checkpoint(partitions)
        for p in partitions:
            del self.states[p]
        log.info("partitions %s revoked (checkpointed)", sorted(partitions))

    def _lose(self, partitions: set[int]) -> None:
        for p in partitions:
            del self.states[p]
        self._dirty -= partitions
        log.warning(
            "partitions %s lost (evicted from the group): their work since the last "
            "checkpoint is dropped, the new owner redoes it",
            sorted(partitions),
        )

    # --- checkpoints ------------------------------------------------------------------------

    def _checkpoint_due(self) -> bool:
        return bool(self._dirty) and (
            self._since_checkpoint >= self.checkpoint_every
            or time.monotonic() - self._last_checkpoint >= self.checkpoint_seconds
        )

    def checkpoint(self, partitions: Iterable[int] | None = None) -> None:
        """Wait for the outputs so far to be acknowledged, then save the changed partitions."""
        todo = sorted(self._dirty if partitions is None else self._dirty & set(partitions))
        if not todo:
            return
        self.sink.flush()
        for p in todo:
            checkpoint.save(self.checkpoint_path(p), self.states[p])
        self._dirty.difference_update(todo)
        if not self._dirty:
            self._since_checkpoint = 0
            self._last_checkpoint = time.monotonic()

    # --- messages ---------------------------------------------------------------------------

    def _handle(self, record) -> None:
        state = self.states[record.partition]
        state.offsets[record.topic] = record.offset + 1
        self._dirty.add(record.partition)
        self._since_checkpoint += 1
        try:
            if record.topic == self.examples_topic:
                self._on_example(state, decode_example(record.value))
            else:
                self._on_label(state, decode_label(record.value))
        except BrokerUnavailable:
            raise
        except Exception as error:  # noqa: BLE001 - one record never stops the server
            known = isinstance(error, (InvalidMessage, RecordTooLarge))
            reason = str(error) if known else _failure(error)
            state.dead_letters += 1
            self.sink.dead_letter(record, reason)

    def _on_example(self, state: PartitionState, example: Example) -> None:
        try:
            probabilities = state.model.predict_proba_one(example.x)
            prediction = state.model.predict_one(example.x)
            message = encode_prediction(
                example.id, prediction, probabilities, state.learned, state.partition
            )
        except Exception as error:  # noqa: BLE001 - whatever the model raises
            raise InvalidMessage(f"the model cannot predict it: {_failure(error)}") from None
        self.sink.prediction(example.id.encode("utf-8"), message)
        state.predicted += 1
        early = state.pending_labels.pop(example.id, None)
        label = early if example.label is None else example.label
        if label is None:
            self._remember(state, state.pending_examples, example.id, example.x)
        else:
            self._learn(state, example.x, label)

    def _on_label(self, state: PartitionState, message: LabelMessage) -> None:
        x = state.pending_examples.pop(message.id, _MISSING)
        if x is _MISSING:
            self._remember(state, state.pending_labels, message.id, message.label)
        else:
            self._learn(state, x, message.label)

    def _learn(self, state: PartitionState, x, label) -> None:
        try:
            state.model.learn_one(x, label)
        except Exception as error:  # noqa: BLE001 - whatever the model raises
            raise InvalidMessage(f"the model cannot learn it: {_failure(error)}") from None
        state.learned += 1

    def _remember(self, state: PartitionState, pending: dict, key, value) -> None:
        pending.pop(key, None)
        pending[key] = value
        while len(pending) > self.max_pending:
            del pending[next(iter(pending))]
            state.expired += 1

    # --- monitoring -------------------------------------------------------------------------

    def _log_progress(self, consumed: int, seconds: float, final: bool = False) -> None:
        states, lag = self.states.values(), self.source.lag()
        log.info(
            "%s%d messages in %.1f s (%.0f/s); partitions %s: learned %d, pending %d, "
            "dead letters %d, expired %d; lag %s",
            "done: " if final else "",
            consumed,
            seconds,
            consumed / max(seconds, 1e-9),
            sorted(self.states),
            sum(s.learned for s in states),
            sum(len(s.pending_examples) for s in states),
            sum(s.dead_letters for s in states),
            sum(s.expired for s in states),
            "unknown" if lag is None else lag,
        )
