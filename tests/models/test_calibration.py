"""calibrate=True: a temperature of the standardised margins, fitted online on the progressive
log loss (`river_cw.calibration`, shared with voted RDA)."""

from __future__ import annotations

import copy
import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import river_cw
from river_cw import calibration


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
    p = proba.get(y, 0.0)
    return -math.log(p) if p > 0.0 else math.inf


@pytest.mark.parametrize(
    "covariance, labels",
    [("diagonal", (False, True)), ("full", (False, True)), ("diagonal", ("a", "b", "c"))],
)
def test_the_temperature_is_the_grid_minimiser_of_the_progressive_log_loss(labels, covariance):
    """Brute force: every candidate temperature's log loss on the predictions made just before
    each update; the model's temperature is the least (ties to 1 first)."""
    model = river_cw.AROW(calibrate=True, covariance=covariance, diagonal="project")
    totals = np.zeros(len(calibration.TEMPERATURES))
    for x, y in noisy_stream(1, n=80, labels=labels):
        if len(model.classes_) > 1:  # a new label is scored once it has its (empty) block
            probe = model
            if y not in model.classes_:
                probe = copy.deepcopy(model)
                probe._register(y)
            recorded = probe._calibration
            for i, a in enumerate(calibration.TEMPERATURES):
                probe._calibration = np.where(np.arange(len(totals)) == i, -np.inf, 0.0)
                assert probe.temperature == a
                totals[i] += log_loss(probe.predict_proba_one(x), y)
            probe._calibration = recorded
        model.learn_one(x, y)
    # where a probability underflowed to 0 the brute force cannot say; elsewhere it agrees
    exact = np.isfinite(totals)
    assert exact[: len(exact) // 2].all()
    chosen = int(np.flatnonzero(model.temperature == calibration.TEMPERATURES)[0])
    assert totals[chosen] <= totals[exact].min() * (1 + 1e-9)  # the least, up to rounding
    recorded = model._calibration - calibration.start(prefer=1.0)
    # (the brute force goes through 1 - p, which loses digits once p nears 1)
    np.testing.assert_allclose(recorded[exact], totals[exact], rtol=1e-5, atol=1e-9)


def test_calibration_lowers_the_log_loss_under_label_noise():
    plain, calibrated = river_cw.NHERD(), river_cw.NHERD(calibrate=True)
    losses = {id(plain): 0.0, id(calibrated): 0.0}
    for x, y in noisy_stream(2, n=1500):
        for model in (plain, calibrated):
            if len(model.classes_) == 2:
                losses[id(model)] += log_loss(model.predict_proba_one(x), y)
            model.learn_one(x, y)
    assert losses[id(calibrated)] < 0.5 * losses[id(plain)]
    assert calibrated.temperature < 1.0


def test_calibration_never_changes_predictions_and_is_off_by_default():
    plain, calibrated = river_cw.AROW(), river_cw.AROW(calibrate=True)
    for x, y in noisy_stream(3, n=300):
        assert plain.predict_one(x) == calibrated.predict_one(x)
        plain.learn_one(x, y)
        calibrated.learn_one(x, y)
    assert plain.temperature == 1.0 and plain.weights == calibrated.weights
    with pytest.raises(ValueError, match="calibrate"):
        river_cw.AROW(calibrate="yes")
    loaded = pickle.loads(pickle.dumps(calibrated))
    assert loaded.temperature == calibrated.temperature


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
