"""Forgetting: the precision of the weights an example touches relaxes toward the prior's
(directional, stabilised forgetting; see `river_cw.gaussian_classifier.GaussianClassifier`)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import river_cw
from river_cw import INTERCEPT, surprise
from tests.conftest import examples
from tests.models.test_sample_weight import dense

KEYS = [INTERCEPT, "a", "b", "c"]


@pytest.mark.parametrize("bad", [-0.1, 1.0, 2.0, math.nan, True, "0.1"])
def test_forgetting_is_a_share_in_0_1(bad):
    with pytest.raises((ValueError, TypeError), match="forgetting"):
        river_cw.AROW(forgetting=bad)


@pytest.mark.parametrize("covariance", ["diagonal", "full"])
def test_a_touch_without_an_update_relaxes_the_precision_toward_the_prior(covariance):
    """SOP learns only on mistakes: on a correct example the precision of each touched weight
    becomes (1 - f) P + f / a (diagonal: coordinate-wise; full: S P S + (f/a) E), the means stay,
    the weights not touched keep everything."""
    f, a = 0.2, 0.5
    model = river_cw.SOP(a=1 / a, covariance=covariance, forgetting=f)
    first = [({"a": 1.0, "b": 0.5}, True), ({"b": 1.0, "c": -1.0}, False), ({"a": -1.0}, False)]
    for x, y in first:
        model.learn_one(x, y)
    x = {"a": 2.0, "b": 0.0}  # b: a zero value touches nothing
    y = model.predict_one(x)  # a correct example: no update
    mu0, S0 = dense(model, KEYS)
    model.learn_one(x, y)
    mu1, S1 = dense(model, KEYS)
    np.testing.assert_array_equal(mu1, mu0)
    touched = np.diag([1.0, 1.0, 0.0, 0.0])  # the intercept and a
    scale = np.diag(np.sqrt(1 - f) * touched.diagonal() + (1 - touched.diagonal()))
    P0 = np.linalg.inv(S0)
    expected = scale @ P0 @ scale + (f / a) * touched
    if covariance == "diagonal":
        expected = np.diag(expected.diagonal())
    np.testing.assert_allclose(np.linalg.inv(S1), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("covariance", ["diagonal", "arrowhead", "full"])
def test_variance_comes_back_to_the_prior_and_never_beyond(covariance):
    model = river_cw.SOP(covariance=covariance, forgetting=0.1, learn_intercept=False)
    for i in range(40):  # contradictions: a mistake, an update, every time
        model.learn_one({"a": 1.0}, i % 2 == 0)
    collapsed = model.variances["a"]
    assert collapsed < 0.2 * model.initial_variance
    right = model.predict_one({"a": 1.0})
    for _ in range(300):  # right every time: SOP does not update, the variance comes back
        model.learn_one({"a": 1.0}, right)
        assert collapsed <= model.variances["a"] <= model.initial_variance
    assert model.variances["a"] == pytest.approx(model.initial_variance, rel=1e-9)


def test_a_weight_forgets_w_times():
    one, twice = river_cw.SOP(forgetting=0.3), river_cw.SOP(forgetting=0.3)
    for model in (one, twice):
        model.learn_one({"a": 1.0}, True)
        model.learn_one({"a": -1.0}, False)
    one.learn_one({"a": 1.0}, True)
    one.learn_one({"a": 1.0}, True)
    twice.learn_one({"a": 1.0}, True, w=2)  # correct: no update, only forgetting
    assert twice.variances["a"] == pytest.approx(one.variances["a"], rel=1e-12)


def test_forgetting_keeps_learning_after_sudden_drift():
    """SEA's threshold moves at example 5,000: a model that forgets follows it."""
    from river import metrics, preprocessing

    from streams.evaluate import drift

    stream = list(itertools.islice(drift.synthetic("sudden", position=5000, seed=1), 7000))
    scores = {}
    for f in (0.0, 0.01):
        model = preprocessing.StandardScaler() | river_cw.AROW(forgetting=f)
        metric = metrics.Accuracy()
        for i, (x, y) in enumerate(stream):
            if i >= 5000:
                metric.update(y, model.predict_one(x))
            model.learn_one(x, y)
        scores[f] = metric.get()
    assert scores[0.01] > scores[0.0] + 0.03


