"""The exact diagonal schemes on the compiled engine's lean `learn_one` path (issue 10).

`CW(diagonal="exact")` (both variants) runs its Newton solver in C on the margin's own terms
``u_j = Sigma_jj x_j^2`` and `NHERD(diagonal="exact")` its herding shrink, in one engine call
(`learn_native`, named by the rule's `_native_exact_step`). Here the lean path, the general
compiled path (`LinearClassifier.learn_one`, which hands the terms to the Python `_exact_step`)
and the pure-Python engine give the same models, predictions, probabilities and skip counts to
the bit, on hypothesis-drawn streams of int, float and bool values with sample weights, with
and without an intercept, binary and multi-class, with forgetting (the general path's case);
the order of the features never changes a result; the C exact steps are the Python ones on
hypothesis-drawn terms; a subclass with its own `_exact_step` (or, for NHERD, its own `_step`)
runs its own. Skipped when the extension is not built.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import river_cw
from river_cw._engines import diagonal
from river_cw.base import LinearClassifier
from tests.support.bits import assert_same, assert_same_bound, bits, bits_of, state

_diagonal = pytest.importorskip(
    "river_cw._engines._diagonal", reason="the compiled engine is not built"
)
pytestmark = pytest.mark.skipif(
    river_cw.ENGINE != "c", reason="the compiled engine is not built or RIVER_CW_PURE_PYTHON is set"
)

EXACT = [
    (river_cw.CW, {"covariance": "diagonal", "diagonal": "exact"}),
    (river_cw.CW, {"covariance": "diagonal", "diagonal": "exact", "variant": "var"}),
    (river_cw.CW, {"covariance": "diagonal", "diagonal": "exact", "confidence": 0.999}),
    (river_cw.NHERD, {"covariance": "diagonal", "diagonal": "exact"}),
    (river_cw.NHERD, {"covariance": "diagonal", "diagonal": "exact", "C": 0.1}),
]
IDS = [f"{cls.__name__}{params}" for cls, params in EXACT]


class General:
    """A model whose `learn_one` always takes the general path (no lean call)."""

    def __init__(self, model):
        self.model = model

    def learn_one(self, x, y, w=1.0):
        LinearClassifier.learn_one(self.model, x, y, w)


def three(cls, params):
    """The lean path, the general compiled path and the pure-Python engine, one model each."""
    lean, general, python = cls(**params), cls(**params), cls(**params)
    python.set_gaussian(diagonal.PythonDiagonalGaussian(python.initial_variance), python.classes_)
    return lean, general, python


def outcome(model, call, *args):
    try:
        result = getattr(model, call)(*args)
    except Exception as error:  # the comparison is the point
        return type(error), str(error)
    if isinstance(result, dict):
        return {label: bits(p) for label, p in result.items()}
    return result


keys = st.sampled_from([f"w{i}" for i in range(12)] + [0, 1, 7, ("t", 1), 2.5])
values = st.one_of(
    st.floats(-1e3, 1e3, allow_nan=False),
    st.sampled_from([0.0, -0.0, 1e-150, 1e150, 1e-300, 3.0, -2.0]),
    st.integers(-5, 5),
    st.integers(-(2**60), 2**60),
    st.booleans(),
)
examples = st.tuples(
    st.dictionaries(keys, values, max_size=8),
    st.integers(0, 3),
    st.one_of(
        st.just(1.0), st.sampled_from([0.25, 2.0, 3.5, 1e-300, 1e300, 0.0]), st.integers(1, 3)
    ),
)


@pytest.mark.parametrize("cls, params", EXACT, ids=IDS)
@settings(max_examples=40, deadline=None)
@given(
    data=st.lists(examples, max_size=40),
    n_labels=st.sampled_from([2, 2, 3]),
    intercept=st.booleans(),
    forgetting=st.sampled_from([0.0, 0.0, 0.1]),
)
def test_lean_general_and_python_agree_to_the_bit(
    cls, params, data, n_labels, intercept, forgetting
):
    params = {**params, "learn_intercept": intercept, "forgetting": forgetting}
    lean, general, python = three(cls, params)
    learners = (lean, General(general), python)
    for x, y, w in data:
        y %= n_labels
        results = [outcome(model, "learn_one", x, y, w) for model in learners]
        assert results[1] == results[0] and results[2] == results[0]
        for other in (general, python):
            assert_same(lean, other, x, refusals=True)
            assert_same_bound(lean, other)


@pytest.mark.parametrize("cls, params", EXACT, ids=IDS)
@settings(max_examples=30, deadline=None)
@given(data=st.lists(examples, max_size=30), intercept=st.booleans())
def test_feature_order_never_changes_a_result(cls, params, data, intercept):
    forward, backward = (
        cls(learn_intercept=intercept, **params),
        cls(learn_intercept=intercept, **params),
    )
    for x, y, w in data:  # refused alike (values near 1e150 may overflow a margin) or learned
        assert outcome(forward, "learn_one", x, y % 2, w) == outcome(
            backward, "learn_one", dict(reversed(list(x.items()))), y % 2, w
        )
    assert forward.n_skipped_updates == backward.n_skipped_updates
    assert [dict(sorted(block.items(), key=repr)) for block in state(forward)] == [
        dict(sorted(block.items(), key=repr)) for block in state(backward)
    ]


def test_the_exact_schemes_take_the_lean_path():
    for cls, params in EXACT:
        model = cls(**params)
        model.learn_one({"a": 1.0}, True)
        model.learn_one({"b": 1.0}, False)
        lean = model._lean_spec()
        assert lean is not None
        x = {"a": 2, "c": True}
        assert model.gaussian.learn_native(x, True, 1.0, model._class_index, lean) == 0


# -- the exact steps in C against the Python `_exact_step` --------------------------------------

RULES = [
    river_cw.CW(covariance="diagonal", diagonal="exact"),
    river_cw.CW(covariance="diagonal", diagonal="exact", variant="var"),
    river_cw.CW(covariance="diagonal", diagonal="exact", confidence=0.51),
    river_cw.CW(covariance="diagonal", diagonal="exact", variant="var", confidence=0.999999),
]

finite = st.floats(allow_nan=False, allow_infinity=False)
terms = st.lists(
    st.one_of(
        st.floats(min_value=0.0, max_value=1e300),
        st.sampled_from([0.0, 5e-324, 1e-300, 1.0, 1e150]),
    ),
    min_size=1,
    max_size=30,
)
weights = st.one_of(
    st.just(1.0), st.floats(min_value=5e-324, allow_infinity=False), st.sampled_from([0.5, 1e300])
)


def python_exact_step(rule, m, v, u, w):
    """`_exact_step` as the general path takes it: None, (alpha, gamma), False (a skip), or the
    error it raises."""
    try:
        step = rule._exact_step(m, v, u, w)
    except (ZeroDivisionError, OverflowError):
        return False
    except ValueError as error:
        return ValueError, str(error)
    if step is None:
        return None
    alpha, gamma, scheme = step
    assert scheme == "project"
    return (alpha, gamma) if math.isfinite(alpha) and math.isfinite(gamma) else False


def native_exact_step(rule, m, v, u, w):
    step, scheme = rule._native_exact_step
    assert scheme == "project"
    try:
        return _diagonal.native_step(step, m, v, w, u)
    except ValueError as error:
        return ValueError, str(error)


@pytest.mark.parametrize("rule", RULES, ids=repr)
@settings(max_examples=300, deadline=None)
@given(m=finite, u=terms, w=weights, data=st.data())
def test_native_exact_step_is_the_python_one_to_the_bit(rule, m, u, w, data):
    """On the solvers' Python sums (a list of terms) and on the compiled ones (Terms)."""
    v = math.fsum(u)
    if not (0.0 < v < math.inf):
        return
    m = data.draw(st.one_of(st.just(m), st.floats(-2.0 * v, 2.0 * v)), label="m")
    native = bits_of(native_exact_step(rule, m, v, u, w))
    assert native == bits_of(python_exact_step(rule, m, v, u, w))
    engine = diagonal.DiagonalGaussian(1.0)
    margin = engine.margin({f"f{j}": math.sqrt(uj) for j, uj in enumerate(u)}, ((0, 1),))
    if list(margin[2]) == u:  # the square roots square back to the terms
        assert native == bits_of(python_exact_step(rule, m, v, margin[2], w))


