"""The compiled Gaussian engines (`river_cw/_engines/_diagonal.c`, `river_cw/_engines/_arrowhead.c`) against the
pure-Python references: the same numbers, bit for bit.

Both engines run side by side in one process: the model's Gaussian is swapped for the
pure-Python engine (`river_cw._engines.diagonal.PythonDiagonalGaussian`, or
`river_cw._engines.arrowhead.PythonArrowheadGaussian` for ``covariance="arrowhead"``). Skipped when the
extensions are not built (or RIVER_CW_PURE_PYTHON is set): the rest of the suite then runs on
pure Python.
"""

from __future__ import annotations

import math
import pickle
import random

import hypothesis
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import river_cw
from river_cw import INTERCEPT, surprise
from river_cw._engines import arrowhead, diagonal
from tests.conftest import examples
from tests.support.bits import assert_same, assert_same_bound, bits, state

pytestmark = pytest.mark.skipif(
    river_cw.ENGINE != "c", reason="the compiled engine is not built or RIVER_CW_PURE_PYTHON is set"
)

CONFIGS = [
    (river_cw.AROW, {"covariance": "diagonal", "diagonal": "project"}),
    (river_cw.AROW, {"covariance": "diagonal", "diagonal": "drop", "r": 0.3}),
    (river_cw.CW, {"covariance": "diagonal"}),
    (river_cw.CW, {"covariance": "diagonal", "variant": "var"}),
    (river_cw.CW, {"covariance": "diagonal", "diagonal": "drop"}),
    (river_cw.CW, {"covariance": "diagonal", "diagonal": "exact"}),
    (river_cw.CW, {"covariance": "diagonal", "variant": "var", "diagonal": "exact"}),
    (river_cw.NHERD, {"covariance": "diagonal", "diagonal": "project"}),
    (river_cw.NHERD, {"covariance": "diagonal", "diagonal": "drop"}),
    (river_cw.NHERD, {"covariance": "diagonal", "diagonal": "exact", "C": 0.1}),
    (river_cw.SOP, {"covariance": "diagonal"}),
    (river_cw.SCW, {"covariance": "diagonal"}),
    (river_cw.SCW, {"covariance": "diagonal", "variant": "II", "diagonal": "drop"}),
    # the arrowhead: the defaults, and the schemes and intercept priors beside them
    (river_cw.AROW, {}),
    (river_cw.AROW, {"diagonal": "project", "initial_intercept_variance": None}),
    (river_cw.AROW, {"r": 0.3, "initial_intercept_variance": 2.0}),
    (river_cw.CW, {}),
    (river_cw.NHERD, {}),
    (river_cw.SOP, {"initial_intercept_variance": 100.0}),
    (river_cw.SCW, {"variant": "II", "diagonal": "drop"}),
]
IDS = [f"{cls.__name__}{params}" for cls, params in CONFIGS]
COVARIANCES = ["diagonal", "arrowhead"]  # the compiled engines


def pair(cls, params):
    """The same model twice: compiled engine, pure-Python engine."""
    compiled, python = cls(**params), cls(**params)
    if python.covariance == "arrowhead":
        engine = arrowhead.PythonArrowheadGaussian(
            python.initial_variance, INTERCEPT, python.initial_intercept_variance
        )
        assert isinstance(compiled.gaussian, arrowhead.ArrowheadGaussian)
    else:
        engine = diagonal.PythonDiagonalGaussian(python.initial_variance)
        assert isinstance(compiled.gaussian, diagonal.DiagonalGaussian)
    python.set_gaussian(engine, python.classes_)
    assert type(compiled.gaussian) is not type(python.gaussian)
    return compiled, python


def value(rng: random.Random):
    kind = rng.random()
    if kind < 0.15:
        return rng.randint(-5, 5)
    if kind < 0.25:
        return rng.random() < 0.5
    if kind < 0.3:
        return 0.0
    return rng.choice([1.0, 1e-3, 1e3]) * rng.gauss(0.0, 1.0)


