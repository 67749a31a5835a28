"""Bad input never hurts: a call succeeds, or raises TypeError/ValueError and leaves the model
exactly as it was (byte-identical pickle); the state only ever holds finite Python floats and
non-negative variances; full covariances stay symmetric positive definite."""

from __future__ import annotations

import decimal
import fractions
import math
import pickle
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import river_cw
from river_cw import INTERCEPT
from river_cw._engines import arrowhead, diagonal
from tests.conftest import examples
from tests.models.test_classifiers import ALL_CONFIGS, name

RDA_CONFIGS = [
    river_cw.VotedRDA(**params)
    for params in ({}, {"loss": "log"}, {"prediction": "vote"}, {"prediction": "last", "l1": 0.1})
]
EVERY_CONFIG = ALL_CONFIGS + RDA_CONFIGS


def state_floats(model):
    """Every number of the learned state (means, variances), with the variances apart."""
    if isinstance(model, river_cw.VotedRDA):
        blocks = [model.weights] if model.is_binary else list(model.weights.values())
        return [w for block in blocks for w in block.values()], []
    weights, variances = model.weights, model.variances
    if not model.is_binary:
        weights = {(c, f): w for c, block in weights.items() for f, w in block.items()}
        variances = {(c, f): s for c, block in variances.items() for f, s in block.items()}
    return list(weights.values()), list(variances.values())


def assert_sound(model):
    means, variances = state_floats(model)
    assert all(type(v) is float and math.isfinite(v) for v in means + variances)
    assert all(s >= 0.0 for s in variances)
    if getattr(model, "covariance", None) == "full":
        # Sigma^-1 = R'R with R's diagonal never below the prior's 1 / sqrt(a): Sigma is SPD
        # (its explicit inverse is only PD up to rounding when some variance is near 0)
        chol = model.gaussian.chol
        assert np.all(np.diag(chol) >= (1 - 1e-12) / math.sqrt(model.initial_variance))
        assert np.array_equal(chol, np.triu(chol))


def test_a_failed_learn_leaves_the_labels_and_the_blocks_as_they_were():
    model = river_cw.AROW()
    model.learn_one({"a": 1.0}, "x")
    model.learn_one({"a": -1.0}, "y")
    state = pickle.dumps(model)
    with pytest.raises(ValueError, match=r"'a'|overflow"):
        model.learn_one({"a": 1e200}, "z")  # x'Sigma x overflows: refused
    assert model.classes_ == ["x", "y"] and pickle.dumps(model) == state
    model.learn_one({"a": 2.0}, "z")  # the same label later, with a sound example
    assert model.classes_ == ["x", "y", "z"]


@pytest.mark.parametrize("model", EVERY_CONFIG, ids=name)
def test_extreme_values_learn_or_refuse_cleanly_never_tear_an_update(model):
    model = model.clone()
    for x, y in [({"a": 1.0, "b": 2.0}, 0), ({"a": -1.0}, 1), ({"b": 1.0, "c": 1.0}, 2)]:
        model.learn_one(x, y)
    for x in ({"a": 1e150, "b": 1.0}, {"a": 1e-150, "b": 1e150}, {"c": 1e154}, {"d": 1e308}):
        for y in (0, 1, 2, 3):
            before = pickle.dumps(model)
            try:
                model.learn_one(x, y)
            except ValueError:
                assert pickle.dumps(model) == before
            assert_sound(model)
    assert_sound(model)


@pytest.mark.parametrize(
    "value, expected",
    [
        (np.int8(12), 12.0),
        (np.uint64(2**63), float(2**63)),
        (np.float16(0.5), 0.5),
        (np.float32(0.1), float(np.float32(0.1))),
        (np.longdouble(0.25), 0.25),
        (np.bool_(True), 1.0),
        (True, 1.0),
        (fractions.Fraction(1, 4), 0.25),
        (decimal.Decimal("0.5"), 0.5),
    ],
    ids=repr,
)
@pytest.mark.parametrize(
    "model", [river_cw.AROW(), river_cw.CW(covariance="full"), RDA_CONFIGS[0]], ids=name
)
def test_every_real_number_type_is_stored_as_a_python_float(model, value, expected):
    typed, plain = model.clone(), model.clone()
    for extra, y in (({}, True), ({"h": 1.0}, False), ({"h": -1.0}, True)):
        typed.learn_one({"f": value, **extra}, y)
        plain.learn_one({"f": expected, **extra}, y)
    assert typed.weights == plain.weights
    assert all(type(w) is float for w in typed.weights.values())
    assert typed.predict_proba_one({"f": value}) == plain.predict_proba_one({"f": expected})