RULES = [river_cw.AROW, river_cw.CW, river_cw.NHERD, river_cw.SCW, river_cw.SOP]
magnitudes = st.floats(1e-6, 1e6)
signed = st.builds(lambda m, s: s * m, magnitudes, st.sampled_from([-1.0, 1.0]))
sparse_rows = st.lists(
    st.tuples(st.dictionaries(st.sampled_from("abcdef"), signed, min_size=1), st.integers(0, 2)),
    min_size=1,
    max_size=40,
)
ULPS = 4  # the rounding of c / (keep + rest c) at c = a (the diagonal engine's `forget` too)


@settings(max_examples=examples(60), deadline=None)
@given(
    sparse_rows,
    st.sampled_from(RULES),
    st.sampled_from([1e-4, 0.01, 0.1, 0.5, 0.9]),
    st.sampled_from([None, 0.01, 100.0]),
    st.booleans(),
)
def test_with_forgetting_no_arrowhead_variance_exceeds_its_prior(
    stream, rule, f, intercept_prior, multiclass
):
    """Every marginal variance the arrowhead reports (its engine's views, which `variances` and
    `intercept_variance` read) stays within its prior on sparse streams of values from 1e-6 to
    1e6 of both signs, with a dense row now and then: the intercept's ``a_b`` and the features'
    ``a``, to a few ulps (``ULPS``: the variances are rounded quotients; the derivation is
    exact, `river_cw._engines.arrowhead`). Forgetting in the latent coordinates alone reached
    hundreds of times the prior on such streams."""
    model = rule(covariance="arrowhead", forgetting=f, initial_intercept_variance=intercept_prior)
    prior, root_prior = model.initial_variance, model.intercept_variance
    for i, (x, y) in enumerate(stream):
        if i % 7 == 6:
            x = {**dict.fromkeys("abcdef", 1e3), **x}
        model.learn_one(x, y if multiclass else y == 0)
        for block in model.gaussian.block_views()[1]:
            for key, variance in block.items():
                bound = root_prior if key is INTERCEPT else prior
                assert 0.0 <= variance <= bound + ULPS * math.ulp(bound), key


# -- forgetting="auto": the model's surprise sets the rate (river_cw.surprise) ----------------


def test_without_calibration_auto_forgetting_never_forgets():
    """ "auto" compares the mistakes with those the calibrated probabilities expect: the papers'
    probabilities (``calibrate=False``) give it nothing to compare with, and the model is the
    one that never forgets, in the lean path."""
    from tests.support.bits import assert_same

    auto = river_cw.AROW(calibrate=False)
    never = river_cw.AROW(calibrate=False, forgetting=0.0)
    assert auto.forgetting == "auto" and auto._surprise is None and auto._lean_spec() is not None
    for x, y in sine(1000, 2000):
        auto.learn_one(x, y)
        never.learn_one(x, y)
    auto.forgetting = 0.0
    assert_same(auto, never)
    with pytest.raises(ValueError, match="forgetting"):
        river_cw.AROW(forgetting="Auto")


def sine(position: int | None, n: int, seed: int = 1) -> list:
    """river's Sine, its concept reversed (classification function 0, then 1) at `position`
    (None: never)."""
    from river.datasets import synth

    first = synth.Sine(classification_function=0, seed=seed)
    if position is None:
        return list(itertools.islice(first, n))
    second = synth.Sine(classification_function=1, seed=seed + 1)
    stream = synth.ConceptDriftStream(first, second, position=position, width=50, seed=3)
    return list(itertools.islice(stream, n))


def prequential(model, stream, start: int = 0) -> float:
    right = 0
    for i, (x, y) in enumerate(stream):
        if i >= start:
            right += model.predict_one(x) == y
        model.learn_one(x, y)
    return right / (len(stream) - start)


@pytest.mark.parametrize("covariance", ["arrowhead", "diagonal"])
def test_auto_forgetting_follows_a_reversed_concept(covariance):
    """A model that never forgets is too sure of the first concept to unlearn it (14% right
    after the reversal with the diagonal covariance, 57% with the arrowhead, whose centred
    features let it move further); one that sets its own forgetting notices its mistakes beyond
    those it expects and learns the second (above 90%)."""
    stream = sine(1000, 2500)
    never = prequential(river_cw.AROW(covariance=covariance, forgetting=0.0), stream, 1500)
    auto = river_cw.AROW(covariance=covariance, forgetting="auto")
    assert prequential(auto, stream, 1500) > 0.9 > 0.6 > never
    # every example once the model knows both labels, and none before
    assert len(stream) - 5 < auto._surprise[0] < len(stream)


