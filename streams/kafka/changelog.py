"""A partition state as a changelog: the weights that changed since the previous commit, and the rest.

A `PartitionState` whose model keeps its weights in an engine that keeps marks (a Gaussian
classifier whose covariance says so in `river_cw.covariances`, the diagonal and the arrowhead,
alone or as the classifier of a `river_cw.text.TextClassifier`: `river_cw.covariances.with_marks`)
is written by `changes` as the engine's weights
written since its last mark (`changed`: per label block, the features whose numbers moved, the
diagonal's mean and variance or the arrowhead's ``(a_j, k_j, c_j)``, and the intercept, the
arrowhead's root ``(mu_b, S)``) and a *header*: the state with the engine left out (labels,
counters, offsets, pending examples and labels, the model's other attributes). `apply` rebuilds
the next state from the previous one and these changes, bit for bit; `mark` starts the next
changes.

Everything else is written whole (`changes` returns None): river pipelines (their other steps'
state has no keys to write by), river's own models, full covariance, voted RDA, a state that
mixes (its anchor is a whole model), and an engine whose blocks were laid out anew since its
mark (a label beyond the second was learned: one block per label from then on; or a second
label that sorts before the first: the model was negated).

>>> from river_cw import AROW
>>> from streams.kafka.learner import PartitionState
>>> state = PartitionState("t", 0, AROW(covariance="diagonal"))
>>> state.model.learn_one({"a": 1.0, "b": 1.0}, "ham")
>>> changes(state) is None  # no mark yet: written whole
True
>>> mark(state)
>>> state.model.learn_one({"b": 1.0, "c": 1.0}, "spam")
>>> state.learned = 2
>>> header, weights = changes(state)
>>> [sorted(block, key=str) for block in weights]  # one block while binary
[['b', 'c', river_cw.INTERCEPT]]
>>> before = PartitionState("t", 0, AROW(covariance="diagonal"))
>>> before.model.learn_one({"a": 1.0, "b": 1.0}, "ham")
>>> after = apply(before, header, weights)
>>> after.model.weights == state.model.weights and after.learned == 2
True
"""

from __future__ import annotations

import io
import pickle

from river_cw.covariances import with_marks

__all__ = ["apply", "changes", "mark"]


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


def changes(state):
    """``(header, weights)``: the state's pickle with its engine left out (a reference in its
    place) and the engine's weights written since `mark` (its `changed`); None when the state
    must be written whole (see the module)."""
    engine = _engine(state)
    weights = None if engine is None else engine.changed()
    if weights is None:
        return None
    buffer = io.BytesIO()
    _Referencing(buffer, engine).dump(state)
    return buffer.getvalue(), weights


def apply(previous, header: bytes, weights):
    """The state of `header` and `weights` (from `changes`), its engine that of `previous` (the
    state committed before it; its engine is taken over) updated by `weights`: the very objects
    a load of the whole state's pickle would give."""
    engine = _engine(previous)
    if engine is None:
        raise ValueError("changes apply to a state whose model keeps a Gaussian engine with marks")
    engine.set_weights(weights)
    return _Resolving(io.BytesIO(header), engine).load()


class _Referencing(pickle.Pickler):
    """Pickles `engine` as a reference (`_Resolving` puts an engine back in its place)."""

    def __init__(self, file, engine):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.engine = engine

    def persistent_id(self, obj):
        return "engine" if obj is self.engine else None


class _Resolving(pickle.Unpickler):
    """Loads a `_Referencing` pickle with `engine` in place of the engine it left out."""

    def __init__(self, file, engine):
        super().__init__(file)
        self.engine = engine

    def persistent_load(self, pid):
        if pid != "engine":
            raise pickle.UnpicklingError(f"a changelog header refers to {pid!r}")
        return self.engine
