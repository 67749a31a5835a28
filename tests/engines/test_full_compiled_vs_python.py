"""The full-covariance engine's compiled kernels (river_cw/_engines/_full.c) against the pure-Python
reference (`river_cw._engines.full.PythonFullGaussian`), bit for bit: the triangular solves and the
rank-one update on their own, and whole models through the one-call paths (``learn_native``,
``score_native``) and the general path (new features, several labels, forgetting, sample
weights); a step float64 cannot express is refused alike, leaving the factor as it was."""

from __future__ import annotations

import math
import pickle
import random

import numpy as np
import pytest

import river_cw
from river_cw._engines.full import FACTOR_BOUND, FullGaussian, PythonFullGaussian
from tests.conftest import unavailable
from tests.support.bits import bits

RULES = [
    river_cw.AROW,
    river_cw.CW,
    river_cw.NHERD,
    river_cw.SCW,
    river_cw.SOP,
]


@pytest.fixture(autouse=True)
def compiled():
    if FullGaussian is PythonFullGaussian:
        unavailable("the compiled engine (river_cw._engines._full) is not built")


def array_bits(a: np.ndarray) -> list[str]:
    return [bits(v) for v in np.ravel(a)]


def factor(n: int, rng: np.random.Generator, scale: float = 1.0) -> np.ndarray:
    """An upper triangular R with a positive diagonal, entries spread over `scale`'s range."""
    a = rng.normal(size=(n, n)) * scale ** rng.uniform(-1, 1, size=(n, n))
    r = np.triu(a)
    r[np.diag_indices(n)] = np.abs(np.diag(r)) + 0.5
    return np.ascontiguousarray(r)


def sparse_vector(n: int, rng: np.random.Generator) -> np.ndarray:
    """A vector with leading zeros, zeros inside, values of mixed sign and size."""
    v = rng.normal(size=n) * 10.0 ** rng.integers(-3, 4, size=n)
    v[: rng.integers(0, n + 1)] = 0.0
    v[rng.random(n) < 0.3] = 0.0
    return v


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 7, 8, 9, 13, 21, 58])
def test_the_solves_and_the_rank_one_update_are_the_references(n):
    rng = np.random.default_rng(n)
    for trial in range(20):
        chol = factor(n, rng, scale=1e3 if trial % 2 else 1.0)
        d = sparse_vector(n, rng)
        for kernel in ("_forward", "_backward"):
            ours = getattr(FullGaussian, kernel)(chol, d)
            reference = getattr(PythonFullGaussian, kernel)(chol, d)
            assert array_bits(ours) == array_bits(reference), (kernel, trial)
        ours, reference = chol.copy(), chol.copy()
        p = sparse_vector(n, rng)
        FullGaussian._rank_one(ours, p)
        PythonFullGaussian._rank_one(reference, p)
        assert array_bits(ours) == array_bits(reference), trial
        assert np.array_equal(ours, np.triu(ours)) and (np.diag(ours) >= np.diag(chol)).all()


def stream(n: int, labels: int, seed: int, width: int = 9) -> list[tuple[dict, object]]:
    """Dense examples over `width` features, some absent, a feature appearing late, ints and
    bools among the floats, labels of a noisy linear concept."""
    rng = random.Random(seed)
    truth = [[rng.gauss(0, 1) for _ in range(width)] for _ in range(labels)]
    data = []
    for i in range(n):
        x: dict = {f"x{j}": rng.gauss(1.0, 2.0) for j in range(width) if rng.random() < 0.85}
        if i > n // 2:
            x["late"] = rng.randint(-3, 3)
        if rng.random() < 0.1:
            x["flag"] = rng.random() < 0.5
        scores = [sum(w * x.get(f"x{j}", 0.0) for j, w in enumerate(ws)) for ws in truth]
        y = max(range(labels), key=scores.__getitem__) if labels > 2 else scores[0] > 0
        if rng.random() < 0.05:
            y = rng.randrange(labels) if labels > 2 else not y
        data.append((x, y))
    return data


def pair(rule, **params):
    """A model on the compiled engine and one on the reference."""
    ours, reference = rule(covariance="full", **params), rule(covariance="full", **params)
    reference.set_gaussian(PythonFullGaussian(reference.initial_variance), [])
    assert type(ours.gaussian) is FullGaussian
    return ours, reference


def assert_same_engines(ours, reference) -> None:
    a, b = ours.gaussian, reference.gaussian
    assert a.rows == b.rows
    assert array_bits(a.mean) == array_bits(b.mean)
    assert array_bits(a.chol) == array_bits(b.chol)
    assert ours.n_skipped_updates == reference.n_skipped_updates


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.__name__)
@pytest.mark.parametrize(
    "labels, params",
    [
        (2, {}),
        (2, {"learn_intercept": False}),
        (2, {"forgetting": 0.05}),
        (3, {}),
    ],
    ids=["binary", "no intercept", "forgetting", "multi-class"],
)
def test_models_learn_and_predict_as_on_the_reference(rule, labels, params):
    ours, reference = pair(rule, **params)
    rng = random.Random(7)
    for x, y in stream(300, labels, seed=labels):
        w = rng.choice([1.0, 1.0, 0.5, 3.0])
        assert ours.predict_one(x) == reference.predict_one(x)
        ours.learn_one(x, y, w)
        reference.learn_one(x, y, w)
        assert_same_engines(ours, reference)
    x = stream(1, labels, seed=99)[0][0]
    assert ours.predict_proba_one(x) == reference.predict_proba_one(x)


