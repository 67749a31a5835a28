"""``learn_one(x, y, w)``: each rule's documented meaning of a sample weight (issue 9).

Two paths learn a weighted example. On the compiled engine, a binary model with diagonal or
arrowhead covariance (no calibration, no forgetting) learns an example with a known label and a
`float` weight > 0 in one call of the engine, the rule's step in C (river_cw/_engines/_steps.h; voted
RDA's in river_cw/_engines/_rda.c). Any other weight (an `int`, a numpy float, 0) takes the general path, the
rule's Python `_step`. So every property here is checked on `int` weights and on `float` ones,
whole and fractional (`WEIGHTS`);
`test_float_weights_reach_the_compiled_step_and_int_weights_the_python_one` keeps that premise
true.
"""

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


# int weights take the general path (the Python step), float weights the compiled one
WEIGHTS = [2, 3, 5, 2.0, 0.5, 2.5]


def weight_id(w) -> str:
    return f"{w!r}:{type(w).__name__}"


class Watched(river_cw.AROW):
    """AROW counting the steps its Python `_step` takes; its `_native_step` is AROW's, so the
    compiled engine may serve it without Python."""

    def __init__(self, **params):
        super().__init__(**params)
        self.python_steps = 0

    def _step(self, m, v, w):
        self.python_steps += 1
        return super()._step(m, v, w)

    _native_step = river_cw.AROW._native_step


@pytest.mark.skipif(river_cw.ENGINE != "c", reason="the compiled engine is not active")
# the default (arrowhead, drop) and the diagonal engine (the papers' project scheme): each engine's
# compiled step
@pytest.mark.parametrize("kind", [{}, {"covariance": "diagonal", "diagonal": "project"}], ids=str)
def test_float_weights_reach_the_compiled_step_and_int_weights_the_python_one(kind):
    model = Watched(**kind)
    model.learn_one({"f0": 1.0}, "a")
    model.learn_one({"f0": -1.0}, "b")
    for x, y in stream(3, 20, ("a", "b")):
        before = model.python_steps
        model.learn_one(x, y, w=0.5)
        model.learn_one(x, y, w=2.0)
        assert model.python_steps == before
        model.learn_one(x, y, w=2)
        assert model.python_steps == before + 1


@pytest.mark.parametrize("w", WEIGHTS, ids=weight_id)
@pytest.mark.parametrize(
    "cls, param",
    [(river_cw.AROW, "r"), (river_cw.NHERD, "C"), (river_cw.SCW, "C")],
    ids=lambda v: getattr(v, "__name__", v),
)
@pytest.mark.parametrize(
    "kind",
    [{}, {"covariance": "full"}, {"covariance": "diagonal", "diagonal": "project"}],
    ids=str,
)
def test_a_weight_is_the_rule_with_its_loss_weighted(cls, param, kind, w):
    """AROW: r -> r / w; NHERD and SCW: C -> w C; the same step, bit for bit."""
    if cls is river_cw.NHERD and not kind:
        kind = {
            "covariance": "diagonal",
            "diagonal": "exact",
        }  # NHERD's own diagonal step, with C w in it too
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


def natural(mu, S):
    """Precision and precision times mean of N(mu, S)."""
    P = np.linalg.inv(S)
    return P, P @ mu


def seen_through_the_diagonal(P, h):
    """Mean and variances of the Gaussian of natural parameters ``(P, h)`` as the "project"
    scheme keeps it: the full update's mean and the diagonal of its precision (JMLR 2012,
    section 6)."""
    return np.linalg.solve(P, h), 1.0 / np.diag(P)


def mean_and_variances(model):
    """Mean and variances of a binary model over `KEYS`."""
    mu, S = dense(model, KEYS)
    return mu, np.diag(S)


