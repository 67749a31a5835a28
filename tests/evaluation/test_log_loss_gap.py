"""benchmarks/log_loss_gap.py's prototypes: each is the library at its zero setting, and the
link's online fit descends its loss."""

from __future__ import annotations

import math
from array import array

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import ndtr

from benchmarks import log_loss_gap as gap
from river_cw import calibration, labels, surprise
from tests.conftest import examples

FINITE = st.floats(-1e3, 1e3, allow_nan=False)


@settings(max_examples=examples(200), deadline=None)
@given(a=st.floats(0.05, 20.0), H=st.floats(0.1, 1e4), g=FINITE, h=st.floats(0.0, 1e3))
def test_a_curvature_that_never_forgets_is_the_librarys_step(a, H, g, h):
    ours, library = [a, H], [a, H]
    gap.decaying_step(0.0)(ours, g, h, 1.0)
    calibration._take_step(library, g, h, 1.0)
    assert ours == library


@settings(max_examples=examples(200), deadline=None)
@given(
    n=st.floats(0.0, 1e4),
    loss=st.floats(0.0, 5.0),
    entropy=st.floats(0.0, 0.7),
    variance=st.floats(0.0, 2.0),
)
def test_the_librarys_floor_is_the_librarys_rate(n, loss, entropy, variance):
    state = array("d", (1.0, 1.0, n, loss, entropy, variance))
    assert gap.floored_rate(surprise.LOG_SCORE_FLOOR)(state) == surprise.log_score_rate(state)


def test_the_certain_rule_is_the_one_label_answer_before_the_change():
    assert gap.certain([True]) == [True] and labels.predicted_labels([True]) == [True, False]


def test_the_online_link_starts_at_the_models_probabilities_and_lowers_a_flipped_streams_loss():
    """On margins whose labels are flipped 5% of the time, the fitted link's loss falls below
    the probit's: it learns a c above 1 and an eps near the flips' share."""
    rng = np.random.default_rng(1)
    z = rng.normal(0.0, 2.0, 20000)
    y = rng.random(20000) < ndtr(2.0 * z)
    flipped = rng.random(20000) < 0.05
    y = np.where(flipped, ~y, y)
    loss, c, eps = gap.online_link(z, y)
    assert loss < gap.log_loss(ndtr(z), y) - 0.05
    assert c > 1.3 and 0.02 < eps < 0.08
    first, _, _ = gap.online_link(z[:1], y[:1])
    assert math.isclose(first, gap.log_loss(ndtr(z[:1]), y[:1]), rel_tol=0.01)  # eps 0.001


def test_online_em_of_the_flips_share_finds_the_flips_and_stays_at_0_from_0():
    """Flips at 5% on calibrated margins: the EM's loss falls below the probit's; from a prior
    share of 0 (EM's fixed point) it is the probit's loss, to rounding."""
    rng = np.random.default_rng(2)
    z = rng.normal(0.0, 2.0, 20000)
    y = rng.random(20000) < ndtr(z)
    y = np.where(rng.random(20000) < 0.05, ~y, y)
    probit = gap.log_loss(ndtr(z), y)
    assert gap.online_flip_share(z, y, 0.01, 100.0) < probit - 0.02
    assert math.isclose(gap.online_flip_share(z, y, 0.0, 100.0), probit, rel_tol=1e-6)
