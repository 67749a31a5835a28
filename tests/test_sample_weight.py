"""``learn_one(x, y, w)``: each rule's documented meaning of a sample weight (issue 9)."""

from __future__ import annotations

import copy
import math
import pickle

import numpy as np
import pytest

import river_cw
from river_cw import INTERCEPT

CLASSES = [
    river_cw.CW,
    river_cw.AROW,
    river_cw.NHERD,
    river_cw.SOP,
    river_cw.SCW,
    river_cw.VotedRDA,
]
CONFIGS = [
    cls(learn_intercept=b, **params)
    for cls in CLASSES
    for params in cls._unit_test_params()
    for b in (False, True)
]


def name(model):
    return repr(model).replace("\n", "").replace(" ", "")


def stream(seed, n=60, labels=("a", "b", "c")):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(len(labels), 4))
    for _ in range(n):
        x = rng.normal(size=4)
        yield (
            {f"f{j}": float(v) for j, v in enumerate(x) if rng.random() < 0.8},
            labels[int(np.argmax(W @ x))],
        )


def trained(model, labels=("a", "b", "c"), n=40):
    model = model.clone()
    for x, y in stream(0, n, labels):
        model.learn_one(x, y)
    return model


@pytest.mark.parametrize("model", CONFIGS, ids=name)
def test_weight_zero_changes_nothing_and_weight_one_is_the_unweighted_rule(model):
    for labels in (("a", "b"), ("a", "b", "c")):
        a, b = trained(model, labels), trained(model, labels)
        state = pickle.dumps(a)
        for x, y in stream(1, 20, labels + ("new",)):
            a.learn_one(x, y, w=0)
            a.learn_one(x, y, w=0.0)
        assert pickle.dumps(a) == state
        for x, y in stream(2, 30, labels):
            a.learn_one(x, y, w=1.0)
            b.learn_one(x, y)
        assert pickle.dumps(a) == pickle.dumps(b)


BAD_WEIGHTS = [
    (-1.0, ValueError),
    (math.nan, ValueError),
    (math.inf, ValueError),
    (-0.5, ValueError),
    (10**400, ValueError),
    ("2", TypeError),
    (None, TypeError),
    (True, TypeError),
    ([1.0], TypeError),
    (1j, TypeError),
]


@pytest.mark.parametrize("model", CONFIGS, ids=name)
def test_a_bad_weight_is_refused_by_name_and_changes_nothing(model):
    model = trained(model)
    state = pickle.dumps(model)
    for bad, error in BAD_WEIGHTS:
        with pytest.raises(error, match=r"\bw\b"):
            model.learn_one({"f0": 1.0}, "a", w=bad)
        with pytest.raises(error, match=r"\bw\b"):
            model.learn_one({"f0": 1.0}, "new", bad)
    assert pickle.dumps(model) == state


@pytest.mark.parametrize("model", [river_cw.AROW(), river_cw.VotedRDA()], ids=name)
def test_unknown_keyword_arguments_are_refused(model):
    model = trained(model)
    state = pickle.dumps(model)
    with pytest.raises(TypeError, match="weight"):
        model.learn_one({"f0": 1.0}, "a", weight=2.0)
    with pytest.raises(TypeError, match="sample_weight"):
        model.predict_one({"f0": 1.0}, sample_weight=1.0)
    with pytest.raises(TypeError, match="foo"):
        model.predict_proba_one({"f0": 1.0}, foo=1)
    assert pickle.dumps(model) == state


def integer_weights():
    return [2, 3, 5]


