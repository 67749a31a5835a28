"""The calibration of a model of three labels or more, compiled (river_cw/_engines/_calibration.h,
served by `river_cw._engines._diagonal`) against its Python reference, bit for bit.

`multiclass_step` (`river_cw.calibration.multiclass_step`: the pairwise margins of the scores,
the surprise's step and the Newton temperature's, on one erfc a pair) and
`multiclass_probabilities` (`river_cw.probabilities.multiclass` of `pairwise`) are drawn on
scores and margin variances of every magnitude, infinities and NaN included, ties, a variance of
0 or below, up to twenty labels (beyond the compiled functions' stack buffers), with and without
a surprise: the temperature, the surprise and the probabilities must be the same floats to the
bit, and an error the same error. The models built on them are compared with the pure-Python
engine in tests/engines/test_compiled_vs_python.py; the engines' margin variances in
tests/engines/test_margin_variance.py.
"""

from __future__ import annotations

import math
from array import array

import pytest
from hypothesis import given
from hypothesis import strategies as st

import river_cw
from river_cw import calibration, probabilities
from tests.support.bits import bits

compiled = pytest.importorskip("river_cw._engines._diagonal", reason="the compiled engine")
if river_cw.ENGINE != "c":
    pytest.skip(
        "the compiled engine does not serve (RIVER_CW_PURE_PYTHON)", allow_module_level=True
    )

NUMBERS = st.one_of(
    st.floats(-50.0, 50.0),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e-300, 5e-324, -40.0, -30.0, 1e200]),
)
MODEST = st.floats(-3.0, 3.0)  # margins of a few standard deviations: every pair's terms count


def numbers(draw, n: int) -> list[float]:
    """n numbers: modest ones three times in four, else of any magnitude."""
    return draw(st.lists(MODEST if draw(st.integers(0, 3)) else NUMBERS, min_size=n, max_size=n))


@st.composite
def examples(draw):
    """Scores of K labels, the variance of the margin between the two best plus the noise term,
    the temperature state [a, H], the label, a weight > 0 and a surprise."""
    K = draw(st.one_of(st.integers(3, 5), st.integers(3, 20)))
    scores = numbers(draw, K)
    if draw(st.booleans()):  # ties
        scores[draw(st.integers(0, K - 1))] = scores[draw(st.integers(0, K - 1))]
    v = draw(st.one_of(st.floats(0.1, 10.0), NUMBERS))
    a = draw(st.one_of(st.sampled_from([1.0, 1e-6, 1e3]), st.floats(1e-6, 1e3)))
    H = draw(st.one_of(st.just(1.0), st.floats(1.0, 1e6)))
    label = draw(st.integers(0, K - 1))
    w = draw(st.one_of(st.just(1.0), st.floats(1e-300, 1e300)))
    observed = draw(
        st.one_of(
            st.none(),
            st.tuples(st.floats(1.0, 1e4), st.floats(0.0, 1.0), st.floats(0.0, 1.0)),
        )
    )
    return scores, v, [a, H], label, w, observed


def outcome(step, scores, v, temperature, label, w, observed):
    state = array("d", temperature)
    surprise = None if observed is None else array("d", observed)
    try:
        step(state, scores, v, label, w, surprise)
    except Exception as error:
        return type(error).__name__
    return [bits(x) for x in state], None if surprise is None else [bits(x) for x in surprise]


@given(examples())
def test_the_compiled_multiclass_step_is_the_references(example):
    assert outcome(compiled.multiclass_step, *example) == outcome(
        calibration.multiclass_step, *example
    )


@given(examples())
def test_the_compiled_multiclass_probabilities_are_the_references(example):
    scores, v, (a, _), *_ = example
    reference = probabilities.multiclass(
        probabilities.pairwise(scores, v), a, list(range(len(scores)))
    )
    assert [bits(p) for p in compiled.multiclass_probabilities(scores, v, a)] == [
        bits(p) for p in reference.values()
    ]


@pytest.mark.parametrize("label", [0, 1, 2])
def test_a_label_that_is_not_the_most_probable_is_a_mistake_in_both(label):
    # probabilities ranked 1, 2, 0: the label 2 is a mistake against the label 1 alone
    example = ([0.0, 1.0, 0.5], 3.0, [1.0, 1.0], label, 1.0, (100.0, 0.5, 0.5))
    expected = outcome(calibration.multiclass_step, *example)
    assert outcome(compiled.multiclass_step, *example) == expected
    assert float.fromhex(expected[1][1]) == (0.495 if label == 1 else 0.505)


def test_a_step_far_in_the_tails_moves_the_temperature_and_the_surprise_alike():
    # every pair beyond -30 standard deviations takes the asymptotic branches
    scores = [0.0, 40.0, -40.0, 80.0]
    for step in (compiled.multiclass_step, calibration.multiclass_step):
        state, surprise = array("d", [1.0, 1.0]), array("d", [60.0, 0.0, 0.0])
        step(state, scores, 1.0, 0, 1.0, surprise)
        assert surprise[0] == 61.0 and math.isfinite(state[0]) and state[0] < 1.0


@pytest.mark.parametrize(
    "args, error",
    [
        (([1.0, 2.0], 1.0, 1.0), ValueError),  # two labels: the binary formulas
        (([1.0, "2", 3.0], 1.0, 1.0), TypeError),
        (((1.0, 2.0, 3.0), 1.0, 1.0), TypeError),  # the scores are a list
        (([1.0, 2.0, 3.0], "1", 1.0), TypeError),
    ],
)
def test_the_compiled_functions_refuse_what_they_do_not_take(args, error):
    with pytest.raises(error):
        compiled.multiclass_probabilities(*args)
    scores, v, _ = args
    with pytest.raises(error):
        compiled.multiclass_step(array("d", [1.0, 1.0]), scores, v, 0, 1.0, None)


@pytest.mark.parametrize("label", [-1, 3, 40])
def test_the_compiled_step_refuses_a_label_beyond_the_scores(label):
    state = array("d", [1.0, 1.0])
    with pytest.raises(ValueError, match="the label's index"):
        compiled.multiclass_step(state, [1.0, 2.0, 3.0], 1.0, label, 1.0, None)
    assert list(state) == [1.0, 1.0]