def stream(seed: int, n: int = 300, n_labels: int = 2):
    rng = random.Random(seed)
    keys = [f"w{i}" for i in range(40)] + list(range(10)) + [("t", i) for i in range(5)] + [2.5]
    for _ in range(n):
        x = {k: value(rng) for k in rng.sample(keys, rng.randint(0, 12))}
        yield x, rng.randrange(n_labels)


@pytest.mark.parametrize("cls, params", CONFIGS, ids=IDS)
@pytest.mark.parametrize("n_labels", [2, 4])
def test_same_models_predictions_and_probabilities(cls, params, n_labels):
    compiled, python = pair(cls, params)
    for x, y in stream(n_labels, n_labels=n_labels):
        assert_same(compiled, python, x)
        compiled.learn_one(x, y)
        python.learn_one(x, y)
        assert_same_bound(compiled, python)
    assert_same(compiled, python)


@pytest.mark.parametrize("cls, params", CONFIGS, ids=IDS)
def test_feature_order_never_changes_a_result(cls, params):
    forward, backward = cls(**params), cls(**params)
    for x, y in stream(7, n_labels=3):
        forward.learn_one(x, y)
        backward.learn_one(dict(reversed(list(x.items()))), y)
    assert state(forward) == [
        {f: block[f] for f in state(forward)[b]} for b, block in enumerate(state(backward))
    ]


BAD_VALUES = ["3", None, math.nan, math.inf, -math.inf, 1e308, 2**2000, [1.0], 1e200]


@pytest.mark.parametrize("cls, params", CONFIGS, ids=IDS)
@pytest.mark.parametrize("bad", BAD_VALUES, ids=repr)
def test_bad_input_raises_alike_and_changes_nothing(cls, params, bad):
    compiled, python = pair(cls, params)
    for x, y in stream(3, n=40, n_labels=3):
        compiled.learn_one(x, y)
        python.learn_one(x, y)
    before = state(compiled)
    x = {"w1": 1e200, "fresh": 2.0, "w2": bad}
    for call in ("learn_one", "predict_one", "predict_proba_one"):
        outcomes = []
        for model in (compiled, python):
            try:
                args = (x, 1) if call == "learn_one" else (x,)
                outcomes.append(("ok", repr(getattr(model, call)(*args))))
            except Exception as error:  # the comparison is the point
                outcomes.append((type(error), str(error)))
        assert outcomes[0] == outcomes[1], call
        assert_same(compiled, python)
    if outcomes[0][0] != "ok":
        assert state(compiled) == before


@pytest.mark.parametrize("cls, params", CONFIGS, ids=IDS)
def test_pickles_cross_engines(cls, params):
    compiled, python = pair(cls, params)
    data = list(stream(11, n_labels=3))
    for x, y in data[:150]:
        compiled.learn_one(x, y)
        python.learn_one(x, y)
    from_python = pickle.loads(pickle.dumps(python))
    from_compiled = pickle.loads(pickle.dumps(compiled))
    assert type(from_python.gaussian) is type(compiled.gaussian)  # the active engine
    assert_same(from_python, python)
    assert_same(from_compiled, python)
    for x, y in data[150:]:
        for model in (compiled, python, from_python, from_compiled):
            model.learn_one(x, y)
    for model in (compiled, from_python, from_compiled):
        assert_same(model, python, data[-1][0])


class Hostile:
    """A feature name whose == raises, or compares equal to everything with the same hash."""

    def __init__(self, name, raises):
        self.name, self.raises = name, raises

    def __hash__(self):
        return 42

    def __repr__(self):
        return f"Hostile({self.name!r})"

    def __eq__(self, other):
        if self.raises:
            raise RuntimeError("no comparing")
        return isinstance(other, Hostile) and other.name == self.name


