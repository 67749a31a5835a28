"""Voted RDA's compiled engine (`river_cw._engines._rda`) against its Python engine: the same numbers.

Two models learn the same stream in one process, one on the compiled engine and one built with
it switched off (``river_cw.rda._compiled = None``: a model picks its engine when it is built or
unpickled). Their pickles are compared byte for byte: the state, the heap of cuts, the counters
and the calibration. Skipped when the extension is not built (or RIVER_CW_PURE_PYTHON is set).
"""

from __future__ import annotations

import contextlib
import math
import pickle
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import river_cw
from river_cw import rda
from river_cw._engines.rda_engine import PythonRDA
from tests.conftest import examples
from tests.engines.test_compiled_vs_python import Hostile

pytestmark = pytest.mark.skipif(
    rda._compiled is None,
    reason="river_cw._engines._rda is not built or RIVER_CW_PURE_PYTHON is set",
)

CONFIGS = [
    {},
    {"l1": 0.01},
    {"l1": 0.005, "loss": "log"},
    {"l1": 0.01, "prediction": "last", "conservative": False},
    {"l1": 0.001, "eta": 0.5, "loss": "log", "conservative": False},
    {"l1": 0.01, "prediction": "vote"},
]


@contextlib.contextmanager
def pure_python():
    compiled, rda._compiled = rda._compiled, None
    try:
        yield
    finally:
        rda._compiled = compiled


def call(model, python: bool, method: str, *args):
    """`model.method(*args)`, under the pure-Python loops when `python`; the outcome as text."""
    with pure_python() if python else contextlib.nullcontext():
        try:
            return "ok", repr(getattr(model, method)(*args))
        except Exception as error:  # the comparison is the point
            return type(error), str(error)


def pair(params):
    """The same model twice: compiled engine, Python engine."""
    compiled = river_cw.VotedRDA(**params)
    with pure_python():
        python = river_cw.VotedRDA(**params)
    assert isinstance(python._engine, PythonRDA)
    assert isinstance(compiled._engine, PythonRDA) == (params.get("prediction") == "vote")
    return compiled, python


def hexed(model) -> str:
    """Everything a model's numbers depend on, floats in hex (so -0.0 and 0.0 differ), and its
    pickle (the whole state, in the Python engine's attributes)."""
    weights = model.weights
    blocks = weights.values() if not model.is_binary else [weights]
    state = model.__getstate__()
    return repr(
        (
            [{f: w.hex() for f, w in block.items()} for block in blocks],
            [
                [[v.hex() if isinstance(v, float) else v for v in rec] for rec in b.values()]
                for b in state["_blocks"]
            ],
            model.n_updates,
            model.n_skipped_updates,
            model.temperature,
            pickle.dumps(model),
        )
    )


def value(rng: random.Random):
    kind = rng.random()
    if kind < 0.2:
        return rng.randint(-5, 5)
    if kind < 0.25:
        return 0.0
    return rng.choice([1.0, 1e-3, 1e3]) * rng.gauss(0.0, 1.0)


def stream(seed: int, n: int = 300, n_labels: int = 2):
    rng = random.Random(seed)
    keys = [f"w{i}" for i in range(40)] + list(range(10)) + [("t", i) for i in range(5)]
    for _ in range(n):
        x = {k: value(rng) for k in rng.sample(keys, rng.randint(0, 12))}
        yield x, rng.randrange(n_labels)


@pytest.mark.parametrize("params", CONFIGS, ids=repr)
@pytest.mark.parametrize("n_labels", [2, 3])
def test_same_weights_scores_and_probabilities(params, n_labels):
    compiled, python = pair(params)
    for i, (x, y) in enumerate(stream(n_labels, n_labels=n_labels)):
        if i % 7 == 0:
            for method in ("predict_one", "predict_proba_one"):
                assert call(compiled, False, method, x) == call(python, True, method, x)
        compiled.learn_one(x, y)
        with pure_python():
            python.learn_one(x, y)
    assert hexed(compiled) == hexed(python)


BAD_VALUES = ["3", None, math.nan, math.inf, 1e308, 2**2000, 1e200]


@pytest.mark.parametrize("params", CONFIGS[:4], ids=repr)
@pytest.mark.parametrize("bad", BAD_VALUES, ids=repr)
def test_bad_input_raises_alike_and_changes_nothing(params, bad):
    compiled, python = pair(params)
    for x, y in stream(5, n=60):
        compiled.learn_one(x, y)
        with pure_python():
            python.learn_one(x, y)
    x = {"w1": 1e200, "fresh": 2.0, "w2": bad}
    for method in ("learn_one", "predict_one", "predict_proba_one"):
        before = hexed(compiled)
        args = (x, 1) if method == "learn_one" else (x,)
        outcome = call(compiled, False, method, *args)
        assert outcome == call(python, True, method, *args), method
        assert hexed(compiled) == hexed(python)
        if outcome[0] != "ok":
            assert hexed(compiled) == before


