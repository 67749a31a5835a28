"""Serve and learn a river classifier on a Kafka topic, exactly once end to end.

For every example the server writes `{id, prediction, probabilities, model_version, partition}`
to the predictions topic (`model_version` = examples the model had learned), then learns it if
it is labelled. Unlabelled examples wait for their label on the labels topic; a label that comes
first waits for its example (both bounded by `max_pending`). A record that cannot be decoded,
predicted or learned goes to the dead-letter topic with the reason; only infrastructure faults
(no broker, a state that cannot be restored) end `run` with an exception.

Stopping (`stop`, SIGTERM or Ctrl-C in `river-cw serve`) commits the open batches and leaves the
group (a member still joining first completes its join: see `_finish_joining`). A transaction
whose fate is unknown (the broker stopped answering) drops the partition's work since its last
commit and restores it, as a new owner would.

The parts, as Kafka Streams splits a task's work: this module is the poll/commit loop and the
partitions' assignment; `streams.kafka.connections.Clients` are the clients it holds while it
runs; `streams.kafka.takeover.Takeover` takes an assigned partition on (its producer, its state
restored by `streams.kafka.store.StateStore`, the consumer at its offsets);
`streams.kafka.task.PartitionTask` handles one partition's records (learning in
`streams.kafka.learner`, outputs through `streams.kafka.outputs.Outputs`) and commits them;
`streams.kafka.rounds.RoundCoordinator` runs the mixing rounds; `streams.kafka.monitor` measures
the lag and logs.

State is per partition: partition p of the examples topic and of the labels topic feed one
model, whose `PartitionState` (model, offsets, pending examples and labels, counters) is kept
in partition p of the compacted state topic (`streams.kafka.state_topic`), so whichever member
of the consumer group gets the partition, on any machine, restores it.

Processing guarantees (`ServeConfig.processing_guarantee`):

- "exactly-once" (default): each partition has a transactional producer (transactional id
  `river-cw.<state topic>.<p>`). The outputs of a batch of records, the partition's state
  after it and the consumed offsets (committed for the group) are in one Kafka transaction. A
  crash at any point, even kill -9, aborts the open transaction; the next owner (its producer
  with the same id fences the old one) restores the last committed state and re-learns the
  records since, silently, so a consumer reading committed records only
  (`streams.kafka.committed.committed_consumer`) sees each example's prediction exactly once.
  Outputs become visible when their batch commits (every `checkpoint_every` records or
  `checkpoint_seconds`).
- "at-least-once": outputs are sent at once; every batch, after the broker has acknowledged
  them, the state is written. After a crash the records since the last state are learned
  again from the state that had not seen them (the model is still learned exactly once), and
  their outputs are written again.

Without mixing each partition's model learns from that partition alone, so it ends equal to an
offline run over the partition in offset order (with a labels topic: in the order the labels
were joined). Keep processing a poll's records plus a commit well under max_poll_interval_ms.

Mixing (`ServeConfig.mixing`, exactly-once only): one model for the whole group, by the rounds
of `streams.models.mixing`, which `streams.kafka.rounds` says how the server runs.
"""

from __future__ import annotations

import logging
import threading
import time
from itertools import groupby

from confluent_kafka import Message

from streams.kafka.client import KafkaSettings
from streams.kafka.config import ServeConfig
from streams.kafka.connections import Clients
from streams.kafka.learner import PartitionState
from streams.kafka.metrics import Metrics
from streams.kafka.monitor import Monitor
from streams.kafka.outputs import CommitFailed, Fenced
from streams.kafka.rounds import RoundCoordinator
from streams.kafka.store import StateStore
from streams.kafka.takeover import Takeover
from streams.kafka.task import PartitionTask

log = logging.getLogger(__name__)

__all__ = ["ModelServer"]


