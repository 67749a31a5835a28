"""Iterative parameter mixing of the partitions' models, without a broker: the protocol.

Every partition of a stream learns its own copy of one model; in rounds, the partitions publish
what they learned and each continues from the mix (`river_cw.combine` with ``base=``, JMLR 2012
section 7.10 applied as McDonald, Hall and Mann's iterative parameter mixing). The same classes
run the offline simulation (`streams.evaluate.sharded`) and the Kafka server (`streams.kafka.server`, with
the models topic of `streams.kafka.models_topic`), so the simulation predicts what the server does.

Rounds. ``B_0`` is the initial model. Each partition p keeps a `MixState`: the round r it is
in, the mixed model ``B_r`` it started the round from (its anchor), and whether it has
published. Once it has learned `every` examples since its previous publication it publishes
its model ``M_p`` as its `Contribution` to round r, and goes on learning without waiting. When
every partition has published to round r,

    B_{r+1} = combine([M_0, ..., M_{P-1}], base=B_r)        (partitions in order)

adds each partition's change since ``B_r`` to it, each example's evidence once. A partition
then adopts ``B_{r+1}``: it restarts from a copy of it and learns again the examples it learned
since it published (its replay buffer), so its model descends from ``B_{r+1}`` and its next
contribution holds exactly the examples that are not in ``B_{r+1}``. Nobody waits for anybody:
a slow or dead partition only delays the round, while the others learn on.

Determinism: ``B_{r+1}`` is a function of ``B_r`` and the round's contributions, computed the
same way wherever it is computed, so every member gets the same ``B_{r+1}`` and ``B_r`` is never
stored centrally: each partition keeps its anchor. A contribution carries the fingerprint of
its anchor (`fingerprint`), and a round whose contributions disagree on it is refused
(`MixError`: a models topic of another run, or a bug).

Exactly once: a contribution, the partition's state after it (the `MixState` is part of its
`PartitionState`) and its consumed offsets must be committed together (one Kafka transaction).
After a crash the partition restarts from its last committed state: a contribution is then
either committed with the state that says it was published, or not at all.

A round whose mix knows a single label (every partition met only that label so far) is skipped
(``B_{r+1} = B_r``; partitions keep their models and publish their changes since ``B_r`` next
round): such a model's weights score that label against whichever label comes second, which
members that then met different labels could not share. So is a round that `combine` refuses
(a ValueError: the contributions cannot be mixed into a valid Gaussian): serving never stops
for want of a mix. Every partition keeps its own model, its next contribution holds its changes
since the same ``B_r`` (this round's examples and the next's) and mixing resumes next round.
Every member computes the same failure from the same contributions, so they agree without
talking, and so does a member that computes the round again after a restore. The round is
logged once (a warning naming it and the reason) and counted (`Rounds.failed`).

>>> import river_cw
>>> rounds = Rounds(partitions=2, method="kl")
>>> start = river_cw.AROW()
>>> mixers = [Mixer(MixState.starting(start), every=1) for _ in range(2)]
>>> models = [clone(start) for _ in range(2)]
>>> for p, (x, y) in enumerate([({"a": 1.0}, True), ({"b": 1.0}, False)]):
...     models[p].learn_one(x, y)
...     mixers[p].state.record(x, y)
...     rounds.add(mixers[p].publish(models[p], p))
>>> mix = rounds.mix(0, mixers[0].state)
>>> models = [mixers[p].adopt(models[p], mix) for p in range(2)]
>>> sorted(models[0].weights) == sorted(models[1].weights) == ["a", "b"]
True
>>> mixers[0].state.round, mixers[0].state.examples
(1, 2)
"""

from __future__ import annotations

import hashlib
import logging
import pickle
from dataclasses import dataclass, field
from typing import Any

from river_cw import changes, combine
from streams.models.specs import classifier_of

__all__ = ["Contribution", "Mix", "MixError", "MixState", "Mixer", "Rounds", "fingerprint"]

METHODS = ("kl", "l2")

log = logging.getLogger(__name__)


class MixError(RuntimeError):
    """The protocol cannot go on: a round's contributions come from another base than the
    partition's anchor (a models topic of another run), or a partition is out of step (a bug).
    Not a round to skip, unlike a round `combine` cannot mix."""


def clone(model):
    """A deep copy of a model (by pickle: much faster than `copy.deepcopy` on large models)."""
    return pickle.loads(pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL))