SKIPPING = [({"c": 1e-160}, 1.0), ({"c": 1e-160}, 1e300), ({"a": 1e-160}, 1e300)]


@pytest.mark.parametrize("cls, params", EXACT, ids=IDS)
def test_a_step_float64_cannot_express_is_counted_and_changes_nothing(cls, params):
    """A variance of 1e-320 or a weight of 1e300: the step overflows, on every path alike."""
    for x, w in SKIPPING:
        lean, general, python = three(cls, {**params, "learn_intercept": False})
        for model in (lean, general, python):
            model.learn_one({"a": 1.0}, 0)
            model.learn_one({"a": 1.0, "b": 1e-150}, 1)
        before = state(lean)
        lean.learn_one(x, 0, w)
        LinearClassifier.learn_one(general, x, 0, w)
        python.learn_one(x, 0, w)
        for other in (general, python):
            assert_same(lean, other, x, refusals=True)
            assert_same_bound(lean, other)
        if python.n_skipped_updates:
            assert lean.n_skipped_updates == 1 and state(lean) == before
            return
    pytest.fail("no example of SKIPPING is skipped")


def test_a_subclass_with_its_own_exact_step_runs_it():
    class Halved(river_cw.CW):
        def _exact_step(self, m, v, u, w):
            step = super()._exact_step(m, v, u, w)
            return step and (step[0] / 2.0, step[1], step[2])

    class Timid(river_cw.NHERD):
        def _step(self, m, v, w):
            step = super()._step(m, v, w)
            return step and (step[0] / 2.0, step[1])

    assert Halved(covariance="diagonal", diagonal="exact")._lean_spec() is None
    assert Halved(diagonal="project")._lean_spec() is not None  # its own `_step` is CW's
    assert Timid(covariance="diagonal", diagonal="exact")._lean_spec() is None
    for own, plain in ((Halved, river_cw.CW), (Timid, river_cw.NHERD)):
        a, b = (
            own(covariance="diagonal", diagonal="exact"),
            plain(covariance="diagonal", diagonal="exact"),
        )
        for x, y in [({"a": 1.0}, 0), ({"b": 2.0}, 1), ({"a": -1.0, "b": 1.0}, 1)]:
            a.learn_one(x, y)
            b.learn_one(x, y)
        assert a.weights != b.weights
