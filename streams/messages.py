"""The JSON messages on the Kafka topics, and their validation.

Examples topic, one UTF-8 JSON object per message:

    {"id": "42", "x": {"feature": 1.5, ...}, "label": "spam"}   # features, or
    {"id": "42", "text": "free entry ...", "label": "spam"}     # raw text for a river pipeline

A text example is handed to the model as `x = {"text": ...}`, as `streams.files` reads text
files, so `feature_extraction.BagOfWords(on="text") | model` serves what it was evaluated on.
`id` is a string or an integer; `label` (a string, integer or boolean) is optional: a missing
or null label means the label may come later on the labels topic, as `{"id": "42", "label":
"spam"}`. Other fields are ignored, so the lines of ../shared/data can be sent as they are.

`decode_example` and `decode_label` raise `InvalidMessage` with a one-line reason for bad
UTF-8, bad JSON, NaN or infinite numbers, wrong types and unknown schemas.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from river_cw.validation import check_features

Id = str | int
Label = str | int | bool


class InvalidMessage(ValueError):
    """A message that cannot be used; its text is the reason sent to the dead-letter topic."""


@dataclass(frozen=True)
class Example:
    id: Id
    x: dict  # features, or {"text": str}
    label: Label | None = None


@dataclass(frozen=True)
class LabelMessage:
    id: Id
    label: Label


def _reject_constant(name: str):
    raise InvalidMessage(f"non-finite number in JSON: {name}")


def _load_object(value: bytes | None) -> dict:
    if value is None:
        raise InvalidMessage("empty message (no value)")
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InvalidMessage(f"not UTF-8: {error}") from None
    try:
        obj = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as error:
        raise InvalidMessage(f"bad JSON: {error}") from None
    except RecursionError:
        raise InvalidMessage("bad JSON: nested too deeply") from None
    if not isinstance(obj, dict):
        raise InvalidMessage(f"unknown schema: expected a JSON object, got {type(obj).__name__}")
    return obj


def _id(obj: dict) -> Id:
    if "id" not in obj:
        raise InvalidMessage("unknown schema: no 'id' field")
    id_ = obj["id"]
    if isinstance(id_, bool) or not isinstance(id_, (str, int)):
        raise InvalidMessage(f"wrong type: 'id' must be a string or integer, got {_describe(id_)}")
    return id_


def _label(obj: dict) -> Label | None:
    label = obj.get("label")
    if label is not None and not isinstance(label, (str, int, bool)):
        raise InvalidMessage(
            f"wrong type: 'label' must be a string, integer or boolean, got {_describe(label)}"
        )
    return label


def _describe(value) -> str:
    text = json.dumps(value)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:37] + '...'}"


def decode_example(value: bytes | None) -> Example:
    """Parse and validate a message of the examples topic."""
    obj = _load_object(value)
    id_ = _id(obj)
    if ("x" in obj) == ("text" in obj):
        raise InvalidMessage(
            "unknown schema: an example needs exactly one of 'x' (features) and 'text', got "
            + ("both" if "x" in obj else f"fields {sorted(obj)}")
        )
    if "x" in obj:
        x = obj["x"]
        if not isinstance(x, dict):
            raise InvalidMessage(
                f"wrong type: 'x' must be an object of features, got {_describe(x)}"
            )
        try:
            check_features(x)
        except TypeError as error:
            raise InvalidMessage(f"wrong type: {error}") from None
        except ValueError as error:
            raise InvalidMessage(str(error)) from None
    else:
        if not isinstance(obj["text"], str):
            raise InvalidMessage(
                f"wrong type: 'text' must be a string, got {_describe(obj['text'])}"
            )
        x = {"text": obj["text"]}
    return Example(id_, x, _label(obj))


def decode_label(value: bytes | None) -> LabelMessage:
    """Parse and validate a message of the labels topic."""
    obj = _load_object(value)
    id_ = _id(obj)
    label = _label(obj)
    if label is None:
        raise InvalidMessage("unknown schema: a label message needs a non-null 'label'")
    return LabelMessage(id_, label)


def encode_example(id: Id, x: dict, label: Label | None = None) -> bytes:
    """The message for an example; `x` is a dict of features or `{"text": str}`."""
    obj = {"id": id, **(x if set(x) == {"text"} and isinstance(x["text"], str) else {"x": x})}
    if label is not None:
        obj["label"] = label
    return json.dumps(obj, allow_nan=False).encode("utf-8")


def encode_label(id: Id, label: Label) -> bytes:
    """The message for a delayed label."""
    return json.dumps({"id": id, "label": label}).encode("utf-8")


def encode_prediction(
    id: Id, prediction, probabilities: dict, model_version: int, partition: int
) -> bytes:
    """The message for a prediction; non-finite probabilities become null."""
    probabilities = {
        str(label): (float(p) if math.isfinite(p) else None) for label, p in probabilities.items()
    }
    return json.dumps(
        {
            "id": id,
            "prediction": prediction,
            "probabilities": probabilities,
            "model_version": model_version,
            "partition": partition,
        },
        allow_nan=False,
    ).encode("utf-8")
