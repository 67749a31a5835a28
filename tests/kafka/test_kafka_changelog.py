"""`streams.kafka.changelog` without a broker: which states a commit writes by key, and that the
changes applied to the state committed before rebuild the state bit for bit."""

from __future__ import annotations

import random

import pytest

import river_cw
from river_cw.covariances import with_marks
from river_cw.text import TextClassifier
from streams.kafka import changelog, state_codec
from streams.kafka.learner import PartitionState
from tests.kafka.kafka_support import assert_same_model
from tests.support.bits import state as numbers

VOCABULARY = [f"f{i}" for i in range(300)]


def dense(rng: random.Random) -> dict:
    """A few features of VOCABULARY, uncentred (the arrowhead's case)."""
    return {f: rng.uniform(5.0, 6.0) for f in rng.sample(VOCABULARY, 6)}


def text(rng: random.Random) -> dict:
    return {"text": " ".join(rng.sample(VOCABULARY, 6))}


MODELS = {
    "AROW": (river_cw.AROW, dense),
    "AROW arrowhead": (lambda: river_cw.AROW(covariance="arrowhead"), dense),
    "NHERD arrowhead drop": (
        lambda: river_cw.NHERD(covariance="arrowhead", diagonal="drop"),
        dense,
    ),
    "text, AROW arrowhead": (
        lambda: TextClassifier(river_cw.AROW(covariance="arrowhead"), on="text"),
        text,
    ),
    "AROW, its own forgetting": (lambda: river_cw.AROW(forgetting="auto"), dense),
}


def entries(model) -> int:
    holder = with_marks(model)
    return sum(len(block) for block in holder.gaussian.blocks)


@pytest.mark.parametrize("name", MODELS)
def test_commits_write_what_moved_and_rebuild_the_state_bit_for_bit(name):
    """A snapshot (the whole state) at the first commit, then each commit's changes: a few
    entries of a model of hundreds, applied to the state restored so far."""
    make, example = MODELS[name]
    rng = random.Random(3)
    state = PartitionState("t", 0, make())
    for _ in range(200):  # the whole vocabulary learned, and more
        x = example(rng)
        state.model.learn_one(x, rng.random() < 0.5)
    assert changelog.changes(state) is None  # no mark: written whole
    restored = state_codec.decode(state_codec.encode(state)).state()
    changelog.mark(state)
    for _ in range(5):  # commits
        for _ in range(3):
            state.model.learn_one(example(rng), rng.random() < 0.5)
            state.learned += 1
        written = changelog.changes(state)
        assert written is not None, "written whole"
        part = state_codec.decode(written.data)
        assert 0 < written.weights == sum(map(len, part.weights)) <= 3 * 6 + 1
        assert written.weights < entries(state.model) / 10
        restored = changelog.apply(restored, part)
        changelog.mark(state)
        assert restored.learned == state.learned
        assert_same_model(restored.model, state.model, [example(rng) for _ in range(5)])


def test_an_arrowhead_state_is_written_whole_after_a_new_layout_then_by_key_again():
    """A third label lays the blocks out anew (one per label): that commit is a snapshot, the
    next ones changes again, with the roots of the labels' blocks among them."""
    rng = random.Random(5)
    state = PartitionState("t", 0, river_cw.AROW(covariance="arrowhead"))
    for i in range(20):
        state.model.learn_one(dense(rng), ("a", "b")[i % 2])
    changelog.mark(state)
    state.model.learn_one(dense(rng), "c")
    assert changelog.changes(state) is None
    restored = state_codec.decode(state_codec.encode(state)).state()
    changelog.mark(state)
    state.model.learn_one(dense(rng), "b")
    part = state_codec.decode(changelog.changes(state).data)
    weights = part.weights
    assert len(weights) == 3 and any(river_cw.INTERCEPT in block for block in weights)
    model = changelog.apply(restored, part).model
    # the numbers bit for bit (not the pickle: the live model's blocks share x's key objects,
    # the restored one's hold equal keys of their own)
    assert numbers(model) == numbers(state.model) and model.classes_ == state.model.classes_
    probe = [dense(rng) for _ in range(5)]
    assert [model.predict_proba_one(x) for x in probe] == [
        state.model.predict_proba_one(x) for x in probe
    ]


@pytest.mark.parametrize(
    "model",
    [river_cw.AROW(covariance="full"), river_cw.VotedRDA()],
    ids=["full covariance", "voted RDA"],
)
def test_other_models_are_written_whole(model):
    state = PartitionState("t", 0, model)
    state.model.learn_one({"a": 1.0}, True)
    changelog.mark(state)
    state.model.learn_one({"b": 1.0}, False)
    assert with_marks(model) is None and changelog.changes(state) is None
