"""The log score that sets a centred model's forgetting (`river_cw.surprise`, issue 41): its steps
against their definition, when a model reads it (centred and binary) and when not (deciding,
never centring, multi-class), and every feature that carries it (both engines to the bit, the
compiled one-call path, batches, the state format, mixing)."""

from __future__ import annotations

import copy
import math
import random
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse, stats

import river_cw
from river_cw import INTERCEPT, state, surprise
from river_cw.centring import WARM_UP
from river_cw.covariances import COVARIANCES
from river_cw.text import TextClassifier
from tests.models.test_centring import Row, dense_stream

FLIP = WARM_UP + 200  # the drifting stream's concept reverses here


def drifting(n: int, seed: int = 0) -> list:
    """`dense_stream` whose labels are reversed from the FLIP-th example on."""
    return [(x, y != (i >= FLIP)) for i, (x, y) in enumerate(dense_stream(n, seed))]


def reference_model():
    """`AROW()` on the pure-Python engine."""
    model = river_cw.AROW()
    model._gaussian = COVARIANCES["arrowhead"].reference(1.0, INTERCEPT, 100.0)
    return model


def calibration_state(model) -> tuple:
    return tuple(
        None if a is None else list(a)
        for a in (model._temperature, model._surprise, model._log_score)
    )


@settings(max_examples=200, deadline=None)
@given(
    st.floats(0.01, 10.0),
    st.floats(-12.0, 12.0),
    st.sampled_from([1.0, 0.5, 3.0]),
    st.lists(st.floats(0.0, 2.0), min_size=4, max_size=4),
)
def test_a_step_of_the_log_score_is_its_definition(a, s, w, start):
    """The averages move toward the capped log loss of ``p = Phi(a s)``, the entropy of ``(p, 1
    - p)`` and the variance of its log loss, with `observe`'s weight; then a takes the
    calibration's Newton step."""
    state_ = array("d", (a, 1.0, *start))
    surprise.observe_log_score(state_, s, w, True)
    p = stats.norm.cdf(a * s)
    logs = [(q, math.log(q)) for q in (p, 1.0 - p) if q > 0.0]
    entropy = -sum(q * lq for q, lq in logs)
    variance = max(sum(q * lq * lq for q, lq in logs) - entropy**2, 0.0)
    loss = min(-math.log(p) if p > 0.0 else math.inf, surprise.LOG_SCORE_CAP)
    n = start[0] + w
    weight = max(1.0 - (1.0 - surprise.LAMBDA) ** w, w / n)
    assert state_[2] == n
    for i, value in zip((3, 4, 5), (loss, entropy, variance)):
        expected = start[i - 2] + weight * (value - start[i - 2])
        assert state_[i] == pytest.approx(expected, rel=1e-9, abs=1e-12)
    temperature = [a, 1.0]
    river_cw.calibration.newton_step(temperature, s, w)
    assert list(state_[:2]) == temperature


def test_unscored_the_log_score_steps_its_temperature_alone():
    state_ = surprise.start_log_score()
    surprise.observe_log_score(state_, -3.0, 1.0, False)
    assert state_[0] < 1.0 and list(state_[2:]) == [0.0] * 4


def test_a_calibrated_model_scores_its_log_loss_as_expected():
    """Where the labels follow the model's own probabilities, the log loss averages its
    expectation: no excess, no forgetting."""
    rng = random.Random(3)
    state_ = array("d", (1.0, 1e9, 0.0, 0.0, 0.0, 0.0))  # a' held at 1 by a huge curvature
    for _ in range(20000):
        s0 = rng.gauss(0.0, 2.0)
        y = rng.random() < stats.norm.cdf(s0)
        surprise.observe_log_score(state_, s0 if y else -s0, 1.0, True)
    loss, entropy, variance = state_[3:]
    assert abs(loss - entropy) < 3 * math.sqrt(variance * 0.01 / 1.99)
    assert surprise.log_score_rate(state_) == 0.0