@pytest.mark.parametrize("w", integer_weights())
@pytest.mark.parametrize(
    "cls, param",
    [(river_cw.AROW, "r"), (river_cw.NHERD, "C"), (river_cw.SCW, "C")],
    ids=lambda v: getattr(v, "__name__", v),
)
@pytest.mark.parametrize("kind", [{}, {"covariance": "full"}, {"diagonal": "drop"}], ids=str)
def test_an_integer_weight_is_the_rule_with_its_loss_weighted(cls, param, kind, w):
    """AROW: r -> r / w; NHERD and SCW: C -> w C; the same step, bit for bit."""
    if cls is river_cw.NHERD and not kind:
        kind = {"diagonal": "exact"}  # NHERD's own diagonal step, with C w in it too
    model = trained(cls(**kind), ("a", "b"))
    for x, y in stream(3, 30, ("a", "b")):
        equivalent = copy.deepcopy(model)
        value = getattr(model, param)
        setattr(equivalent, param, value / w if param == "r" else value * w)
        model.learn_one(x, y, w=w)
        equivalent.learn_one(x, y)
        assert model.weights == equivalent.weights and model.variances == equivalent.variances
        assert model.intercept == equivalent.intercept


def dense(model, keys):
    """mu and Sigma of a binary full-covariance model over `keys` (prior where unseen)."""
    weights, covariances = {**model.weights, INTERCEPT: model.intercept}, model.covariances
    mu = np.array([weights.get(k, 0.0) for k in keys])
    prior = model.initial_variance
    return mu, np.array([[covariances.get((k, g), prior * (k == g)) for g in keys] for k in keys])


KEYS = [INTERCEPT, "f0", "f1", "f2", "f3"]


@pytest.mark.parametrize("w", integer_weights())
def test_an_integer_weight_counts_a_sop_mistake_w_times_in_the_papers_sums(w):
    """SOP keeps b = sum y x and A = a I + sum x x' over mistakes: w times this example."""
    model = trained(river_cw.SOP(a=0.7, covariance="full"), ("a", "b"))
    for x, y in stream(4, 20, ("a", "b")):
        mu, S = dense(model, KEYS)
        A = np.linalg.inv(S)
        b = A @ mu
        d = np.array([1.0 if k is INTERCEPT else x.get(k, 0.0) for k in KEYS])
        sign = 1 if y == model.classes_[1] else -1
        mistake = sign * (mu @ d) <= 0
        model.learn_one(x, y, w=w)
        if mistake:
            A, b = A + w * np.outer(d, d), b + w * sign * d
        got_mu, got_S = dense(model, KEYS)
        np.testing.assert_allclose(got_mu, np.linalg.solve(A, b), rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(np.linalg.inv(got_S), A, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("w", [0.25, 3])
@pytest.mark.parametrize("variant", ["stdev", "var"])
def test_a_weight_raises_cws_gaussian_factor_to_its_power(variant, w):
    """CW: the change of the natural parameters (precision, precision times mean) is w times
    the unweighted one, and Sigma stays positive definite."""
    model = trained(river_cw.CW(variant=variant, covariance="full"), ("a", "b"), n=10)
    for x, y in stream(5, 12, ("a", "b")):
        once = copy.deepcopy(model)
        once.learn_one(x, y)
        before = dense(model, KEYS)
        model.learn_one(x, y, w=w)
        states = (before, dense(once, KEYS), dense(model, KEYS))
        P0, P1, Pw = (np.linalg.inv(S) for _, S in states)
        h0, h1, hw = (P @ mu for P, (mu, _) in zip((P0, P1, Pw), states))
        np.testing.assert_allclose(Pw - P0, w * (P1 - P0), rtol=1e-7, atol=1e-7)
        np.testing.assert_allclose(hw - h0, w * (h1 - h0), rtol=1e-7, atol=1e-7)
        assert np.linalg.eigvalsh(dense(model, KEYS)[1]).min() > 0


@pytest.mark.parametrize("w", integer_weights())
def test_a_voted_rda_weight_scales_the_subgradient(w):
    """With the conservative hinge loss, weight w learns what the example w x teaches."""
    weighted, scaled = river_cw.VotedRDA(l1=0.01), river_cw.VotedRDA(l1=0.01, learn_intercept=False)
    for x, y in stream(6, 80, ("a", "b")):
        weighted.learn_one(x, y, w=w)
        scaled.learn_one({f: w * v for f, v in {**x, "one": 1.0}.items()}, y)
    expected = scaled.weights
    assert weighted.intercept == pytest.approx(expected.pop("one"), rel=1e-12)
    assert weighted.weights == pytest.approx(expected, rel=1e-12)
