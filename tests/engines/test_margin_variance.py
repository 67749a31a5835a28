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
from river_cw import INTERCEPT
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