def test_the_floor_is_the_variance_of_a_label_given_two_thirds_and_stills_a_model_near_chance():
    """The limit reads V at least LOG_SCORE_FLOOR, the variance of the log score of a label
    given 0.66: a model near 1/2, whose V is near 0, does not forget for an excess of a
    hundredth of a nat (it would without the floor), and a confident one the concept has left,
    whose excess is tenths of a nat, forgets at the highest rate all the same."""
    p = 0.66
    variance = p * (1 - p) * math.log(p / (1 - p)) ** 2
    assert variance == pytest.approx(surprise.LOG_SCORE_FLOOR, rel=0.02)
    near_chance = array("d", (1.0, 1.0, 1000.0, 0.70, 0.69, 0.001))
    assert surprise.log_score_rate(near_chance) == 0.0
    unfloored = math.sqrt(near_chance[5] * surprise.LAMBDA / (2.0 - surprise.LAMBDA))
    assert surprise.LOG_SCORE_LIMIT * unfloored < 0.01
    left_behind = array("d", (1.0, 1.0, 1000.0, 0.60, 0.10, 0.001))
    assert surprise.log_score_rate(left_behind) == surprise.HIGHEST


def test_a_centred_model_forgets_by_its_log_score():
    """Deciding, the model steps the log score's temperature alone and forgets by the 0-1
    surprise; centred, it averages the log score from its first centred example and forgets
    at the rate it sets, which the reversed concept drives up."""
    model = river_cw.AROW()
    rates = []
    for i, (x, y) in enumerate(drifting(FLIP + 300)):
        model.learn_one(x, y)
        if i < WARM_UP - 1:
            assert not model.centre_ and list(model._log_score[2:]) == [0.0] * 4
            assert model._rate() == surprise.rate(model._surprise)
        else:
            assert model.centre_
            assert model._log_score[2] == i - (WARM_UP - 1)  # every example since centring
            assert model._rate() == surprise.log_score_rate(model._log_score)
            rates.append(model._rate())
    assert model._log_score[0] != 1.0  # the temperature learned from the first example on
    before, after = rates[: FLIP - WARM_UP], rates[FLIP - WARM_UP :]
    assert sum(before) < sum(after) / 10  # nothing drifts: a tenth of the forgetting, at most
    assert max(after) == surprise.HIGHEST  # the concept reversed


def test_the_log_score_forgets_a_reversed_concept_that_the_0_1_surprise_holds_on_to():
    examples = drifting(FLIP + 300)
    model, uncentred = river_cw.AROW(), river_cw.AROW(centre=False)
    right = dict.fromkeys(("centred", "uncentred"), 0)
    for x, y in examples:
        right["centred"] += model.predict_one(x) == y
        right["uncentred"] += uncentred.predict_one(x) == y
        model.learn_one(x, y)
        uncentred.learn_one(x, y)
    assert uncentred._log_score is None
    assert right["centred"] > right["uncentred"]


def test_both_engines_and_the_general_path_step_the_log_score_to_the_bit():
    """The compiled lean path (the log score in C), the pure-Python engine and the general
    path (a dict subclass) give the same model, its calibration and forgetting included, on
    a stream whose reversed concept makes the log score forget."""
    compiled, reference, general = river_cw.AROW(), reference_model(), river_cw.AROW()
    forgot = False
    for x, y in drifting(FLIP + 200, seed=5):
        forgot = forgot or compiled._rate() > 0.0
        compiled.learn_one(x, y)
        reference.learn_one(x, y)
        general.learn_one(Row(x), y)
        assert calibration_state(compiled) == calibration_state(reference)
        assert calibration_state(compiled) == calibration_state(general)
    assert forgot and compiled.centre_
    assert compiled._gaussian.blocks == reference._gaussian.blocks == general._gaussian.blocks


@pytest.mark.parametrize("kind", ["dicts", "csr"])
def test_a_batch_steps_the_log_score_as_the_learn_one_loop(kind):
    """Deciding rows go one by one through the batch kernel, which steps the log score's
    temperature; centred ones through `learn_one`: the loop's calibration to the bit."""
    examples = drifting(FLIP + 100, seed=2)
    looped, batched = river_cw.AROW(), river_cw.AROW()
    for x, y in examples:
        looped.learn_one(x, y)
    for first in range(0, len(examples), 128):
        chunk = examples[first : first + 128]
        labels = [y for _, y in chunk]
        if kind == "csr":
            matrix = sparse.csr_array([[x[f] for f in "abc"] for x, _ in chunk])
            batched.learn_many(matrix, labels, features=list("abc"))
        else:
            batched.learn_many([x for x, _ in chunk], labels)
    assert calibration_state(batched) == calibration_state(looped)
    assert batched._gaussian.blocks == looped._gaussian.blocks


