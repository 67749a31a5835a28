"""benchmarks/centred_arrowhead.py, the prototype of the arrowhead in centred coordinates (issue
41): uncentred, it is the library's model, its forgetting included (so that its tables measure the
centring alone), and moving its centre leaves every margin as it was (the affine map it claims);
and benchmarks/drift.py's `LogScore`, the controller its last table chooses."""

import random

import numpy as np
import pytest

import river_cw
from benchmarks.centred_arrowhead import (
    Calibrated,
    CentredOnce,
    DenseArrowhead,
    Switching,
    arrowhead,
)
from benchmarks.drift import LogScore, Watched, rate_of
from tests.support.reference import arrowhead_projection

NAMES = ["a", "b", "c", "d"]


def uncentred_stream(n: int, seed: int) -> list:
    """Features on U[0, 1] and U[5, 6] (far from zero: where centring matters), a noisy
    threshold."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        x = {"a": rng.random(), "b": rng.random(), "c": 5 + rng.random(), "d": 5 + rng.random()}
        out.append((x, x["a"] + x["c"] - 5 + 0.2 * rng.gauss(0, 1) > 1))
    return out


def assert_the_same_weights(dense: DenseArrowhead, library) -> None:
    assert dense.mu[0] == pytest.approx(library.intercept, rel=1e-9, abs=1e-12)
    for i, name in enumerate(NAMES, 1):
        assert dense.mu[i] == pytest.approx(library.weights[name], rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_the_prototypes_projection_is_the_references(seed):
    rng = np.random.default_rng(seed)
    root = rng.normal(size=(6, 6))
    S = root @ root.T + 0.1 * np.eye(6)
    mu = rng.normal(size=6)
    expected = arrowhead_projection(mu, S, [0] * 6, "drop")
    found = arrowhead(mu, S)
    assert np.array_equal(found[0], expected[0])
    np.testing.assert_allclose(found[1], expected[1], rtol=1e-12, atol=1e-14)


def test_uncentred_the_prototype_learns_the_library_models_weights():
    library = river_cw.AROW(forgetting=0, calibrate=False, centre=False)
    dense = DenseArrowhead(NAMES, None)
    for x, y in uncentred_stream(300, seed=1):
        library.learn_one(x, y)
        dense.learn_one(x, y)
        assert_the_same_weights(dense, library)


def test_centred_once_the_prototype_learns_the_library_models_weights():
    """`CentredOnce` is the library's centring (`river_cw.centring`): the same centre at the
    200th example, then the same weights (shown raw), to 1e-9."""
    library = river_cw.AROW(forgetting=0, calibrate=False)
    dense = CentredOnce(NAMES)
    for x, y in uncentred_stream(400, seed=2):
        library.learn_one(x, y)
        dense.learn_one(x, y)
    assert library.centre_ == pytest.approx(dict(zip(NAMES, dense.centre)), rel=1e-12)
    raw = np.concatenate(([dense.mu[0] - dense.mu[1:] @ dense.centre], dense.mu[1:]))
    assert raw[0] == pytest.approx(library.intercept, rel=1e-9, abs=1e-12)
    for i, name in enumerate(NAMES, 1):
        assert raw[i] == pytest.approx(library.weights[name], rel=1e-9, abs=1e-12)


def test_switching_reads_todays_rule_until_it_centres_then_the_log_score():
    """Before the 200th example `Switching` forgets as today's rule says (the library's
    surprise); once centred, as the log score of its own reading says; sparse rows never
    centre."""
    model = Switching(NAMES)
    for x, y in uncentred_stream(199, seed=3):
        model.learn_one(x, y)
    assert not model.model.centre.any() and model.log_score.n == 0
    for x, y in uncentred_stream(100, seed=4):
        model.learn_one(x, y)
    assert model.model.centre.any() and model.log_score.n == 99
    sparse = Switching(NAMES)
    for x, y in uncentred_stream(300, seed=5):
        sparse.learn_one({k: v for k, v in x.items() if k != "a"} if y else x, y)
    assert not sparse.model.centre.any() and sparse.log_score.n == 0


def test_uncentred_the_prototype_forgets_as_the_library_does():
    """Rows that lack a feature now and then: forgetting then leaves the intercept's variance
    (the example does not touch every feature learned), which the others relax."""
    library = river_cw.AROW(forgetting=0.02, calibrate=False, centre=False)
    dense = DenseArrowhead(NAMES, None)
    dense.forgetting = 0.02
    rng = random.Random(6)
    for i, (x, y) in enumerate(uncentred_stream(300, seed=6)):
        if i % 3 == 0:
            x = {k: v for k, v in x.items() if k != rng.choice(NAMES)}
        library.learn_one(x, y)
        dense.learn_one(x, y)
        if len(library.classes_) < 2:  # the sign of a one-label model is its own
            continue
        assert_the_same_weights(dense, library)
    for x, _ in uncentred_stream(20, seed=8):  # the score's variance too (what is calibrated)
        xf = {**x, river_cw.INTERCEPT: 1.0}
        v = library.gaussian.score_covariance(xf)[0][0]
        assert dense.margin_and_variance(x)[1] == pytest.approx(v, rel=1e-9)


def learned(rule: str, examples: list) -> DenseArrowhead:
    model = DenseArrowhead(NAMES, rule)
    for x, y in examples:
        model.learn_one(x, y)
    return model


def margins(model: DenseArrowhead, seed: int) -> list:
    """The model's margins on 20 examples of the stream with this seed."""
    return [model.margin(x) for x, _ in uncentred_stream(20, seed)]


