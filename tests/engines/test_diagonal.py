"""Diagonal schemes against their formulas, the KKT equalities, and the exact solvers' robustness.

The diagonal schemes are the full update seen through a diagonal Sigma: ``drop`` keeps the
diagonal of the new covariance, ``project`` the diagonal of the new precision (JMLR 2012,
section 6). So the dense full-covariance references of `tests.support.reference` check them too.
"""

from __future__ import annotations

import math
import pickle
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import river_cw
from river_cw._engines import diagonal
from river_cw.cw import exact_stdev_step, exact_var_alpha
from tests.conftest import examples
from tests.models.test_full_covariance_vs_papers import NAMES, as_dict, library_state, random_stream
from tests.support import reference

D = len(NAMES)


def diagonal_state(model):
    weights, variances = model.weights, model.variances
    mu = np.array([weights.get(f, 0.0) for f in NAMES])
    s = np.array([variances.get(f, model.initial_variance) for f in NAMES])
    return mu, s


RULES = {
    "CW-var": (
        lambda **kw: river_cw.CW(covariance="diagonal", learn_intercept=False, variant="var", **kw),
        lambda mu, S, x, y: reference.cw_var(mu, S, x, y, 0.9),
    ),
    "CW-stdev": (
        lambda **kw: river_cw.CW(covariance="diagonal", learn_intercept=False, **kw),
        lambda mu, S, x, y: reference.cw_stdev(mu, S, x, y, 0.9),
    ),
    "AROW": (
        lambda **kw: river_cw.AROW(covariance="diagonal", learn_intercept=False, r=0.5, **kw),
        lambda mu, S, x, y: reference.arow(mu, S, x, y, 0.5),
    ),
    "NHERD": (
        lambda **kw: river_cw.NHERD(covariance="diagonal", learn_intercept=False, C=0.3, **kw),
        lambda mu, S, x, y: reference.nherd(mu, S, x, y, 0.3),
    ),
    "SCW-I": (
        lambda **kw: river_cw.SCW(covariance="diagonal", learn_intercept=False, C=0.5, **kw),
        lambda mu, S, x, y: reference.scw(mu, S, x, y, 0.5, 0.9, "I"),
    ),
    "SCW-II": (
        lambda **kw: river_cw.SCW(
            covariance="diagonal", learn_intercept=False, C=0.5, variant="II", **kw
        ),
        lambda mu, S, x, y: reference.scw(mu, S, x, y, 0.5, 0.9, "II"),
    ),
}


@pytest.mark.parametrize("scheme", ["project", "drop"])
@pytest.mark.parametrize("rule", sorted(RULES))
@pytest.mark.parametrize("seed", range(3))
def test_diagonal_scheme_is_the_full_update_seen_through_the_diagonal(rule, scheme, seed):
    make, paper = RULES[rule]
    model = make(diagonal=scheme)
    # 30 examples: long enough for every rule to update often, short enough that the dense
    # reference's matrix inverse stays accurate before CW's variances collapse
    for x, y in random_stream(seed, n=30):
        mu, s = diagonal_state(model)
        full_mu, full_S = paper(mu, np.diag(s), x, 1 if y else -1)
        model.learn_one(as_dict(x), y)
        got_mu, got_s = diagonal_state(model)
        np.testing.assert_allclose(got_mu, full_mu, rtol=1e-9, atol=1e-12)
        if scheme == "drop":
            np.testing.assert_allclose(got_s, np.diag(full_S), rtol=1e-9, atol=1e-12)
        else:
            np.testing.assert_allclose(1 / got_s, np.diag(np.linalg.inv(full_S)), rtol=1e-9)


@pytest.mark.parametrize("variant", ["var", "stdev"])
@pytest.mark.parametrize("seed", range(4))
def test_exact_diagonal_cw_meets_its_constraint_with_equality(variant, seed):
    """After each exact step on a violated example: m_new = phi v_new (var) or
    m_new = phi sqrt(v_new) (stdev), with the per-coordinate update of JMLR section 6.2."""
    model = river_cw.CW(
        learn_intercept=False,
        variant=variant,
        covariance="diagonal",
        diagonal="exact",
        confidence=0.85,
    )
    phi = model._phi
    updates = 0
    for x, y in random_stream(seed, n=80):
        sign = 1 if y else -1
        mu, s = diagonal_state(model)
        m, v = sign * mu @ x, s @ x**2
        model.learn_one(as_dict(x), y)
        new_mu, new_s = diagonal_state(model)
        m_new, v_new = sign * new_mu @ x, new_s @ x**2
        bound = phi * v if variant == "var" else phi * math.sqrt(v)
        if len(model.classes_) < 2 or m >= bound:
            continue
        updates += 1
        target = phi * v_new if variant == "var" else phi * math.sqrt(v_new)
        assert m_new == pytest.approx(target, rel=1e-9)
        alpha = (m_new - m) / v
        if variant == "var":
            expected = s / (1 + 2 * alpha * phi * x**2 * s)
        else:
            root_v = math.sqrt(v_new)
            expected = s * root_v / (root_v + alpha * phi * x**2 * s)
        np.testing.assert_allclose(new_s, expected, rtol=1e-9)
    assert updates > 10


