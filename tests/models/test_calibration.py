"""Calibration: the Gaussian classifiers' Newton temperature on ``Phi(a m / sqrt(v + r))`` (on by
default), and voted RDA's grid of temperatures (`river_cw.calibration`)."""

from __future__ import annotations

import copy
import json
import math
import pathlib
import pickle
from array import array

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import river_cw
from river_cw import calibration, probabilities, state
from tests.support.bits import bits

RULES = [river_cw.AROW, river_cw.CW, river_cw.NHERD, river_cw.SCW, river_cw.SOP]
DATA = pathlib.Path(__file__).parent / "data"


def noisy_stream(seed, n=400, labels=(False, True), noise=0.3):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(len(labels), 5))
    for _ in range(n):
        x = rng.normal(size=5)
        z = int(np.argmax(W @ x))
        if rng.random() < noise:
            z = int(rng.integers(len(labels)))
        yield {f"f{j}": float(v) for j, v in enumerate(x)}, labels[z]


def log_loss(proba, y):
    """The log loss as river's `LogLoss` and `CrossEntropy` take it: p clipped to 1e-15."""
    return -math.log(max(proba.get(y, 0.0), 1e-15))


def progressive_log_loss(model, stream) -> float:
    total = 0.0
    for x, y in stream:
        if len(model.classes_) > 1 and y in model.classes_:
            total += log_loss(model.predict_proba_one(x), y)
        model.learn_one(x, y)
    return total


# -- the Newton step ------------------------------------------------------------------------


def reference_loss(a: float, margins: list[float]) -> float:
    """The cumulative log loss of temperature a on standardised margins of the label."""
    return -math.fsum(probabilities.normal_log_cdf(a * s) for s in margins)


def test_the_newton_temperature_nears_the_best_temperature_in_hindsight():
    """On a stationary stream of margins, one Newton step per example ends where the loss of
    the whole stream is least (found by a fine grid), within a percent of that loss."""
    rng = np.random.default_rng(0)
    margins = list(3.0 * rng.normal(1.0, 1.0, size=4000))  # overconfident: best a < 1
    temperature = [1.0, 1.0]
    for s in margins:
        calibration.newton_step(temperature, s, 1.0)
    grid = np.linspace(0.01, 2.0, 400)
    best = min(grid, key=lambda a: reference_loss(a, margins))
    assert abs(temperature[0] - best) < 0.05
    assert reference_loss(temperature[0], margins) <= 1.01 * reference_loss(best, margins)


def test_a_weight_counts_the_example_that_many_times_and_one_is_the_unweighted_step():
    once, weighted, twice = [1.0, 1.0], [1.0, 1.0], [1.0, 1.0]
    calibration.newton_step(once, -0.7, 1.0)
    calibration.newton_step(weighted, -0.7, 2.0)
    calibration.newton_step(twice, -0.7, 1.0)
    calibration.newton_step(twice, -0.7, 1.0)
    assert weighted[1] > once[1] and weighted[0] < once[0]
    assert math.isclose(weighted[0], twice[0], rel_tol=0.2)


@settings(max_examples=300, deadline=None)
@given(
    s=st.floats(allow_nan=True, allow_infinity=True),
    a=st.floats(calibration.LOWEST, calibration.HIGHEST),
    H=st.floats(1.0, 1e300),
    w=st.floats(1e-300, 1e300),
)
def test_the_step_stays_in_range_and_a_step_beyond_float64_changes_nothing(s, a, H, w):
    temperature = [a, H]
    calibration.newton_step(temperature, s, w)
    assert calibration.LOWEST <= temperature[0] <= calibration.HIGHEST
    assert temperature[1] >= H or temperature == [a, H]
    assert math.isfinite(temperature[1])


@pytest.mark.parametrize("z", [-1e300, -40.0, -30.0, -29.9, -3.0, 0.0, 2.0, 40.0, 1e300])
def test_the_inverse_mills_ratio_is_phi_over_Phi(z):
    if -30.0 < z < 30.0:
        phi = math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
        Phi = 0.5 * math.erfc(-z / math.sqrt(2.0))
        assert math.isclose(calibration.inverse_mills(z), phi / Phi, rel_tol=1e-12)
    value = calibration.inverse_mills(z)
    assert value >= 0.0 and (z > 0 or value >= -z)  # lambda(z) > max(0, -z)


# -- the models ----------------------------------------------------------------------------


@pytest.mark.parametrize("cls", RULES)
def test_calibration_is_on_by_default_and_lowers_the_log_loss_under_label_noise(cls):
    """Below the uncalibrated probabilities' log loss, and below log 2 (a coin's) per example,
    where the uncalibrated ones of AROW, CW, NHERD and SCW are far above it (2.3 to 12.4)."""
    plain, calibrated = cls(calibrate=False), cls()
    assert calibrated.calibrate and calibrated.temperature == 1.0
    n = 1500
    before = progressive_log_loss(plain, noisy_stream(2, n=n))
    after = progressive_log_loss(calibrated, noisy_stream(2, n=n))
    assert after < before and after / n < 0.68
    assert calibrated.temperature != 1.0 and plain.temperature == 1.0
    assert plain.margin_noise == 0.0
    assert calibrated.margin_noise == (0.0 if cls is river_cw.SOP else 1.0)


