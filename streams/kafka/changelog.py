"""A partition state as a changelog: the weights that changed since the previous commit, and the rest.

A `PartitionState` whose model keeps its weights in an engine that keeps marks (a Gaussian
classifier whose covariance says so in `river_cw.covariances`, the diagonal and the arrowhead,
alone or as the classifier of a `river_cw.text.TextClassifier`: `river_cw.covariances.with_marks`)
is written by `changes` as the engine's weights
written since its last mark (`changed`: per label block, the features whose numbers moved, the
diagonal's mean and variance or the arrowhead's ``(a_j, k_j, c_j)``, and the intercept, the
arrowhead's root ``(mu_b, S)``) and the rest of the state with the engine left out (labels,
counters, offsets, pending examples and labels, the model's other attributes), in the bytes of
a changes part (`streams.kafka.state_codec`). `apply` rebuilds the next state from the previous
one and these changes, bit for bit; `mark` starts the next changes.

Everything else is written whole (`changes` returns None): river pipelines (their other steps'
state has no keys to write by), river's own models, full covariance, voted RDA, a model the
versioned state format does not describe (`river_cw.state`: a subclass), a state that mixes (its
anchor is a whole model), and an engine whose blocks were laid out anew since its mark (a label
beyond the second was learned: one block per label from then on; or a second label that sorts
before the first: the model was negated).

>>> from river_cw import AROW
>>> from streams.kafka import state_codec
>>> from streams.kafka.learner import PartitionState
>>> state = PartitionState("t", 0, AROW(covariance="diagonal"))
>>> state.model.learn_one({"a": 1.0, "b": 1.0}, "ham")
>>> changes(state) is None  # no mark yet: written whole
True
>>> mark(state)
>>> state.model.learn_one({"b": 1.0, "c": 1.0}, "spam")
>>> state.learned = 2
>>> written = changes(state)
>>> written.weights  # b, c and the intercept, in one block while binary
3
>>> before = PartitionState("t", 0, AROW(covariance="diagonal"))
>>> before.model.learn_one({"a": 1.0, "b": 1.0}, "ham")
>>> after = apply(before, state_codec.decode(written.data))
>>> after.model.weights == state.model.weights and after.learned == 2
True
"""

from __future__ import annotations

from dataclasses import dataclass

from river_cw.covariances import with_marks
from streams.kafka import state_codec

__all__ = ["Changes", "apply", "changes", "mark"]


@dataclass(frozen=True)
class Changes:
    """A commit's changes: the bytes of its part (`streams.kafka.state_codec`) and the number
    of weights they write."""

    data: bytes
    weights: int


def _engine(state):
    if state.mixing is not None:
        return None
    owner = with_marks(state.model)
    return None if owner is None else owner.gaussian


def mark(state) -> None:
    """The state as it is now is committed: `changes` will say what changed since."""
    engine = _engine(state)
    if engine is not None:
        engine.mark()


def changes(state) -> Changes | None:
    """The state's changes since `mark`: its engine's weights written since (its `changed`) and
    the rest of the state with the engine left out; None when the state must be written whole
    (see the module)."""
    engine = _engine(state)
    weights = None if engine is None else engine.changed()
    if weights is None:
        return None
    try:
        data = state_codec.encode(state, weights)
    except TypeError:  # a model the versioned format does not describe
        return None
    return Changes(data, sum(len(block) for block in weights))


def apply(previous, part: state_codec.Part):
    """The state of the changes `part` (`streams.kafka.state_codec.decode`), its engine that of
    `previous` (the state committed before it; its engine is taken over) updated by the part's
    weights."""
    engine = _engine(previous)
    if engine is None:
        raise ValueError("changes apply to a state whose model keeps a Gaussian engine with marks")
    engine.set_weights(part.weights)
    return part.state(engine)
