"""Serve and learn a river classifier on a Kafka topic, exactly once end to end.

For every example the server writes `{id, prediction, probabilities, model_version, partition}`
to the predictions topic (`model_version` = examples the model had learned), then learns it if
it is labelled. Unlabelled examples wait for their label on the labels topic; a label that comes
first waits for its example (both bounded by `max_pending`). A record that cannot be decoded,
predicted or learned goes to the dead-letter topic with the reason; only infrastructure faults
(no broker, a state that cannot be restored) end `run` with an exception. The learning itself
lives in `streams.kafka.learner.PartitionLearner`; this module moves its records and events.

State is per partition: partition p of the examples topic and of the labels topic feed one
model, whose `PartitionState` (model, offsets, pending examples and labels, counters) is kept
in partition p of the compacted state topic (`streams.kafka.state_topic`), so whichever member of the
consumer group gets the partition, on any machine, restores it. `checkpoint_dir` adds a local
cache (a file per partition) that spares reading the state topic from its beginning.

Processing guarantees (`ServeConfig.processing_guarantee`):

- "exactly-once" (default): each partition has a transactional producer (transactional id
  `river-cw.<state topic>.<p>`). The outputs of a batch of records, the partition's state
  after it and the consumed offsets (committed for the group) are in one Kafka transaction. A
  crash at any point, even kill -9, aborts the open transaction; the next owner (its producer
  with the same id fences the old one) restores the last committed state (reading the state
  topic up to a mark it appends after fencing: `streams.kafka.state_topic`) and re-learns the records
  since, silently, so a consumer reading committed records only
  (`streams.kafka.committed.committed_consumer`) sees each example's prediction exactly once.
  Outputs become visible when their batch commits (every `checkpoint_every` records or
  `checkpoint_seconds`).
- "at-least-once": outputs are sent at once; every batch, after the broker has acknowledged
  them, the state is written. After a crash the records since the last state are learned
  again from the state that had not seen them (the model is still learned exactly once), and
  their outputs are written again.

Without mixing each partition's model learns from that partition alone, so it ends equal to an
offline run over the partition in offset order (with a labels topic: in the order the labels
were joined). Keep processing a poll's records (up to 500) plus a commit well under
max_poll_interval_ms.

Mixing (`ServeConfig.mix` "kl" or "l2", exactly-once only): one model for the whole group, by
the rounds of `streams.models.mixing`. Every `mix_every` examples it learned (or after `mix_seconds`
when it learned something or others wait for it), a partition publishes its changes since the
last mix to the models topic (`streams.kafka.models_topic`, one partition), in the same transaction as
its state (which records the publication, its anchor and the examples to replay) and its
consumed offsets: after any crash a contribution is committed exactly when the state that says
so is, so no example's evidence is lost or counted twice. Every member reads the models topic;
once a round has every partition's contribution, each partition adopts the mix (a
deterministic function of the previous mix and the contributions, the same on every member)
and learns again the examples it learned since publishing. Partitions do not wait for each
other unless `mix_lag` is set (bounded staleness: a partition that many examples past its
publication leaves its records until the round is mixed, then reads them again from its
offsets). A partition restored by a new owner carries its round and anchor in its state and
reads the models topic from where its round's contributions start. A round needs a
contribution of every partition of the topic: some member must serve each.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from kafka import TopicPartition

from streams.kafka import checkpoint, models_topic, state_topic
from streams.kafka.client import (
    Fenced,
    KafkaSettings,
    KafkaSource,
    Outputs,
    TopicError,
    create_topics,
    log_reaches,
)
from streams.kafka.learner import DeadLetter, PartitionLearner, PartitionState, Prediction
from streams.models.mixing import Mixer, MixState, Rounds

log = logging.getLogger(__name__)

GUARANTEES = ("exactly-once", "at-least-once")
MIXES = ("off", "kl", "l2")


class StateMismatch(RuntimeError):
    """The stored state was learned by another model than the one the server was given."""


@dataclass(frozen=True)
class ServeConfig:
    """What `ModelServer` serves and how (topics, group, guarantee, batching, limits).

    `model_spec` names the model in the stored state (default: the model's repr on one line);
    a stored state with another spec stops the server unless `discard_state`, which starts new
    models from the stored offsets. `stale_label_after`: a label still waiting for its example after
    this many examples of its partition is reported (keyed differently from its example?).
    """

    examples_topic: str
    predictions_topic: str
    dead_letter_topic: str
    labels_topic: str | None = None
    state_topic: str | None = None  # default: <examples_topic>.state
    group_id: str | None = None
    partitions: tuple[int, ...] | None = None
    processing_guarantee: str = "exactly-once"
    checkpoint_dir: str | Path | None = None
    checkpoint_every: int = 1000
    checkpoint_seconds: float = 5.0
    max_pending: int = 100_000
    idle_timeout: float | None = None
    log_seconds: float = 10.0
    poll_timeout_ms: int = 200
    model_spec: str | None = None
    discard_state: bool = False
    restore_timeout: float = 120.0
    stale_label_after: int = 10_000
    mix: str = "off"
    mix_every: int = 1000
    mix_seconds: float | None = 10.0
    mix_lag: int | None = None  # pause a partition this far past an unmixed publication
    models_topic: str | None = None  # default: <examples_topic>.models

    def __post_init__(self):
        if self.processing_guarantee not in GUARANTEES:
            raise ValueError(
                f"processing_guarantee must be one of {GUARANTEES}, "
                f"got {self.processing_guarantee!r}"
            )
        if self.mix not in MIXES:
            raise ValueError(f"mix must be one of {MIXES}, got {self.mix!r}")
        if self.mixing and not self.exactly_once:
            raise ValueError("mixing needs exactly-once processing (its rounds are transactional)")
        if self.mix_every < 1:
            raise ValueError(f"mix_every must be >= 1, got {self.mix_every!r}")
        if self.partitions is not None:
            object.__setattr__(self, "partitions", tuple(self.partitions))

    @property
    def topics(self) -> list[str]:
        return [self.examples_topic] + ([self.labels_topic] if self.labels_topic else [])

    @property
    def states_topic(self) -> str:
        return self.state_topic or state_topic.state_topic(self.examples_topic)

    @property
    def offsets_group(self) -> str:
        """The consumer group whose offsets the transactions commit."""
        return self.group_id or f"river-cw.{self.examples_topic}"

    @property
    def exactly_once(self) -> bool:
        return self.processing_guarantee == "exactly-once"

    @property
    def mixing(self) -> bool:
        return self.mix != "off"

    @property
    def contributions_topic(self) -> str:
        return self.models_topic or models_topic.models_topic(self.examples_topic)


@dataclass
class _Partition:
    learner: PartitionLearner
    outputs: Outputs
    dirty: bool = False
    stale_reported: int = 0
    mixer: Mixer | None = None
    mixed_at: float = 0.0  # monotonic time of the last publication or adoption
    paused: bool = False  # waiting for its round (`ServeConfig.mix_lag`)

    @property
    def state(self) -> PartitionState:
        return self.learner.state


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
        self.parts: dict[int, _Partition] = {}
        self._shared: Outputs | None = None  # at-least-once: one producer for all partitions
        self._stop = threading.Event()
        self._rounds: Rounds | None = None  # mixing: the contributions seen, by round
        self._models: models_topic.Reader | None = None
        self._since_commit = 0
        self._last_commit = self._last_record = time.monotonic()

    @property
    def states(self) -> dict[int, PartitionState]:
        return {p: part.state for p, part in list(self.parts.items())}

    def checkpoint_path(self, partition: int) -> Path | None:
        """The local cache file of a partition's state (None without `checkpoint_dir`)."""
        if self.config.checkpoint_dir is None:
            return None
        return Path(self.config.checkpoint_dir) / f"{self.config.examples_topic}-{partition}.ckpt"

    def stop(self) -> None:
        """Ask `run` to commit and return after the current message (thread/signal safe)."""
        self._stop.set()

    def run(self) -> dict[int, PartitionState]:
        """Serve until stopped; returns the final states. Raises `BrokerUnavailable`,
        `TopicError`, `StateMismatch`, `StateError` or `CheckpointError` (infrastructure)."""
        config = self.config
        self.source = KafkaSource(
            self.settings, config.topics, group_id=config.group_id, partitions=config.partitions
        )
        try:
            create_topics(
                self.settings.bootstrap_servers,
                {config.states_topic: self.source.partition_count},
                state_topic.TOPIC_CONFIG,
            )
            if not config.exactly_once:
                self._shared = Outputs(self.settings)
            if config.mixing:
                create_topics(self.settings.bootstrap_servers, {config.contributions_topic: 1})
                self._rounds = Rounds(self.source.partition_count, config.mix)
                self._models = models_topic.Reader(self.settings, config.contributions_topic)
        except BaseException:
            self.source.close()
            raise
        consumed, started = 0, time.monotonic()
        last_log = (consumed, started)
        try:
            self.source.start(self._assign, self._revoke, self._lose)
            while not self._stop.is_set():
                waiting = any(part.paused for part in self.parts.values())
                records = self.source.poll(10 if waiting else config.poll_timeout_ms)
                for record in records:
                    if self._stop.is_set():
                        break
                    if record.partition in self.parts and not self._waits(record.partition):
                        try:
                            self._handle(record)
                            self._publish_due(record.partition)
                        except Fenced:
                            self._fenced(record.partition)
                        consumed += 1
                    if self._commit_due():
                        self.commit()
                if self._rounds is not None:
                    self._mix()
                now = time.monotonic()
                if records or waiting:
                    self._last_record = now  # waiting for a round is not idleness
                elif config.idle_timeout is not None and now - self._last_record >= (
                    config.idle_timeout
                ):
                    log.info("no message for %.1f s: stopping", config.idle_timeout)
                    break
                if self._commit_due():
                    self.commit()
                if now - last_log[1] >= config.log_seconds:
                    self._log_progress(consumed - last_log[0], now - last_log[1])
                    last_log = (consumed, now)
            self.commit()
            self._log_progress(consumed, time.monotonic() - started, final=True)
        finally:
            self.source.close()
            for part in self.parts.values():
                if part.outputs is not self._shared:
                    part.outputs.close()
            if self._shared is not None:
                self._shared.close()
            if self._models is not None:
                self._models.close()
        return self.states

    # --- partitions -------------------------------------------------------------------------

    def _assign(self, partitions: set[int]) -> None:
        config = self.config
        for p in sorted(partitions):
            outputs = (
                Outputs(self.settings, f"river-cw.{config.states_topic}.{p}")
                if config.exactly_once
                else self._shared
            )  # a transactional producer fences the previous owner first
            try:
                state = self._restore(p, state_topic.mark(outputs, config.states_topic, p))
            except BaseException as error:
                if outputs is not self._shared:
                    outputs.close()
                if not isinstance(error, Fenced):
                    raise
                # a newer owner already: the next rebalance takes it away
                log.warning("partition %d: fenced by a newer owner while restoring it", p)
                continue
            learner = PartitionLearner(state, model_spec=self.spec, max_pending=config.max_pending)
            mixer = self._mixer(state)
            for topic in self.source.topics:
                offset = state.offsets.get(topic)
                if offset is not None and not log_reaches(self.settings, topic, p, offset):
                    if outputs is not self._shared:
                        outputs.close()
                    raise TopicError(
                        f"the stored state of partition {p} has read {topic}/{p} up to offset "
                        f"{offset}, beyond the end of its log: was the topic deleted and "
                        f"recreated? Delete the state topic {config.states_topic!r} (and the "
                        "local cache) to start over"
                    )
                self.source.seek(topic, p, offset)
            self.parts[p] = _Partition(learner, outputs, mixer=mixer, mixed_at=time.monotonic())
        restored = [self.parts[p].state for p in partitions if p in self.parts]
        if self._models is not None and restored:  # from where the new partitions' rounds need
            self._models.rewind(min(state.mixing.models_from for state in restored))
        self._last_record = time.monotonic()

    def _mixer(self, state: PartitionState) -> Mixer | None:
        """The partition's side of mixing; a partition that never mixed starts its rounds from
        the served model (every partition descends from it: its learning so far is its first
        contribution)."""
        if not self.config.mixing:
            if state.mixing is not None:
                log.warning(
                    "partition %d: mixing is off, its mixing state dropped", state.partition
                )
                state.mixing = None
            return None
        if state.mixing is None:
            state.mixing = MixState.starting(self.model)
            state.mixing.learned = state.learned
        return Mixer(state.mixing, self.config.mix_every, self.config.mix_seconds)

    def _restore(self, p: int, mark: int) -> PartitionState:
        """The partition's last committed state: from the local cache and the state topic
        after it when there is a cache, else from the whole state topic, up to the `mark` this
        owner appended to it (`streams.kafka.state_topic`)."""
        config, started = self.config, time.monotonic()
        path = self.checkpoint_path(p)
        cached = None if path is None else checkpoint.load(path)
        stored, read = None, 0
        if cached is not None:
            state, after = cached["state"], cached["state_offset"]
            if (state.topic, state.partition) != (config.examples_topic, p):
                raise checkpoint.CheckpointError(
                    f"{path} holds {state.topic}/{state.partition}, not {config.examples_topic}/{p}"
                )
            stored, read = state_topic.restore(
                self.settings,
                config.states_topic,
                p,
                start=after,
                timeout=config.restore_timeout,
                until=mark,
            )
            where = f"the local cache {path} and {read} newer state records"
            if stored is None and read >= 0:
                stored = state
        if stored is None:
            stored, read = state_topic.restore(
                self.settings, config.states_topic, p, timeout=config.restore_timeout, until=mark
            )
            where = f"the state topic ({read} records read)"
        seconds = time.monotonic() - started
        if stored is None:
            log.info(
                "partition %d: no stored state (%.2f s), reading from the beginning", p, seconds
            )
            return PartitionState(config.examples_topic, p, copy.deepcopy(self.model))
        if stored.model_spec != self.spec:
            if not config.discard_state:
                raise StateMismatch(
                    f"partition {p} was learned by {stored.model_spec}, not by the model given "
                    f"({self.spec}); serve with the same --model, or discard the stored models "
                    f"(--discard-state: new models from the stored offsets on)"
                )
            log.warning(
                "partition %d: discarding the stored model %s (%d learned) for %s",
                p,
                stored.model_spec,
                stored.learned,
                self.spec,
            )
            stored.model, stored.model_spec = copy.deepcopy(self.model), self.spec
            stored.mixing = None  # a new lineage: delete the models topic too
        log.info(
            "partition %d: restored from %s in %.2f s: offsets %s, %d learned, %d pending",
            p,
            where,
            seconds,
            stored.offsets,
            stored.learned,
            len(stored.pending_examples),
        )
        return stored

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
        log.warning("partition %d: fenced by a newer owner, dropping it", p)
        self._drop([p])

    def _drop(self, partitions) -> None:
        for p in partitions:
            part = self.parts.pop(p, None)
            if part is not None and part.outputs is not self._shared:
                part.outputs.close()

    # --- mixing -----------------------------------------------------------------------------

    def _mix(self) -> None:
        """Take new contributions; adopt complete rounds; publish where due."""
        for contribution, offset in self._models.poll(0):
            self._rounds.add(contribution, offset)
        now = time.monotonic()
        for p, part in list(self.parts.items()):
            mixing = part.state.mixing
            mix = self._rounds.mix(mixing.round, mixing) if mixing.published else None
            if mix is not None:
                part.state.model = part.mixer.adopt(part.state.model, mix)
                part.dirty, part.mixed_at = True, now
                if part.paused:  # read on from the first record it left
                    for topic in self.source.topics:
                        self.source.seek(topic, p, part.state.offsets.get(topic))
                    part.paused = False
                log.info(
                    "partition %d: mixed round %d (%d examples in the mix)",
                    p,
                    mix.round,
                    mix.examples,
                )
            try:
                self._publish_due(p, now - part.mixed_at)
            except Fenced:
                self._fenced(p)
        if self.parts:
            self._rounds.forget(min(part.state.mixing.round for part in self.parts.values()))

    def _waits(self, p: int) -> bool:
        """Whether partition p is `mix_lag` examples past its unmixed publication: its records
        are left, to be read again from its offsets once its round is mixed. (Not
        `KafkaConsumer.pause`: resumed partitions were seen to get no records from the test
        broker again.)"""
        part = self.parts[p]
        if not part.paused and part.mixer is not None:
            part.paused = part.mixer.ahead(self.config.mix_lag)
        return part.paused

    def _publish_due(self, p: int, elapsed: float = 0.0) -> None:
        """Publish partition p's contribution if due, committed at once with its state and
        offsets (one transaction: see `streams.models.mixing`)."""
        part = self.parts.get(p)
        if part is None or part.mixer is None:
            return
        waiting = self._rounds.waiting(part.state.mixing.round)
        if not part.mixer.due(elapsed, waiting):
            return
        contribution = part.mixer.publish(part.state.model, p)
        part.outputs.begin()
        models_topic.write(part.outputs, self.config.contributions_topic, contribution)
        part.dirty, part.mixed_at = True, time.monotonic()
        self.commit([p])

    # --- commits ----------------------------------------------------------------------------

    def _commit_due(self) -> bool:
        return any(part.dirty for part in self.parts.values()) and (
            self._since_commit >= self.config.checkpoint_every
            or time.monotonic() - self._last_commit >= self.config.checkpoint_seconds
        )

    def commit(self, partitions=None) -> None:
        """Commit the changed partitions: outputs, state and offsets (one transaction each
        with exactly-once; outputs acknowledged, then the state, with at-least-once)."""
        todo = sorted(p for p, part in self.parts.items() if part.dirty)
        if partitions is not None:
            todo = [p for p in todo if p in partitions]
        if not todo:
            return
        if self._shared is not None:
            self._shared.flush()
        for p in todo:
            part = self.parts[p]
            part.state.batches += 1
            try:
                manifest = state_topic.write(part.outputs, self.config.states_topic, p, part.state)
                offsets = {
                    TopicPartition(topic, p): offset for topic, offset in part.state.offsets.items()
                }
                if self.config.exactly_once:
                    part.outputs.commit(offsets, self.config.offsets_group)
                else:
                    part.outputs.flush()
            except Fenced:
                self._fenced(p)
                continue
            part.dirty = False
            path = self.checkpoint_path(p)
            if path is not None:
                after = manifest.get().offset + 1
                checkpoint.save(path, {"state": part.state, "state_offset": after})
        if not any(part.dirty for part in self.parts.values()):
            self._since_commit = 0
            self._last_commit = time.monotonic()

    # --- messages ---------------------------------------------------------------------------

    def _handle(self, record) -> None:
        part = self.parts[record.partition]
        part.state.offsets[record.topic] = record.offset + 1
        part.dirty = True
        self._since_commit += 1
        part.outputs.begin()
        if record.topic == self.config.examples_topic:
            events = part.learner.example(record.value)
        else:
            events = part.learner.label(record.value)
        for event in events:
            if isinstance(event, Prediction):
                part.outputs.send(self.config.predictions_topic, key=event.key, value=event.value)
            elif isinstance(event, DeadLetter):
                part.outputs.dead_letter(self.config.dead_letter_topic, record, event.reason)

    # --- monitoring -------------------------------------------------------------------------

    def _log_progress(self, consumed: int, seconds: float, final: bool = False) -> None:
        parts, lag = list(self.parts.values()), self.source.lag()
        scored = sum(part.state.scored for part in parts)
        correct = sum(part.state.correct for part in parts)
        log.info(
            "%s%d messages in %.1f s (%.0f/s); partitions %s: learned %d, prequential accuracy "
            "%s, pending examples %d, labels waiting %d, dead letters %d, expired %d; lag %s",
            "done: " if final else "",
            consumed,
            seconds,
            consumed / max(seconds, 1e-9),
            sorted(self.parts),
            sum(part.state.learned for part in parts),
            f"{correct / scored:.4f}" if scored else "n/a",
            sum(len(part.state.pending_examples) for part in parts),
            sum(len(part.state.pending_labels) for part in parts),
            sum(part.state.dead_letters for part in parts),
            sum(part.state.expired for part in parts),
            "unknown" if lag is None else lag,
        )
        for p, part in sorted(self.parts.items()):
            stale = part.learner.stale_labels(self.config.stale_label_after)
            if stale > part.stale_reported:
                log.warning(
                    "partition %d: %d labels have waited for their example while %d or more "
                    "examples came; are labels keyed by the same id as their examples (same "
                    "partition)?",
                    p,
                    stale,
                    self.config.stale_label_after,
                )
            part.stale_reported = stale
