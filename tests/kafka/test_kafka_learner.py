"""The partition learner without a broker: joins, learning order, events, bounds, accuracy."""

from __future__ import annotations

import copy
import json
import pickle

from river_cw import AROW
from streams.kafka.learner import DeadLetter, PartitionLearner, PartitionState, Prediction
from streams.kafka.messages import encode_example, encode_label
from tests.conftest import read_jsonl, shuffled
from tests.kafka.kafka_support import assert_same_model


def learner(model=None, **kwargs) -> PartitionLearner:
    return PartitionLearner(PartitionState("t", 3, model or AROW()), **kwargs)


def test_inline_labels_predict_then_learn_like_an_offline_run():
    rows = shuffled(read_jsonl("spambase.jsonl.gz"), seed=1)[:300]
    served, reference = learner(), AROW()
    for i, row in enumerate(rows):
        (event,) = served.example(encode_example(i, row["x"], row["label"]))
        assert isinstance(event, Prediction) and event.key == str(i).encode()
        message = json.loads(event.value)
        assert message["prediction"] == reference.predict_one(row["x"])
        assert (message["id"], message["model_version"], message["partition"]) == (str(i), i, 3)
        reference.learn_one(row["x"], row["label"])
    assert_same_model(served.state.model, reference, [row["x"] for row in rows[:50]])
    state = served.state
    assert (state.predicted, state.learned, state.scored) == (300, 300, 300)
    offline, right = AROW(), 0
    for row in rows:
        right += offline.predict_one(row["x"]) == row["label"]
        offline.learn_one(row["x"], row["label"])
    assert state.correct == right and state.accuracy == right / 300


def test_late_and_early_labels_join_by_id_whatever_its_type():
    served, reference = learner(), AROW()
    assert served.label(encode_label(7, True)) == []  # early: waits for example "7"
    assert served.state.pending_labels == {"7": (True, 0)}
    served.example(encode_example("7", {"a": 1.0}))  # the id "7" joins the label of 7
    reference.learn_one({"a": 1.0}, True)
    served.example(encode_example(8, {"a": -1.0}))  # late: waits for its label
    assert list(served.state.pending_examples) == ["8"]
    served.label(encode_label("8", False))
    reference.learn_one({"a": -1.0}, False)
    assert (served.state.pending_examples, served.state.pending_labels) == ({}, {})
    assert_same_model(served.state.model, reference, [{"a": 0.5}])
    assert served.state.learned == 2


def test_a_bad_record_is_a_dead_letter_and_leaves_the_state_as_it_was():
    served = learner()
    served.example(encode_example(1, {"a": 1.0}, "x"))
    served.example(encode_example(2, {"a": -1.0}, "y"))
    before = pickle.dumps(served.state.model)
    for value in (b"{", None, b'{"id": 3, "x": {"a": "1"}}', b'{"id": 3, "x": {"a": 1e999}}'):
        (event,) = served.example(value)
        assert isinstance(event, DeadLetter) and event.reason
    (event,) = served.label(b'{"id": 4}')
    assert event == DeadLetter("unknown schema: no 'label' (a non-null label)")
    assert pickle.dumps(served.state.model) == before
    assert (served.state.dead_letters, served.state.predicted) == (5, 2)


def test_a_prediction_too_large_to_send_is_refused():
    served = learner(max_output_bytes=100)
    (event,) = served.example(encode_example("i" * 200, {"a": 1.0}))
    assert isinstance(event, DeadLetter) and event.reason.startswith("its prediction would be")
    assert served.state.pending_examples == {}


def test_pending_is_bounded_and_stale_labels_are_reported():
    served = learner(max_pending=3)
    for i in range(5):
        served.example(encode_example(i, {"a": 1.0}))
    assert list(served.state.pending_examples) == ["2", "3", "4"] and served.state.expired == 2
    served.label(encode_label("elsewhere", True))  # its example is in another partition
    for i in range(5, 15):
        served.example(encode_example(i, {"a": 1.0}, True))
    assert served.stale_labels(after=10) == 1 and served.stale_labels(after=11) == 0


def test_the_state_is_plain_picklable_data():
    served = learner(model_spec="AROW()")
    served.example(encode_example(1, {"a": 1.0}, True))
    copied = pickle.loads(pickle.dumps(served.state))
    assert copied.model_spec == "AROW()" and copied.learned == 1
    assert_same_model(copied.model, copy.deepcopy(served.state.model), [{"a": 1.0}])


def test_a_batch_gives_what_its_records_give_one_by_one():
    rows = shuffled(read_jsonl("spambase.jsonl.gz"), seed=2)[:120]
    values = [encode_example(i, row["x"], row["label"]) for i, row in enumerate(rows)]
    values[5:5] = [b"{", None, encode_example("late", {"a": 1.0})]  # dead letters, a pending
    batch, single = learner(), learner()
    predictions, dead = batch.examples(values)
    events = [single.example(value)[0] for value in values]
    assert [(p.key, p.value) for p in events if isinstance(p, Prediction)] == predictions
    assert [(i, e) for i, e in enumerate(events) if isinstance(e, DeadLetter)] == dead
    assert [i for i, _ in dead] == [5, 6]
    labels = [encode_label("late", True), b'{"id": 4}']  # the pending one learned, a dead letter
    letter = DeadLetter("unknown schema: no 'label' (a non-null label)")
    assert batch.labels(labels) == [(1, letter)]
    assert [single.label(value) for value in labels] == [[], [letter]]
    assert pickle.dumps(batch.state.model) == pickle.dumps(single.state.model)
    counters = ("predicted", "learned", "scored", "correct", "dead_letters")
    assert [getattr(batch.state, c) for c in counters] == [
        getattr(single.state, c) for c in counters
    ]