def fingerprint(model) -> str:
    """A digest of a model's labels and Gaussian (public `classes_`, `weights`, `variances` of
    the classifier: `streams.models.specs.classifier_of`), independent of the order of its features."""
    model = classifier_of(model)
    digest = hashlib.sha256(repr(list(model.classes_)).encode())
    weights, variances = model.weights, model.variances
    if model.is_binary:
        weights, variances = {None: weights}, {None: variances}
    for label in weights:
        digest.update(b"|" + repr(label).encode())
        for key in sorted(weights[label], key=repr):
            mean, variance = weights[label][key], variances[label][key]
            digest.update(f"{key!r}:{mean.hex()}:{variance.hex()};".encode())
    return digest.hexdigest()


@dataclass
class MixState:
    """One partition's place in the rounds (plain, picklable; part of its `PartitionState`).

    `anchor` is ``B_round`` and `examples` the number of examples whose evidence it holds;
    `learned_at_anchor` is the partition's `learned` count whose examples are in the anchor (or
    in a contribution to it). `replay` holds the examples learned since the partition published
    to `round` (None while it has not). `models_from`: the models topic holds no contribution
    to `round` or later before this offset.
    """

    anchor: Any
    fingerprint: str
    round: int = 0
    examples: int = 0
    learned: int = 0  # examples this partition learned while mixing
    learned_at_anchor: int = 0
    learned_at_publication: int = 0
    replay: list | None = None
    models_from: int = 0

    @classmethod
    def starting(cls, model) -> MixState:
        """The state of a partition starting from `model` (``B_0``)."""
        return cls(clone(model), fingerprint(model))

    @property
    def published(self) -> bool:
        return self.replay is not None

    def record(self, x, y) -> None:
        """Count an example the partition's model learned (and keep it for a replay)."""
        self.learned += 1
        if self.replay is not None:
            self.replay.append((x, y))


@dataclass(frozen=True)
class Contribution:
    """Partition `partition`'s model for round `round` (its weights that differ from the
    anchor's, `river_cw.changes`; None: nothing learned since the anchor), with the examples
    learned since the anchor and the anchor's fingerprint."""

    round: int
    partition: int
    model: Any
    examples: int
    anchor: str


@dataclass(frozen=True)
class Mix:
    """The outcome of a round: ``B_{round+1}`` (`model`, None when the round was skipped), the
    examples it holds, its fingerprint and where the next round's contributions start."""

    round: int
    model: Any
    examples: int
    fingerprint: str
    models_from: int


class Mixer:
    """One partition's side of the protocol: when to publish, what, and adopting a mix.

    A partition publishes `every` examples after its previous publication, or, with `seconds`,
    once that long has passed with something to publish or a round to complete (so that a
    partition with little traffic never holds the others' rounds back for long).
    """

    def __init__(self, state: MixState, every: int, seconds: float | None = None):
        if every < 1:
            raise ValueError(f"mix every must be >= 1 example, got {every!r}")
        self.state = state
        self.every = every
        self.seconds = seconds

    def due(self, elapsed: float = 0.0, waiting: bool = False) -> bool:
        """Whether to publish now: `every` examples learned since the last publication, or
        `seconds` `elapsed` since then (or since the last adoption) with examples learned or
        other partitions `waiting` for this one."""
        state = self.state
        if state.published:
            return False
        fresh = state.learned - state.learned_at_publication
        if fresh >= self.every:
            return True
        return self.seconds is not None and elapsed >= self.seconds and (fresh > 0 or waiting)

    def ahead(self, lag: int | None) -> bool:
        """Whether the partition has learned `lag` examples or more since it published to a
        round that is not mixed yet (None: never): bounded staleness, it should wait."""
        state = self.state
        return (
            lag is not None
            and state.published
            and state.learned - state.learned_at_publication >= lag
        )

    def publish(self, model, partition: int) -> Contribution:
        """The contribution of `model` to the current round; the partition starts a replay."""
        state = self.state
        if state.published:
            raise MixError(f"partition {partition} already published to round {state.round}")
        examples = state.learned - state.learned_at_anchor
        contribution = Contribution(
            state.round,
            partition,
            changes(model, state.anchor) if examples else None,  # the rest is the anchor's
            examples,
            state.fingerprint,
        )
        state.learned_at_publication = state.learned
        state.replay = []
        return contribution

    def adopt(self, model, mix: Mix):
        """The partition's model after round `mix.round`: a copy of the mix with the examples
        learned since publishing learned again (or `model` itself when the round was skipped)."""
        state = self.state
        if mix.round != state.round or state.replay is None:  # not published
            raise MixError(f"cannot adopt round {mix.round} in round {state.round}")
        if mix.model is not None:
            model = clone(mix.model)
            for x, y in state.replay:
                try:
                    model.learn_one(x, y)
                except Exception as error:
                    log.warning("an example learned before fails to replay: %r", error)
            state.anchor = mix.model  # never changed: mixes are shared, read only
            state.fingerprint = mix.fingerprint
            state.examples = mix.examples
            state.learned_at_anchor = state.learned_at_publication
        state.round += 1
        state.replay = None
        state.models_from = mix.models_from
        return model