class ModelServer:
    """Predict, learn and commit; `run` until `stop`, or until idle for `idle_timeout` s.

    `ModelServer(model, settings, config)` or, for short, keyword arguments of `ServeConfig`.
    `model` is copied for each new partition; `states` maps owned partitions to their state.
    """

    def __init__(self, model, settings: KafkaSettings, config: ServeConfig | None = None, **kw):
        self.model = model
        self.settings = settings
        self.config = config if config is not None else ServeConfig(**kw)
        self.spec = self.config.model_spec or " ".join(repr(model).split())
        self.metrics = Metrics()
        topics = self.config.topics
        self.store = StateStore(
            settings,
            self.config,
            model,
            self.spec,
            rejected=lambda p: self.metrics.reject(topics.state, p),
        )
        self.tasks: dict[int, PartitionTask] = {}
        self.monitor = Monitor(self.config, settings.session_timeout_ms)
        self._opened: Clients | None = None  # while `run` serves
        self._stop = threading.Event()
        self._takeover = Takeover(
            settings, self.config, self.store, self.spec, self.metrics, self._stop
        )
        self._since_commit = 0
        self._last_commit = self._last_record = self._last_step = time.monotonic()

    @property
    def states(self) -> dict[int, PartitionState]:
        return {p: task.state for p, task in list(self.tasks.items())}

    def stop(self) -> None:
        """Ask `run` to commit and return (after the records in hand; thread/signal safe)."""
        self._stop.set()

    def live(self) -> bool:
        """Whether the serving loop went round within max_poll_interval_ms."""
        return time.monotonic() - self._last_step < self.settings.max_poll_interval_ms / 1000

    def ready(self) -> bool:
        """Whether the member serves: it owns partitions, has restored all of them and is not
        stopping."""
        opened = self._opened
        if opened is None or self._stop.is_set() or not opened.source.partitions:
            return False
        return opened.source.partitions <= set(self.tasks)

    def lag(self) -> dict[int, int] | None:
        """Records behind the input topics' end, per owned partition (None: not known yet), as
        the serving loop last measured it (at most a second ago): the consumer is not called
        from other threads."""
        return self.monitor.lag

    @property
    def _clients(self) -> Clients:
        """The clients `run` opened: the serving loop's and its callbacks' only."""
        if self._opened is None:
            raise RuntimeError("ModelServer: Kafka clients used outside run(), which opens them")
        return self._opened

    def run(self) -> dict[int, PartitionState]:
        """Serve until stopped; returns the final states. Raises `BrokerUnavailable`,
        `TopicError`, `StateMismatch`, `StateError` or `CheckpointError` (infrastructure)."""
        models = self.config.topics.models
        clients = self._opened = Clients.open(
            self.settings, self.config, self.model, lambda: self.metrics.reject(models, 0)
        )
        try:
            clients.source.start(self._assign, self._revoke, self._lose)
            while not self._stop.is_set() and not self._idle():
                self._step()
            self.commit()
            self._finish_joining()
            self.monitor.done(self.tasks, clients.source.lag())
        finally:
            self._opened = None
            clients.close(self.tasks.values())
        return self.states

    def _finish_joining(self, seconds: float = 2.5) -> None:
        """Stopped while joining its group: wait (up to `seconds`) for the join to complete
        before leaving. A member that leaves while the group forms around it as its leader
        leaves the demo broker (Tansu 0.6) keeping it as the leader: the group then assigns
        nothing to anyone until the broker restarts. Once formed, leaving is clean."""
        source = self._clients.source
        if source.group_id is None or source.assigned_at is not None:
            return
        deadline = time.monotonic() + seconds
        while source.assigned_at is None and time.monotonic() < deadline:
            source.poll(50)  # no task: records are left for the next owner

    def _step(self) -> None:
        """One poll: its records handled, rounds advanced, commits made when due."""
        source, rounds = self._clients.source, self._clients.rounds
        waiting = any(task.paused for task in self.tasks.values())
        records = source.poll(10 if waiting else self.config.poll_timeout_ms)
        for run in self._runs(records):
            if self._stop.is_set():
                break
            task = self.tasks.get(run[0].partition())
            if task is not None and not (rounds and rounds.waits(task)):
                try:
                    task.handle(run)
                    self._since_commit += len(run)
                    self._publish_due(task)
                except Fenced:
                    self._fenced(task.partition)
                except CommitFailed as error:
                    self._reset(task.partition, error)
                self.monitor.handled(len(run))
            if self._commit_due():
                self.commit()
        if rounds is not None:
            self._mix(rounds)
        if records or waiting:
            self._last_record = time.monotonic()  # waiting for a round is not idleness
        if self._commit_due():
            self.commit()
        self._check_owners()
        self._last_step = time.monotonic()
        self.monitor.tick(self.tasks, source)

    def _runs(self, records: list):
        """The records in runs of one partition, each ending where a commit falls due (one
        record each when mixing: a publication may fall due after any of them)."""
        for _, partition in groupby(records, Message.partition):
            run = list(partition)
            start = 0
            while start < len(run):
                limit = (
                    1
                    if self._clients.rounds
                    else max(1, self.config.checkpoint_every - self._since_commit)
                )
                yield run[start : start + limit]
                start += limit

    def _idle(self) -> bool:
        """No message for `idle_timeout` s (a member still joining its group gets a session
        timeout more: joins take seconds)."""
        timeout = self.config.idle_timeout
        if timeout is None:
            return False
        source = self._clients.source
        joining = source.group_id is not None and source.assigned_at is None
        if joining:
            timeout += self.settings.session_timeout_ms / 1000
        if time.monotonic() - self._last_record < timeout:
            return False
        log.info("no message for %.1f s: stopping", timeout)
        return True

    # --- partitions -------------------------------------------------------------------------

    def _assign(self, partitions: set[int]) -> None:
        if self._stop.is_set():  # stopping: take nothing on
            return
        clients, states = self._clients, []
        for p in sorted(partitions):
            task = self._takeover.take(p, clients)
            if task is not None:
                self.tasks[p] = task
                states.append(task.state)
        if clients.rounds is not None:  # their mixers, and the rounds from where they need
            clients.rounds.restored(states)
        self._last_record = time.monotonic()

    def _revoke(self, partitions: set[int]) -> None:
        self.commit(partitions)
        self._drop(partitions)
        log.info("partitions %s revoked (committed)", sorted(partitions))

    def _lose(self, partitions: set[int]) -> None:
        self._drop(partitions)
        log.warning(
            "partitions %s lost (evicted from the group): their work since the last commit is "
            "dropped, the new owner redoes it",
            sorted(partitions),
        )

    def _fenced(self, p: int) -> None:
        log.warning("partition %d: fenced by a newer owner: no longer served here", p)
        self._drop([p])

    def _check_owners(self) -> None:
        """Quiet partitions check every `owner_check_seconds` that no newer owner has fenced
        them (`PartitionTask.check_owner`), so that a fenced member stops serving them within
        seconds, not at its next commit, which may be a long way off."""
        if not self.config.exactly_once:
            return
        due = time.monotonic() - self.config.owner_check_seconds
        quiet = [p for p, task in self.tasks.items() if not task.dirty and task.committed_at < due]
        if not quiet:
            return
        metadata = self._clients.source.group_metadata()
        for p in quiet:
            try:
                self.tasks[p].check_owner(metadata)
            except Fenced:
                self._fenced(p)
            except CommitFailed as error:
                self._reset(p, error)

    def _reset(self, p: int, error: Exception) -> None:
        """A transaction of partition p failed: restore it from its last committed state, as
        a new owner would (if it is still ours)."""
        log.warning("partition %d: %s; restoring its last committed state", p, error)
        self._drop([p])
        if p in self._clients.source.partitions and not self._stop.is_set():
            self._assign({p})

    def _drop(self, partitions) -> None:
        for p in partitions:
            task = self.tasks.pop(p, None)
            if task is not None:
                task.close()

    # --- mixing -----------------------------------------------------------------------------

    def _mix(self, rounds: RoundCoordinator) -> None:
        """Adopt complete rounds (a waiting partition reads on from its first record left);
        publish where due."""
        source = self._clients.source
        failed = rounds.rounds.failed
        adopted = rounds.adopt(self.tasks)
        self.metrics.failed_rounds += rounds.rounds.failed - failed
        for p in adopted:
            self.metrics.rounds[p] = self.metrics.rounds.get(p, 0) + 1
            task = self.tasks[p]
            if task.paused:
                for topic in source.topics:
                    source.seek(topic, p, task.state.offsets.get(topic))
                task.paused = False
        for p, task in list(self.tasks.items()):
            try:
                self._publish_due(task)
            except Fenced:
                self._fenced(p)
            except CommitFailed as error:
                self._reset(p, error)

    def _publish_due(self, task: PartitionTask) -> None:
        """Publish the task's contribution if due, committed at once with its state and
        offsets (one transaction: see `streams.models.mixing`)."""
        rounds = self._clients.rounds
        if rounds is not None and rounds.due(task, time.monotonic()):
            rounds.publish(task)
            self.commit([task.partition])

    # --- commits ----------------------------------------------------------------------------

    def _commit_due(self) -> bool:
        return any(task.dirty for task in self.tasks.values()) and (
            self._since_commit >= self.config.checkpoint_every
            or time.monotonic() - self._last_commit >= self.config.checkpoint_seconds
        )

    def commit(self, partitions=None) -> None:
        """Commit the changed partitions: outputs, state and offsets (one transaction each
        with exactly-once; outputs acknowledged, then the state, with at-least-once)."""
        todo = [p for p, task in sorted(self.tasks.items()) if task.dirty]
        if partitions is not None:
            todo = [p for p in todo if p in partitions]
        if not todo:
            return
        clients = self._clients
        if clients.shared is not None:
            clients.shared.flush()
        metadata = clients.source.group_metadata() if self.config.exactly_once else None
        for p in todo:
            try:
                with self.metrics.commit_seconds.time():
                    self.tasks[p].commit(self.store, metadata)
            except Fenced:
                self._fenced(p)
            except CommitFailed as error:
                self._reset(p, error)
        if not any(task.dirty for task in self.tasks.values()):
            self._since_commit = 0
            self._last_commit = time.monotonic()