@pytest.mark.parametrize("model", EVERY_CONFIG, ids=name)
@pytest.mark.parametrize(
    "value, error, message",
    [
        (10**400, ValueError, "beyond the float64 range"),
        (fractions.Fraction(10**400, 3), ValueError, "beyond the float64 range"),
        (np.longdouble("1e400"), ValueError, "beyond the float64 range"),
        (decimal.Decimal("NaN"), ValueError, "non-finite"),
        (np.complex128(1.0), TypeError, "non-real"),
        (2 + 0j, TypeError, "non-real"),
        ("1", TypeError, "non-numeric"),
        (b"1", TypeError, "non-numeric"),
    ],
    ids=repr,
)
def test_values_that_are_not_real_float64_numbers_are_refused_by_name(model, value, error, message):
    model = model.clone()
    model.learn_one({"a": 1.0}, 0)
    model.learn_one({"a": -1.0}, 1)
    state = pickle.dumps(model)
    for call in (
        lambda: model.learn_one({"a": 1.0, "bad": value}, 2),
        lambda: model.predict_proba_one({"bad": value}),
    ):
        with pytest.raises(error, match=f"'bad'.*{message}"):
            call()
        assert pickle.dumps(model) == state


@pytest.mark.parametrize("cls", [river_cw.NHERD, river_cw.CW, river_cw.AROW])
def test_full_covariance_stays_positive_definite_across_sixteen_orders_of_magnitude(cls):
    rng = np.random.default_rng(0)
    model = cls(covariance="full")
    scales = 10.0 ** np.arange(-8, 9, 2)
    for _ in range(300):
        x = {f"f{j}": float(s * rng.normal()) for j, s in enumerate(scales) if rng.random() < 0.7}
        model.learn_one(x, bool(rng.random() < 0.5))
        _, v = state_floats(model)
        assert all(s > 0 for s in v)
    assert_sound(model)
    p = model.predict_proba_one({"f0": 1e-8, "f8": 1e8})
    assert math.isclose(sum(p.values()), 1.0)


def test_nherd_exact_on_huge_values_updates_whole_or_not_at_all():
    model = river_cw.NHERD(covariance="diagonal", diagonal="exact")
    model.learn_one({"a": 1.0, "b": 1.0}, True)
    model.learn_one({"a": 1e150, "b": 1e-150}, False)  # (1 + C x^2 s)^2 overflows: s -> 0
    assert_sound(model)
    assert model.n_skipped_updates == 0


class Reckless(river_cw.AROW):
    """AROW with a step too large for float64 on a large feature value."""

    def _step(self, m, v, w):
        return 1e300, 1.0


@pytest.mark.parametrize("covariance", ["diagonal", "full"])
def test_a_step_float64_cannot_express_is_counted_not_hidden(covariance):
    model = Reckless(covariance=covariance)
    model.learn_one({"a": 1e-3}, False)  # mean -1e297: fine
    assert model.n_skipped_updates == 0
    state = pickle.dumps(model.weights)
    model.learn_one({"a": 1e10, "b": 1.0}, True)  # the mean would overflow: nothing written
    assert model.n_skipped_updates == 1 and pickle.dumps(model.weights) == state
    assert_sound(model)


def test_kl_combination_of_variances_that_underflowed_is_finite():
    a, b = river_cw.CW(covariance="diagonal"), river_cw.CW(covariance="diagonal")
    for model, value in ((a, 1.0), (b, 2.0)):
        model.learn_one({"x": value}, True)
        model.learn_one({"x": -value}, False)
    blocks = a.gaussian.blocks
    blocks[0]["x"][1] = 0.0  # a variance spent to 0, as CW-stdev reaches on long streams
    a.gaussian.blocks = blocks  # assigned whole: the compiled engine's `blocks` is a copy
    merged = river_cw.combine([a, b], method="kl")
    assert merged.variances["x"] == 0.0 and merged.weights["x"] == a.weights["x"]
    assert_sound(merged)


labels = st.one_of(st.sampled_from(["a", "b", "c", "d"]), st.integers(-2, 2), st.booleans())
keys = st.one_of(
    st.sampled_from(["f0", "f1", "f2", "f3"]), st.integers(0, 3), st.tuples(st.integers(0, 1))
)
values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(10**400), 10**400),
    st.sampled_from(
        [1e-300, 1e300, 1e154, -1e-8, 1e8, np.int8(-128), np.float16(65504), np.float32(3e38), 1j]
    ),
    st.fractions(),
    st.sampled_from([None, "x", [1.0]]),
)


