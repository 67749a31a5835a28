"""One owned partition of a server: its learner, its producer of outputs, its commit.

A task takes the records of its partition (examples and labels), feeds them to its
`PartitionLearner` and writes what comes out (predictions, dead letters) with its `Outputs` (the
record collector); `commit` closes the batch: the partition's state (`StateStore.write`), its
consumed offsets and its outputs, in one transaction with exactly-once, or outputs acknowledged
and then the state with at-least-once. Kafka Streams calls this a stream task.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from confluent_kafka import Message

from streams.kafka.config import Topics
from streams.kafka.learner import PartitionLearner, PartitionState
from streams.kafka.metrics import Metrics
from streams.kafka.outputs import Outputs
from streams.kafka.store import StateStore

__all__ = ["PartitionTask"]


@dataclass
class PartitionTask:
    """A partition's learning and outputs since its last commit (`dirty`: something to commit)."""

    learner: PartitionLearner
    outputs: Outputs
    topics: Topics
    shared_outputs: bool = False  # at-least-once: one producer for all partitions, not ours
    dirty: bool = False
    stale_reported: int = 0
    mixed_at: float = 0.0  # monotonic time of the last publication or adoption
    paused: bool = False  # waiting for its round (`streams.kafka.config.Mixing.lag`)
    metrics: Metrics | None = None
    committed_at: float = field(default_factory=time.monotonic)  # its last transaction's end

    @property
    def state(self) -> PartitionState:
        return self.learner.state

    @property
    def partition(self) -> int:
        return self.state.partition

    def handle(self, records: list) -> None:
        """Learn from records of the examples or labels topic, in order, and write their
        outputs: each run of records of one topic in one call of the learner."""
        self.dirty = True
        self.outputs.begin()
        if not self.topics.labels:  # the examples topic alone
            self._handle(self.topics.examples, records)
            return
        topics: list = list(map(Message.topic, records))
        start = 0
        for end in range(1, len(records) + 1):
            if end == len(records) or topics[end] != topics[start]:
                self._handle(topics[start], records[start:end])
                start = end

    def _handle(self, topic: str, records: list) -> None:
        """Learn from records of `topic` and write their outputs."""
        values = list(map(Message.value, records))
        if topic == self.topics.examples:
            predictions, dead = self.learner.examples(values)
            self.outputs.send_many(self.topics.predictions, predictions)
        else:
            dead = self.learner.labels(values)
        for i, letter in dead:
            self.outputs.dead_letter(self.topics.dead_letters, records[i], letter.reason)
            if self.metrics is not None:
                self.metrics.dead_letter(self.partition, letter.kind)
        self.state.offsets[topic] = records[-1].offset() + 1

    def commit(self, store: StateStore, group_metadata) -> None:
        """Commit the batch: state and outputs, with the consumed offsets inside the transaction
        (for the consumer whose `group_metadata` is given), or acknowledged (at-least-once).
        Raises `Fenced` when a newer owner has the partition, `CommitFailed` when the
        transaction's fate is unknown."""
        state = self.state
        written = store.write(self.outputs, state)
        if self.outputs.transactional:
            offsets = {(t, state.partition): o for t, o in state.offsets.items()}
            self.outputs.commit(offsets, group_metadata)
        else:
            self.outputs.flush()
        self.dirty = False
        self.committed_at = time.monotonic()
        store.saved(state, written)

    def check_owner(self, group_metadata) -> None:
        """Check that no newer owner has fenced this task's producer: commit its offsets again
        in a transaction of their own (transactional tasks that have read something). Raises
        `Fenced` when one has; a task that handles records learns it at its next commit."""
        offsets = {(t, self.partition): o for t, o in self.state.offsets.items()}
        if self.outputs.transactional and offsets and not self.dirty:
            self.outputs.begin()
            self.outputs.commit(offsets, group_metadata)
            self.committed_at = time.monotonic()

    def close(self) -> None:
        """Close the task's producer (an open transaction is aborted by the next owner)."""
        if not self.shared_outputs:
            self.outputs.close()
