"""The rules' steps in C (river_cw/_engines/_steps.h) against their Python `_step`, bit for bit.

The compiled engine's lean `learn_one` takes each rule's step in C, named by its `_native_step`;
here every rule's C step gives what its Python `_step` gives on hypothesis-drawn margins (m, v)
and sample weights w, extreme values included: None (no update), the same (alpha, gamma) to the
bit, or a skip where Python raises ZeroDivisionError or OverflowError or gives a non-finite
number (the engine's `SKIPPED`). Skipped when the extension is not built.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import river_cw
from tests.support.bits import bits_of

_diagonal = pytest.importorskip(
    "river_cw._engines._diagonal", reason="the compiled engine is not built"
)

RULES = [
    river_cw.AROW(),
    river_cw.AROW(r=0.3),
    river_cw.AROW(r=1e-300),
    river_cw.CW(),
    river_cw.CW(variant="var"),
    river_cw.CW(confidence=0.51),
    river_cw.CW(variant="var", confidence=0.999999),
    river_cw.NHERD(),
    river_cw.NHERD(C=1e-300),
    river_cw.NHERD(C=1e300),
    river_cw.SOP(),
    river_cw.SOP(a=1e-3),
    river_cw.SCW(),
    river_cw.SCW(C=1e-300),
    river_cw.SCW(variant="II"),
    river_cw.SCW(variant="II", C=1e300, confidence=0.6),
]
IDS = [repr(rule) for rule in RULES]

finite = st.floats(allow_nan=False, allow_infinity=False)
margins = st.one_of(finite, st.sampled_from([0.0, -0.0, 1.0, 1.0 - 2**-53, 1e-300, -1e-300]))
variances = st.one_of(
    st.floats(min_value=5e-324, allow_infinity=False), st.sampled_from([5e-324, 1e-300, 1e300])
)
weights = st.one_of(
    st.just(1.0),
    st.floats(min_value=5e-324, allow_infinity=False),
    st.sampled_from([0.5, 2.0, 1e-300, 1e300]),
)


def python_step(rule, m: float, v: float, w: float):
    """`_step` as the engine takes it (river_cw._engines.gaussian._learn): None, (alpha, gamma) or False."""
    try:
        step = rule._step(m, v, w)
    except (ZeroDivisionError, OverflowError):
        return False
    if step is None:
        return None
    alpha, gamma = step
    return (alpha, gamma) if math.isfinite(alpha) and math.isfinite(gamma) else False


@pytest.mark.parametrize("rule", RULES, ids=IDS)
@settings(max_examples=400, deadline=None)
@given(m=margins, v=variances, w=weights)
def test_native_step_is_the_python_step_to_the_bit(rule, m, v, w):
    assert bits_of(_diagonal.native_step(rule._native_step, m, v, w)) == bits_of(
        python_step(rule, m, v, w)
    )


def test_every_diagonal_rule_names_a_native_step():
    for rule in RULES:
        assert _diagonal.native_step(rule._native_step, -1.0, 1.0, 1.0) is not None
    with pytest.raises(ValueError, match="no native step"):
        _diagonal.native_step(("nope", ()), 0.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="takes 1 parameters"):
        _diagonal.native_step(("arow", ()), 0.0, 1.0, 1.0)


def test_a_subclass_that_overrides_the_step_runs_its_own():
    """`_native_step` is the rule's `_step` in C: a subclass with its own `_step` is not served
    by it, in `learn_one` (the lean path) or in `learn_many` (the batch kernel)."""

    class Halved(river_cw.AROW):
        def _step(self, m, v, w):
            step = super()._step(m, v, w)
            return step and (step[0] / 2.0, step[1])

    assert Halved()._native_step_of_step() is None
    assert river_cw.AROW()._native_step_of_step() == river_cw.AROW()._native_step
    one, many, plain = Halved(), Halved(), river_cw.AROW()
    rows, labels = [{"a": 1.0}, {"b": 2.0}, {"a": -1.0}], [True, False, True]
    for x, y in zip(rows, labels):
        one.learn_one(x, y)
        plain.learn_one(x, y)
    many.learn_many(rows, labels)
    assert one.weights == many.weights != plain.weights
