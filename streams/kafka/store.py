"""A partition's state for its owner: restored when the partition is assigned, saved with each commit.

Kafka Streams' state manager and changelog reader in one small class. The truth is the state
topic (`streams.kafka.state_topic`): its snapshots are written inside the transaction of the
outputs and offsets they go with. `checkpoint_dir` adds a local cache (`streams.kafka.checkpoint`,
a file per partition holding the state and the state topic offset after its snapshot), which
spares a restarted owner reading the state topic from its beginning.

A new owner first appends a mark to the state topic with its partition's producer, which has
fenced the previous owner, and reads up to it (`state_topic.restore`'s `until`): every snapshot
ever committed lies before the mark, so the restore never stops short of the last one.

What is written per commit (a whole snapshot today), how it is read back, and how its bytes are
authenticated all live behind `StateStore.write` and `StateStore.restore`.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from streams.kafka import checkpoint, state_topic
from streams.kafka.client import KafkaSettings
from streams.kafka.config import ServeConfig
from streams.kafka.learner import PartitionState

log = logging.getLogger(__name__)

__all__ = ["Restored", "StateMismatch", "StateStore"]


class StateMismatch(RuntimeError):
    """The stored state was learned by another model than the one the server was given."""


@dataclass(frozen=True)
class Restored:
    """A restored partition: its state, where it came from and how long reading it took."""

    state: PartitionState
    source: str  # "none", "cache" or "topic"
    records: int
    seconds: float


class StateStore:
    """Restores and saves the states of a server's partitions (`model` copied for new ones,
    `spec` the name a stored state must carry); `rejected(partition)` is called for each state
    record that is ignored because it does not verify (`streams.kafka.state_topic`)."""

    def __init__(
        self,
        settings: KafkaSettings,
        config: ServeConfig,
        model,
        spec: str,
        rejected: Callable[[int], None] | None = None,
    ):
        self.settings = settings
        self.config = config
        self.topic = config.topics.state
        self.keys = config.state_keys
        self.model = model
        self.spec = spec
        self._rejected = rejected or (lambda partition: None)

    def restore(self, outputs, partition: int) -> Restored:
        """The partition's last committed state, read up to a mark appended with `outputs`
        (the partition's producer, which has fenced the previous owner). `StateMismatch` when
        it was learned by another model (unless `discard_state`)."""
        started = time.monotonic()
        mark = state_topic.mark(outputs, self.topic, partition)
        stored, source, read = self._read(partition, mark)
        seconds = time.monotonic() - started
        if stored is None:
            log.info(
                "partition %d: no stored state (%.2f s), reading from the beginning",
                partition,
                seconds,
            )
            state = PartitionState(self.config.topics.examples, partition, self.fresh())
            return Restored(state, "none", read, seconds)
        self._check_spec(stored)
        where = (
            f"the local cache {self.config.checkpoint_path(partition)} and {read} newer state "
            "records"
            if source == "cache"
            else f"the state topic ({read} records read)"
        )
        log.info(
            "partition %d: restored from %s in %.2f s: offsets %s, %d learned, %d pending",
            partition,
            where,
            seconds,
            stored.offsets,
            stored.learned,
            len(stored.pending_examples),
        )
        return Restored(stored, source, read, seconds)

    def fresh(self):
        """A new model for a partition: a copy of the served one."""
        return copy.deepcopy(self.model)

    def _read(self, partition: int, mark: int) -> tuple[PartitionState | None, str, int]:
        """From the local cache and the state topic after it when there is a cache, else from
        the whole state topic; with the source and the records read."""
        path = self.config.checkpoint_path(partition)
        cached = None if path is None else checkpoint.load(path)
        timeout = self.config.restore_timeout
        rejected = lambda: self._rejected(partition)  # noqa: E731
        if cached is not None:
            state, after = cached["state"], cached["state_offset"]
            if (state.topic, state.partition) != (self.config.topics.examples, partition):
                raise checkpoint.CheckpointError(
                    f"{path} holds {state.topic}/{state.partition}, not "
                    f"{self.config.topics.examples}/{partition}"
                )
            stored, read = state_topic.restore(
                self.settings,
                self.topic,
                partition,
                self.keys,
                start=after,
                timeout=timeout,
                until=mark,
                rejected=rejected,
                newer_than=state.batches,
            )
            if stored is not None:
                return stored, "cache", read
            if read >= 0:  # nothing newer than the cache in the topic
                return state, "cache", read
        stored, read = state_topic.restore(
            self.settings,
            self.topic,
            partition,
            self.keys,
            timeout=timeout,
            until=mark,
            rejected=rejected,
        )
        return stored, "topic", read

    def _check_spec(self, stored: PartitionState) -> None:
        if stored.model_spec == self.spec:
            return
        if not self.config.discard_state:
            raise StateMismatch(
                f"partition {stored.partition} was learned by {stored.model_spec}, not by the "
                f"model given ({self.spec}); serve with the same --model, or discard the stored "
                "models (--discard-state: new models from the stored offsets on)"
            )
        log.warning(
            "partition %d: discarding the stored model %s (%d learned) for %s",
            stored.partition,
            stored.model_spec,
            stored.learned,
            self.spec,
        )
        stored.model, stored.model_spec = self.fresh(), self.spec
        stored.mixing = None  # a new lineage: delete the models topic too

    def write(self, outputs, state: PartitionState):
        """Send a snapshot of `state` with `outputs` (inside its open transaction when it is
        transactional); pass what it returns to `saved` once the write is committed."""
        state.batches += 1
        return state_topic.write(outputs, self.topic, state.partition, state, self.keys)

    def saved(self, state: PartitionState, written) -> None:
        """The write of `state` is committed: refresh the local cache, if any."""
        path = self.config.checkpoint_path(state.partition)
        if path is not None:
            checkpoint.save(path, {"state": state, "state_offset": written.offset + 1})
