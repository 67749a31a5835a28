"""A binary model's weights score its positive label, whichever label arrived first.

`river_cw.labels` orders any two labels; a binary model holds ``classes_ = [negative, positive]``
and negates itself when the first label it learned turns out to be the positive one
(`LinearClassifier._register`). The rules are odd in ``(w, y)``, so that model is, to the bit, the
one that knew the order from the start: checked here by swapping the labels' names (the weights
change sign exactly) and by swapping the first two examples of a stream (the weights do not change).
`tests/engines/test_rerun_on_other_engine.py` runs this module again on the other engine.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import river_cw
from river_cw.labels import order_key
from tests.conftest import examples
from tests.models.test_predict_is_most_probable import CONFIGS, name

# the pairs of the docstring of river_cw.labels, given as (smaller, larger)
PAIRS = [
    (False, True),
    (0, 1),
    (-1, 1),
    ("-1", "+1"),
    ("0", "1"),
    ("ham", "spam"),
    ("negative", "positive"),
    ("False", "True"),
    ("B", "b"),
    (1, "a"),
    ("1", 2),
]


@pytest.mark.parametrize(("smaller", "larger"), PAIRS)
def test_the_documented_order(smaller, larger):
    assert order_key(smaller) < order_key(larger)
    for first, second in ((smaller, larger), (larger, smaller)):
        model = river_cw.AROW()
        model.learn_one({"a": 1.0}, first)
        assert model.positive_label is None
        model.learn_one({"b": 1.0}, second)
        assert model.classes_ == [smaller, larger] and model.positive_label == larger
        assert model.weights["a" if first == larger else "b"] > 0
        assert model.predict_one({"a": 1.0}) == first


def learned(model, stream):
    model = model.clone()
    for x, y in stream:
        model.learn_one(x, y)
    return model


def assert_opposite(a, b) -> None:
    """b is a with the labels' sign swapped: every weight and the intercept negated exactly."""
    assert a.weights.keys() == b.weights.keys()
    assert all(b.weights[f] == -w for f, w in a.weights.items())
    assert b.intercept == -a.intercept
    if hasattr(a, "variances"):
        assert a.variances == b.variances


@pytest.mark.parametrize("model", CONFIGS, ids=name)
@settings(max_examples=examples(5), deadline=None)
@given(seed=st.integers(0, 2**32 - 1), pair=st.sampled_from(PAIRS), n=st.integers(1, 40))
def test_swapping_the_labels_names_negates_the_weights(model, seed, pair, n):
    """The same examples, each label renamed as the other: the first label seen is the positive
    one in one stream and the negative one in the other."""
    rng = random.Random(seed)
    stream = [
        ({f"f{j}": rng.gauss(0, 1) for j in range(5) if rng.random() < 0.7}, rng.choice(pair))
        for _ in range(n)
    ]
    swap = {pair[0]: pair[1], pair[1]: pair[0]}
    a, b = learned(model, stream), learned(model, [(x, swap[y]) for x, y in stream])
    if len(a.classes_) < 2:  # one label, learned as y = -1 by both: the same model
        assert a.weights == b.weights and a.positive_label is b.positive_label is None
        return
    assert a.classes_ == b.classes_ == list(pair) and a.positive_label == pair[1]
    assert_opposite(a, b)


# voted RDA's average and vote weigh each predictor by the examples it survived: the order of the
# first two examples matters to them in itself (the swap above holds them to the order's promise)
COMMUTING = [m for m in CONFIGS if getattr(m, "prediction", "last") == "last"]


@pytest.mark.parametrize("model", COMMUTING, ids=name)
@pytest.mark.parametrize(("negative", "positive"), [(False, True), ("ham", "spam"), ("-1", "+1")])
def test_labels_first_seen_in_either_order_give_the_same_weights(model, negative, positive):
    """Two streams that differ in their first two examples only, one of each label: the labels
    arrive in opposite orders. Their updates commute when they share no feature, so the models are
    equal, bit for bit (a zero may differ in sign). Not so with an intercept, a feature every
    example shares (the second update then sees the first), nor for voted RDA's average and vote,
    which weigh each predictor by the examples it survived (the first predictor is another)."""
    if getattr(model, "learn_intercept", False):
        model = model.clone({"learn_intercept": False})
    rng = random.Random(7)
    rest = [
        ({f"f{j}": rng.gauss(0, 1) for j in range(4)}, rng.choice([negative, positive]))
        for _ in range(30)
    ]
    one, other = ({"p": 1.0, "q": -0.5}, positive), ({"n": 2.0}, negative)
    a = learned(model, [one, other, *rest])
    b = learned(model, [other, one, *rest])
    assert a.classes_ == b.classes_ == [negative, positive]
    assert a.weights == b.weights and a.intercept == b.intercept
    assert [a.predict_proba_one(x) for x, _ in rest] == [b.predict_proba_one(x) for x, _ in rest]


def test_set_gaussian_takes_two_labels_in_their_order():
    model = river_cw.AROW()
    model.learn_one({"a": 1.0}, "spam")
    model.learn_one({"b": 1.0}, "ham")
    fresh = river_cw.AROW()
    with pytest.raises(ValueError, match=r"\[negative, positive\]"):
        fresh.set_gaussian(model.gaussian, ["spam", "ham"])
    fresh.set_gaussian(model.gaussian, ["ham", "spam"])
    assert fresh.weights == model.weights and fresh.positive_label == "spam"


def test_inspect_says_which_label_positive_weights_favour():
    from streams.cli.inspect import describe
    from streams.kafka.learner import PartitionState

    model = river_cw.AROW()
    model.learn_one({"meeting": 1.0}, "ham")
    model.learn_one({"voicemail": 1.0}, "spam")
    text = describe(PartitionState("t", 0, model), 3)
    assert "classes: ['ham', 'spam']; positive weights favour 'spam'" in text
    assert "'voicemail': +" in text and "'meeting': -" in text