def test_exact_diagonal_nherd_runs_the_one_dimensional_update_per_coordinate():
    C = 0.4
    model = river_cw.NHERD(learn_intercept=False, C=C, covariance="diagonal", diagonal="exact")
    for x, y in random_stream(1):
        mu, s = diagonal_state(model)
        sign = 1 if y else -1
        m, v = sign * mu @ x, s @ x**2
        model.learn_one(as_dict(x), y)
        new_mu, new_s = diagonal_state(model)
        if m < 1:
            np.testing.assert_allclose(
                new_mu, mu + (1 - m) / (v + 1 / C) * sign * s * x, atol=1e-12
            )
            np.testing.assert_allclose(new_s, s / (1 + C * x**2 * s) ** 2, rtol=1e-12)


CONFIGS = [
    river_cw.CW(covariance="diagonal", learn_intercept=False, variant=variant, diagonal=diagonal)
    for variant in ("var", "stdev")
    for diagonal in ("project", "drop", "exact")
] + [
    river_cw.AROW(covariance="diagonal", learn_intercept=False, diagonal="drop"),
    river_cw.AROW(covariance="diagonal", learn_intercept=False),
    river_cw.NHERD(learn_intercept=False, covariance="diagonal", diagonal="exact"),
    river_cw.NHERD(covariance="diagonal", learn_intercept=False, diagonal="drop"),
    river_cw.SOP(covariance="diagonal", learn_intercept=False),
    river_cw.SCW(covariance="diagonal", learn_intercept=False, variant="II", diagonal="drop"),
]


@pytest.mark.parametrize("model", CONFIGS, ids=repr)
@pytest.mark.parametrize("seed", range(3))
def test_diagonal_variances_stay_positive_and_never_grow(model, seed):
    model = model.clone()
    previous = diagonal_state(model)[1]
    for x, y in random_stream(seed, n=100):
        model.learn_one(as_dict(x), y)
        s = diagonal_state(model)[1]
        assert np.all(s > 0) and np.all(s <= previous * (1 + 1e-12))
        previous = s


@pytest.mark.parametrize(
    "model",
    [
        river_cw.CW(learn_intercept=False, covariance="full"),
        river_cw.CW(learn_intercept=False, variant="var", covariance="full"),
        river_cw.AROW(learn_intercept=False, covariance="full"),
        river_cw.NHERD(learn_intercept=False, covariance="full"),
        river_cw.SCW(learn_intercept=False, covariance="full"),
    ],
    ids=repr,
)
def test_full_covariance_stays_positive_definite_and_never_grows(model):
    model = model.clone()
    previous = np.eye(D)
    for x, y in random_stream(2, n=100):
        model.learn_one(as_dict(x), y)
        S = library_state(model)[1]
        assert np.linalg.eigvalsh(S).min() > 0
        assert np.linalg.eigvalsh(previous - S).min() > -1e-12
        previous = S


magnitudes = st.floats(min_value=-150, max_value=150).map(lambda e: 10.0**e)


@settings(max_examples=examples(300), deadline=None)
@given(
    m=st.floats(min_value=-1e6, max_value=1e6),
    u=st.lists(magnitudes, min_size=1, max_size=20),
    confidence=st.floats(min_value=0.55, max_value=0.999),
)
def test_exact_solvers_are_finite_and_feasible_for_any_input(m, u, confidence):
    phi = reference.phi_of(confidence)
    v = sum(u)
    alpha = exact_var_alpha(m, v, phi, u)
    assert math.isfinite(alpha) and alpha >= 0
    if alpha > 0:  # the constraint holds after the step, to rounding
        v_new = sum(uj / (1 + 2 * alpha * phi * uj) for uj in u)
        assert m + alpha * v >= phi * v_new * (1 - 1e-9) - 1e-9 * abs(m)
    alpha, s = exact_stdev_step(m, v, phi, u)
    assert math.isfinite(alpha) and alpha >= 0 and math.isfinite(s)
    if alpha > 0:
        assert s > 0
        v_new = sum(uj * s / (s + alpha * phi * uj) for uj in u)
        assert s * s == pytest.approx(v_new, rel=1e-6)


ENGINES = {
    "python": diagonal.PythonDiagonalGaussian,
    "compiled": diagonal.DiagonalGaussian if river_cw.ENGINE == "c" else None,
}


