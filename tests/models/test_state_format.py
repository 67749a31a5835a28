"""The versioned state format (`river_cw.state`): every model it describes round-trips to the bit
and goes on learning as the original, a pickle names no module but `river_cw.state`, copies are
still copies, and a state that is not whole, of a newer format or not a state at all is refused
by a ValueError saying so."""

from __future__ import annotations

import copy
import pickle
import pickletools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import river_cw
from river_cw import INTERCEPT, state
from river_cw.covariances import COVARIANCES
from river_cw.text import TextClassifier
from tests.support.bits import answers, assert_same

RULES = {
    "AROW": river_cw.AROW,
    "CW": river_cw.CW,
    "NHERD": river_cw.NHERD,
    "SCW": river_cw.SCW,
    "SOP": river_cw.SOP,
}
NAMES = st.one_of(
    st.text(max_size=4),
    st.integers(-3, 3),
    st.tuples(st.text(max_size=2), st.integers(0, 2)),
    st.floats(-2.0, 2.0, allow_nan=False),
)
LABEL_SETS = st.sampled_from(
    [
        ["spam", "ham"],
        [True, False],
        [1, 0, -1],
        ["+1", "-1"],
        ["a", "b", "c", "d"],
        [("x", 1), ("y", 2), ("z", 3)],
        [0.5, 1.5],
    ]
)


@st.composite
def streams(draw, max_size: int = 25):
    labels = draw(LABEL_SETS)
    features = st.dictionaries(NAMES, st.floats(-10.0, 10.0, allow_nan=False), max_size=4)
    return draw(st.lists(st.tuples(features, st.sampled_from(labels)), max_size=max_size))


@st.composite
def gaussian_models(draw):
    name = draw(st.sampled_from(sorted(RULES)))
    rule = RULES[name]
    covariance = draw(st.sampled_from(sorted(COVARIANCES)))
    schemes = [s for s in COVARIANCES[covariance].schemes if s in rule._diagonal_schemes]
    calibrate = draw(st.booleans())
    return rule(
        covariance=covariance,
        diagonal=draw(st.sampled_from(schemes or ["project"])),  # full covariance takes any
        learn_intercept=draw(st.booleans()),
        forgetting=draw(st.sampled_from([0.0, 0.01, "auto"] if calibrate else [0.0, 0.01])),
        calibrate=calibrate,
    )


def round_trips(model, data, probe) -> None:
    """`loads(dumps(model))` is `model` to the bit, and learns the rest of `data` alike."""
    half = len(data) // 2
    for x, y in data[:half]:
        model.learn_one(x, y)
    data_bytes = state.dumps(model)
    loaded = state.loads(data_bytes)
    assert type(loaded) is type(model)
    assert state.dumps(loaded) == data_bytes
    assert_same_models(loaded, model, probe)
    for x, y in data[half:]:
        model.learn_one(x, y)
        loaded.learn_one(x, y)
    assert_same_models(loaded, model, probe)


def assert_same_models(a, b, probe) -> None:
    """`assert_same` of the classifiers (a text classifier's), the same answers on `probe`."""
    if isinstance(a, TextClassifier):
        assert_same(a.classifier, b.classifier)
    else:
        assert_same(a, b)
    assert [answers(a, x) for x in probe] == [answers(b, x) for x in probe]


@settings(max_examples=60, deadline=None)
@given(model=gaussian_models(), data=streams())
def test_every_covariance_and_rule_round_trips_to_the_bit(model, data):
    round_trips(model, data, [x for x, _ in data[:3]])


@settings(max_examples=25, deadline=None)
@given(
    loss=st.sampled_from(["hinge", "log"]),
    prediction=st.sampled_from(["average", "vote", "last"]),
    conservative=st.booleans(),
    l1=st.sampled_from([0.0, 0.05, 1.0]),
    data=streams(),
)
def test_voted_rda_round_trips_to_the_bit(loss, prediction, conservative, l1, data):
    model = river_cw.VotedRDA(l1=l1, loss=loss, prediction=prediction, conservative=conservative)
    round_trips(model, data, [x for x, _ in data[:3]])


def test_voted_rda_keeps_its_cuts_and_calibration():
    """A model whose heap of cuts and calibration queue are in use: the cuts share their records
    with the blocks after a load, as before it."""
    model = river_cw.VotedRDA(l1=0.2)
    data = [({f"f{i % 7}": 1.0, "g": (-1) ** i}, i % 3 == 0) for i in range(400)]
    round_trips(model, data, [x for x, _ in data[:5]])
    engine = state.loads(state.dumps(model)).__getstate__()
    records = {id(rec) for block in engine["_blocks"] for rec in block.values()}
    assert engine["_cuts"] and all(id(cut[3]) in records for cut in engine["_cuts"])


