"""Centring the arrowhead's features (`river_cw.centring`): the shift against its dense
definition, the rule (dense streams centre at the warm-up, sparse ones never), and every feature
that carries a model (batches, views, the state format, mixing, both engines, bad input)."""

from __future__ import annotations

import copy
import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse

import river_cw
from river_cw import INTERCEPT, centring, state
from river_cw.centring import WARM_UP, Centring, shift
from river_cw.covariances import COVARIANCES
from river_cw.text import TextClassifier
from tests.support.reference import arow, arrowhead_projection

RULES = [river_cw.AROW, river_cw.CW, river_cw.NHERD, river_cw.SCW, river_cw.SOP]


def dense_stream(n: int, seed: int = 0, offset: float = 5.0) -> list:
    """Three features uniform on [offset, offset + 1], the label a tilted boundary through the
    middle of the cube, far from the origin."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        x = {f: offset + rng.random() for f in "abc"}
        out.append((x, x["a"] + 0.5 * x["b"] - x["c"] > 0.5 * offset + 0.25))
    return out


def family(block: dict, names: list) -> tuple[np.ndarray, np.ndarray]:
    """An arrowhead block (root first, then `names`) as a dense mean and covariance."""
    mu_b, s = block[INTERCEPT]
    a, k, c = (np.array([block[f][i] for f in names]) for i in range(3))
    loading = np.concatenate(([1.0], k))
    mean = np.concatenate(([mu_b], a + k * mu_b))
    return mean, s * np.outer(loading, loading) + np.diag(np.concatenate(([0.0], c)))


numbers = st.floats(-3.0, 3.0)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(numbers, numbers, st.floats(0.01, 2.0)), min_size=1, max_size=4),
    st.floats(-2.0, 2.0),
    st.floats(0.01, 5.0),
    st.lists(st.floats(-4.0, 4.0), min_size=1, max_size=4),
)
def test_the_shift_is_the_affine_map_then_the_projection_onto_the_family(weights, mu_b, s, offsets):
    """`shift` equals its definition: the Gaussian mapped by ``b' = b + w . delta`` as a dense
    matrix, then projected onto the family by matching each (intercept, weight) pair's moments
    (`tests.support.reference.arrowhead_projection`, "drop"); a feature of delta the block has
    not learned enters at its prior."""
    names = [f"w{i}" for i in range(len(weights))]
    block = {INTERCEPT: [mu_b, s], **{f: list(w) for f, w in zip(names, weights)}}
    delta = {f"w{i}": d for i, d in enumerate(offsets)}
    unknown = [f for f in delta if f not in block]
    [shifted] = shift([block], INTERCEPT, delta, 0.5, 10.0)
    full = {**block, **{f: [0.0, 0.0, 0.5] for f in unknown}}
    order = names + unknown
    mean, cov = family(full, order)
    A = np.eye(len(mean))
    A[0, 1:] = [delta.get(f, 0.0) for f in order]
    want_mean, want_cov = arrowhead_projection(A @ mean, A @ cov @ A.T, [0] * len(mean), "drop")
    got_mean, got_cov = family(shifted, order)
    assert np.allclose(got_mean, want_mean, rtol=1e-9, atol=1e-9)
    assert np.allclose(got_cov, want_cov, rtol=1e-9, atol=1e-9)
    assert all(shifted[f][2] >= 0.0 for f in order)


def test_a_dense_stream_centres_at_the_means_of_its_first_examples():
    stream = dense_stream(WARM_UP + 50)
    model = river_cw.AROW()
    for i, (x, y) in enumerate(stream):
        assert model.centre_ == {}
        model.learn_one(x, y)
        if i == WARM_UP - 1:
            break
    means = {f: np.mean([x[f] for x, _ in stream[:WARM_UP]]) for f in "abc"}
    assert model.centre_.keys() == means.keys()
    assert all(abs(model.centre_[f] - means[f]) < 1e-12 for f in "abc")


def test_the_centred_model_is_the_dense_transcription():
    """AROW learned raw for `WARM_UP` examples, its Gaussian mapped to the centred coordinates
    and projected, then learned on ``x - m``: the paper's update and the family's projection
    written densely (`tests.support.reference`), its margins to 1e-9."""
    stream = dense_stream(WARM_UP + 300, seed=1)
    model = river_cw.AROW(forgetting=0.0, calibrate=False)
    names = list("abc")
    mu, S = np.zeros(4), np.diag([100.0, 1.0, 1.0, 1.0])
    centre = np.zeros(3)
    for i, (x, y) in enumerate(stream):
        z = np.concatenate(([1.0], np.array([x[f] for f in names]) - centre))
        if i > WARM_UP:
            m, v = mu @ z, z @ S @ z
            proba = model.predict_proba_one(x)[True]
            assert abs(proba - 0.5 * math.erfc(-m / math.sqrt(2.0 * v))) < 1e-9
        mu, S = arrowhead_projection(*arow(mu, S, z, 1 if y else -1, 1.0), [0] * 4, "drop")
        model.learn_one(x, y)
        if i == WARM_UP - 1:
            centre = np.mean([[x[f] for f in names] for x, _ in stream[:WARM_UP]], axis=0)
            A = np.eye(4)
            A[0, 1:] = centre
            mu, S = arrowhead_projection(A @ mu, A @ S @ A.T, [0] * 4, "drop")
    assert abs(model.intercept - (mu[0] - mu[1:] @ centre)) < 1e-9


def test_sparse_input_never_centres():
    """Examples that differ in their features decide at the second; a text's token counts at
    the first."""
    model = river_cw.AROW()
    model.learn_one({"a": 1.0}, True)
    assert model._centring is not None
    model.learn_one({"b": 1.0}, False)
    assert model._centring is None
    text = TextClassifier(river_cw.AROW())
    text.learn_one("free prize", True)
    assert text.classifier._centring is None


@pytest.mark.parametrize("rule", RULES)
def test_centring_keeps_the_predictions_and_the_weights(rule):
    """At the moment it centres, the model's predictions and its raw-coordinate views of the
    weights (means, intercept, each weight's variance) stay, to rounding: the shift is a change
    of coordinates that keeps every margin's mean and each weight's moments. (The margins'
    variances are the family's in the new coordinates: what it drops differs.)"""
    stream = dense_stream(WARM_UP, seed=2)
    model = rule()
    for x, y in stream[:-1]:
        model.learn_one(x, y)
    before = copy.deepcopy(model)
    before._centring = None  # the same model, its decision not taken
    x, y = stream[-1]
    before.learn_one(x, y)
    model.learn_one(x, y)
    assert model.centre_, "centred"
    probe = [x for x, _ in dense_stream(50, seed=3)]
    assert [model.predict_one(x) for x in probe] == [before.predict_one(x) for x in probe]
    assert abs(model.intercept - before.intercept) < 1e-9
    assert all(abs(model.weights[f] - before.weights[f]) < 1e-9 for f in "abc")
    assert all(abs(model.variances[f] - before.variances[f]) < 1e-12 for f in "abc")


def test_centre_false_and_other_covariances_learn_the_features_as_they_are():
    stream = dense_stream(WARM_UP + 10)
    for model in (
        river_cw.AROW(centre=False),
        river_cw.AROW(covariance="diagonal"),
        river_cw.AROW(learn_intercept=False),
    ):
        for x, y in stream:
            model.learn_one(x, y)
        assert model._centring is None and model.centre_ == {}


def test_both_engines_centre_bit_for_bit():
    stream = dense_stream(WARM_UP + 100, seed=4)
    compiled = river_cw.AROW()
    reference = river_cw.AROW()
    reference._gaussian = COVARIANCES["arrowhead"].reference(1.0, INTERCEPT, 100.0)
    for x, y in stream:
        compiled.learn_one(x, y)
        reference.learn_one(x, y)
    assert compiled._gaussian.blocks == reference._gaussian.blocks
    assert compiled.predict_proba_one(stream[0][0]) == reference.predict_proba_one(stream[0][0])


class Row(dict):
    """A dict the compiled one-call paths do not take: the general path, x centred in Python."""


def test_the_compiled_one_call_paths_centre_as_the_general_path():
    """`learn_native` and `score_native` subtract the centre in C (the engine's lean pass);
    the general path learns `Centring.centred`'s dict: the same numbers, to the bit."""
    stream = dense_stream(WARM_UP + 150, seed=10)
    lean, general = river_cw.AROW(), river_cw.AROW()
    for x, y in stream:
        lean.learn_one(x, y)
        general.learn_one(Row(x), y)
        assert lean.predict_proba_one(x) == general.predict_proba_one(Row(x))
        assert lean.predict_one(x) == general.predict_one(Row(x))
    assert lean.centre_ and lean._gaussian.blocks == general._gaussian.blocks


def test_bad_input_leaves_a_deciding_and_a_centred_model_unchanged():
    stream = dense_stream(WARM_UP + 5)
    model = river_cw.AROW()
    for n in (10, WARM_UP + 5):
        while (model._centring.seen if model._centring.centre is None else WARM_UP + 5) < n:
            model.learn_one(*stream[model._centring.seen])
        kept = state.dumps(model)
        with pytest.raises(TypeError, match="'b'"):
            model.learn_one({"a": 5.0, "b": "x", "c": 5.0}, True)
        with pytest.raises(ValueError, match="'c'"):
            model.learn_one({"a": 5.0, "b": 5.0, "c": float("nan")}, True)
        with pytest.raises(TypeError, match="'b'"):
            model.predict_proba_one({"a": 5.0, "b": "x", "c": 5.0})
        assert state.dumps(model) == kept
        if n == 10:  # finish the warm-up
            for x, y in stream[10:]:
                model.learn_one(x, y)
            assert model.centre_


def test_a_centred_model_reads_a_missing_feature_as_zero_and_learns_new_ones():
    stream = dense_stream(WARM_UP + 1)
    model = river_cw.AROW()
    for x, y in stream:
        model.learn_one(x, y)
    m = model.centre_
    assert model._centring.centred({"a": 6.0, "d": 2.0}) == {
        "a": 6.0 - m["a"],
        "d": 2.0,
        "b": -m["b"],
        "c": -m["c"],
    }
    model.learn_one({"a": 6.0, "d": 2.0}, True)
    assert "d" in model.weights and model.centre_ == m


@pytest.mark.parametrize("kind", ["dicts", "csr"])
def test_a_batch_across_the_warm_up_is_the_learn_one_loop(kind):
    stream = dense_stream(WARM_UP + 150, seed=5)
    X = [x for x, _ in stream]
    y = [label for _, label in stream]
    loop = river_cw.AROW()
    for x, label in stream:
        loop.learn_one(x, label)
    batch = river_cw.AROW()
    if kind == "csr":
        matrix = sparse.csr_array([[x[f] for f in "abc"] for x in X])
        for a in range(0, len(X), 120):
            batch.learn_many(matrix[a : a + 120], y[a : a + 120], features=list("abc"))
    else:
        for a in range(0, len(X), 120):
            batch.learn_many(X[a : a + 120], y[a : a + 120])
    assert batch.centre_ == loop.centre_ and batch._gaussian.blocks == loop._gaussian.blocks
    probe = [x for x, _ in dense_stream(30, seed=6)]
    assert batch.predict_many(probe) == [loop.predict_one(x) for x in probe]
    assert batch.predict_proba_many(probe) == [loop.predict_proba_one(x) for x in probe]


def test_a_centred_models_batch_of_odd_rows_is_the_learn_one_loop():
    """A centred model's dict rows go through the batch kernel less the centre (the lean path,
    `learn_native`'s); the rows it declines (a centred feature missing, a dict subclass, a
    weight of 0, a third label, then every row of the multi-class model) through `learn_one`:
    the loop's model to the bit, whichever path each row took."""
    stream = dense_stream(WARM_UP + 40, seed=11)
    extra = [
        ({"a": 5.5, "b": 5.2}, True, 1.0),  # "c" missing: -m_c centred
        ({"a": 5, "b": True, "c": 6}, False, 1.0),  # ints and a bool
        ({"a": 5.1, "b": 5.9, "c": 5.3, "d": 2.0}, True, 2.5),  # a new feature, a weight
        (Row({"a": 5.4, "b": 5.5, "c": 5.6}), False, 1.0),
        ({"a": 5.7, "b": 5.1, "c": 5.8}, True, 0.0),
        *((x, y, 1.0) for x, y in dense_stream(30, seed=12)),
        ({"a": 5.2, "b": 5.3, "c": 5.4}, "third", 1.0),
        *((x, y, 1.0) for x, y in dense_stream(10, seed=13)),
    ]
    loop, batch = river_cw.AROW(), river_cw.AROW()
    for x, y in stream:
        loop.learn_one(x, y)
        batch.learn_one(x, y)
    assert batch.centre_
    for x, y, w in extra:
        loop.learn_one(x, y, w)
    batch.learn_many([x for x, _, _ in extra], [y for _, y, _ in extra], [w for *_, w in extra])
    assert state.dumps(batch) == state.dumps(loop)


def test_a_centred_models_predictions_of_a_batch_are_its_predict_one_loop():
    """`predict_many` and `predict_proba_many` of a centred model score dict rows in the batch
    kernel less the centre (`score_native`'s pass) and leave the rows it declines (a centred
    feature missing, a dict subclass, a value it does not read) to `predict_one`; CSR rows each
    by `predict_one`: the same numbers, to the bit."""
    model = river_cw.AROW()
    for x, y in dense_stream(WARM_UP + 30, seed=14):
        model.learn_one(x, y)
    assert model.centre_
    rows = [
        *(x for x, _ in dense_stream(20, seed=15)),
        {"a": 5.5, "b": 5.2},
        {"a": 5, "b": True, "c": 6},
        {"a": 5.1, "b": 5.9, "c": 5.3, "d": 2.0},
        Row({"a": 5.4, "b": 5.5, "c": 5.6}),
        {"a": 5.7, "b": 5.1, "c": np.float32(5.8)},
    ]
    assert model.predict_many(rows) == [model.predict_one(x) for x in rows]
    assert model.predict_proba_many(rows) == [model.predict_proba_one(x) for x in rows]
    matrix = sparse.csr_array([[x.get(f, 0.0) for f in "abc"] for x in rows[:20]])
    assert model.predict_proba_many(matrix, features=list("abc")) == [
        model.predict_proba_one(x) for x in rows[:20]
    ]


def test_the_state_format_keeps_the_centring_and_reads_older_states_as_raw():
    stream = dense_stream(WARM_UP + 20)
    model = river_cw.AROW()
    for i, (x, y) in enumerate(stream):
        model.learn_one(x, y)
        if i in (0, 99, WARM_UP - 1, WARM_UP + 19):
            copied = state.loads(state.dumps(model))
            assert copied._centring == model._centring
            assert copied._gaussian.blocks == model._gaussian.blocks
    old = river_cw.AROW()
    old.learn_one(*stream[0])
    old._never_centre()  # a state written before centring holds no "centring", no "log_score"
    restored = state.loads(state.dumps(old))
    assert restored._centring is None and restored._log_score is None


def test_mixing_copies_of_a_centred_model_returns_it():
    stream = dense_stream(WARM_UP + 20)
    model = river_cw.AROW()
    for x, y in stream:
        model.learn_one(x, y)
    mixed = river_cw.combine([model, copy.deepcopy(model)], base=model)
    assert mixed._gaussian.blocks == model._gaussian.blocks and mixed.centre_ == model.centre_


def test_members_that_decide_together_centre_the_mix():
    """Shards learned from a deciding base count as one stream (`centring.common_frame`): the
    mix centres once the group has seen `WARM_UP` dense examples; changes mix as the models."""
    stream = dense_stream(WARM_UP + 20, seed=7)
    base = river_cw.AROW()
    for x, y in stream[:100]:
        base.learn_one(x, y)
    members = [copy.deepcopy(base), copy.deepcopy(base)]
    for k, member in enumerate(members):
        for x, y in stream[100 + 60 * k : 160 + 60 * k]:
            member.learn_one(x, y)
    mixed = river_cw.combine(members, base=base)
    assert mixed.centre_ and mixed._centring.centre == pytest.approx(
        {f: np.mean([x[f] for x, _ in stream[: WARM_UP + 20]]) for f in "abc"}
    )
    again = river_cw.combine([river_cw.changes(m, base) for m in members], base=base)
    assert again._gaussian.blocks == mixed._gaussian.blocks
    for x, y in dense_stream(800, seed=9):  # the mix learns on, centred
        mixed.learn_one(x, y)
    accuracy = np.mean([mixed.predict_one(x) == y for x, y in dense_stream(500, seed=8)])
    assert accuracy > 0.85  # (the same model raw: 0.59 after 1,000 examples)


def test_a_member_that_never_centres_keeps_the_mix_raw():
    stream = dense_stream(WARM_UP + 20)
    centred = river_cw.AROW()
    for x, y in stream:
        centred.learn_one(x, y)
    sparse_member = river_cw.AROW()
    sparse_member.learn_one({"a": 5.5}, True)
    sparse_member.learn_one({"b": 5.5}, False)
    mixed = river_cw.combine([centred, sparse_member])
    assert mixed._centring is None
    x = stream[0][0]
    raw = centred._raw_gaussian()
    assert abs(mixed.predict_proba_one(x)[True] - mixed.predict_proba_one(x)[True]) == 0.0
    assert set(raw.block_views()[0][0]) <= set(mixed._gaussian.block_views()[0][0])


def test_common_frame_counts_deciding_members_once():
    assert centring.common_frame([None, Centring()]) == ({}, None)
    assert centring.common_frame([Centring(3, {"a": 1.0}), Centring(2, {"b": 1.0})]) == ({}, None)


@settings(max_examples=25, deadline=None)
@given(
    st.sampled_from(RULES),
    st.sampled_from([0.0, 0.02, "auto"]),
    st.lists(st.integers(-6, 6), min_size=1, max_size=4),
    st.integers(0, 2**16),
)
def test_centred_models_keep_their_variances_within_the_prior_on_any_scale(
    rule, forgetting, exponents, seed
):
    """Dense streams of values from 1e-6 to 1e6 (each feature its own scale, far from zero or
    not): once centred, every variance the engine holds stays within its prior (the intercept's
    and the weights', to a few ulps, forgetting or not), every number is finite, and the two
    engines agree to the bit."""
    rng = random.Random(seed)
    names = [f"x{i}" for i in range(len(exponents))]
    options = {} if rule is river_cw.SOP else {"forgetting": forgetting}
    compiled = rule(**options)
    reference = rule(**options)
    kind = COVARIANCES["arrowhead"]
    reference._gaussian = kind.reference(
        compiled.initial_variance, INTERCEPT, compiled._gaussian.root_variance
    )
    prior, root_prior = compiled.initial_variance, compiled._gaussian.root_variance
    for _ in range(WARM_UP + 120):  # "auto": past the log score's warm-up once centred
        x = {f: 10.0**e * (3.0 + rng.random()) for f, e in zip(names, exponents)}
        y = rng.random() < 0.5 + 0.4 * math.tanh(x[names[0]] / 10.0 ** exponents[0] - 3.5)
        compiled.learn_one(x, y)
        reference.learn_one(x, y)
    assert compiled._gaussian.blocks == reference._gaussian.blocks
    assert compiled.centre_ == reference.centre_
    log_score = compiled._log_score
    assert (log_score is None) == (reference._log_score is None)
    if log_score is not None:
        assert list(log_score) == list(reference._log_score)
        assert all(math.isfinite(value) for value in log_score)
    for block in compiled._gaussian.block_views()[1]:
        for key, variance in block.items():
            bound = root_prior if key is INTERCEPT else prior
            assert 0.0 <= variance <= bound + 4 * math.ulp(bound), key
    assert all(math.isfinite(w) for w in compiled.weights.values())
    assert math.isfinite(compiled.intercept)


def test_a_multiclass_model_centres_every_label_block():
    """Three labels: every block is moved to the centre (each label's intercept at the data's
    centre), the predictions kept, the batch and the state format as for two labels, both
    engines to the bit."""
    rng = random.Random(11)
    stream = []
    for _ in range(1000):
        x = {f: 5.0 + rng.random() for f in "abc"}
        stream.append((x, "abc"[int(3 * (x["a"] - 5.0))]))
    loop, reference = river_cw.AROW(), river_cw.AROW()
    reference._gaussian = COVARIANCES["arrowhead"].reference(1.0, INTERCEPT, 100.0)
    for i, (x, y) in enumerate(stream):
        if i == WARM_UP - 1:
            before = copy.deepcopy(loop)
            before._centring = None
        loop.learn_one(x, y)
        reference.learn_one(x, y)
        if i == WARM_UP - 1:
            before.learn_one(x, y)
            probe = [x for x, _ in stream[:50]]
            assert [loop.predict_one(x) for x in probe] == [before.predict_one(x) for x in probe]
    assert loop.centre_ and len(loop._gaussian.blocks) == 3
    assert loop._gaussian.blocks == reference._gaussian.blocks
    batch = river_cw.AROW()
    batch.learn_many([x for x, _ in stream], [y for _, y in stream])
    assert batch._gaussian.blocks == loop._gaussian.blocks
    assert state.loads(state.dumps(loop))._gaussian.blocks == loop._gaussian.blocks
    raw = river_cw.AROW(centre=False)
    for x, y in stream:
        raw.learn_one(x, y)
    test = [(x, "abc"[int(3 * (x["a"] - 5.0))]) for x, _ in dense_stream(300, 12)]
    centred = np.mean([loop.predict_one(x) == y for x, y in test])
    assert centred > np.mean([raw.predict_one(x) == y for x, y in test]) + 0.15  # 0.82 and 0.57


HOSTILE = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(10**400), 10**400),
    st.booleans(),
    st.sampled_from([None, "x", b"1", [1.0], np.float64(2.5), np.int64(3), np.nan]),
)


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(st.sampled_from(["a", "b", "c", "d", 7]), HOSTILE, max_size=5),
    st.sampled_from([True, False, "third"]),
)
def test_a_centred_model_takes_hostile_input_as_an_uncentred_one(x, y):
    """A centred model (either engine) given any x, values of every kind, centred features
    missing, new ones: `learn_one`, `predict_one` and `predict_proba_one` succeed, or raise a
    TypeError or ValueError and leave the model's state as it was, byte for byte; the two engines
    do the same and end the same, to the bit; every number stays finite."""
    models = []
    for engine in ("compiled", "reference"):
        model = river_cw.AROW()
        if engine == "reference":
            model._gaussian = COVARIANCES["arrowhead"].reference(1.0, INTERCEPT, 100.0)
        for row, label in dense_stream(WARM_UP + 5, seed=13):
            model.learn_one(row, label)
        models.append(model)
    outcomes = []
    for model in models:
        assert model.centre_
        found = []
        for call in (model.predict_one, model.predict_proba_one, lambda x: model.learn_one(x, y)):
            before = state.dumps(model)
            try:
                found.append(("ok", call(dict(x))))
            except (TypeError, ValueError) as error:
                found.append((type(error).__name__, str(error)))
                assert state.dumps(model) == before
        means, variances = model._raw_gaussian().block_views()  # every label's, raw
        assert all(math.isfinite(n) for block in means + variances for n in block.values())
        outcomes.append(found)
    assert outcomes[0] == outcomes[1]
    assert models[0]._gaussian.blocks == models[1]._gaussian.blocks


def test_a_deciding_model_of_featureless_examples_round_trips():
    """Examples with no feature are counted too (their means: none): the state format reads a
    deciding centring of seen examples and no means back."""
    model = river_cw.AROW()
    model.learn_one({}, "spam")
    model.learn_one({}, "spam")
    copied = state.loads(state.dumps(model))
    assert copied._centring == model._centring == Centring(2, {})