def test_models_that_never_centre_keep_no_log_score_and_the_0_1_surprise():
    """Sparse input and text decide at their second example never to centre: no log score,
    the same model to the bit as ``centre=False``."""
    words = ["free prize now", "lunch at noon", "win a free prize", "see you at lunch"] * 30
    text, raw = TextClassifier(river_cw.AROW()), TextClassifier(river_cw.AROW(centre=False))
    for i, words_ in enumerate(words):
        text.learn_one(words_, i % 2 == 0)
        raw.learn_one(words_, i % 2 == 0)
    assert text.classifier._log_score is None
    assert calibration_state(text.classifier) == calibration_state(raw.classifier)
    sparse_model = river_cw.AROW()
    sparse_model.learn_one({"a": 1.0}, True)
    sparse_model.learn_one({"b": 1.0}, False)
    assert sparse_model._centring is None and sparse_model._log_score is None


def test_a_model_that_cannot_set_its_forgetting_keeps_no_log_score():
    for model in (
        river_cw.AROW(forgetting=0),
        river_cw.AROW(forgetting=0.01),
        river_cw.AROW(calibrate=False),
        river_cw.AROW(centre=False),
        river_cw.AROW(covariance="diagonal"),
        river_cw.SOP(),  # SOP's forgetting is 0 by default
    ):
        assert model._log_score is None, model


def test_a_centred_model_meeting_a_third_label_forgets_by_the_0_1_surprise():
    model = river_cw.AROW()
    for x, y in dense_stream(WARM_UP + 20):
        model.learn_one(x, y)
    model.learn_one({"a": 5.0, "b": 5.0, "c": 5.0}, "third")
    assert model.centre_ and len(model.classes_) == 3
    assert model._rate() == surprise.rate(model._surprise)


def test_the_state_format_keeps_the_log_score_and_reads_older_states_without_it():
    model = river_cw.AROW()
    for x, y in drifting(FLIP + 50):
        model.learn_one(x, y)
    restored = state.loads(state.dumps(model))
    assert calibration_state(restored) == calibration_state(model)
    x, y = drifting(FLIP + 51)[-1]
    restored.learn_one(x, y)
    model.learn_one(x, y)
    assert restored._gaussian.blocks == model._gaussian.blocks
    older = copy.deepcopy(model)
    older._log_score = None  # a state written before the log score
    back = state.loads(state.dumps(older))
    assert back._log_score is None and back.centre_ == model.centre_
    assert back._rate() == surprise.rate(back._surprise)


def test_the_state_format_refuses_a_log_score_where_the_model_keeps_none():
    other = river_cw.AROW(forgetting=0)
    other._log_score = surprise.start_log_score()  # as if a state held one
    with pytest.raises(ValueError, match="log score"):
        state.loads(state.dumps(other))


def test_mixing_copies_of_a_centred_model_keeps_its_log_score():
    model = river_cw.AROW()
    for x, y in drifting(FLIP + 50):
        model.learn_one(x, y)
    mixed = river_cw.combine([copy.deepcopy(model), copy.deepcopy(model)])
    assert mixed.centre_ == model.centre_
    temperature = river_cw.calibration.mix([model._log_score[:2]] * 2)
    assert list(mixed._log_score[:2]) == list(temperature)  # each copy's examples counted
    assert mixed._log_score[2] == 2 * model._log_score[2]
    assert list(mixed._log_score[3:]) == pytest.approx(model._log_score[3:], rel=1e-15)
    assert mixed._rate() == pytest.approx(model._rate(), abs=1e-15)


def test_mixing_members_that_learned_apart_merges_their_log_scores():
    """From a common base, members' log scores meet as `surprise.mix_log_score` says: the
    examples each saw counted once, the temperature by the delta rule."""
    base = river_cw.AROW()
    examples = drifting(FLIP + 100, seed=8)
    for x, y in examples[: WARM_UP + 20]:
        base.learn_one(x, y)
    members = [copy.deepcopy(base) for _ in range(2)]
    for i, (x, y) in enumerate(examples[WARM_UP + 20 :]):
        members[i % 2].learn_one(x, y)
    mixed = river_cw.combine(members, base=base)
    expected = surprise.mix_log_score([m._log_score for m in members], base._log_score)
    assert list(mixed._log_score) == list(expected)
    assert mixed._log_score[2] == base._log_score[2] + sum(
        m._log_score[2] - base._log_score[2] for m in members
    )
    changed = river_cw.changes(members[0], base)
    assert list(changed._log_score) == list(members[0]._log_score)
    assert changed._log_score is not members[0]._log_score
