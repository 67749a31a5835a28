"""benchmarks/centred_arrowhead.py, the prototype of the arrowhead in centred coordinates (issue
41): uncentred, it is the library's model (so that its table measures the centring alone), and
moving its centre leaves every margin as it was (the affine map it claims)."""

import random

import pytest

import river_cw
from benchmarks.centred_arrowhead import DenseArrowhead

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


def test_uncentred_the_prototype_learns_the_library_models_weights():
    library = river_cw.AROW(forgetting=0, calibrate=False)
    dense = DenseArrowhead(NAMES, None)
    for x, y in uncentred_stream(300, seed=1):
        library.learn_one(x, y)
        dense.learn_one(x, y)
        assert dense.mu[0] == pytest.approx(library.intercept, rel=1e-9, abs=1e-12)
        for i, name in enumerate(NAMES, 1):
            assert dense.mu[i] == pytest.approx(library.weights[name], rel=1e-9, abs=1e-12)


def test_moving_the_centre_keeps_every_margin():
    model = DenseArrowhead(NAMES, "all")
    stream = uncentred_stream(200, seed=2)
    probes = [x for x, _ in uncentred_stream(20, seed=3)]
    for x, y in stream[:100]:
        model.learn_one(x, y)
    for x, _ in stream[100:]:
        before = [model.margin(p) for p in probes]
        centre = model.centre.copy()
        model.move_centre(x)
        assert (model.centre != centre).any()
        assert [model.margin(p) for p in probes] == pytest.approx(before, rel=1e-12, abs=1e-12)


def test_a_feature_an_example_lacks_goes_back_to_zero_for_good_keeping_every_margin():
    model = DenseArrowhead(NAMES, "present")
    stream = uncentred_stream(120, seed=4)
    probes = [x for x, _ in uncentred_stream(20, seed=5)]
    for i, (x, y) in enumerate(stream):
        if i == 60:
            x = {k: v for k, v in x.items() if k != "c"}  # the first example without "c"
        model.learn_one(x, y)
        assert model.centre[2] != 0 if i < 60 else model.centre[2] == 0
        assert model.centre[0] != 0  # the others stay centred
    model = DenseArrowhead(NAMES, "present")  # the move back alone, against the margins
    for x, y in stream[:60]:
        model.learn_one(x, y)
    before = [model.margin(p) for p in probes]
    model.move_centre({k: v for k, v in stream[60][0].items() if k != "c"})
    assert model.centre[2] == 0 and not model.centred[2]
    assert [model.margin(p) for p in probes] == pytest.approx(before, rel=1e-12, abs=1e-12)