@pytest.mark.parametrize("params", CONFIGS[:3], ids=repr)
def test_pickles_cross_engines(params):
    compiled, python = pair(params)
    data = list(stream(9))
    for x, y in data[:150]:
        compiled.learn_one(x, y)
        with pure_python():
            python.learn_one(x, y)
    # each loads under the other engine: the compiled one's pickle into the Python engine
    with pure_python():
        copies = [pickle.loads(pickle.dumps(compiled))]
    copies.append(pickle.loads(pickle.dumps(python)))
    assert isinstance(copies[0]._engine, PythonRDA)
    assert not isinstance(copies[1]._engine, PythonRDA)
    for x, y in data[150:]:
        compiled.learn_one(x, y)
        copies[0].learn_one(x, y)
        with pure_python():
            python.learn_one(x, y)
            copies[1].learn_one(x, y)
    assert hexed(compiled) == hexed(python) == hexed(copies[0]) == hexed(copies[1])


def test_calibration_in_batches_adds_as_one_at_a_time():
    """The queued calibration gives the running sums example by example would, to the bit."""
    data = list(stream(4, n=400)) + list(stream(5, n=300, n_labels=3))  # binary, then 3 labels
    batched, one_by_one = river_cw.VotedRDA(l1=0.01), river_cw.VotedRDA(l1=0.01)
    for i, (x, y) in enumerate(data):
        batched.learn_one(x, y)
        if i % 97 == 0:
            _ = batched.temperature  # flushes the queue at odd points
        one_by_one.learn_one(x, y)
        _ = one_by_one.temperature
    assert batched.temperature == one_by_one.temperature
    assert batched._calibration.tobytes() == one_by_one._calibration.tobytes()


class TypeErrorKey(Hostile):
    """A `Hostile` feature name whose == raises TypeError."""

    __hash__ = Hostile.__hash__

    def __eq__(self, other):
        raise TypeError("no comparing")


KEYS = [
    "a",
    "b",
    "c",
    1,
    2.5,
    ("t", 1),
    Hostile("h", False),
    Hostile("i", False),
    river_cw.INTERCEPT,
]
VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1.0, 1e308, -1e308, 1e200, 5e-324, 1e-300]),
    st.integers(-10, 10),
    st.sampled_from([2**53 + 1, 2**2000, True, False, np.float64(1.5), "3", None, 1j]),
)
EXAMPLES = st.tuples(
    st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=6),
    st.sampled_from([0, 1, 1, 0, 2, None]),  # a third label now and then, a bad one
    st.sampled_from([1.0, 1.0, 1.0, 0.5, 0.0, 2, 1e300, -1.0, "w"]),
)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    params=st.fixed_dictionaries(
        {
            "l1": st.sampled_from([0.0, 0.01, 0.5, 1e-300]),
            "eta": st.sampled_from([1.0, 0.5, 1e-300, 3]),
            "loss": st.sampled_from(["hinge", "log"]),
            "prediction": st.sampled_from(["average", "last"]),
            "conservative": st.booleans(),
            "learn_intercept": st.booleans(),
        }
    ),
    examples=st.lists(EXAMPLES, max_size=25),
)
def test_random_and_hostile_streams_alike(params, examples):
    """Every call: the same result or the same exception in both engines, the same pickle
    after it, and a call that raises leaves the model's pickle as it was."""
    compiled, python = pair(params)
    for x, y, w in examples:
        for method, args in (("predict_proba_one", (x,)), ("learn_one", (x, y, w))):
            before = pickle.dumps(compiled)
            outcome = call(compiled, False, method, *args)
            assert outcome == call(python, True, method, *args), method
            after = pickle.dumps(compiled)
            assert after == pickle.dumps(python)
            if outcome[0] != "ok":
                assert after == before
    assert hexed(compiled) == hexed(python)


@pytest.mark.parametrize("key", [Hostile("c", True), TypeErrorKey("c", False)], ids=repr)
def test_keys_whose_equality_raises(key):
    compiled, python = pair({"l1": 0.01})
    for model in (compiled, python):
        model.learn_one({Hostile("a", False): 1.0, 42: 2.0}, 0)
        model.learn_one({Hostile("b", False): 1.0}, 1)
    before = pickle.dumps(compiled)
    x = {key: 1.0}
    for method, args in (("learn_one", (x, 1)), ("predict_one", (x,)), ("learn_one", (x, 2))):
        assert call(compiled, False, method, *args) == call(python, True, method, *args)
        assert call(compiled, False, method, *args)[0] != "ok"
    assert pickle.dumps(compiled) == before == pickle.dumps(python)


@pytest.mark.parametrize("params", CONFIGS[:5], ids=repr)
def test_sample_weights_and_many_labels(params):
    compiled, python = pair({**params, "learn_intercept": True})
    rng = random.Random(3)
    for x, y in stream(8, n=200, n_labels=4):
        w = rng.choice([0.25, 1.0, 1.0, 2, 3.5])
        compiled.learn_one(x, y, w)
        with pure_python():
            python.learn_one(x, y, w)
    assert hexed(compiled) == hexed(python)