@settings(max_examples=20, deadline=None)
@given(
    stop_words=st.one_of(st.none(), st.sets(st.sampled_from(["the", "a", "of"]))),
    ngram_range=st.sampled_from([(1, 1), (1, 2)]),
    lowercase=st.booleans(),
    strip_accents=st.booleans(),
    words=st.lists(st.sampled_from(["The", "cat", "Déjà", "vu", "of", "a", "dog"]), max_size=40),
)
def test_a_text_classifier_keeps_its_options(
    stop_words, ngram_range, lowercase, strip_accents, words
):
    model = TextClassifier(
        river_cw.AROW(),
        on="text",
        stop_words=stop_words,
        ngram_range=ngram_range,
        lowercase=lowercase,
        strip_accents=strip_accents,
    )
    texts = [{"text": " ".join(words[i : i + 4])} for i in range(0, len(words), 4)]
    data = [(x, ("pos", "neg", "mixed")[i % 3]) for i, x in enumerate(texts)]
    loaded = state.loads(state.dumps(model))
    for name in ("on", "stop_words", "ngram_range", "lowercase", "strip_accents"):
        assert getattr(loaded, name) == getattr(model, name)
    round_trips(model, data, [x for x, _ in data[:2]])


@pytest.mark.parametrize(
    "model, x",
    [
        (river_cw.AROW(), {"a": 1.0}),
        (river_cw.VotedRDA(), {"a": 1.0}),
        (TextClassifier(river_cw.CW(), on="text"), {"text": "a b"}),
    ],
    ids=["AROW", "VotedRDA", "text"],
)
def test_a_pickle_names_no_module_but_river_cw_state(model, x):
    model.learn_one(x, "x")
    data = pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL)
    strings = [arg for op, arg, _ in pickletools.genops(data) if isinstance(arg, str)]
    assert "river_cw.state" in strings and "loads" in strings
    assert not [s for s in strings if s.startswith("river_cw.") and s != "river_cw.state"]
    assert pickle.loads(data).predict_proba_one(x) == model.predict_proba_one(x)


def test_copies_are_copies_without_the_bytes():
    model = river_cw.AROW()
    model.learn_one({"a": 1.0}, True)
    model.learn_one({"b": 1.0}, False)
    deep, shallow = copy.deepcopy(model), copy.copy(model)
    assert deep.gaussian is not model.gaussian and shallow.gaussian is model.gaussian
    deep.learn_one({"a": 1.0}, False)
    assert deep.weights != model.weights == shallow.weights
    assert model.clone().weights == {}


class Mine(river_cw.AROW):
    """A subclass: the format names river_cw's classes only."""


def test_what_the_format_does_not_describe_is_refused_and_pickled_as_before():
    odd = river_cw.AROW()
    odd.learn_one({b"bytes": 1.0}, True)
    for model in (Mine(), odd):
        with pytest.raises(TypeError, match=r"pickle"):
            state.dumps(model)
        assert pickle.loads(pickle.dumps(model)).weights == model.weights


def test_labels_and_names_keep_their_types():
    model = river_cw.AROW()
    model.learn_one({1: 1.0, "1": 2.0, (1, "a"): 1.0, 2.5: 1.0, ("b", True): 0.5}, 1)
    model.learn_one({"b": 1.0}, 0)
    model.learn_one({"c": 1.0}, "1")
    loaded = state.loads(state.dumps(model))
    assert [type(c) for c in loaded.classes_] == [int, int, str]
    keys = [key for label in loaded.weights.values() for key in label]
    assert keys == [key for label in model.weights.values() for key in label]
    assert [type(k) for k in keys] == [type(k) for label in model.weights.values() for k in label]
    assert INTERCEPT in loaded.gaussian.blocks[-1] or INTERCEPT in loaded.gaussian.blocks[0]


@pytest.fixture(scope="module")
def data() -> bytes:
    model = river_cw.AROW()
    for i in range(30):
        model.learn_one({f"f{i % 5}": 1.0, "g": 5.0 + i % 3}, ("a", "b", "c")[i % 3])
    return state.dumps(model)


@settings(max_examples=60, deadline=None)
@given(cut=st.integers(0, 10**6))
def test_a_state_cut_short_is_refused(data, cut):
    with pytest.raises(ValueError, match=r"not a river-cw state|cut short or altered"):
        state.loads(data[: cut % len(data)])


@settings(max_examples=100, deadline=None)
@given(at=st.integers(0, 10**6), flip=st.integers(1, 255))
def test_an_altered_state_is_refused(data, at, flip):
    at %= len(data)
    altered = data[:at] + bytes([data[at] ^ flip]) + data[at + 1 :]
    with pytest.raises(ValueError, match=r"not a river-cw state|format|cut short or altered"):
        state.loads(altered)


def test_a_newer_format_and_other_bytes_are_refused_by_name(data):
    newer = data[:4] + (state.FORMAT + 1).to_bytes(4, "little") + data[8:]
    with pytest.raises(ValueError, match=rf"format {state.FORMAT + 1}, newer .*: upgrade river-cw"):
        state.loads(newer)
    with pytest.raises(ValueError, match=r"not a river-cw state.*pickle"):
        state.loads(pickle.dumps({"a": 1}))
    with pytest.raises(ValueError, match=r"holds weights"):
        state.loads(state.dumps_weights([{"a": (1.0, 2.0)}]))
    with pytest.raises(TypeError, match=r"a state is bytes"):
        state.loads("RCWS")


def test_weights_round_trip_with_their_widths():
    weights = [{"a": (1.0, -0.0), INTERCEPT: (0.5, 2.0), ("t", 1): (1e-300, 3.0, float("inf"))}]
    assert repr(state.loads_weights(state.dumps_weights(weights))) == repr(weights)
