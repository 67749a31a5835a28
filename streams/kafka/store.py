"""A partition's state for its owner: restored when the partition is assigned, saved with each commit.

Kafka Streams' state manager and changelog reader in one small class. The truth is the state
topic (`streams.kafka.state_topic`): its parts are written inside the transaction of the
outputs and offsets they go with. Each commit writes the state's changes since the previous
commit (`streams.kafka.changelog`), or a whole snapshot: the first commit of a partition, at
least every `snapshot_every` commits, once the changes since the last snapshot exceed
`snapshot_share` of its bytes (a restore then reads at most that much more than a snapshot),
and whenever the state cannot be written by changes (a model without a diagonal Gaussian
engine, mixing, a new label that laid the weights out anew). `checkpoint_dir` adds a local
cache (`streams.kafka.checkpoint`, a file per partition holding the state of the last snapshot
and the state topic offset after it), which spares a restarted owner reading the state topic
from its beginning: it reads the changes after the cache.

A new owner first appends a mark to the state topic with its partition's producer, which has
fenced the previous owner, and reads up to it (`state_topic.restore`'s `until`): every part
ever committed lies before the mark, so the restore never stops short of the last one.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from streams.kafka import changelog, checkpoint, state_topic
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


@dataclass
class Written:
    """What a partition's commits wrote to the state topic (for the benchmarks): snapshots,
    changes, the weights and bytes of the changes, the kind of the last part, and since the last
    snapshot its bytes and the changes after it."""

    snapshots: int = 0
    changes: int = 0
    weights: int = 0  # written by the changes
    changes_bytes: int = 0
    last_kind: str = ""
    since: state_topic.Restored = field(default_factory=state_topic.Restored)


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
        self.written: dict[int, Written] = {}  # per partition, since it was restored
        self._rejected = rejected or (lambda partition: None)

    def restore(self, outputs, partition: int) -> Restored:
        """The partition's last committed state, read up to a mark appended with `outputs`
        (the partition's producer, which has fenced the previous owner). `StateMismatch` when
        it was learned by another model (unless `discard_state`)."""
        started = time.monotonic()
        mark = state_topic.mark(outputs, self.topic, partition)
        read, source = self._read(partition, mark)
        seconds = time.monotonic() - started
        stored = read.state
        self.written[partition] = Written(since=read)
        if stored is None:
            log.info(
                "partition %d: no stored state (%.2f s), reading from the beginning",
                partition,
                seconds,
            )
            state = PartitionState(self.config.topics.examples, partition, self.fresh())
            return Restored(state, "none", read.records, seconds)
        if self._discarded(stored):  # a new model: a snapshot first, deleting the old parts
            self.written[partition] = Written(since=state_topic.Restored(parts=read.parts))
        changelog.mark(stored)
        where = (
            f"the local cache {self.config.checkpoint_path(partition)} and {read.records} newer "
            "state records"
            if source == "cache"
            else f"the state topic ({read.records} records read)"
        )
        log.info(
            "partition %d: restored from %s in %.2f s: offsets %s, %d learned, %d pending; "
            "the changes of %d commits after its last snapshot",
            partition,
            where,
            seconds,
            stored.offsets,
            stored.learned,
            len(stored.pending_examples),
            read.changes,
        )
        return Restored(stored, source, read.records, seconds)

    def fresh(self):
        """A new model for a partition: a copy of the served one."""
        return copy.deepcopy(self.model)

    def _read(self, partition: int, mark: int) -> tuple[state_topic.Restored, str]:
        """From the local cache and the state topic after it when there is a cache, else from
        the whole state topic; with the source."""
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
            read = state_topic.restore(
                self.settings,
                self.topic,
                partition,
                self.keys,
                start=after,
                timeout=timeout,
                until=mark,
                state=state,
                rejected=rejected,
            )
            if read.records >= 0:  # the cache, and what the topic holds after it
                if not read.snapshot_bytes:  # no newer snapshot: the cache's
                    read.snapshot_bytes = cached["snapshot_bytes"]
                    read.parts.insert(0, tuple(cached["snapshot_part"]))
                return read, "cache"
        read = state_topic.restore(
            self.settings,
            self.topic,
            partition,
            self.keys,
            timeout=timeout,
            until=mark,
            rejected=rejected,
        )
        return read, "topic"

    def _discarded(self, stored: PartitionState) -> bool:
        """Whether the stored model was discarded for a new one (`StateMismatch` unless
        `discard_state`)."""
        if stored.model_spec == self.spec:
            return False
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
        return True

    def write(self, outputs, state: PartitionState) -> state_topic.Written:
        """Send the state's changes since the last commit, or a snapshot of it (see the module),
        with `outputs` (inside its open transaction when it is transactional); pass what it
        returns to `saved` once the write is committed."""
        written = self.written.setdefault(state.partition, Written())
        since = written.since
        state.batches += 1
        changes = None if self._snapshot_due(since) else changelog.changes(state)
        if changes is None:
            part = state_topic.write_snapshot(
                outputs, self.topic, state.partition, state, self.keys, obsolete=since.parts
            )
            written.since = state_topic.Restored(
                snapshot_bytes=part.bytes, parts=[(part.name, part.chunks)]
            )
            written.snapshots += 1
            written.last_kind = state_topic.SNAPSHOT
        else:
            since.changes += 1
            part = state_topic.write_changes(
                outputs, self.topic, state.partition, state, changes, since.changes, self.keys
            )
            since.changes_bytes += part.bytes
            since.parts.append((part.name, part.chunks))
            written.changes += 1
            written.weights += changes.weights
            written.changes_bytes += part.bytes
            written.last_kind = state_topic.CHANGES
        changelog.mark(state)
        return part

    def _snapshot_due(self, since: state_topic.Restored) -> bool:
        """Whether this commit writes a snapshot, changes or not: none yet, `snapshot_every`
        commits since the last, or changes beyond `snapshot_share` of it."""
        config = self.config
        return (
            since.snapshot_bytes == 0
            or since.changes + 1 >= config.snapshot_every
            or since.changes_bytes > config.snapshot_share * since.snapshot_bytes
        )

    def saved(self, state: PartitionState, part: state_topic.Written) -> None:
        """The write of `state` is committed: refresh the local cache, if any, after a
        snapshot (the changes after it are read from the topic)."""
        path = self.config.checkpoint_path(state.partition)
        written = self.written[state.partition]
        if path is not None and written.last_kind == state_topic.SNAPSHOT:
            checkpoint.save(
                path,
                state,
                state_offset=part.delivery.offset + 1,
                snapshot_bytes=written.since.snapshot_bytes,
                snapshot_part=(part.name, part.chunks),
            )