def feature_error(value):
    """The error a feature value must raise, None for a real number float64 can hold (the rules
    of `river_cw.validation.to_float`, written out)."""
    if isinstance(value, (complex, np.complexfloating)) or not isinstance(
        value, (int, float, fractions.Fraction, np.number, np.bool_)
    ):
        return TypeError
    try:
        return None if math.isfinite(float(value)) else ValueError
    except OverflowError:
        return ValueError


def weight_error(w):
    """The error a sample weight must raise, None for a finite real number >= 0 (the rules of
    `river_cw.validation.check_weight`, written out)."""
    if isinstance(w, (bool, np.bool_)) or not isinstance(w, (int, float, np.number)):
        return TypeError
    try:
        return None if 0.0 <= float(w) < math.inf else ValueError
    except OverflowError:
        return ValueError


TOO_LARGE = "too large"  # a valid example whose margin or score float64 cannot hold


def errors_of(x: dict, w=1.0):
    """``{name: error}`` of what is wrong with an example: its bad features and its weight."""
    bad = {f"feature {key!r} has": feature_error(value) for key, value in x.items()}
    bad["w must be"] = weight_error(w)
    return {name: error for name, error in bad.items() if error is not None}


def refused_or_done(call, model, bad: dict, learns: bool = True):
    """Run `call` on `model`: with something in `bad` it must raise one of its errors, naming
    it, and leave the model as it was; else it may only refuse float64's overflow (unchanged).
    A call that does not learn never changes the model. Returns the call's result, or None
    when it raised."""
    before = pickle.dumps(model)
    try:
        result = call()
    except (TypeError, ValueError) as error:
        message = str(error)
        assert pickle.dumps(model) == before, message
        if bad:
            assert any(name in message and isinstance(error, kind) for name, kind in bad.items()), (
                message,
                bad,
            )
        else:
            assert isinstance(error, ValueError) and TOO_LARGE in message, message
        return None
    assert not bad, f"{bad} accepted"
    assert learns or pickle.dumps(model) == before
    return result


@pytest.mark.parametrize("model", EVERY_CONFIG, ids=name)
@settings(
    max_examples=examples(25),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    stream=st.lists(
        st.tuples(st.dictionaries(keys, values, max_size=4), labels), min_size=1, max_size=12
    )
)
def test_hostile_streams_never_corrupt_a_model(model, stream):
    """Bad input is refused by name and changes nothing; valid input is learned and predicted
    (or refused where float64 overflows, changing nothing)."""
    model = model.clone()
    for x, y in stream:
        bad = errors_of(x)
        refused_or_done(lambda: model.learn_one(x, y), model, bad)
        proba = refused_or_done(lambda: model.predict_proba_one(x), model, bad, learns=False)
        if proba is not None:
            assert not proba or math.isclose(sum(proba.values()), 1.0)
            assert all(0.0 <= p <= 1.0 for p in proba.values())
        assert_sound(model)


NEW_PARAMETERS = [
    river_cw.AROW(forgetting=0.1),
    river_cw.AROW(covariance="arrowhead", diagonal="drop", forgetting=0.1),
    river_cw.AROW(covariance="full", forgetting=0.2),
    river_cw.CW(covariance="diagonal", diagonal="exact", forgetting=0.05),
    river_cw.CW(variant="var", covariance="full", forgetting=0.01),
    river_cw.NHERD(covariance="diagonal", diagonal="exact", forgetting=0.3),
    river_cw.SOP(learn_intercept=False, forgetting=0.5),
    river_cw.SCW(variant="II", forgetting=0.01),
    river_cw.VotedRDA(l1=0.01),
]
weights = st.one_of(
    st.floats(0, 1e6),
    st.integers(0, 5),
    st.sampled_from([-1.0, math.nan, math.inf, "2", None, True, 10**400, 1e-300]),
)


@pytest.mark.parametrize("model", NEW_PARAMETERS, ids=name)
@settings(
    max_examples=examples(25),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    stream=st.lists(
        st.tuples(st.dictionaries(keys, values, max_size=4), labels, weights),
        min_size=1,
        max_size=12,
    )
)
def test_hostile_streams_and_weights_never_corrupt_a_model_with_an_intercept_or_forgetting(
    model, stream
):
    model = model.clone()
    for x, y, w in stream:
        refused_or_done(lambda: model.learn_one(x, y, w), model, errors_of(x, w))
        proba = refused_or_done(
            lambda: model.predict_proba_one(x), model, errors_of(x), learns=False
        )
        if proba is not None:
            assert not proba or math.isclose(sum(proba.values()), 1.0)
        assert_sound(model)
        if not isinstance(model, river_cw.VotedRDA) and model.covariance != "arrowhead":
            # the arrowhead forgets in its latent coordinates (c_j and S apart): a marginal
            # variance c_j + k_j^2 S can then exceed the prior (hypothesis found it; both engines
            # alike), an open question of its forgetting, not of the engines
            assert all(s <= model.initial_variance for s in state_floats(model)[1])