@pytest.mark.parametrize("covariance", COVARIANCES)
def test_hostile_keys_keep_both_engines_consistent(covariance):
    compiled, python = pair(river_cw.AROW, {"covariance": covariance})
    for model in (compiled, python):
        model.learn_one({Hostile("a", False): 1.0, 42: 2.0}, 0)
        model.learn_one({Hostile("b", False): 1.0}, 1)
    assert_same(compiled, python, {Hostile("a", False): 1.0})
    before = state(compiled)
    for model in (compiled, python):
        with pytest.raises(RuntimeError, match="no comparing"):
            model.learn_one({Hostile("c", True): 1.0}, 1)
    assert state(compiled) == before
    assert_same(compiled, python)


@pytest.mark.parametrize(
    "make",
    [
        lambda: river_cw.AROW(covariance="diagonal"),
        lambda: river_cw.AROW(covariance="arrowhead"),
        river_cw.VotedRDA,
    ],
    ids=["diagonal", "arrowhead", "VotedRDA"],
)
def test_reentry_from_a_key_is_refused(make):
    model = make()

    class Sneaky(Hostile):
        __hash__ = Hostile.__hash__

        def __eq__(self, other):
            model.learn_one({"z": 1.0}, 1)
            return False

    model.learn_one({Sneaky("a", False): 1.0}, 0)
    with pytest.raises(RuntimeError, match="re-entered"):
        model.learn_one({Sneaky("b", False): 1.0}, 1)


