"""The public views (`weights`, `variances`, `covariances`, `intercept`, `intercept_variance`)
say everything predictions use: probabilities recomputed from them match `predict_proba_one`."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

import river_cw
from river_cw import INTERCEPT
from river_cw.probabilities import normal_log_cdf

CONFIGS = [
    cls(learn_intercept=b, **kind)
    for cls in (river_cw.AROW, river_cw.CW, river_cw.NHERD, river_cw.SCW, river_cw.SOP)
    for kind in (
        {},
        {"diagonal": "drop"},
        {"covariance": "arrowhead"},
        {"covariance": "arrowhead", "diagonal": "drop"},
        {"covariance": "full"},
    )
    for b in (False, True)
]


def name(model):
    return repr(model).replace("\n", "").replace(" ", "")


def stream(seed, n, labels):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(len(labels), 5))
    for _ in range(n):
        x = rng.normal(size=5) + 0.5
        yield (
            {f"f{j}": float(v) for j, v in enumerate(x) if rng.random() < 0.7},
            labels[int(np.argmax(W @ x))],
        )


def recomputed(model, x: dict) -> dict:
    """P(label | x) from the public views alone, with the model's `temperature` a,
    `margin_noise` r and, while binary, `flip_share` eps (see `GaussianClassifier`'s docstring
    and `river_cw.flips`)."""
    classes, prior = model.classes_, model.initial_variance
    a, r = model.temperature, model.margin_noise
    binary = model.is_binary
    weights = {classes[-1]: model.weights} if binary else model.weights
    intercept = {classes[-1]: model.intercept} if binary else model.intercept
    covariances = model.covariances
    key = (lambda z, f: f) if binary else (lambda z, f: (z, f))
    blocks = [classes[-1]] if binary else classes
    xs = {**x, INTERCEPT: 1.0} if model.learn_intercept else dict(x)
    scores = [
        math.fsum([weights[z].get(f, 0.0) * v for f, v in x.items()]) + intercept[z] for z in blocks
    ]
    cov = np.zeros((len(blocks), len(blocks)))
    for i, z in enumerate(blocks):
        for f, v in xs.items():
            if (key(z, f), key(z, f)) not in covariances:
                cov[i, i] += prior * v * v  # never learned: the prior, independent of the rest
            for j, k in enumerate(blocks):
                for g, u in xs.items():
                    cov[i, j] += covariances.get((key(z, f), key(k, g)), 0.0) * v * u
    if binary:
        p = 0.5 * math.erfc(-a * scores[0] / math.sqrt(cov[0, 0] + r) / math.sqrt(2.0))
        p = model.flip_share + (1.0 - 2.0 * model.flip_share) * p
        return {classes[0]: 1.0 - p, classes[1]: p}
    best, second = np.argsort(-np.array(scores), kind="stable")[:2]  # the decision's margin
    scale = math.sqrt(cov[best, best] + cov[second, second] - 2 * cov[best, second] + r) / a
    logp = [
        sum(normal_log_cdf((scores[z] - scores[k]) / scale) for k in range(len(blocks)) if k != z)
        for z in range(len(blocks))
    ]
    unnormalised = [math.exp(lp - max(logp)) for lp in logp]
    return {c: u / sum(unnormalised) for c, u in zip(classes, unnormalised)}


@pytest.mark.parametrize("labels", [("no", "yes"), ("a", "b", "c")])
@pytest.mark.parametrize("model", CONFIGS, ids=name)
def test_probabilities_recomputed_from_the_public_views_match(model, labels):
    model = model.clone()
    for i, (x, y) in enumerate(stream(len(labels), 80, labels)):
        if i > 10 and i % 7 == 0:
            x = {**x, "unseen": 0.3}
            expected = recomputed(model, x)
            got = model.predict_proba_one(x)
            assert got.keys() == expected.keys()
            for c in got:
                assert got[c] == pytest.approx(expected[c], rel=1e-9, abs=1e-12)
        model.learn_one(x, y)


@pytest.mark.parametrize("covariance", ["diagonal", "full"])
def test_the_multiclass_layout_is_per_label(covariance):
    model = river_cw.AROW(covariance=covariance)
    for x, y in stream(0, 60, ("a", "b", "c")):
        model.learn_one(x, y)
    assert set(model.weights) == set(model.variances) == {"a", "b", "c"}
    assert set(model.intercept) == set(model.intercept_variance) == {"a", "b", "c"}
    for label, block in model.variances.items():
        for f, s in block.items():
            assert model.covariances[(label, f), (label, f)] == pytest.approx(s, rel=1e-12)
    if covariance == "full":  # labels correlate through the difference vectors
        assert any(a[0] != b[0] and c != 0.0 for (a, b), c in model.covariances.items())
        keys = {k for pair in model.covariances for k in pair}
        matrix = np.array([[model.covariances[k, g] for g in keys] for k in keys])
        assert np.allclose(matrix, matrix.T) and np.linalg.eigvalsh(matrix).min() > 0


def test_views_are_copies():
    model = river_cw.CW(covariance="full")
    for x, y in stream(1, 30, (0, 1)):
        model.learn_one(x, y)
    before = model.predict_proba_one({"f0": 1.0})
    model.weights["f0"] = 1e6
    model.covariances.clear()
    model.variances.clear()
    assert model.predict_proba_one({"f0": 1.0}) == before


@pytest.mark.parametrize("model", CONFIGS[::2], ids=name)
@pytest.mark.parametrize("labels", [(True, False), ("a", "b", "c")], ids=["binary", "multiclass"])
def test_set_gaussian_carries_another_models_state(model, labels):
    """A fresh model holding a trained one's Gaussian and labels predicts, and goes on learning,
    exactly as the trained one."""
    trained, fresh = model.clone(), model.clone()
    data = list(stream(3, 40, labels))
    for x, y in data[:30]:
        trained.learn_one(x, y)
    fresh.set_gaussian(copy.deepcopy(trained.gaussian), trained.classes_)
    fresh._temperature = copy.copy(trained._temperature)  # the model's, not the Gaussian's
    fresh._flips = copy.copy(trained._flips)
    assert fresh.gaussian is not trained.gaussian
    for x, y in data[30:]:
        assert fresh.predict_proba_one(x) == trained.predict_proba_one(x)
        fresh.learn_one(x, y)
        trained.learn_one(x, y)
    assert fresh.weights == trained.weights and fresh.variances == trained.variances


def test_set_gaussian_refuses_what_does_not_fit_and_changes_nothing():
    model, full = river_cw.AROW(covariance="diagonal"), river_cw.AROW(covariance="full")
    for x, y in stream(4, 20, ("a", "b", "c")):
        model.learn_one(x, y)
    before = (model.weights, list(model.classes_))
    with pytest.raises(ValueError, match=r"covariance=.diagonal. holds"):
        model.set_gaussian(full.gaussian, ["a", "b"])
    with pytest.raises(ValueError, match="distinct"):
        model.set_gaussian(model.gaussian, ["a", "a", "b"])
    with pytest.raises(ValueError, match="3 weight block"):
        model.set_gaussian(model.gaussian, ["a", "b"])
    assert (model.weights, list(model.classes_)) == before