@pytest.mark.parametrize("w", WEIGHTS, ids=weight_id)
@pytest.mark.parametrize("covariance", ["full", "diagonal"])
def test_a_weight_counts_a_sop_mistake_w_times_in_the_papers_sums(covariance, w):
    """SOP keeps b = sum y x and A = a I + sum x x' over mistakes: w times this example (the
    diagonal model: that update from its diagonal Sigma, seen through the diagonal)."""
    model = trained(river_cw.SOP(a=0.7, covariance=covariance), ("a", "b"))
    for x, y in stream(4, 20, ("a", "b")):
        mu, S = dense(model, KEYS)
        A, b = natural(mu, S)
        d = np.array([1.0 if k is INTERCEPT else x.get(k, 0.0) for k in KEYS])
        sign = 1 if y == model.classes_[1] else -1
        mistake = sign * (mu @ d) <= 0
        model.learn_one(x, y, w=w)
        if mistake:
            A, b = A + w * np.outer(d, d), b + w * sign * d
        got_mu, got_S = dense(model, KEYS)
        if covariance == "full":
            np.testing.assert_allclose(got_mu, np.linalg.solve(A, b), rtol=1e-8, atol=1e-10)
            np.testing.assert_allclose(np.linalg.inv(got_S), A, rtol=1e-8, atol=1e-8)
        else:
            mean, variances = seen_through_the_diagonal(A, b)
            np.testing.assert_allclose(got_mu, mean, rtol=1e-8, atol=1e-10)
            np.testing.assert_allclose(np.diag(got_S), variances, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("w", [0.25, 3, 2.5], ids=weight_id)
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
        (P0, h0), (P1, h1), (Pw, hw) = (natural(mu, S) for mu, S in states)
        np.testing.assert_allclose(Pw - P0, w * (P1 - P0), rtol=1e-7, atol=1e-7)
        np.testing.assert_allclose(hw - h0, w * (h1 - h0), rtol=1e-7, atol=1e-7)
        assert np.linalg.eigvalsh(dense(model, KEYS)[1]).min() > 0


@pytest.mark.parametrize("w", WEIGHTS, ids=weight_id)
@pytest.mark.parametrize("variant", ["stdev", "var"])
def test_a_weight_raises_cws_gaussian_factor_to_its_power_seen_through_the_diagonal(variant, w):
    """Diagonal CW: the unweighted step is the full update from the diagonal Sigma, ``P0 + u u'``
    (u from the diagonal it keeps), seen through the diagonal; the weighted step is the same
    update with the natural parameters' change w times, seen through the diagonal."""
    model = trained(river_cw.CW(variant=variant, covariance="diagonal"), ("a", "b"), n=10)
    updates = 0
    for x, y in stream(5, 30, ("a", "b")):
        once = copy.deepcopy(model)
        once.learn_one(x, y)
        mu0, s0 = mean_and_variances(model)
        model.learn_one(x, y, w=w)
        mu1, s1 = mean_and_variances(once)
        d = np.array([1.0 if k is INTERCEPT else x.get(k, 0.0) for k in KEYS])
        # the unweighted full update: P1 = P0 + gamma d d' = P0 + u u', its mean mu1
        u = np.sign(d) * np.sqrt(np.maximum(1.0 / s1 - 1.0 / s0, 0.0))
        P0 = np.diag(1.0 / s0)
        P1 = P0 + np.outer(u, u)
        h0, h1 = P0 @ mu0, P1 @ mu1
        mean, variances = seen_through_the_diagonal(P0 + w * (P1 - P0), h0 + w * (h1 - h0))
        got_mu, got_s = mean_and_variances(model)
        np.testing.assert_allclose(got_mu, mean, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(got_s, variances, rtol=1e-7, atol=1e-12)
        updates += bool(u.any())
    assert updates > 5


@pytest.mark.parametrize("w", WEIGHTS, ids=weight_id)
def test_a_voted_rda_weight_scales_the_subgradient(w):
    """With the conservative hinge loss, weight w learns what the example w x teaches."""
    weighted, scaled = river_cw.VotedRDA(l1=0.01), river_cw.VotedRDA(l1=0.01, learn_intercept=False)
    for x, y in stream(6, 80, ("a", "b")):
        weighted.learn_one(x, y, w=w)
        scaled.learn_one({f: w * v for f, v in {**x, "one": 1.0}.items()}, y)
    expected = scaled.weights
    assert weighted.intercept == pytest.approx(expected.pop("one"), rel=1e-12)
    assert weighted.weights == pytest.approx(expected, rel=1e-12)
