"""The share of flipped labels in a binary model's probabilities (`river_cw.flips`): its EM step
against its definition, what it does to a model's probabilities (and not to its predictions),
and every feature that carries it (both engines and every covariance to the bit, batches, the
state format, mixing)."""

from __future__ import annotations

import copy
import math
import random
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from river import metrics

import river_cw
from river_cw import INTERCEPT, flips, state
from river_cw.covariances import COVARIANCES
from tests.models.test_centring import Row


def flipped_stream(n: int, share: float, seed: int = 0) -> list:
    """Two features, the label the sign of ``x0 - x1``, flipped with probability `share`."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        x = {"x0": rng.uniform(-1.0, 1.0), "x1": rng.uniform(-1.0, 1.0)}
        out.append((x, (x["x0"] > x["x1"]) != (rng.random() < share)))
    return out


@settings(max_examples=200, deadline=None)
@given(
    st.floats(1.0, 1e4),
    st.floats(0.0, 0.5),
    st.floats(0.0, 1.0),
    st.sampled_from([1.0, 0.5, 3.0]),
)
def test_a_step_is_online_em_of_the_mixture_weight(n, eps, right, w):
    """eps moves toward the posterior probability that the label was flipped, by w / (n + w),
    and stays within [0, 1/2]."""
    state_ = array("d", (n, eps))
    flips.observe(state_, right, w)
    p = eps + (1.0 - 2.0 * eps) * right
    if p == 0.0:  # no share and no chance of the label: nothing to learn from
        assert list(state_) == [n, eps]
        return
    posterior = eps * (1.0 - right) / p
    assert state_[0] == n + w
    assert state_[1] == pytest.approx(min(eps + w * (posterior - eps) / (n + w), 0.5), abs=1e-12)
    assert 0.0 <= state_[1] <= flips.MOST


def test_the_share_finds_the_flips_and_lowers_the_log_loss():
    """On a stream that flips 5% of its labels the share climbs from its prior toward them, and
    the log loss falls below that of the same model without it; predictions are the same."""
    model, plain = river_cw.AROW(), river_cw.AROW()
    plain._flips = None  # the model before the share of flips
    losses = {"with": metrics.LogLoss(), "without": metrics.LogLoss()}
    for x, y in flipped_stream(6000, 0.05):
        assert model.predict_one(x) == plain.predict_one(x)
        losses["with"].update(y, model.predict_proba_one(x))
        losses["without"].update(y, plain.predict_proba_one(x))
        model.learn_one(x, y)
        plain.learn_one(x, y)
    assert 0.01 < model.flip_share < 0.08  # a temperature fitted to the flips explains some
    assert losses["with"].get() < losses["without"].get() - 0.01
    assert model.weights == plain.weights and model.temperature == plain.temperature


def test_a_clean_stream_keeps_the_share_near_0():
    model = river_cw.AROW()
    for x, y in flipped_stream(6000, 0.0):
        model.learn_one(x, y)
    assert model.flip_share < flips.START_SHARE


def test_without_calibration_there_is_no_share():
    model = river_cw.AROW(calibrate=False)
    for x, y in flipped_stream(300, 0.05):
        model.learn_one(x, y)
    assert model._flips is None and model.flip_share == 0.0


def binary_examples(stream: list) -> int:
    """The examples a model learns while it knows two labels: after the second's first."""
    first = next(i for i, (_, y) in enumerate(stream) if y != stream[0][1])
    return len(stream) - first - 1


@pytest.mark.parametrize("covariance", ["arrowhead", "diagonal", "full"])
def test_both_engines_and_the_general_path_step_the_share_to_the_bit(covariance):
    """The compiled lean path (the EM step in C), the general path (a dict subclass) and, for
    the default arrowhead, the pure-Python engine give the same share, and the same
    probabilities one by one and in batches."""
    compiled, general = river_cw.AROW(covariance=covariance), river_cw.AROW(covariance=covariance)
    models = [compiled, general]
    if covariance == "arrowhead":
        reference = river_cw.AROW()
        reference._gaussian = COVARIANCES["arrowhead"].reference(1.0, INTERCEPT, 100.0)
        models.append(reference)
    stream = flipped_stream(600, 0.1, seed=3)
    for x, y in stream:
        compiled.learn_one(x, y)
        general.learn_one(Row(x), y)
        if len(models) == 3:
            models[2].learn_one(x, y)
    assert all(list(model._flips) == list(compiled._flips) for model in models)
    assert compiled._flips[0] == flips.START_COUNT + binary_examples(stream)
    xs = [x for x, _ in stream[:50]]
    probas = [compiled.predict_proba_one(x) for x in xs]
    assert all([model.predict_proba_one(x) for x in xs] == probas for model in models)
    assert compiled.predict_proba_many(xs) == probas


def test_a_batch_steps_the_share_as_the_loop_does():
    stream = flipped_stream(800, 0.1, seed=4)
    batched, looped = river_cw.AROW(), river_cw.AROW()
    batched.learn_many([x for x, _ in stream], [y for _, y in stream])
    for x, y in stream:
        looped.learn_one(x, y)
    assert list(batched._flips) == list(looped._flips)


def test_the_state_format_carries_the_share_and_fills_it_in_for_older_states():
    model = river_cw.AROW()
    for x, y in flipped_stream(300, 0.1):
        model.learn_one(x, y)
    restored = state.loads(state.dumps(model))
    assert list(restored._flips) == list(model._flips)
    older = copy.deepcopy(model)
    older._flips = None  # as a state written before the share was
    assert list(state.loads(state.dumps(older))._flips) == list(flips.start())
    stranger = river_cw.AROW(calibrate=False)
    stranger.learn_one({"x0": 1.0}, True)
    stranger._flips = flips.start()
    with pytest.raises(ValueError, match="flipped labels belongs to a calibrating model"):
        state.loads(state.dumps(stranger))


def test_combine_mixes_the_share_by_the_examples_each_member_saw():
    members = [river_cw.AROW(), river_cw.AROW()]
    for member, (n, share) in zip(members, ((400, 0.1), (1200, 0.0))):
        for x, y in flipped_stream(n, share, seed=n):
            member.learn_one(x, y)
    mixed = river_cw.combine(members)
    assert list(mixed._flips) == list(flips.mix([m._flips for m in members]))
    low, high = sorted(m.flip_share for m in members)
    assert low < mixed.flip_share < high
    gains = [m._flips[0] - flips.START_COUNT for m in members]
    assert math.isclose(mixed._flips[0], flips.START_COUNT + sum(gains))