def test_full_covariance_variances_stay_at_most_the_prior_through_rounding():
    """Found by hypothesis: a feature of 6e-4 beside one of 5e4 left the inverse's rounding one
    ulp above the prior's variance; the true value never exceeds it (see FullGaussian.cov)."""
    model = river_cw.AROW(covariance="full")
    model.learn_one({"f0": 651535 / 1062954153, "f1": 49962.0}, "a", 0.25)
    assert max(model.variances.values()) <= model.initial_variance
    assert max(model.covariances.values()) <= model.initial_variance


class InterruptedKey:
    """A feature whose first hash once armed raises KeyboardInterrupt, as Ctrl-C does when Python
    handles its signal while running a key's __hash__ (the intercept's, in every model that
    learns one); the hashes after it succeed."""

    armed = False

    def __hash__(self):
        if self.armed:
            self.armed = False
            raise KeyboardInterrupt
        return 7

    def __eq__(self, other):
        return self is other


INTERRUPTED = [
    river_cw.AROW(covariance="diagonal"),
    river_cw.AROW(covariance="arrowhead"),
    river_cw.CW(covariance="diagonal", diagonal="exact"),
    river_cw.NHERD(covariance="diagonal", diagonal="exact"),
    river_cw.VotedRDA(),
]


@pytest.mark.parametrize("model", INTERRUPTED, ids=name)
@pytest.mark.parametrize("call", ["learn_one", "learn_many", "learn_many CSR"])
def test_ctrl_c_inside_a_key_propagates_and_changes_nothing(model, call):
    """No fast path takes a KeyboardInterrupt for a bad key to hand over to the general path
    (which would hash again, succeed, and lose Ctrl-C): it propagates, the model unchanged."""
    scipy_sparse = pytest.importorskip("scipy.sparse")
    model = model.clone()
    model.learn_one({"a": 1.0}, True)
    model.learn_one({"a": -1.0}, False)  # both labels known: the engines' fast paths serve
    before = pickle.dumps(model)
    key = InterruptedKey()
    x, X = {"a": 1.0, key: 2.0}, scipy_sparse.csr_matrix(np.array([[1.0, 2.0]]))
    key.armed = True  # x is built: the next hash of the key is the model's
    with pytest.raises(KeyboardInterrupt):
        if call == "learn_one":
            model.learn_one(x, True)
        elif call == "learn_many":
            model.learn_many([x], [True])
        else:
            model.learn_many(X, [True], features=["a", key])
    assert pickle.dumps(model) == before


ENGINES = {  # every Gaussian engine that takes a difference vector's pairs
    "diagonal python": lambda: diagonal.PythonDiagonalGaussian(1.0),
    "arrowhead python": lambda: arrowhead.PythonArrowheadGaussian(1.0, INTERCEPT),
}
if river_cw.ENGINE == "c":
    ENGINES["diagonal compiled"] = lambda: diagonal.DiagonalGaussian(1.0)
    ENGINES["arrowhead compiled"] = lambda: arrowhead.ArrowheadGaussian(1.0, INTERCEPT)


@pytest.mark.parametrize("make", ENGINES.values(), ids=ENGINES.keys())
def test_a_difference_vector_naming_one_block_twice_is_refused(make):
    """Each pair's block is read and written as its label's alone: two pairs on one block (a
    negative index counts from the end) are refused with the same ValueError by every engine,
    before anything changes (the compiled engines stored such a feature twice and disagreed
    with the Python ones)."""
    g = make()
    g.add_block()
    step = lambda m, v, w: (0.5, 1.0)  # noqa: E731
    x = {"a": 1.0, INTERCEPT: 1.0}
    assert g.learn(x, ((0, 1), (1, -1)), step, "project", 1.0) == 1
    before = g.blocks
    for pairs, block in [(((0, 1), (0, -1)), 0), (((1, 1), (-1, -1)), 1), (((-2, 1), (0, 1)), 0)]:
        message = (
            f"the pairs name block {block} twice: a difference vector spans the blocks of "
            "distinct labels"
        )
        with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
            g.learn({"new": 2.0, **x}, pairs, step, "drop", 1.0)
        if hasattr(g, "margin"):  # the compiled arrowhead has learn alone
            with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
                g.margin(x, pairs)
        assert g.blocks == before
    with pytest.raises(IndexError):
        g.learn(x, ((2, 1),), step, "project", 1.0)
