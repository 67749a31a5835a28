"""The same to the bit, defined once: a float's exact bits, a Gaussian engine's numbers, and
two models that hold the same numbers and give the same answers.

Two floats are the same when their bits are: ``-0.0`` is not ``0.0``, and a NaN is the same NaN
only with its sign and payload (`bits`). Two models are the same when their pickles are, byte
for byte, and so are their engines' numbers, views, counters and answers (`assert_same`). (A
model restored from bytes holds equal keys of its own where the live one shares x's: its pickle
differs in object sharing alone, and `tests.kafka.kafka_support.assert_same_model` compares
such pairs.)
"""

from __future__ import annotations

import pickle
import struct


def bits(value: float) -> str:
    """The exact bits of a float, readably: its hex form (which tells -0.0 from 0.0), or for a
    NaN its 64 bits (the hex form drops a NaN's sign and payload)."""
    value = float(value)
    if value != value:
        return "nan:" + struct.pack(">d", value).hex()
    return value.hex()


def bits_of(value):
    """`value` with every float in it (in dicts, lists and tuples) as its `bits`; labels, counts,
    None, False and error descriptions as they are."""
    if isinstance(value, float):
        return bits(value)
    if isinstance(value, dict):
        return {key: bits_of(v) for key, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(bits_of(v) for v in value)
    return value


def state(model) -> list[dict]:
    """The numbers of a model's Gaussian engine, every block as feature -> its numbers in `bits`:
    (mean, variance), or the arrowhead's (a, k, c) and its root's (mu_b, S)."""
    return [{f: tuple(map(bits, w)) for f, w in block.items()} for block in model.gaussian.blocks]


def public_state(model) -> tuple:
    """The public state of any classifier, to the bit: the repr of each view it has (``repr``
    of a float is exact)."""
    state = []
    for name in (
        "classes_",
        "weights",
        "variances",
        "covariances",
        "intercept",
        "intercept_variance",
    ):
        if hasattr(model, name):
            state.append(repr(getattr(model, name)))
    return tuple(state)


def assert_same_bound(a, b) -> None:
    """The diagonal engines' bound of every |mean| (the arrowhead keeps none), the same to the
    bit: a bound the engine keeps as it learns, not part of the model (a pickle does not carry
    it), so compared apart from `assert_same`, between models that learned alike."""
    if a.covariance == "diagonal":
        assert bits(a.gaussian.mean_bound) == bits(b.gaussian.mean_bound)


def answers(model, x, refusals: bool = False) -> list:
    """`model`'s prediction and probabilities for `x`, in `bits`. With `refusals`, an error is an
    answer too (its type and message); without, it propagates."""
    result = []
    for call in (model.predict_one, model.predict_proba_one):
        try:
            result.append(bits_of(call(x)))
        except Exception as error:  # the comparison is the point
            if not refusals:
                raise
            result.append((type(error), str(error)))
    return result


def assert_same(a, b, *probe, refusals: bool = False) -> None:
    """`a` and `b` are the same model, to the bit: the same labels and skip count, the same
    pickle byte for byte (every float, every insertion order), and, where they hold a Gaussian
    engine, the same numbers in every block and the same `weights` and `variances`; and for every
    example of `probe` the same prediction and probabilities (`answers`; with `refusals`, or the
    same error).

    The engines' numbers and views are compared apart from the pickle, so that a failure names
    what differs. (The arrowhead's `covariances`, a dense matrix over the features, are left
    out: one Python function reads them from the blocks for both engines, and
    tests/engines/test_arrowhead.py checks them against dense references.)"""
    assert a.classes_ == b.classes_
    assert getattr(a, "n_skipped_updates", 0) == getattr(b, "n_skipped_updates", 0)
    gaussian = getattr(a, "gaussian", None)
    if hasattr(gaussian, "blocks"):
        assert state(a) == state(b)
    if gaussian is not None:
        assert repr(a.weights) == repr(b.weights) and repr(a.variances) == repr(b.variances)
    assert pickle.dumps(a) == pickle.dumps(b)
    for x in probe:
        assert answers(a, x, refusals) == answers(b, x, refusals)