@pytest.mark.parametrize("rule", RULES)
def test_where_nothing_surprises_the_model_auto_forgetting_changes_nothing(rule):
    """On a stationary stream the mistakes of a model that counts them (features as they are:
    ``centre=False``, text, one-hot) stay within what it expects: the rate stays 0 and the
    model is, to the bit, the one that never forgets (the lean path's numbers: one engine
    contract). (CW's arrowhead does not learn raw Sine, 39% right: it is surprised there, so
    CW takes its diagonal covariance, 96% right.)"""
    from tests.support.bits import assert_same

    stream = sine(None, 1500)
    options = {"covariance": "diagonal"} if rule is river_cw.CW else {"centre": False}
    auto, never = rule(forgetting="auto", **options), rule(forgetting=0.0, **options)
    for x, y in stream:
        assert auto._rate() == 0.0
        auto.learn_one(x, y)
        never.learn_one(x, y)
    assert len(stream) - 5 < auto._surprise[0] < len(stream) and 0.0 <= auto._surprise[1] < 0.2
    assert auto._log_score is None
    auto.forgetting, auto._surprise = 0.0, None  # all else is the same model
    assert_same(auto, never, stream[0][0])


@pytest.mark.parametrize("rule", [river_cw.AROW, river_cw.NHERD, river_cw.SCW])
def test_where_nothing_drifts_the_log_score_costs_no_accuracy(rule):
    """A centred model's log score also reads the misfit of a linear boundary to a curved one
    (raw Sine) and forgets now and then where nothing drifts (AROW on 8.5% of these examples):
    never before the model centres, and at no cost against the model that never forgets
    (AROW 95.0% against 94.5%)."""
    stream = sine(None, 1500)
    auto, never = rule(), rule(forgetting=0.0)
    right = {"auto": 0, "never": 0}
    for i, (x, y) in enumerate(stream):
        right["auto"] += auto.predict_one(x) == y
        right["never"] += never.predict_one(x) == y
        if not auto.centre_:
            assert auto._rate() == 0.0, i
        auto.learn_one(x, y)
        never.learn_one(x, y)
    assert auto.centre_ and right["auto"] >= right["never"]


def test_auto_forgetting_counts_a_sample_weight_as_that_many_examples():
    one, twice = river_cw.AROW(forgetting="auto"), river_cw.AROW(forgetting="auto")
    stream = sine(None, 80)
    for model in (one, twice):
        for x, y in stream[:-1]:
            model.learn_one(x, y)
    x, y = stream[-1]
    one.learn_one(x, y, w=1.0)
    twice.learn_one(x, y, w=2.0)
    assert twice._surprise[0] == one._surprise[0] + 1.0
    assert one._surprise[1] != twice._surprise[1] or one._surprise[2] != twice._surprise[2]


@settings(max_examples=examples(60), deadline=None)
@given(sparse_rows, st.sampled_from(RULES), st.sampled_from(["arrowhead", "diagonal"]))
def test_auto_forgetting_keeps_every_variance_within_its_prior_and_every_number_finite(
    stream, rule, covariance
):
    """Hostile magnitudes (1e-6 to 1e6, both signs), labels that contradict each other: the
    surprise is a share of mistakes, the rate at most `surprise.HIGHEST`, the variances within
    their priors, every number finite."""
    model = rule(covariance=covariance, forgetting="auto")
    prior, root_prior = model.initial_variance, model.intercept_variance
    for x, y in stream * 3:
        model.learn_one(x, y)
        _, e, q = model._surprise
        assert 0.0 <= e <= 1.0 and 0.0 <= q < 1.0  # q = 1 - the largest probability
        assert 0.0 <= surprise.rate(model._surprise) <= surprise.HIGHEST
    weights, variances = model.gaussian.block_views()
    for block in variances:
        for key, variance in block.items():
            bound = root_prior if key is INTERCEPT else prior
            assert 0.0 <= variance <= bound + ULPS * math.ulp(bound), key
    assert all(math.isfinite(w) for block in weights for w in block.values())