@pytest.mark.parametrize("labels", [(False, True), ("a", "b", "c")])
@pytest.mark.parametrize("covariance", ["arrowhead", "diagonal", "full"])
def test_calibration_never_changes_the_weights_or_the_predictions(covariance, labels):
    diagonal = "drop" if covariance == "arrowhead" else "project"
    """The forgetting the calibration sets apart (``forgetting=0``): with ``"auto"`` the
    calibrated probabilities decide when the model forgets, by design."""
    plain = river_cw.AROW(calibrate=False, forgetting=0, covariance=covariance, diagonal=diagonal)
    calibrated = river_cw.AROW(forgetting=0, covariance=covariance, diagonal=diagonal)
    for x, y in noisy_stream(3, n=300, labels=labels):
        assert plain.predict_one(x) == calibrated.predict_one(x)
        proba = calibrated.predict_proba_one(x)
        if proba:
            assert calibrated.predict_one(x) == max(proba, key=proba.get)
        plain.learn_one(x, y)
        calibrated.learn_one(x, y)
    assert repr(plain.weights) == repr(calibrated.weights)
    assert calibrated.temperature != 1.0
    with pytest.raises(ValueError, match="calibrate"):
        river_cw.AROW(calibrate="yes")


def test_the_binary_probability_is_the_calibrated_margin():
    model = river_cw.AROW()
    for x, y in noisy_stream(4, n=200):
        model.learn_one(x, y)
    x = {"f0": 0.4, "f1": -1.2}
    z = model._features(model._centring.centred(x) if model.centre_ else x)  # its coordinates
    m = model.gaussian.scores(z)[0]
    v = model.gaussian.score_covariance(z)[0, 0]
    p = 0.5 * math.erfc(-(model.temperature * m / math.sqrt(v + 1.0)) / math.sqrt(2.0))
    eps = model.flip_share  # river_cw.flips
    assert bits(model.predict_proba_one(x)[True]) == bits(eps + (1.0 - 2.0 * eps) * p)


def test_the_step_reads_the_margin_before_the_update():
    """The general path's temperature after one example is the Newton step on the margin the
    model had for it: the compiled lean path gives the same to the bit."""
    model = river_cw.AROW()
    model.learn_one({"a": 1.0}, False)
    model.learn_one({"a": -1.0}, True)
    x, y = {"a": 2.0, "b": 1.0}, False
    features = model._features(x)
    m = -model.gaussian.scores(features)[0]  # the label's margin: False is the negative one
    v = model.gaussian.score_covariance(features)[0, 0]
    expected = array("d", model._temperature)
    calibration.newton_step(expected, m / math.sqrt(v + 1.0), 1.0)
    model.learn_one(x, y)
    assert [bits(t) for t in model._temperature] == [bits(t) for t in expected]


def test_a_multiclass_model_steps_on_its_pairwise_probabilities():
    model = river_cw.AROW()
    stream = list(noisy_stream(5, n=400, labels=("a", "b", "c")))
    for x, y in stream[:300]:
        model.learn_one(x, y)
    before = model.temperature
    x, y = stream[300]
    features = model._features(model._centring.centred(x) if model.centre_ else x)
    scores = model.gaussian.scores(features)
    cov = model.gaussian.score_covariance(features).tolist()
    best, second = probabilities.top_two(scores)
    t = probabilities.pairwise(scores, cov[best][best] + cov[second][second] + 1.0)
    expected = list(model._temperature)
    calibration.newton_step_multiclass(expected, t, model.classes_.index(y), 1.0)
    model.learn_one(x, y)
    assert list(model._temperature) == expected and before != 1.0


@pytest.mark.parametrize("cls", RULES)
def test_learn_many_calibrates_as_the_learn_one_loop(cls):
    import pandas as pd

    stream = list(noisy_stream(6, n=300))
    one, many = cls(), cls()
    for x, y in stream:
        one.learn_one(x, y)
    X = pd.DataFrame([x for x, _ in stream])
    y = pd.Series([y for _, y in stream])
    for start in range(0, len(stream), 64):
        many.learn_many(X.iloc[start : start + 64], y.iloc[start : start + 64])
    assert [bits(t) for t in many._temperature] == [bits(t) for t in one._temperature]
    assert pickle.dumps(many) == pickle.dumps(one)


def test_a_calibrating_model_that_turns_multiclass_in_a_batch_calibrates_as_learn_one():
    import pandas as pd

    stream = list(noisy_stream(7, n=200, labels=("a", "b", "c")))
    one, many = river_cw.AROW(), river_cw.AROW()
    for x, y in stream:
        one.learn_one(x, y)
    many.learn_many(pd.DataFrame([x for x, _ in stream]), pd.Series([y for _, y in stream]))
    assert list(many._temperature) == list(one._temperature)


# -- state, copies, mixing -------------------------------------------------------------------


