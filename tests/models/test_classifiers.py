"""Behaviour every Gaussian classifier owes its users: river's conventions, labels, bad input,
pickling, probabilities, growing features and model combination."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from river import checks, datasets, evaluate, feature_extraction, linear_model, metrics

import river_cw
from river_cw.labels import predicted_labels
from tests.models.test_views import recomputed

CLASSES = [river_cw.CW, river_cw.AROW, river_cw.NHERD, river_cw.SOP, river_cw.SCW]
CONFIGS = [cls(**params) for cls in CLASSES for params in cls._unit_test_params()]
# every covariance/diagonal configuration, beyond the unit-test parameters
ALL_CONFIGS = (
    [
        river_cw.CW(variant=variant, covariance=covariance, diagonal=diagonal)
        for variant in ("stdev", "var")
        for covariance, diagonal in (
            ("diagonal", "project"),
            ("diagonal", "drop"),
            ("diagonal", "exact"),
            ("full", "project"),
        )
    ]
    + [
        cls(covariance=covariance, diagonal=diagonal)
        for cls in (river_cw.AROW, river_cw.SOP, river_cw.SCW)
        for covariance, diagonal in (
            ("diagonal", "project"),
            ("diagonal", "drop"),
            ("full", "project"),
        )
    ]
    + [
        river_cw.NHERD(covariance=covariance, diagonal=diagonal)
        for covariance, diagonal in (
            ("diagonal", "project"),
            ("diagonal", "drop"),
            ("diagonal", "exact"),
            ("full", "project"),
        )
    ]
    + [
        cls(covariance="arrowhead", diagonal=diagonal)
        for cls in CLASSES
        for diagonal in ("project", "drop")
    ]
)


def engine_state(gaussian) -> dict:
    """The attributes of an engine, with the compiled engine's weights (not in its __dict__)."""
    state = dict(vars(gaussian))
    if hasattr(gaussian, "blocks"):
        state["blocks"] = gaussian.blocks
    return state


def assert_same_state(a, b):
    """Equal classes, labels and Gaussians (numpy arrays compared exactly)."""
    assert a.classes_ == b.classes_ and a._get_params() == b._get_params()
    ga, gb = engine_state(a.gaussian), engine_state(b.gaussian)
    assert ga.keys() == gb.keys()
    for key, value in ga.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(value, gb[key])
        else:
            assert value == gb[key], key


def name(model):
    return repr(model).replace("\n", "").replace(" ", "")


# The full-covariance models share one engine (river_cw/_engines/full.py, held to the dense reference for
# every rule by tests/models/test_full_covariance_vs_papers.py) and differ only by their step, which
# river's checks meet for every rule on the other covariances: AROW's stand for the others, each
# full model taking seconds of numpy on river's data sets. Beside ALL_CONFIGS' defaults: the papers'
# models (no intercept), once per engine and scheme (AROW's, and CW's exact scheme, which AROW
# lacks): a rule is only its step, and without an intercept the engine's paths are the same for
# every step (each rule's ran here once, 12 more models at about a second each of the suite's
# time); and forgetting.
CHECKED_CONFIGS = (
    [
        model
        for model in ALL_CONFIGS
        if model.covariance != "full" or isinstance(model, river_cw.AROW)
    ]
    + [
        model.clone({"learn_intercept": False})
        for model in ALL_CONFIGS
        if isinstance(model, river_cw.AROW)
        or (isinstance(model, river_cw.CW) and model.diagonal == "exact" and model.variant == "var")
    ]
    + [
        river_cw.AROW(forgetting=0.1),
        river_cw.CW(covariance="diagonal", diagonal="exact", forgetting=0.05),
        river_cw.NHERD(diagonal="drop", forgetting=0.1, calibrate=True),
    ]
)


@pytest.mark.parametrize("model", CHECKED_CONFIGS, ids=name)
def test_river_check_estimator(model):
    checks.check_estimator(model)


def mixed_stream(seed, n=150, labels=("a", "b", "c")):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(len(labels), 5))
    for _ in range(n):
        x = rng.normal(size=5)
        yield (
            {f"f{j}": float(v) for j, v in enumerate(x) if rng.random() < 0.8},
            labels[int(np.argmax(W @ x))],
        )