def test_moving_the_centre_keeps_every_margin():
    stream = uncentred_stream(200, seed=2)
    model = learned("all", stream[:100])
    for x, _ in stream[100:]:
        before = margins(model, seed=3)
        centre = model.centre.copy()
        model.move_centre(x)
        assert (model.centre != centre).any()
        assert margins(model, seed=3) == pytest.approx(before, rel=1e-12, abs=1e-12)


def test_a_feature_an_example_lacks_goes_back_to_zero_for_good_keeping_every_margin():
    stream = uncentred_stream(120, seed=4)
    model = DenseArrowhead(NAMES, "present")
    for i, (x, y) in enumerate(stream):
        if i == 60:
            x = {k: v for k, v in x.items() if k != "c"}  # the first example without "c"
        model.learn_one(x, y)
        assert model.centre[2] != 0 if i < 60 else model.centre[2] == 0
        assert model.centre[0] != 0  # the others stay centred
    model = learned("present", stream[:60])  # the move back alone, against the margins
    before = margins(model, seed=5)
    model.move_centre({k: v for k, v in stream[60][0].items() if k != "c"})
    assert model.centre[2] == 0 and not model.centred[2]
    assert margins(model, seed=5) == pytest.approx(before, rel=1e-12, abs=1e-12)


def test_under_dense_one_example_lacking_a_feature_uncentres_every_feature_keeping_every_margin():
    stream = uncentred_stream(80, seed=9)
    model = learned("dense", stream[:60])
    assert model.centred.all() and (model.centre != 0).all()
    before = margins(model, seed=10)
    model.move_centre({k: v for k, v in stream[60][0].items() if k != "b"})
    assert not model.centred.any() and (model.centre == 0).all()
    assert margins(model, seed=10) == pytest.approx(before, rel=1e-12, abs=1e-12)
    for x, y in stream[61:]:  # and for good
        model.learn_one(x, y)
        assert (model.centre == 0).all()


def test_the_calibrated_prototype_forgets_after_the_concept_turns_and_not_before():
    stream = uncentred_stream(1600, seed=7)
    turned = [(x, not y) for x, y in stream[800:]]
    model = Calibrated(NAMES, "all", LogScore())
    rates = []
    for x, y in stream[:800] + turned:
        model.learn_one(x, y)
        rates.append(model.model.forgetting)
    assert sum(f > 0 for f in rates[100:800]) < 0.05 * 700
    assert max(rates[800:900]) == LogScore().fmax


def calibrated_forecasts(n: int, seed: int, turned: bool = False):
    """Binary forecasts p of the label True, the label drawn with probability p (or 1 - p:
    forecasts the concept has left)."""
    rng = random.Random(seed)
    for _ in range(n):
        p = rng.uniform(0.05, 0.95)
        y = rng.random() < (1.0 - p if turned else p)
        yield {True: p, False: 1.0 - p}, y


def rates(controller, forecasts) -> list:
    return [rate_of(controller, proba, y) for proba, y in forecasts]


@pytest.mark.parametrize("seed", range(5))
def test_the_log_score_forgets_almost_nothing_while_the_forecasts_are_right_about_themselves(
    seed,
):
    """And less often than the library's rule (drift.py's prototype of it) on the same ones."""
    found = rates(LogScore(), calibrated_forecasts(5000, seed))
    library = rates(Watched(c=2.0, k=2.0), calibrated_forecasts(5000, seed))
    assert sum(f > 0 for f in found) < 0.02 * len(found)  # 0.06% to 1% in these five
    assert sum(f > 0 for f in found) < sum(f > 0 for f in library)


@pytest.mark.parametrize("seed", range(5))
def test_the_log_score_forgets_at_its_highest_rate_once_the_concept_has_left(seed):
    controller = LogScore()
    rates(controller, calibrated_forecasts(1000, seed))
    found = rates(controller, calibrated_forecasts(300, seed + 100, turned=True))
    assert found[-1] == controller.fmax
    assert all(f == controller.fmax for f in found[100:])
