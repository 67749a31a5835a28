"""The variance of the margin between two labels (`margin_variance`), the scale of a multi-class
model's probabilities and of its calibration (`river_cw.probabilities.pairwise`), and the
variances of listed blocks it reads (`score_variances(x, blocks)`).

For the engines of independent blocks (diagonal, arrowhead) it is the two scores' variances
added, each the number `score_variances(x)` gives for its block, and the same bits in the
compiled and pure-Python engines; for the full covariance, ``C_bb + C_cc - 2 C_bc`` of the
scores' covariance. Both engines refuse the same blocks with the same errors.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import river_cw
from river_cw import INTERCEPT, probabilities
from river_cw._engines import arrowhead, diagonal
from tests.support.bits import bits

LABELS = ["a", "b", "c", "d"]
KEYS = [f"w{i}" for i in range(12)] + [3, ("t", 1)]
VALUES = st.one_of(
    st.floats(-3.0, 3.0),
    st.sampled_from([0.0, -0.0, 1e-300, 1e150, -1e150, 1e-150, 7]),
    st.booleans(),
)
EXAMPLES = st.dictionaries(st.sampled_from([*KEYS, "unseen"]), VALUES, max_size=10)
BLOCKS = st.lists(st.integers(0, len(LABELS) - 1), max_size=6)
PYTHON = {
    "diagonal": diagonal.PythonDiagonalGaussian,
    "arrowhead": arrowhead.PythonArrowheadGaussian,
}


def learned(covariance: str, engine=None):
    """AROW over four labels, learned on a fixed stream of features of mixed magnitudes, on the
    engine that serves or on `engine`'s pure-Python one."""
    model = river_cw.AROW(covariance=covariance)
    if engine is not None:
        reference = (
            engine(model.initial_variance)
            if covariance == "diagonal"
            else engine(model.initial_variance, INTERCEPT, model.initial_intercept_variance)
        )
        model.set_gaussian(reference, model.classes_)
    for i in range(120):
        x = {
            KEYS[(i * 7 + j) % len(KEYS)]: (-1.0) ** j * (1 + i % 5) * 10.0 ** (j - 2)
            for j in range(4)
        }
        model.learn_one(x, LABELS[(i * 3) % len(LABELS)])
    return model


MODELS = {
    covariance: (learned(covariance), learned(covariance, PYTHON[covariance]))
    for covariance in ("diagonal", "arrowhead")
}


@pytest.mark.parametrize("covariance", list(MODELS))
@given(x=EXAMPLES, blocks=BLOCKS, pair=st.permutations(range(len(LABELS))))
def test_listed_blocks_and_margins_are_every_blocks_numbers_in_both_engines(
    covariance, x, blocks, pair
):
    b, c = pair[:2]
    out = []
    for model in MODELS[covariance]:
        features = model._features(x)
        model.gaussian.scores(features)  # x is valid: every variance reads a scored example
        every = model.gaussian.score_variances(features)
        listed = model.gaussian.score_variances(features, blocks)
        assert [bits(v) for v in listed] == [bits(every[k]) for k in blocks]
        assert model.gaussian.score_variances(features, tuple(blocks)) == listed
        margin = model.gaussian.margin_variance(features, b, c)
        cov = model.gaussian.score_covariance(features).tolist()
        assert bits(margin) == bits(every[b] + every[c])
        assert bits(margin) == bits(cov[b][b] + cov[c][c] - 2.0 * cov[b][c])
        out.append([bits(v) for v in [*every, margin]])
    assert out[0] == out[1]


@pytest.mark.parametrize("covariance", list(MODELS))
@pytest.mark.parametrize(
    "blocks",
    [(0, 4), (-1,), (0, 1.0), ("0",), "01", iter((0, 1)), 2, {0: 1}],
    ids=["beyond", "negative", "float", "str index", "str", "iterator", "int", "dict"],
)
def test_both_engines_refuse_the_same_blocks_alike(covariance, blocks):
    errors = []
    for model in MODELS[covariance]:
        with pytest.raises((TypeError, IndexError)) as caught:
            model.gaussian.score_variances(model._features({"w1": 1.0}), blocks)
        errors.append((caught.type, str(caught.value)))
    assert errors[0] == errors[1]


def test_the_full_covariances_margin_variance_is_the_scores_covariance_along_the_pair():
    model = river_cw.AROW(covariance="full")
    for i in range(60):
        model.learn_one({"p": float(i % 7) - 3.0, "q": (i % 3) - 1.0}, LABELS[i % 3])
    features = model._features({"p": 0.5, "q": -2.0, "new": 1.0})
    cov = model.gaussian.score_covariance(features)
    for b, c in [(0, 1), (2, 0), (1, 2)]:
        d = [0.0] * len(cov)
        d[b], d[c] = 1.0, -1.0
        expected = float(sum(d[i] * cov[i, j] * d[j] for i in range(3) for j in range(3)))
        assert model.gaussian.margin_variance(features, b, c) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("covariance", list(MODELS))
@given(x=EXAMPLES)
def test_scores_with_scale_are_the_scores_and_the_two_best_labels_margin_variance(covariance, x):
    """`scores_with_scale`, the arrowhead's compiled in one pass: the engine's scores and the
    margin variance of the two best-scoring labels (`probabilities.top_two`), in both engines;
    of the one block's score while binary; and a bad x refused as `scores` refuses it."""
    out = []
    for model in MODELS[covariance]:
        features = model._features(x)
        scores, v = model.gaussian.scores_with_scale(features)
        assert scores == model.gaussian.scores(features)
        expected = model.gaussian.margin_variance(features, *probabilities.top_two(scores))
        assert bits(v) == bits(expected)
        out.append(([bits(s) for s in scores], bits(v)))
    assert out[0] == out[1]


@pytest.mark.parametrize("engine", [diagonal.DiagonalGaussian, arrowhead.ArrowheadGaussian])
def test_the_scale_of_tied_scores_is_the_first_two_labels_margin(engine):
    """Three blocks that score x alike, with variances of their own: the scale is the margin
    between the first two (`probabilities.top_two`), as the compiled pass takes it too."""
    gaussian = engine(1.0) if engine is diagonal.DiagonalGaussian else engine(1.0, INTERCEPT, 1.0)
    gaussian.add_block()
    gaussian.add_block()
    if engine is diagonal.DiagonalGaussian:
        gaussian.set_weights([{"f": (0.0, s)} for s in (0.5, 0.25, 0.125)])
    else:
        gaussian.set_weights([{"f": (0.0, 0.0, s)} for s in (0.5, 0.25, 0.125)])
    scores, v = gaussian.scores_with_scale({"f": 2.0})
    assert scores == [0.0, 0.0, 0.0] and v == 4.0 * (0.5 + 0.25)
    one = engine(1.0) if engine is diagonal.DiagonalGaussian else engine(1.0, INTERCEPT, 1.0)
    assert one.scores_with_scale({"f": 2.0}) == ([0.0], 4.0)  # binary: the score's variance


@pytest.mark.parametrize("covariance", list(MODELS))
def test_scores_with_scale_refuses_a_bad_example_as_scores_does(covariance):
    errors = []
    for model in MODELS[covariance]:
        for method in (model.gaussian.scores, model.gaussian.scores_with_scale):
            with pytest.raises((TypeError, ValueError)) as caught:
                method({"w1": 1.0, "w2": "three"})
            errors.append((caught.type, str(caught.value)))
    assert len(set(errors)) == 1, errors
