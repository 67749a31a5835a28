"""Every full-covariance model against the dense transcription of its paper, to 1e-9."""

from __future__ import annotations

import numpy as np
import pytest

import river_cw
from tests.support import reference

D = 6
NAMES = [f"f{j}" for j in range(D)]


def random_stream(seed, n=60):
    """Sparse-ish random examples (features appear online), labels False/True, False first."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=D)
    stream = []
    for i in range(n):
        x = rng.normal(size=D) * (rng.random(D) < 0.7)
        y = bool(w @ x + 0.3 * rng.normal() > 0) if i else False
        stream.append((x, y))
    return stream


def as_dict(x):
    return {name: float(v) for name, v in zip(NAMES, x) if v}


def library_state(model):
    """mu and Sigma of a binary full-covariance model, in the order of NAMES (prior if unseen),
    from its public views."""
    weights, covariances = model.weights, model.covariances
    mu = np.array([weights.get(f, 0.0) for f in NAMES])
    S = np.array(
        [[covariances.get((f, g), model.initial_variance * (f == g)) for g in NAMES] for f in NAMES]
    )
    return mu, S


CASES = [  # the papers' models: they never forget
    (
        river_cw.CW(learn_intercept=False, variant="var", covariance="full"),
        lambda mu, S, x, y: reference.cw_var(mu, S, x, y, 0.9),
    ),
    (
        river_cw.CW(learn_intercept=False, variant="stdev", covariance="full", confidence=0.8),
        lambda mu, S, x, y: reference.cw_stdev(mu, S, x, y, 0.8),
    ),
    (
        river_cw.AROW(learn_intercept=False, r=0.5, covariance="full", forgetting=0.0),
        lambda mu, S, x, y: reference.arow(mu, S, x, y, 0.5),
    ),
    (
        river_cw.NHERD(learn_intercept=False, C=0.3, covariance="full", forgetting=0.0),
        lambda mu, S, x, y: reference.nherd(mu, S, x, y, 0.3),
    ),
    (
        river_cw.SCW(learn_intercept=False, C=0.5, variant="I", covariance="full", forgetting=0.0),
        lambda mu, S, x, y: reference.scw(mu, S, x, y, 0.5, 0.9, "I"),
    ),
    (
        river_cw.SCW(learn_intercept=False, C=0.5, variant="II", covariance="full", forgetting=0.0),
        lambda mu, S, x, y: reference.scw(mu, S, x, y, 0.5, 0.9, "II"),
    ),
]


@pytest.mark.parametrize(
    "model, paper", CASES, ids=lambda c: repr(c).split("(")[0] if not callable(c) else ""
)
@pytest.mark.parametrize("seed", range(5))
def test_full_covariance_matches_paper(model, paper, seed):
    model = model.clone()
    mu, S = np.zeros(D), model.initial_variance * np.eye(D)
    for x, y in random_stream(seed):
        model.learn_one(as_dict(x), y)
        mu, S = paper(mu, S, x, 1 if y else -1)
        got_mu, got_S = library_state(model)
        np.testing.assert_allclose(got_mu, mu, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(got_S, S, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("seed", range(5))
def test_sop_matches_the_papers_b_and_A_form(seed):
    """SOP as the shared Gaussian step equals the paper's algorithm (b, A, current x in A)."""
    a = 0.7
    model = river_cw.SOP(learn_intercept=False, a=a, covariance="full")
    paper = reference.SecondOrderPerceptron(D, a)
    for x, y in random_stream(seed):
        sign = 1 if y else -1
        assert (paper.score(x) > 0) == (
            model.predict_one(as_dict(x)) is True
        ) or not model.classes_[1:]
        model.learn_one(as_dict(x), y)
        paper.learn(x, sign)
        got_mu, got_S = library_state(model)
        np.testing.assert_allclose(got_mu, paper.mean, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(got_S, paper.cov, rtol=1e-9, atol=1e-9)


def test_stdev_typo_in_the_algorithm_box_would_break_the_constraint():
    """The box's beta = alpha phi / sqrt(v+ + v alpha phi) misses the KKT equality; eq. 27 holds."""
    rng = np.random.default_rng(3)
    phi = reference.phi_of(0.9)
    x, mu = rng.normal(size=D), np.zeros(D)
    S = np.eye(D)
    _, S_right = reference.cw_stdev(mu, S, x, 1, 0.9)
    mu_new, _ = reference.cw_stdev(mu, S, x, 1, 0.9)
    assert mu_new @ x == pytest.approx(phi * np.sqrt(x @ S_right @ x), rel=1e-12)
    m, v = 0.0, x @ S @ x
    alpha = (-m * (1 + phi**2 / 2) + np.sqrt(v * phi**2 * (1 + phi**2))) / (v * (1 + phi**2))
    u = 0.25 * (-alpha * v * phi + np.sqrt(alpha**2 * v**2 * phi**2 + 4 * v)) ** 2
    beta_typo = alpha * phi / np.sqrt(u + v * alpha * phi)
    S_typo = S - beta_typo * np.outer(S @ x, S @ x)
    assert (mu_new @ x / phi) ** 2 != pytest.approx(x @ S_typo @ x, rel=1e-3)


def test_multiclass_full_covariance_matches_the_joint_feature_space():
    """Multi-class AROW: the difference vector f(x, y) - f(x, y') in the joint space (Crammer,
    Dredze, Kulesza 2009), best-scoring wrong label, from the third label on; binary before."""
    rng = np.random.default_rng(7)
    K, r = 4, 0.8
    model = river_cw.AROW(learn_intercept=False, r=r, covariance="full", forgetting=0.0)
    w, Sw = np.zeros(D), np.eye(D)  # binary phase: labels 0 (-1) and 1 (+1)
    labels = [0, 1, 2] + [int(z) for z in rng.integers(0, K, size=80)]
    for i, label in enumerate(labels):
        x = rng.normal(size=D)
        if label == 2 and w is not None:  # lift: block 1 <- w, empty blocks for labels 0, 2, 3
            mu, S = np.zeros(K * D), np.eye(K * D)
            mu[D : 2 * D], S[D : 2 * D, D : 2 * D] = w, Sw
            w = None
        if w is not None:
            w, Sw = reference.arow(w, Sw, x, 1 if label == 1 else -1, r)
        else:
            seen = sorted(set(labels[: i + 1]))
            scores = {z: mu[z * D : (z + 1) * D] @ x for z in seen}
            wrong = max((z for z in seen if z != label), key=scores.get)
            d = np.zeros(K * D)
            d[label * D : (label + 1) * D], d[wrong * D : (wrong + 1) * D] = x, -x
            mu, S = reference.arow(mu, S, d, 1, r)
        model.learn_one(as_dict(x), label)
    weights = model.weights
    for ((z, f), (z2, f2)), covariance in model.covariances.items():
        assert weights[z][f] == pytest.approx(mu[z * D + NAMES.index(f)], abs=1e-9)
        expected = S[z * D + NAMES.index(f), z2 * D + NAMES.index(f2)]
        assert covariance == pytest.approx(expected, abs=1e-9)


def test_full_covariance_keeps_its_digits_when_one_example_dwarfs_the_prior():
    """Rank-one precision updates by Givens rotations lose no digits to cancellation: Sigma
    after one AROW step on x = (1, 1e8, 1e8), against Sherman-Morrison in exact rationals."""
    from fractions import Fraction

    model = river_cw.AROW(r=1.0, covariance="full")
    model.learn_one({"f0": 1e8, "f1": 1e8}, True)
    x = {river_cw.INTERCEPT: Fraction(1), "f0": Fraction(10**8), "f1": Fraction(10**8)}
    norm = 1 + sum(v * v for v in x.values())  # r + x' Sigma x with Sigma = I
    for f in ("f0", "f1"):
        for g in (river_cw.INTERCEPT, "f0", "f1"):
            exact = float((f == g) - x[f] * x[g] / norm)
            # the precision's condition number is 2e16: an entry far below |Sigma| = 1 keeps
            # only an absolute accuracy; the form with 1/c got f0's variance 1.0 for 0.5
            tolerance = dict(rel=1e-12) if g != river_cw.INTERCEPT else dict(abs=1e-8)
            assert model.covariances[f, g] == pytest.approx(exact, **tolerance)
