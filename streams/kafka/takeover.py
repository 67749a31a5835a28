"""Taking a partition on: its producer, its state restored, the consumer at its offsets, its task.

When the group assigns a partition to a member, the member opens the partition's transactional
producer (`river-cw.<state topic>.<p>`; with at-least-once, the shared producer serves), which
fences the previous owner first; restores the partition's last committed state
(`streams.kafka.store.StateStore.restore`); moves the consumer to the offsets that state has
read, refusing a log that no longer reaches them; and builds the partition's task. A newer owner
that fences this one while it restores has the partition already: it is left, and the next
rebalance takes it away.

With exactly-once, the consumed offsets each state was committed with are the group's committed
offsets, written in the same transaction; the restored state must have read exactly that far.
A state that has read less is older than the group's position: a true old snapshot written to
the state topic again and kept by compaction in place of the newer one (docs/security.md), or
a state topic emptied. Serving it would learn those examples again and write their predictions
a second time, so it is refused (`Behind`): the partition is not served, the refusal is
counted (`streams.kafka.metrics`, `river_cw_refused_states_total`) and said in one line.
"""

from __future__ import annotations

import logging
import threading
import time

from streams.kafka.client import KafkaSettings, TopicError, log_reaches
from streams.kafka.config import ServeConfig
from streams.kafka.connections import Clients
from streams.kafka.learner import PartitionLearner, PartitionState
from streams.kafka.metrics import Metrics
from streams.kafka.outputs import Fenced, Outputs
from streams.kafka.source import KafkaSource
from streams.kafka.store import StateStore
from streams.kafka.task import PartitionTask

log = logging.getLogger(__name__)

__all__ = ["Behind", "Takeover"]


class Behind(RuntimeError):
    """A restored state has read less of the input than the group's committed offsets."""


class Takeover:
    """A server's way of taking partitions on: `take(p, clients)` gives partition p's task, or
    None when a newer owner fenced this one while it restored. `spec` names the served model
    in the state; `stop` ends a producer's retries when the server stops."""

    def __init__(
        self,
        settings: KafkaSettings,
        config: ServeConfig,
        store: StateStore,
        spec: str,
        metrics: Metrics,
        stop: threading.Event,
    ):
        self.settings = settings
        self.config = config
        self.store = store
        self.spec = spec
        self.metrics = metrics
        self.stop = stop

    def take(self, p: int, clients: Clients) -> PartitionTask | None:
        """Partition p's task, its state restored and the consumer at its offsets. Raises what
        the restore raises (`StateMismatch`, `StateError`, `TopicError` ...), but `Fenced`."""
        outputs = (
            Outputs(self.settings, f"river-cw.{self.config.topics.state}.{p}", self.stop)
            if clients.shared is None
            else clients.shared
        )  # a transactional producer fences the previous owner first
        try:
            restored = self.store.restore(outputs, p)
            state = restored.state
            self.metrics.restore_seconds[p] = restored.seconds
            if self.config.exactly_once:
                self._check_position(clients.source, state)
            for topic in clients.source.topics:
                self._seek_stored(clients.source, state, topic)
        except BaseException as error:
            if outputs is not clients.shared:
                outputs.close()
            if isinstance(error, Behind):
                self.metrics.refuse(p)
                log.error("partition %d: %s", p, error)
                return None
            if not isinstance(error, Fenced):
                raise
            log.warning("partition %d: fenced by a newer owner while restoring it", p)
            return None
        if clients.rounds is None and state.mixing is not None:
            log.warning("partition %d: mixing is off, its mixing state dropped", p)
            state.mixing = None
        return PartitionTask(
            PartitionLearner(state, model_spec=self.spec, max_pending=self.config.max_pending),
            outputs,
            self.config.topics,
            shared_outputs=outputs is clients.shared,
            mixed_at=time.monotonic(),
            metrics=self.metrics,
        )

    def _check_position(self, source: KafkaSource, state: PartitionState) -> None:
        """`Behind` when `state` has read less of a topic than the group has committed."""
        timeout = self.settings.connect_timeout_ms / 1000
        for topic, committed in sorted(source.committed(state.partition, timeout).items()):
            read = state.offsets.get(topic, 0)
            if read < committed:
                raise Behind(
                    f"refused the restored state, which has read {topic} up to offset {read} "
                    f"where group {self.config.offsets_group!r} committed {committed} with the "
                    "last state: an older state (a replayed snapshot? see docs/security.md); the "
                    "partition is not served"
                )

    def _seek_stored(self, source: KafkaSource, state: PartitionState, topic: str) -> None:
        """Read `topic` of the state's partition from its stored offset (TopicError if the log
        no longer reaches it)."""
        p, offset = state.partition, state.offsets.get(topic)
        if offset is not None and not log_reaches(self.settings, topic, p, offset):
            raise TopicError(
                f"the stored state of partition {p} has read {topic}/{p} up to offset "
                f"{offset}, beyond the end of its log: was the topic deleted and recreated? "
                f"Delete the state topic {self.config.topics.state!r} (and the local cache) and "
                f"the offsets of group {self.config.offsets_group!r} to start over"
            )
        source.seek(topic, p, offset)