def exact_problems(engine, n=200, seed=0):
    """``(m, v, phi, u)``: the margin's terms ``u_j = s_j x_j^2`` and v as `engine` hands them
    to the solvers (a list, or the compiled engine's Terms), terms over six orders of magnitude,
    margins from well inside to beyond the constraint."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        x = {f"f{j}": float(10.0 ** rng.uniform(-1.5, 1.5)) for j in range(rng.integers(1, 13))}
        _, v, u, _ = engine(1.0).margin(x, ((0, 1),))
        phi = float(rng.uniform(0.2, 3.0))
        yield float(rng.uniform(-3.0, 1.0)) * phi * v, v, phi, u


def var_constraint(m, v, phi, u):
    """``alpha -> f(alpha) = m + alpha v - phi sum_j u_j / (1 + 2 alpha phi u_j)``, in exact
    arithmetic on the floats given."""
    m, v, phi, u = Fraction(m), Fraction(v), Fraction(phi), [Fraction(uj) for uj in u]
    return lambda alpha: m + alpha * v - phi * sum(uj / (1 + 2 * alpha * phi * uj) for uj in u)


def stdev_constraint(m, v, phi, u):
    """``s -> g(s) = s - sum_j u_j / (s + alpha(s) phi u_j)`` with ``alpha(s) = (phi s - m) /
    v``, in exact arithmetic on the floats given."""
    m, v, phi, u = Fraction(m), Fraction(v), Fraction(phi), [Fraction(uj) for uj in u]
    return lambda s: s - sum(uj / (s + (phi * s - m) / v * phi * uj) for uj in u)


def brackets_a_root(constraint, x: float, width: float) -> bool:
    """Whether the increasing `constraint` changes sign within `width` of `x` (exactly)."""
    x, width = Fraction(x), Fraction(width)
    return constraint(x - width) <= 0 <= constraint(x + width)


@pytest.mark.parametrize("engine", list(ENGINES))
def test_exact_solvers_meet_the_kkt_conditions_to_the_precision_they_claim(engine):
    """JMLR 2012 section 6.2: the multiplier is 0 where the constraint already holds, else the
    root of the constraint (``f(alpha) = 0``; ``g(s) = 0`` for stdev). The solvers stop once a
    Newton step moves the root by at most 1e-15 of itself; checked in exact arithmetic, a root
    lies within that of the result, plus what rounding the terms of the constraint (2 ulps of
    its largest terms, over its slope) can hide."""
    if ENGINES[engine] is None:
        pytest.skip("the compiled engine is not active")
    eps = 2.0**-52
    roots = 0
    for m, v, phi, u in exact_problems(ENGINES[engine]):
        alpha = exact_var_alpha(m, v, phi, u)
        if m >= phi * v:
            assert alpha == 0.0
        else:
            width = 1e-15 * alpha + 2 * eps * (abs(m) + alpha * v + phi * v) / v
            assert brackets_a_root(var_constraint(m, v, phi, u), alpha, width)
            roots += 1
        alpha, s = exact_stdev_step(m, v, phi, u)
        if m >= phi * math.sqrt(v):
            assert alpha == s == 0.0
        else:
            width = 1e-15 * s + 2 * eps * (s + abs(m) / phi)
            assert brackets_a_root(stdev_constraint(m, v, phi, u), s, width)
            assert alpha == (phi * s - m) / v > 0
            roots += 1
    assert roots > 300


@pytest.mark.parametrize("diagonal", ["exact", "project", "drop"])
@pytest.mark.parametrize("variant", ["var", "stdev"])
def test_huge_and_tiny_feature_values_never_produce_nan(variant, diagonal):
    """Magnitudes from 1e-120 to 1e120: each example is learned, or, where float64 overflows,
    refused with a clear error and no change; the state never holds a NaN."""
    rng = np.random.default_rng(0)
    model = river_cw.CW(
        covariance="diagonal", learn_intercept=False, variant=variant, diagonal=diagonal
    )
    learned = 0
    for i in range(300):
        scale = 10.0 ** rng.uniform(-120, 120)
        x = {f"f{j}": float(rng.normal() * scale) for j in range(8)}
        state = pickle.dumps(model)
        try:
            model.learn_one(x, bool(i % 2))
            learned += 1
        except ValueError as error:
            assert "too large" in str(error) and pickle.dumps(model) == state
            continue
        assert not any(map(math.isnan, [*model.weights.values(), *model.variances.values()]))
        try:
            proba = model.predict_proba_one(x)
        except ValueError as error:
            assert "too large" in str(error)
        else:
            assert all(0.0 <= p <= 1.0 for p in proba.values())
    assert learned > 150


def test_stdev_exact_survives_variance_collapse():
    """On a long stream the exact stdev variant drives v towards 0 (DESIGN.md); still no NaN."""
    rng = np.random.default_rng(1)
    model = river_cw.CW(
        learn_intercept=False, covariance="diagonal", diagonal="exact", confidence=0.95
    )
    w = rng.normal(size=8)
    for _ in range(2000):
        x = rng.normal(size=8)
        model.learn_one({j: float(v) for j, v in enumerate(x)}, bool(w @ x + rng.normal() > 0))
    state = pickle.dumps(model)
    variances = list(model.variances.values())
    assert all(math.isfinite(s) and s >= 0 for s in variances)
    assert min(variances) < 1e-3
    assert pickle.loads(state).predict_one({0: 1.0}) in (False, True)
