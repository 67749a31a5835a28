"""`streams.kafka.state_codec` without a broker: every field of a partition's state round-trips,
its models in the versioned format (a river pipeline as a pickle), and bytes that are not a
whole part of this version or an earlier one are refused by a ValueError saying so."""

from __future__ import annotations

import dataclasses

import pytest
from river import compose, linear_model, preprocessing

import river_cw
from river_cw import state as model_state
from streams.kafka import state_codec
from streams.kafka.learner import PartitionState
from streams.models.mixing import MixState
from streams.models.specs import prepare


def full_state(model) -> PartitionState:
    """A state whose every field differs from its default, mixing included."""
    model.learn_one({"a": 1.0, "b": 2.5}, "spam")
    model.learn_one({"c": -1.0}, "ham")
    mixing = MixState.starting(model)
    mixing.round, mixing.learned, mixing.replay = 3, 7, [({"a": 0.5}, "spam"), ({"z": 1}, "ham")]
    return PartitionState(
        "sms",
        2,
        model,
        offsets={"sms": 10, "sms.labels": 4},
        pending_examples={"7": ({"a": 1, "b": 0.25, "flag": True}, "spam"), "9": ({}, None)},
        pending_labels={"12": ("ham", 5), "13": (True, 6)},
        predicted=11,
        learned=8,
        dead_letters=1,
        expired=2,
        scored=8,
        correct=6,
        examples_seen=11,
        model_spec="AROW()",
        batches=5,
        mixing=mixing,
    )


def same(a: PartitionState, b: PartitionState) -> None:
    for field in dataclasses.fields(PartitionState):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if field.name == "model":
            assert model_state.dumps(x) == model_state.dumps(y)
        elif field.name == "mixing":
            assert model_state.dumps(x.anchor) == model_state.dumps(y.anchor)
            assert dataclasses.replace(x, anchor=None) == dataclasses.replace(y, anchor=None)
        else:
            assert repr(x) == repr(y), field.name  # types too: 1 is not 1.0, "7" not 7


def test_every_field_of_a_state_round_trips():
    original = full_state(river_cw.AROW())
    same(state_codec.decode(state_codec.encode(original)).state(), original)


def test_a_model_the_format_does_not_describe_travels_as_a_pickle():
    model = prepare(compose.Pipeline(preprocessing.StandardScaler(), linear_model.PAClassifier()))
    model.learn_one({"a": 1.0}, True)
    original = PartitionState("t", 0, model, offsets={"t": 1})
    data = state_codec.encode(original)
    assert [name for name, encoding, _ in _blobs(data)] == ["model"]
    assert [encoding for _, encoding, _ in _blobs(data)] == ["pickle"]
    restored = state_codec.decode(data).state()
    assert restored.model.predict_proba_one({"a": 0.3}) == model.predict_proba_one({"a": 0.3})


def _blobs(data: bytes) -> list:
    import json
    import struct

    _, _, size = struct.unpack_from("<4sII", data)
    return json.loads(data[12 : 12 + size])["blobs"]


def test_a_changes_part_needs_its_engine_and_a_snapshot_none():
    original = PartitionState("t", 0, river_cw.AROW(covariance="diagonal"))
    original.model.learn_one({"a": 1.0}, True)
    part = state_codec.decode(state_codec.encode(original, [{"a": (0.5, 0.25)}]))
    assert part.kind == "changes" and part.weights == [{"a": (0.5, 0.25)}]
    with pytest.raises(ValueError, match=r"read with an engine"):
        part.state()
    snapshot = state_codec.decode(state_codec.encode(original))
    with pytest.raises(ValueError, match=r"read with an engine"):
        snapshot.state(original.model.gaussian)


def test_bytes_that_are_no_whole_part_are_refused():
    data = state_codec.encode(full_state(river_cw.AROW()))
    for cut in (0, 5, 20, len(data) // 2, len(data) - 1):
        with pytest.raises(ValueError, match=r"too short|cut short or altered"):
            state_codec.decode(data[:cut])
    for at in (12, len(data) // 2, len(data) - 2):
        altered = data[:at] + bytes([data[at] ^ 1]) + data[at + 1 :]
        with pytest.raises(ValueError, match=r"cut short or altered"):
            state_codec.decode(altered)
    newer = data[:4] + (state_codec.VERSION + 1).to_bytes(4, "little") + data[8:]
    with pytest.raises(ValueError, match=r"newer than this river-cw reads.*upgrade river-cw"):
        state_codec.decode(newer)
    with pytest.raises(ValueError, match=r"not a river-cw partition state"):
        state_codec.decode(b"\x80\x05" + data)