@pytest.mark.parametrize("model", ALL_CONFIGS, ids=name)
def test_bad_input_raises_a_clear_error_and_leaves_the_model_unchanged(model):
    model = model.clone()
    for x, y in mixed_stream(0, n=40):
        model.learn_one(x, y)
    state = pickle.dumps(model)
    for bad, error, message in [
        ({"f0": 1.0, "oops": "abc"}, TypeError, "'oops'"),
        ({"f0": 1.0, "new": float("nan")}, ValueError, "'new'"),
        ({"f1": float("inf")}, ValueError, "'f1'"),
        ({"f2": None}, TypeError, "'f2'"),
        ({"f0": 1.0, "f3": 1j}, TypeError, "'f3'"),
    ]:
        with pytest.raises(error, match=message):
            model.learn_one(bad, "a")
        with pytest.raises(error, match=message):
            model.predict_proba_one(bad)
        assert pickle.dumps(model) == state
    with pytest.raises(ValueError, match="missing label"):
        model.learn_one({"f0": 1.0}, None)
    with pytest.raises(TypeError, match="hashable"):
        model.learn_one({"f0": 1.0}, ["a"])
    assert pickle.dumps(model) == state


@pytest.mark.parametrize("model", CONFIGS, ids=name)
def test_empty_x_teaches_only_the_intercept_and_pickling_round_trips(model):
    model = model.clone()
    for x, y in mixed_stream(1):
        model.learn_one(x, y)
    state = pickle.dumps(model)
    model.learn_one({}, next(c for c in model.classes_ if c != model.predict_one({})))  # a mistake
    assert (pickle.dumps(model) == state) != model.learn_intercept  # the intercept learns
    clone = pickle.loads(pickle.dumps(model))
    for x, _ in mixed_stream(2, n=30):
        assert clone.predict_proba_one(x) == model.predict_proba_one(x)
    for x, y in mixed_stream(3, n=30):
        clone.learn_one(x, y)
        model.learn_one(x, y)
    assert_same_state(clone, model)


@pytest.mark.parametrize(
    "labels", [(False, True), (0, 1), ("spam", "ham"), (3, 7, 11), ("x", 2, True)]
)
@pytest.mark.parametrize("model", [river_cw.AROW(), river_cw.CW(covariance="full")], ids=name)
def test_labels_of_any_hashable_type_are_discovered_online(model, labels):
    model = model.clone()
    assert model.predict_one({"f0": 1.0}) is None
    assert model.predict_proba_one({"f0": 1.0}) == {}
    metric = metrics.Accuracy()
    for x, y in mixed_stream(4, n=300, labels=labels):
        metric.update(y, model.predict_one(x))
        model.learn_one(x, y)
        proba = model.predict_proba_one(x)
        labels_known = set(predicted_labels(model.classes_))
        assert set(proba) == labels_known and math.isclose(sum(proba.values()), 1.0)
    assert set(model.classes_) == set(labels)
    assert metric.get() > 1.5 / len(labels)


@pytest.mark.parametrize("model", CONFIGS, ids=name)
def test_bad_input_is_refused_before_any_label_is_known(model):
    model = model.clone()
    for _ in range(2):
        with pytest.raises(TypeError, match="'text'"):
            model.predict_proba_one({"text": "free prize"})
        with pytest.raises(TypeError, match="'text'"):
            model.predict_one({"text": "free prize"})
        model.learn_one({"a": 1.0}, "ham")


def test_with_one_label_known_the_model_predicts_it_with_certainty():
    model = river_cw.AROW()
    model.learn_one({"f0": 1.0}, "ham")
    assert model.predict_proba_one({"f0": -5.0}) == {"ham": 1.0}
    assert model.predict_one({"f0": -5.0}) == "ham"


