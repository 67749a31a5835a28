"""`streams.evaluate.noise.LabelNoise`: uniform and class-conditional label noise at the rates
asked, reproducible by seed."""

import collections
import math

import pytest

from streams.evaluate.noise import LabelNoise


def observed_rate(noise, labels):
    return sum(noise(y) != y for y in labels) / len(labels)


@pytest.mark.parametrize("p", [0.0, 0.05, 0.1, 0.3, 0.5])
def test_uniform_noise_rate_matches_p(p):
    n = 20_000
    labels = [i % 2 == 0 for i in range(n)]
    noise = LabelNoise(p, classes=[True, False], seed=7)
    rate = observed_rate(noise, labels)
    assert abs(rate - p) <= 4 * math.sqrt(p * (1 - p) / n) + 1e-12
    assert noise.n_flipped == round(rate * n) and noise.n_seen == n


def test_flips_are_uniform_over_the_other_classes():
    noise = LabelNoise(0.6, classes="abc", seed=3)
    flipped = collections.Counter(noise("a") for _ in range(30_000))
    assert flipped.keys() == {"a", "b", "c"}
    assert abs(flipped["a"] / 30_000 - 0.4) < 0.015
    assert abs(flipped["b"] / (flipped["b"] + flipped["c"]) - 0.5) < 0.015


def test_class_conditional_rates():
    noise = LabelNoise({"spam": 0.3, "ham": 0.05}, classes=["ham", "spam", "other"], seed=11)
    n = 20_000
    for label, p in [("spam", 0.3), ("ham", 0.05), ("other", 0.0)]:
        rate = observed_rate(noise, [label] * n)
        assert abs(rate - p) <= 4 * math.sqrt(p * (1 - p) / n) + 1e-12
    assert noise.name == "spam 30%, ham 5%"


def test_same_seed_same_flips_and_higher_rates_flip_a_superset():
    labels = [i % 3 for i in range(2_000)]
    flips = {}
    for p in (0.1, 0.3):
        first, again = (LabelNoise(p, classes=[0, 1, 2], seed=5) for _ in range(2))
        noisy = [first(y) for y in labels]
        assert [again(y) for y in labels] == noisy
        flips[p] = {i for i, (y, z) in enumerate(zip(labels, noisy)) if y != z}
    assert flips[0.1] < flips[0.3]


def test_without_classes_flips_among_the_classes_seen():
    noise = LabelNoise(1.0, seed=0)
    assert noise("a") == "a"  # nothing else known yet
    assert noise("b") == "a"
    assert noise("a") == "b"


def test_errors():
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        LabelNoise(1.5)
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        LabelNoise({"a": -0.1})
    with pytest.raises(ValueError, match="not one of the classes"):
        LabelNoise(0.1, classes=["a", "b"])("c")


@pytest.mark.parametrize("p", [0.0, {"a": 0.0, "b": 0.0}])
def test_a_noise_that_flips_nothing_checks_its_labels_and_draws_nothing(p):
    noise = LabelNoise(p, classes=["a", "b"], seed=4)
    state = noise._rng.getstate()
    assert [noise(y) for y in "abba"] == list("abba") and noise.n_seen == 4
    assert noise._rng.getstate() == state  # no draw: the evaluation's cost of no noise
    with pytest.raises(ValueError, match="not one of the classes"):
        noise("c")