@dataclass
class _Round:
    contributions: dict = field(default_factory=dict)  # partition -> Contribution
    offsets: dict = field(default_factory=dict)  # partition -> offset it was read at
    end: int = 0  # the models topic offset after the last contribution seen


class Rounds:
    """The contributions seen so far, by round, and their mixes (one per member).

    `add` ignores a second contribution of a partition to a round (none exists when every
    contribution is committed with its partition's state, since the state says it published).
    `failed` counts the rounds skipped because `combine` could not mix them (see the module
    docstring), each once, even when a restore makes this member mix one again.
    """

    def __init__(self, partitions: int, method: str):
        if method not in METHODS:
            raise ValueError(f"mix method must be one of {METHODS}, got {method!r}")
        self.partitions = partitions
        self.method = method
        self._rounds: dict[int, _Round] = {}
        self._mixes: dict[int, Mix] = {}
        self.duplicates = 0
        self.failed = 0
        # the last round counted in `failed`: once a round is complete, every partition's
        # committed state is in it or later, so a member mixes no earlier round afterwards, and
        # only this one again (after a restore)
        self._last_failed = -1  # any negative number: rounds count from 0

    def add(self, contribution: Contribution, offset: int = 0) -> None:
        """Take a contribution (read at `offset` of the models topic; one read again at the
        same offset is ignored)."""
        entry = self._rounds.setdefault(contribution.round, _Round())
        entry.end = max(entry.end, offset + 1)
        p = contribution.partition
        if p in entry.contributions:
            if entry.offsets[p] != offset:
                self.duplicates += 1
                log.warning(
                    "round %d: a second contribution of partition %d ignored", contribution.round, p
                )
            return
        entry.contributions[p] = contribution
        entry.offsets[p] = offset

    def waiting(self, round_: int) -> bool:
        """Whether some partition has published to `round_` (and waits for the others)."""
        entry = self._rounds.get(round_)
        return entry is not None and bool(entry.contributions)

    def complete(self, round_: int) -> bool:
        entry = self._rounds.get(round_)
        return entry is not None and len(entry.contributions) == self.partitions

    def mix(self, round_: int, state: MixState) -> Mix | None:
        """``B_{round+1}`` from the round's contributions and the anchor of `state` (in that
        round), or None while some partition has not published to it."""
        if round_ in self._mixes:
            return self._mixes[round_]
        if not self.complete(round_):
            return None
        if state.round != round_:
            raise MixError(f"a partition in round {state.round} cannot mix round {round_}")
        entry = self._rounds[round_]
        contributions = [entry.contributions[p] for p in sorted(entry.contributions)]
        strangers = [c.partition for c in contributions if c.anchor != state.fingerprint]
        if strangers:
            raise MixError(
                f"round {round_}: partitions {strangers} published changes from another base "
                "than this partition's: a models topic left by another run? (delete it with "
                "the state topic to start over)"
            )
        models = [c.model for c in contributions if c.model is not None]
        examples = state.examples + sum(c.examples for c in contributions)
        merged = None
        if models:
            try:
                merged = combine(models, method=self.method, base=state.anchor)
            except ValueError as error:  # skipped: see the module docstring
                self._fail(round_, error)
            if merged is not None and _labels(merged) == 1:  # see the module docstring
                log.info("round %d skipped: its mix knows a single label", round_)
                merged = None
        if merged is None:
            mix = Mix(round_, None, state.examples, state.fingerprint, entry.end)
        else:
            mix = Mix(round_, merged, examples, fingerprint(merged), entry.end)
        self._mixes[round_] = mix
        return mix

    def _fail(self, round_: int, error: ValueError) -> None:
        """Count and log a round `combine` could not mix (once, however often it is mixed)."""
        if round_ <= self._last_failed:
            return
        self.failed += 1
        self._last_failed = round_
        reason = " ".join(str(error).split())
        log.warning(
            "round %d not mixed (every partition keeps its model, mixing again next round): %s",
            round_,
            reason,
        )

    def forget(self, below: int) -> None:
        """Drop the rounds before `below` (no partition of this member needs them)."""
        for table in (self._rounds, self._mixes):
            for round_ in [r for r in table if r < below]:
                del table[round_]


def _labels(model) -> int:
    classifier: Any = classifier_of(model)  # a Gaussian classifier: combine mixes no other
    return len(classifier.classes_)