def test_exactly_rounded_sums_match_math_fsum():
    from river_cw._engines import _diagonal

    rng = random.Random(0)
    for _ in range(2000):
        terms = [
            rng.choice([1.0, -1.0]) * 10 ** rng.uniform(-20, 20) for _ in range(rng.randint(0, 30))
        ]
        terms += [-t for t in rng.sample(terms, len(terms) // 2)]
        rng.shuffle(terms)
        assert bits(_diagonal.fsum(terms)) == bits(math.fsum(terms))
    for special in ([math.inf, -math.inf], [1e308, 1e308], [math.inf, 1.0], [math.nan, 1.0]):
        outcomes = []
        for fsum in (_diagonal.fsum, math.fsum):
            try:
                outcomes.append(repr(fsum(special)))
            except (OverflowError, ValueError) as error:
                outcomes.append((type(error), str(error)))
        assert outcomes[0] == outcomes[1]


near_ties = st.lists(  # terms of one size whose errors land on and near a rounding tie
    st.builds(
        lambda k, e: math.ldexp(1.0 + k * 2.0**-52, e), st.integers(-4, 4), st.integers(-3, 3)
    )
    | st.floats(-2.0, 2.0)
    | st.sampled_from([2.0**-53, -(2.0**-53), 3 * 2.0**-54, 2.0**-1074, 1e-300]),
    max_size=40,
)


cancelling = st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=20).flatmap(
    lambda xs: st.permutations(  # big terms that cancel but for their own rounding errors
        xs + [-x * (1.0 + 2.0**-52) for x in xs] + [x * 2.0**-60 for x in xs]
    )
)


@settings(max_examples=examples(500), deadline=None)
@given(terms=st.one_of(near_ties, cancelling, st.lists(st.floats(-1e300, 1e300), max_size=40)))
def test_the_certified_sums_are_math_fsum(terms):
    """The double-double accumulator's bound (Ogita, Rump and Oishi's Sum2, river_cw/_engines/_fsum.h)
    certifies only sums it rounds as math.fsum does: sums that cancel, ties, subnormals."""
    from river_cw._engines import _diagonal

    for order in (terms, terms[::-1]):
        assert bits(_diagonal.fsum(order)) == bits(math.fsum(order))


HALFWAY = [1.0 + 2.0**-52, 2.0**-54, 2.0**-54]  # exactly halfway, the last rounding upwards


@settings(max_examples=examples(200), deadline=None)
@given(
    k=near_ties,
    a=near_ties,
    c=near_ties,
    root=st.sampled_from([(0.0, 0.0), (0.5, 1.0)]),
)
@hypothesis.example(k=HALFWAY, a=HALFWAY, c=HALFWAY, root=(0.0, 0.0))
@hypothesis.example(k=[2.0**-53, 2.0**-160], a=[2.0**-53, -(2.0**-160)], c=[], root=(0.5, 1.0))
def test_the_arrowhead_sums_on_and_near_ties_are_math_fsum(k, a, c, root):
    """The compiled arrowhead's three sums over x (all x_j = 1: G = 1 + sum k_j, the score
    sum a_j + G mu_b, the variance sum c_j + G^2 S) where they fall on or a hair from the midpoint
    of two doubles, which no double-double bound certifies (the triple-length pass certifies an
    exact midpoint, math.fsum's algorithm the rest): math.fsum's numbers, as the pure-Python
    engine's; and the step learned from there, bit for bit."""
    n = min(len(k), len(a))
    c = [abs(t) for t in c[:n]] + [1.0] * (n - len(c))  # variances >= 0
    block = {f"f{j}": [a[j], k[j], c[j]] for j in range(n)}
    block[INTERCEPT] = list(root)  # (mu_b, S)
    x = {f"f{j}": 1.0 for j in range(n)}
    g = math.fsum([*k[:n], 1.0])
    expected = (math.fsum([*a[:n], g * root[0]]), math.fsum([*c, g * g * root[1]]))
    models = pair(river_cw.AROW, {})
    for model in models:
        model.learn_one({"z": 1.0}, False)
        model.learn_one({"z": 1.0}, True)
        model.gaussian.blocks = [dict(block)]
        (score,) = model.gaussian.scores({**x, INTERCEPT: 1.0})
        ((variance,),) = model.gaussian.score_covariance({**x, INTERCEPT: 1.0})
        assert (bits(score), bits(variance)) == tuple(map(bits, expected))
        model.learn_one(x, True)
    assert_same(*models, x)


@pytest.mark.parametrize("mu_b", [0.0, 0.75])
def test_the_arrowhead_forgetting_sums_on_ties_are_math_fsum(mu_b):
    """Forgetting the root sums the terms k_j k_j' of the forgotten features (the module
    docstring of `river_cw._engines.arrowhead`). With keep = 1/2 and c_j = 0, k_j' = k_j and
    each term is k_j^2: 1 and two 2^-54 make an exact tie, which no double-double bound
    certifies, and so do the forgotten means' terms (a_j' = a_j where mu_b = 0): math.fsum's
    numbers, in both engines, to the bit."""
    block = {
        "f0": [1.0 + 2.0**-52, 1.0, 0.0],
        "f1": [2.0**-54, 2.0**-27, 0.0],
        "f2": [2.0**-54, 2.0**-27, 0.0],
        INTERCEPT: [mu_b, 1.0],
    }
    x = {"f0": 1.0, "f1": 1.0, "f2": 1.0}
    models = pair(river_cw.AROW, {"forgetting": 0.5, "initial_intercept_variance": 2.0})
    for model in models:
        model.learn_one({"z": 1.0}, False)
        model.learn_one({"z": 1.0}, True)
        model.gaussian.blocks = [{key: list(w) for key, w in block.items()}]
        model.learn_one(x, True)  # x touches every feature the block has learned
    assert_same(*models, x)


@pytest.mark.parametrize(
    "cls, params", [c for c in CONFIGS if "covariance" not in c[1]], ids=lambda c: repr(c)
)
@pytest.mark.parametrize("n_labels", [2, 3])
def test_forgetting_on_a_dense_stream_is_the_same(cls, params, n_labels):
    """Dense rows touch every feature the model has learned, and the arrowhead then forgets its
    root with them (Kulhavy and Zarrop's step on the block); a zero value now and then leaves
    the root as it is."""
    compiled, python = pair(cls, {**params, "forgetting": 0.1})
    rng = random.Random(3)
    for i in range(120):
        x = {f"d{j}": rng.choice([1.0, 1e-3, 1e3]) * rng.gauss(0.0, 1.0) for j in range(5)}
        if i % 4 == 3:
            x["d0"] = 0.0
        y = rng.randrange(n_labels)
        compiled.learn_one(x, y)
        python.learn_one(x, y)
        if i % 40 == 39:
            assert_same(compiled, python, x)


@pytest.mark.parametrize("cls, params", CONFIGS, ids=IDS)
@pytest.mark.parametrize("n_labels", [2, 3])
def test_auto_forgetting_on_a_reversed_concept_is_the_same(cls, params, n_labels):
    """forgetting="auto" (`river_cw.surprise`): the labels turn to noise at example 300, the
    models' mistakes exceed what they expect and they forget at rates they set themselves, the
    same in both engines to the bit, weighted examples among them (two labels: the one-call
    path, which forgets on the arrowhead, with ``(1 - rate)^w``). (CW, sure of itself beyond the
    others, seldom errs beyond its expectation's control limit here: it is compared all the
    same.)"""
    compiled, python = pair(cls, {**params, "forgetting": "auto"})
    rng, weights = random.Random(5), random.Random(6)
    rates = set()
    for i in range(600):
        x = {f"d{j}": rng.gauss(0.0, 1.0) for j in range(4)}
        y = int(x["d0"] > 0) + (n_labels == 3 and x["d1"] > 0.5)
        if i >= 300:
            y = rng.randrange(n_labels)
        w = weights.choice([1.0, 1.0, 0.5, 2.75])
        rates.add(surprise.rate(compiled._surprise))
        compiled.learn_one(x, y, w)
        python.learn_one(x, y, w)
        if i % 100 == 99:
            assert_same(compiled, python, x)
    assert len(rates) > 1 or cls is river_cw.CW  # 0 and the rates the surprise set


@pytest.mark.parametrize("covariance", COVARIANCES)
def test_layout_operations_agree(covariance):
    compiled, python = pair(river_cw.AROW, {"covariance": covariance})
    data = list(stream(5, n=60, n_labels=2))
    for x, y in data:
        compiled.learn_one(x, y)
        python.learn_one(x, y)
    for model in (compiled, python):
        model.gaussian.negate()
    assert_same(compiled, python, data[0][0])
    layouts = [model.gaussian.layout() for model in (compiled, python)]
    for model in (compiled, python):
        model.gaussian.lift()
        model.gaussian.add_block()
        model.gaussian.reorder([2, 0, 1])
    assert state(compiled) == state(python)
    for model, layout in zip((compiled, python), layouts):
        model.gaussian.restore_layout(layout)
    assert_same(compiled, python, data[0][0])


@pytest.mark.parametrize("covariance", COVARIANCES)
def test_a_layout_whose_ids_reenter_the_engine_is_refused_and_changes_nothing(covariance):
    """restore_layout reads a layout's ids inside the engine: an id whose __index__ learns is
    refused as any re-entry is, and so is a layout of other blocks; the blocks stay as they were."""
    model = river_cw.AROW(covariance=covariance)
    model.learn_one({"a": 1.0}, 0)
    model.learn_one({"b": 1.0}, 1)
    layout = model.gaussian.layout()
    model.gaussian.add_block()
    before = state(model)

    class Sneaky:
        def __init__(self, id_):
            self.id = id_

        def __index__(self):
            model.learn_one({"z": 1.0}, 1)
            return self.id

    with pytest.raises(RuntimeError, match="re-entered"):
        model.gaussian.restore_layout([Sneaky(i) for i in layout])
    with pytest.raises(ValueError, match="not a layout"):
        model.gaussian.restore_layout([max(layout) + 99])
    assert state(model) == before
    model.gaussian.restore_layout(layout)
    assert len(state(model)) == len(layout)


@pytest.mark.parametrize(
    "params",
    [{"covariance": "diagonal", "diagonal": "exact"}, {"covariance": "arrowhead"}],
    ids=["exact", "arrowhead"],
)
def test_a_failed_new_label_restores_both_engines_alike(params):
    compiled, python = pair(river_cw.CW, params)
    for x, y in stream(9, n=30, n_labels=2):
        compiled.learn_one(x, y)
        python.learn_one(x, y)
    for model in (compiled, python):
        with pytest.raises(TypeError):
            model.learn_one({"w1": 1.0, "w2": "bad"}, "third")
    assert_same(compiled, python, {"w1": 1.0})
    for model in (compiled, python):
        model.learn_one({"w1": 1.0, "w3": -2.0}, "third")
    assert_same(compiled, python, {"w1": 1.0, "w3": 1.0})


@pytest.mark.parametrize(
    "x",
    [{}, {"a": 1.0}, {"a": 1, "b": 2.5}, {"a": True}, {"a": 10**400}, {"a": "x"}, {1: 2**53 + 1}],
    ids=repr,
)
def test_compiled_as_floats_is_the_python_function(x):
    from river_cw import validation

    outcomes = []
    for as_floats in (validation.as_floats, validation._as_floats_python):
        try:
            outcomes.append(repr(as_floats(x)))
        except (TypeError, ValueError) as error:
            outcomes.append((type(error), str(error)))
    assert validation.as_floats is not validation._as_floats_python
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("cls, params", CONFIGS, ids=IDS)
@pytest.mark.parametrize("forgetting", [0.0, 0.05, "auto"])
def test_same_with_intercept_sample_weights_forgetting_and_calibration(cls, params, forgetting):
    params = {**params, "learn_intercept": True, "forgetting": forgetting, "calibrate": True}
    compiled, python = pair(cls, params)
    rng = random.Random(11)
    for x, y in stream(5, n=150, n_labels=3):
        w = rng.choice([0.0, 0.25, 1.0, 1.0, 2, 3.5])
        compiled.learn_one(x, y, w)
        python.learn_one(x, y, w)
        assert_same(compiled, python, x)
        assert_same_bound(compiled, python)
    assert pickle.dumps(compiled) == pickle.dumps(python)


def fresh(text: str) -> str:
    """An equal str that is another object (as every call of a tokenizer makes its tokens)."""
    copy = (text + "!")[:-1]
    assert copy == text and (copy is not text or len(text) <= 1)  # one-character strs are shared
    return copy


@pytest.mark.parametrize("covariance", COVARIANCES)
@pytest.mark.parametrize("alphabet", ["abcdefghij", "àbcdéfghïj", "αβγδεζηθικ", "😀😁😂🤣😃😄"])
def test_keys_equal_by_content_are_one_feature_at_every_length(alphabet, covariance):
    # the compiled table compares a key found by its hash with its entry's copy of a short ASCII
    # str (up to 15 characters), with the stored key word by word for longer ASCII strs, by
    # memcmp for the others: every length, to the last byte
    keys = ["".join(alphabet[i % len(alphabet)] for i in range(n)) for n in range(41)]
    compiled, python = pair(river_cw.AROW, {"covariance": covariance})
    for round_ in range(3):
        for model in (compiled, python):
            model.learn_one({fresh(k): 1.0 + round_ for k in keys}, round_ % 2)
            model.learn_one({fresh(k[::-1]): 1.0 for k in keys[::3]}, 1)
    assert len(compiled.weights) == len(set(keys) | {k[::-1] for k in keys[::3]})
    assert_same(compiled, python, {fresh(k): 1.0 for k in keys})


EDGES = [
    {},
    {"w1": -0.0, "w2": 0},
    {river_cw.INTERCEPT: 2.0, "w1": 1.0},  # the reserved key: the general path's case
    {"w1": 1e200, "w2": 1e200},  # a variance beyond float64: inf, p = 1/2 or a certain label
    {"fresh": 1e308, "fresh2": 1e308},  # unseen values summing beyond float64: refused
    {"w1": 1e308, "w2": 1e308, "w3": -1e308},  # a score beyond float64: refused
    {"w1": 2**1000, "w2": True},  # an int beyond one digit, a bool
    {"w1": 1e-300, "w3": 1e300, "w4": -1e300},  # cancelling terms: math.fsum's own sum
    {"w1": 1.0, ("t", 1): 2.0, 3: 0.5},
]


@pytest.mark.parametrize("covariance", COVARIANCES)
@pytest.mark.parametrize("swap", [False, True], ids=["labels as drawn", "labels swapped"])
@pytest.mark.parametrize("learn_intercept", [False, True])
@pytest.mark.parametrize("x", EDGES, ids=repr)
def test_binary_predictions_in_one_call_are_the_general_paths(x, learn_intercept, swap, covariance):
    """Either label first: one of the two orders has the model negated when the second label
    arrives (`positive_label`), after which `score_native` reads the negated state."""
    compiled, python = pair(
        river_cw.AROW, {"covariance": covariance, "learn_intercept": learn_intercept}
    )
    for model in (compiled, python):
        for example, y in stream(4, n=60):
            model.learn_one(example, y ^ swap)
    for call in ("predict_one", "predict_proba_one"):
        outcomes = []
        for model in (compiled, python):
            try:
                result = getattr(model, call)(x)
                outcomes.append(
                    (
                        "ok",
                        repr(
                            result
                            if call == "predict_one"
                            else {c: bits(p) for c, p in result.items()}
                        ),
                    )
                )
            except Exception as error:  # the comparison is the point
                outcomes.append((type(error), str(error)))
        assert outcomes[0] == outcomes[1], call


ENGINES = {"diagonal": diagonal.DiagonalGaussian, "arrowhead": arrowhead.ArrowheadGaussian}


@pytest.mark.parametrize("covariance", COVARIANCES)
def test_binary_predictions_take_one_call_of_the_compiled_engine(monkeypatch, covariance):
    """A binary model predicts a dict of floats, ints and bools with `score_native` alone;
    anything else (a numpy value, a multi-class model) goes the general path's way."""
    import numpy as np

    calls = []
    engine = ENGINES[covariance]
    for name in ("scores", "score_variances", "scores_with_scale"):
        general = getattr(engine, name)
        spy = lambda self, x, *blocks, general=general, name=name: (  # noqa: E731
            calls.append(name) or general(self, x, *blocks)
        )
        monkeypatch.setattr(engine, name, spy)
    model = river_cw.AROW(covariance=covariance, learn_intercept=True)
    assert type(model.gaussian) is engine
    model.learn_one({"a": 1.0}, "spam")
    model.learn_one({"b": 1.0}, "ham")
    assert model.predict_one({"a": 1.0, "b": 2, "c": True}) == "ham"
    assert set(model.predict_proba_one({"a": 1.0})) == {"spam", "ham"}
    assert calls == []
    model.predict_proba_one({"a": np.float32(1.0)})
    assert calls[0] == "scores_with_scale"  # the arrowhead's in one call, the diagonal's in two
    assert calls[1:] == ([] if covariance == "arrowhead" else ["scores", "score_variances"])
    model.learn_one({"c": 1.0}, "eggs")
    calls.clear()
    model.predict_one({"a": 1.0})
    assert calls == ["scores"]


@pytest.mark.parametrize("learn_intercept", [False, True])
@pytest.mark.parametrize("covariance", COVARIANCES)
def test_binary_predictions_in_one_call_are_the_general_paths_over_a_stream(
    covariance, learn_intercept
):
    """`score_native` serves every dict of floats, ints and bools, learned features and unseen
    ones, and its labels and probabilities are, to the bit, the general path's (`_features`,
    then the engine's `scores` and `score_variances`) of the same model and of the pure-Python
    engine's."""
    compiled, python = pair(
        river_cw.AROW, {"covariance": covariance, "learn_intercept": learn_intercept}
    )
    for model in (compiled, python):
        for x, y in stream(5, n=150):
            model.learn_one(x, y)
    intercept = INTERCEPT if learn_intercept else None
    rng = random.Random(6)
    for x, _ in stream(6, n=300):
        x.update((f"unseen{j}", value(rng)) for j in range(rng.randint(0, 3)))
        assert compiled.gaussian.score_native(x, intercept, True) is not None
        score = compiled._scores(compiled._features(x))[0]
        labels = {compiled.predict_one(x), python.predict_one(x)}
        assert labels == {compiled.classes_[1] if score > 0 else compiled.classes_[0]}
        probabilities = [
            compiled.predict_proba_one(x),
            compiled._general_predict_proba_one(x),
            python.predict_proba_one(x),
        ]
        assert len({repr({c: bits(p) for c, p in each.items()}) for each in probabilities}) == 1


def outcome_of(call, *args, **kwargs):
    """("ok", the result's repr, probabilities in hex) or (the error's type, its message)."""
    try:
        result = call(*args, **kwargs)
    except Exception as error:  # the comparison is the point
        return type(error), str(error)
    if isinstance(result, list) and result and isinstance(result[0], dict):
        result = [{c: bits(p) for c, p in d.items()} for d in result]
    return "ok", repr(result)


@pytest.mark.parametrize("swap", [False, True], ids=["labels as drawn", "labels swapped"])
@pytest.mark.parametrize("learn_intercept", [False, True])
@pytest.mark.parametrize("kind", ["dicts", "named CSR", "hashed CSR"])
@pytest.mark.parametrize("covariance", ["diagonal", "arrowhead"])
def test_predict_many_in_the_kernel_is_the_general_paths_loop(
    covariance, kind, learn_intercept, swap
):
    """`predict_many` and `predict_proba_many` of a binary model run in the compiled kernel
    (`score_rows` of either compiled engine): the pure-Python engine's `predict_one` loop, to the bit, edge rows (a column
    stored twice, sums beyond float64, cancelling terms, unseen features) included, whichever
    label came first (one order negates the model); a batch holding a row predict_one refuses
    raises what the loop raises."""
    import numpy as np
    from scipy import sparse

    compiled, python = pair(
        river_cw.AROW, {"covariance": covariance, "learn_intercept": learn_intercept}
    )
    names = [f"w{i}" for i in range(40)] + ["fresh", "fresh2"]
    for model in (compiled, python):
        for example, y in stream(4, n=80):
            model.learn_one({k: v for k, v in example.items() if k in names}, y ^ swap)
    rng = random.Random(9)
    entries = [
        [(rng.randrange(len(names)), float(value(rng))) for _ in range(rng.randint(0, 9))]
        for _ in range(60)
    ] + [
        [],
        [(40, 1e308), (41, 1e308)],  # unseen values beyond float64: refused
        [(1, 1e308), (2, 1e308), (3, -1e308)],  # a score beyond float64: refused
        [(1, 1e-300), (3, 1e300), (4, -1e300)],  # cancelling terms: math.fsum's own sum
        [(5, 1.0), (5, 2.0)],  # a column stored twice: one feature, its values summed
        [(1, 1e200), (2, 1e200)],  # a variance beyond float64
    ]
    keys = list(range(len(names))) if kind == "hashed CSR" else names
    dicts = []
    for row in entries:
        x: dict = {}
        for j, v in row:
            x[keys[j]] = x[keys[j]] + v if keys[j] in x else v
        dicts.append(x)
    if kind == "dicts":
        X, features = dicts, None
    else:
        indptr = np.cumsum([0] + [len(row) for row in entries])
        indices = np.array([j for row in entries for j, _ in row], dtype=np.intp)
        data = np.array([v for row in entries for _, v in row], dtype=float)
        X = sparse.csr_array((data, indices, indptr), shape=(len(entries), len(names)))
        features = names if kind == "named CSR" else None
    refused = [i for i, x in enumerate(dicts) if outcome_of(python.predict_one, x)[0] != "ok"]
    assert refused  # the batch holds rows predict_one refuses
    for many, one in (("predict_many", "predict_one"), ("predict_proba_many", "predict_proba_one")):
        loop = outcome_of(lambda one=one: [getattr(python, one)(x) for x in dicts])
        assert outcome_of(getattr(compiled, many), X, features=features) == loop
        good = [i for i in range(len(dicts)) if i not in refused]
        loop = outcome_of(lambda one=one: [getattr(python, one)(dicts[i]) for i in good])
        batch = [dicts[i] for i in good] if kind == "dicts" else X[good]
        assert outcome_of(getattr(compiled, many), batch, features=features) == loop