def test_the_temperature_survives_pickles_copies_and_the_state_format():
    model = river_cw.NHERD()
    for x, y in noisy_stream(8, n=200):
        model.learn_one(x, y)
    for twin in (
        pickle.loads(pickle.dumps(model)),
        copy.deepcopy(model),
        state.loads(state.dumps(model)),
    ):
        assert list(twin._temperature) == list(model._temperature)
        assert twin._temperature is not model._temperature
        x, y = {"f0": 1.0, "f2": -0.5}, True
        twin.learn_one(x, y)  # a copy learns on its own
    assert list(twin._temperature) != list(model._temperature)


def test_a_format_1_state_keeps_its_calibration_as_the_grid_s_best_temperature():
    """tests/models/data/state_format_1.json: states written by the previous version, whose
    calibration was a grid of running losses: they load with its best temperature, a curvature
    of 1, and every weight as it was; an uncalibrated one stays uncalibrated."""
    fixture = json.loads((DATA / "state_format_1.json").read_text())
    for name, entry in fixture["models"].items():
        model = state.loads(bytes.fromhex(entry["state"]))
        assert {k: v.hex() for k, v in model.weights.items()} == entry["weights"]
        assert model.temperature == entry["temperature"]
        if name == "AROW()":
            assert not model.calibrate and model._temperature is None
        else:
            assert model.calibrate and list(model._temperature) == [entry["temperature"], 1.0]
        model.learn_one({"a": 1.0}, True)  # and it goes on learning


def test_mixing_delta_rule_counts_each_member_s_curvature_once():
    start = river_cw.AROW()
    for x, y in noisy_stream(9, n=100):
        start.learn_one(x, y)
    members = [copy.deepcopy(start) for _ in range(3)]
    shards = list(noisy_stream(10, n=300))
    for i, (x, y) in enumerate(shards):
        members[i % 3].learn_one(x, y)
    mixed = river_cw.combine(members, base=start)
    a0, H0 = start._temperature
    H = H0 + sum(m._temperature[1] - H0 for m in members)
    aH = a0 * H0 + sum(m._temperature[0] * m._temperature[1] - a0 * H0 for m in members)
    assert math.isclose(mixed._temperature[1], H) and math.isclose(mixed.temperature, aH / H)
    # copies of an unchanged model mix to the model; one changed member is itself
    same = river_cw.combine([copy.deepcopy(start), copy.deepcopy(start)], base=start)
    assert list(same._temperature) == list(start._temperature)
    alone = river_cw.combine([members[0], copy.deepcopy(start)], base=start)
    assert list(alone._temperature) == list(members[0]._temperature)
    assert river_cw.combine([river_cw.AROW(calibrate=False)])._temperature is None


# -- voted RDA's grid ------------------------------------------------------------------------


def two_label_losses(z, label):
    """The log loss of softmax(a z) for two labels, per temperature a, column by column: the
    general two-label computation of `calibration.softmax_losses`, written out."""
    za = [z[0] * calibration.TEMPERATURES, z[1] * calibration.TEMPERATURES]
    top, gap = np.maximum(za[0], za[1]), np.abs(za[1] - za[0])
    with np.errstate(all="ignore"):
        log_total = np.where(gap < 40.0, np.log(1.0 + np.exp(-gap)), 0.0)
        return top + log_total - za[label]


scores = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 5e-324, -5e-324, 1e-300, 1e300, -1e300, 40.0, -39.9]),
)


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(st.tuples(scores, st.integers(0, 1)), min_size=1, max_size=6),
    first=st.sampled_from([0.0, -0.0, 1.5]),
)
def test_binary_logits_give_the_two_label_numbers_bit_for_bit(rows, first):
    """softmax_losses takes a shortcut for a binary model's logits (0, s), whose first column
    is +0 at every temperature; it gives the general computation's numbers, to the bit, for
    every finite loss (first = -0.0 or 1.5: the general computation itself)."""
    z = np.array([[first, s] for s, _ in rows])
    labels = np.array([label for _, label in rows])
    losses = calibration.softmax_losses(z, labels)
    for row, label, got in zip(z, labels, losses):
        want = two_label_losses(row, label)
        finite = np.isfinite(want)
        assert (np.isfinite(got) == finite).all()
        assert got[finite].tobytes() == want[finite].tobytes()


def test_the_cost_benchmark_measures_every_rule_on_two_labels_and_more(capsys):
    """benchmarks/calibration_cost.py, quickly: a row per stream and rule, with positive times
    (the timings themselves are the maintainers' notes, not a test's)."""
    from benchmarks import calibration_cost
    from tests.conftest import SHARED_DATA, unavailable

    if not SHARED_DATA.exists():
        unavailable(f"{SHARED_DATA} is not here: the benchmark reads the shared data")
    calibration_cost.main(["--limit", "40", "--repeat", "1"])
    rows = [line.split("|")[1:-1] for line in capsys.readouterr().out.splitlines()[3:]]
    assert [(s.strip(), r.strip()) for s, r, *_ in rows] == [
        (stream, rule) for stream in calibration_cost.STREAMS for rule in calibration_cost.RULES
    ]
    assert all(float(c) > 0 for *_, default, plain, ratio in rows for c in (default, plain))