@pytest.mark.parametrize("model", ALL_CONFIGS + [river_cw.VotedRDA()], ids=name)
def test_with_one_bool_label_known_the_model_is_binary_over_both(model):
    """A bool has two values: river's binary classifiers answer both from the start, and so does
    a model that has met one of them (`river_cw.labels.predicted_labels`). Its score is learned
    as the other's margin, so the probabilities, `predict_one` (their argmax) and the batches
    all read it; nothing else changes (the labels it learned, its state)."""
    river_keys = set(linear_model.LogisticRegression().predict_proba_one({"f0": 1.0}))
    for known in (True, False, np.True_):  # numpy's bool too
        learned = model.clone()
        learned.learn_one({"f0": 1.0, "f1": 2.0}, known)
        assert learned.classes_ == [known]
        xs = [{"f0": 1.0, "f1": 2.0}, {"f0": -3.0, "f1": -6.0}, {"f2": 1.0}, {}]
        for x in xs:
            proba = learned.predict_proba_one(x)
            assert set(proba) == river_keys and math.isclose(sum(proba.values()), 1.0)
            assert 0.0 < proba[not known] < 1.0  # never certain of either
            assert learned.predict_one(x) == max(proba, key=proba.get)  # river's argmax
        assert learned.predict_proba_one(xs[0])[known] > 0.5  # the example it learned
        assert learned.predict_many(xs) == [learned.predict_one(x) for x in xs]
        assert learned.predict_proba_many(xs) == [learned.predict_proba_one(x) for x in xs]
        frame = learned.predict_proba_many(pd.DataFrame(xs[:3]).fillna(0.0))
        assert list(frame.columns) == [known, not known]


def test_the_first_example_of_the_second_bool_is_charged_its_probability():
    """River's `LogLoss` reads a missing ``True`` as probability 0 (34.5 nats, its clamp): a
    model certain of the one bool it knows would pay that for the second's first example."""
    stream = [({"f0": 1.0}, True)] * 5 + [({"f0": -1.0}, False)]
    metric = metrics.LogLoss()
    evaluate.progressive_val_score(stream, river_cw.AROW(), metric)
    assert metric.get() * 5 < 5.0  # the five examples after the first, each at most a few nats


@pytest.mark.parametrize("model", [river_cw.AROW(), river_cw.NHERD(covariance="full")], ids=name)
def test_multiclass_probabilities_follow_the_pairwise_gaussian_margins(model):
    model = model.clone()
    for x, y in mixed_stream(6, n=300, labels=tuple("abcde")):
        model.learn_one(x, y)
    for x, _ in mixed_stream(7, n=50, labels=tuple("abcde")):
        proba = model.predict_proba_one(x)
        expected = recomputed(model, x)  # from the public views (tests/models/test_views.py)
        for label in model.classes_:
            assert proba[label] == pytest.approx(expected[label], rel=1e-9, abs=1e-300)
        assert max(proba, key=proba.get) == model.predict_one(x)  # one scale: the scores' order


def test_lifting_to_multiclass_preserves_every_prediction():
    """The third label turns w into per-class blocks: the first two labels' score gap stays w.x,
    so every prediction is the same (the new blocks' prior variance widens the probabilities)."""
    model = river_cw.CW(variant="var")
    stream = list(mixed_stream(8, n=100, labels=("a", "b")))
    for x, y in stream:
        model.learn_one(x, y)
    before = [(model.predict_one(x), model._scores(x)[0]) for x, _ in stream]
    model._register("c")
    for (x, _), (label, score) in zip(stream, before):
        a, b, c = model._scores(x)
        assert b - a == score and a == c == 0.0
        assert model.predict_one(x) == label


def test_full_covariance_grows_with_new_features():
    model = river_cw.AROW(covariance="full", learn_intercept=False)
    model.learn_one({"a": 1.0}, True)
    model.learn_one({"a": 1.0, "b": 2.0}, False)
    model.learn_one({"c": -1.0, "b": 1.0}, True)
    assert set(model.covariances) == {(f, g) for f in "abc" for g in "abc"}
    assert model.predict_proba_one({"d": 4.0}) == {False: 0.5, True: 0.5}  # unseen: prior only


