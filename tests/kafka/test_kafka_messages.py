"""Message schema of the Kafka topics: what is accepted, and the reason given for what is not."""

from __future__ import annotations

import json

import numpy as np
import pytest

from streams.kafka.messages import (
    ExampleMessage,
    InvalidMessage,
    LabelMessage,
    decode_example,
    decode_label,
    encode_example,
    encode_label,
    encode_prediction,
)


@pytest.mark.parametrize(
    "message, example",
    [
        (
            b'{"id": 1, "x": {"a": 1, "b": -2.5, "c": true}, "label": "spam"}',
            ExampleMessage("1", {"a": 1, "b": -2.5, "c": True}, "spam"),
        ),
        (
            b'{"id": "m-7", "text": "caf\xc3\xa9", "label": null}',
            ExampleMessage("m-7", {"text": "café"}, None),
        ),
        (
            b'{"id": 3, "x": {}, "label": 0, "split": "train", "domain": "books"}',
            ExampleMessage("3", {}, 0),
        ),
        (b'{"id": 4, "text": "", "label": false}', ExampleMessage("4", {"text": ""}, False)),
    ],
)
def test_valid_examples(message, example):
    assert decode_example(message) == example


@pytest.mark.parametrize(
    "message, reason",
    [
        (None, "empty message (no value)"),
        (b"", "bad JSON: Expecting value: line 1 column 1 (char 0)"),
        (b'{"id": 1,', "bad JSON: Expecting property name"),
        (b"\xc3\x28", "not UTF-8: 'utf-8' codec can't decode byte 0xc3"),
        (b'{"id": 1, "x": {"a": NaN}}', "bad JSON: non-finite number NaN"),
        (b'{"id": 1, "x": {"a": Infinity}}', "bad JSON: non-finite number Infinity"),
        (b'{"id": 1, "x": {"a": 1e400}}', "feature 'a' has a value out of float64 range: float"),
        (b'{"id": 1, "x": {"a": null}}', "wrong type: feature 'a' has a non-numeric value None"),
        (b'{"id": 1, "x": {"a": [1]}}', "wrong type: feature 'a' has a non-numeric value list [1]"),
        (
            b'{"id": 1, "x": "a b"}',
            "wrong type: 'x' must be an object of features, got str \"a b\"",
        ),
        (b'{"id": 1, "text": ["a"]}', "wrong type: 'text' must be a string, got list"),
        (b'{"id": 1.5, "x": {}}', "wrong type: 'id' must be a string or integer, got float 1.5"),
        (b'{"id": true, "x": {}}', "wrong type: 'id' must be a string or integer, got bool true"),
        (
            b'{"id": 1, "x": {}, "label": {"y": 1}}',
            "wrong type: 'label' must be a string, integer or boolean",
        ),
        (b'"just a string"', "unknown schema: expected a JSON object, got str"),
        (b'{"x": {}}', "unknown schema: no 'id' field"),
        (
            b'{"id": 1, "label": "spam"}',
            "unknown schema: an example needs exactly one of 'x' (features) "
            "and 'text', got fields ['id', 'label']",
        ),
        (
            b'{"id": 1, "x": {}, "text": "t"}',
            "unknown schema: an example needs exactly one of 'x' (features) and 'text', got both",
        ),
        (b"[" * 100_000, "bad JSON: maximum recursion depth exceeded"),
        (b'{"id": 1, "x": {"a": 1' + b"0" * 400 + b"}}", "bad JSON: an integer of 401 digits"),
        (
            b'{"id": 1, "x": {"a": 1' + b"0" * 399 + b"}}",
            "feature 'a' has a value out of float64 range: int 1000",
        ),
        (b'{"id": 1, "x": {}, "label": ' + b"7" * 5000 + b"}", "bad JSON: an integer of 5000"),
        (b'{"id": ' + b"7" * 5000 + b', "x": {}}', "bad JSON: an integer of 5000 digits"),
        (b'{"id": "\\ud800", "x": {}}', 'bad id: str "\\ud800" is not valid Unicode'),
        (b'{"id": 1, "x": {"\\udc00": 1}}', "bad feature name: str"),
    ],
)
def test_invalid_examples_say_why(message, reason):
    with pytest.raises(InvalidMessage) as error:
        decode_example(message)
    assert str(error.value).startswith(reason)


def test_labels():
    assert decode_label(encode_label("a", "spam")) == LabelMessage("a", "spam")
    assert decode_label(encode_label(42, 0)) == LabelMessage("42", 0)  # joins the example "42"
    with pytest.raises(InvalidMessage, match="no 'label' \\(a non-null label\\)"):
        decode_label(b'{"id": "a"}')
    with pytest.raises(InvalidMessage, match="no 'id' field"):
        decode_label(b'{"label": "spam"}')
    with pytest.raises(InvalidMessage, match=r"bad label: .* lone surrogate"):
        decode_label(b'{"id": 1, "label": "\\udc00"}')
    with pytest.raises(InvalidMessage, match="wrong type: 'label'"):
        decode_label(b'{"id": 1, "label": 1.5}')


def test_encode_round_trips_and_predictions_stay_valid_json():
    for example in (
        ExampleMessage("1", {"a": 0.1}, "x"),
        ExampleMessage("b", {"text": "hi"}, None),
    ):
        assert decode_example(encode_example(example.id, example.x, example.label)) == example
    with pytest.raises(ValueError):
        encode_example(1, {"a": float("nan")})
    assert json.loads(encode_prediction(1, np.int64(4), {np.int64(4): np.float32(0.5)}, 0, 0)) == {
        "id": 1,
        "prediction": 4,
        "probabilities": {"4": 0.5},
        "model_version": 0,
        "partition": 0,
    }
    message = json.loads(encode_prediction(7, True, {True: 0.75, False: float("nan")}, 12, 3))
    assert message == {
        "id": 7,
        "prediction": True,
        "probabilities": {"True": 0.75, "False": None},
        "model_version": 12,
        "partition": 3,
    }