def test_auto_forgetting_is_the_references_when_the_labels_turn_to_noise():
    """forgetting="auto" (`river_cw.surprise`): the one-call path steps the surprise and hands
    each example that forgets to the general path, as the reference forgets it."""
    ours, reference = pair(river_cw.AROW, forgetting="auto")
    rng = random.Random(5)
    rates = set()
    for i, (x, y) in enumerate(stream(500, 2, seed=2)):
        if i >= 250:
            y = rng.random() < 0.5
        rates.add(river_cw.surprise.rate(ours._surprise))
        ours.learn_one(x, y)
        reference.learn_one(x, y)
        assert_same_engines(ours, reference)
    assert list(ours._surprise) == list(reference._surprise) and len(rates) > 10


def test_the_one_call_paths_serve_the_common_case():
    model = river_cw.AROW(covariance="full")
    data = stream(60, 2, seed=1)
    for x, y in data:
        model.learn_one(x, y)
    gaussian, (x, y) = model.gaussian, data[-1]
    x = {f: float(v) for f, v in x.items() if f in gaussian.rows[0]}
    lean = model._lean_spec()
    assert gaussian.learn_native(x, y, 1.0, model._class_index, lean) == 0
    assert gaussian.learn_native({**x, "new": 1.0}, y, 1.0, model._class_index, lean) == -1
    score = gaussian.score_native(x, river_cw.INTERCEPT, False)
    assert bits(score) == bits(gaussian.scores({**x, river_cw.INTERCEPT: 1.0})[0])
    assert gaussian.score_native({**x, "bad": "text"}, river_cw.INTERCEPT, False) is None


def test_examples_wider_than_the_stack_buffers_take_the_one_call_paths_alike():
    """x of 100 features (the one calls read a wider x into buffers of the heap): the same
    numbers as the reference, and the one calls serve it once its features are learned."""
    ours, reference = pair(river_cw.AROW)
    data = stream(40, 2, seed=3, width=100)
    for x, y in data:
        assert ours.predict_one(x) == reference.predict_one(x)
        ours.learn_one(x, y)
        reference.learn_one(x, y)
        assert_same_engines(ours, reference)
    gaussian, (x, y) = ours.gaussian, data[-1]
    x = {f: float(v) for f, v in x.items() if f in gaussian.rows[0]}
    assert len(x) > 64
    score = gaussian.score_native(x, river_cw.INTERCEPT, False)
    assert bits(score) == bits(reference.gaussian.scores({**x, river_cw.INTERCEPT: 1.0})[0])
    assert gaussian.learn_native(x, y, 1.0, ours._class_index, ours._lean_spec()) == 0


def test_a_step_beyond_the_factor_bound_is_refused_alike_and_changes_nothing():
    ours, reference = pair(river_cw.AROW)
    for model in (ours, reference):
        model.learn_one({"a": 1.0, "b": 1.0}, True)
        model.learn_one({"a": -1.0, "b": 1.0}, False)
    chol, mean = ours.gaussian.chol, ours.gaussian.mean.copy()
    before = pickle.dumps(ours.gaussian)
    x = {"a": 1e152}  # v within float64, the rotated factor beyond FACTOR_BOUND
    for model in (ours, reference):
        model.learn_one(x, False)  # a margin below 1: AROW updates
    assert_same_engines(ours, reference)
    assert ours.n_skipped_updates == 1 and pickle.dumps(ours.gaussian) == before
    assert ours.gaussian.chol is chol and np.array_equal(ours.gaussian.mean, mean)
    assert np.abs(ours.gaussian.chol).max() <= FACTOR_BOUND


def test_a_pickle_of_the_engine_before_its_rows_restores():
    """A full Gaussian pickled before it kept its rows by block (its state then: ``index``,
    ``(block, feature) -> row``, and ``n_blocks``) unpickles into the same weights."""
    old = PythonFullGaussian.__new__(PythonFullGaussian)
    old.__setstate__(
        {
            "initial_variance": 1.0,
            "n_blocks": 2,
            "index": {(0, "a"): 0, (1, "a"): 1},
            "mean": np.array([0.5, -0.5]),
            "chol": np.array([[2.0, 0.1], [0.0, 3.0]]),
        }
    )
    assert old.rows == [{"a": 0}, {"a": 1}] and old.index == {(0, "a"): 0, (1, "a"): 1}
    restored = pickle.loads(pickle.dumps(old))
    assert type(restored) is FullGaussian and restored.rows == old.rows
    assert math.isclose(restored.cov[0, 0], 0.25 * (1 + 0.1**2 / 9), rel_tol=1e-12)