@pytest.mark.parametrize("method", ["kl", "l2"])
@pytest.mark.parametrize("covariance", ["diagonal", "full"])
def test_combine_follows_the_papers_formulas(method, covariance):
    shards = [list(mixed_stream(seed, n=100, labels=("a", "b"))) for seed in (10, 11, 12)]
    models = []
    for shard in shards:
        model = river_cw.AROW(covariance=covariance)
        for x, y in shard:
            model.learn_one(x, y)
        models.append(model)
    models[1] = river_cw.AROW(covariance=covariance)  # labels in the other order, held in one
    for x, y in sorted(shards[1], key=lambda xy: xy[1] != "b"):
        models[1].learn_one(x, y)
    assert models[1].classes_ == ["a", "b"] == models[0].classes_
    states = [pickle.dumps(m) for m in models]
    merged = river_cw.combine(models, method=method)
    assert [pickle.dumps(m) for m in models] == states  # inputs untouched

    names = [f"f{j}" for j in range(5)] + [river_cw.INTERCEPT]

    def gaussian(model):
        weights = {**model.weights, river_cw.INTERCEPT: model.intercept}
        mu = np.array([weights[f] for f in names])
        covariances = model.covariances
        return mu, np.array([[covariances.get((f, g), 0.0) for g in names] for f in names])

    parts = [gaussian(m) for m in models]
    if method == "kl":
        precision = sum(np.linalg.inv(S) for _, S in parts)
        S = np.linalg.inv(precision)
        mu = S @ sum(np.linalg.inv(S_c) @ mu_c for mu_c, S_c in parts)
    else:
        mu = sum(mu_c for mu_c, _ in parts) / 3
        S = sum(S_c for _, S_c in parts) / 3
    got_mu, got_S = gaussian(merged)
    np.testing.assert_allclose(got_mu, mu, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got_S, S, rtol=1e-9, atol=1e-12)


def test_combine_rejects_mismatched_models():
    a, b = river_cw.AROW(), river_cw.AROW(r=2.0)
    a.learn_one({"x": 1.0}, True)
    b.learn_one({"x": 1.0}, True)
    with pytest.raises(ValueError, match="same class and hyper-parameters"):
        river_cw.combine([a, b])
    c = river_cw.AROW()
    c.learn_one({"x": 1.0}, "other")
    with pytest.raises(ValueError, match="same labels"):
        river_cw.combine([a, c])
    with pytest.raises(ValueError, match="method"):
        river_cw.combine([a], method="mean")


def test_kl_combination_of_shards_is_as_good_as_one_model_on_text():
    """JMLR 7.10: models trained on disjoint shards, merged by KL, rival a single pass."""
    from tests.conftest import read_jsonl, shuffled

    data = [
        (ex["x"], ex["label"]) for ex in shuffled(read_jsonl("mdsd_processed_acl_books.jsonl.gz"))
    ]
    train, test = data[:1600], data[1600:]
    shards = [river_cw.CW(variant="var") for _ in range(4)]
    for i, (x, y) in enumerate(train):
        shards[i % 4].learn_one(x, y)
    for method, floor in (("kl", 0.75), ("l2", 0.70)):
        merged = river_cw.combine(shards, method=method)
        accuracy = np.mean([merged.predict_one(x) == y for x, y in test])
        assert accuracy > floor, (method, accuracy)


def test_composes_with_a_river_text_pipeline():
    model = feature_extraction.BagOfWords(lowercase=True) | river_cw.AROW()
    docs = [("cheap pills buy now", "spam"), ("meeting at noon", "ham")] * 20
    result = evaluate.progressive_val_score(docs, model, metrics.Accuracy())
    assert result.get() > 0.9


@settings(max_examples=60, deadline=None)
@given(
    xs=st.lists(
        st.dictionaries(
            st.sampled_from("abcdefgh"),
            st.floats(-1e3, 1e3, allow_nan=False),
            min_size=0,
            max_size=6,
        ),
        min_size=1,
        max_size=30,
    ),
    ys=st.lists(st.sampled_from([0, 1, 2]), min_size=30, max_size=30),
)
def test_probabilities_are_always_a_distribution(xs, ys):
    for model in (
        river_cw.CW(covariance="diagonal", diagonal="exact"),
        river_cw.AROW(covariance="full"),
        river_cw.SCW(variant="II"),
    ):
        for x, y in zip(xs, ys):
            model.learn_one(x, y)
            proba = model.predict_proba_one(x)
            assert all(0.0 <= p <= 1.0 for p in proba.values())
            assert not proba or math.isclose(sum(proba.values()), 1.0)


def test_docstring_examples_use_a_bundled_dataset():
    assert datasets.Phishing().n_samples == 1250
