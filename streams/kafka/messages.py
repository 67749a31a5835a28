"""The JSON messages on the Kafka topics: decoding with the shared schema, and encoding.

Examples topic, one UTF-8 JSON object per message, keyed by its id (`streams.io.schema`):

    {"id": "42", "x": {"feature": 1.5, ...}, "label": "spam"}   # features, or
    {"id": "42", "text": "free entry ...", "label": "spam"}     # raw text for a river pipeline

A text example is handed to the model as `x = {"text": ...}`, as `streams.io.jsonl` reads text
files, so `feature_extraction.BagOfWords(on="text") | model` serves what it was evaluated on.
`id` is a string or an integer, normalised to a string (an example with id 42 and a label with id
"42" join); `label` (a string, integer or boolean) is optional: a missing or null label means the
label may come later on the labels topic, as `{"id": "42", "label": "spam"}`. Other fields are
ignored, so the lines of ../shared/data can be sent as they are.

`decode_example` and `decode_label` raise `InvalidMessage` (a `streams.io.schema.SchemaError`) with
a one-line reason for bad UTF-8, bad JSON, over-long integers, NaN or infinite numbers, lone
surrogates, wrong types and unknown schemas.

The server decodes and encodes every message, so the common forms take short paths that give
the same results: an example whose fields are plainly valid (ASCII ids, labels and feature
names, finite numbers) skips the schema's field-by-field checks, which decide everything else;
a prediction of plain values is written by a template, the same bytes as the JSON encoder.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import partial
from json.encoder import encode_basestring_ascii
from typing import NamedTuple

import numpy as np

from streams.io.schema import SCHEMA, SchemaError, loads

__all__ = [
    "ExampleMessage",
    "InvalidMessage",
    "LabelMessage",
    "decode_example",
    "decode_label",
    "encode_example",
    "encode_label",
    "encode_prediction",
]

Id = str | int
Label = str | int | bool


class InvalidMessage(SchemaError):
    """A message that cannot be used; its text is the reason sent to the dead-letter topic."""


class ExampleMessage(NamedTuple):
    """A `streams.io.schema.Example` whose id is required (examples and labels join by id)."""

    id: str
    x: dict
    label: Label | None = None


@dataclass(frozen=True)
class LabelMessage:
    id: str
    label: Label


def _load_object(value: bytes | None):
    if value is None:
        raise InvalidMessage("empty message (no value)")
    try:
        return loads(value)
    except SchemaError as error:
        raise InvalidMessage(str(error)) from None


def decode_example(value: bytes | None) -> ExampleMessage:
    """Parse and validate a message of the examples topic (an id is required).

    A plainly valid record is taken at once: an object with an integer id or an ASCII one (a
    lone surrogate comes from an escape only), no label or a boolean, an integer or an ASCII
    string, and exactly one of a text string and features with ASCII names and finite numbers
    (`math.fsum` of anything else raises, or sums to an infinity). The schema decides the rest.
    """
    record = _load_object(value)
    if type(record) is dict:
        id, label, x = record.get("id"), record.get("label"), record.get("x")
        if type(id) is int:
            id = str(id)
        if (
            type(id) is str
            and id.isascii()
            and (label is None or type(label) in _PLAIN_LABELS or _ascii(label))
        ):
            if x is None:
                text = record.get("text")
                if type(text) is str and "x" not in record:
                    return _example((id, {"text": text}, label))
            elif type(x) is dict and "text" not in record and "".join(x).isascii():
                try:
                    if math.isfinite(math.fsum(x.values())):
                        return _example((id, x, label))
                except (TypeError, ValueError, OverflowError):
                    pass
    try:
        example = SCHEMA.parse(record, need_id=True)
        return ExampleMessage(SCHEMA.parse_id(record), example.x, example.label)
    except SchemaError as error:
        raise InvalidMessage(str(error)) from None


_PLAIN_LABELS = (bool, int)
# an `ExampleMessage` of a tuple at the cost of a tuple (its class's __new__ is Python)
_example = partial(tuple.__new__, ExampleMessage)


def _ascii(value) -> bool:
    return type(value) is str and value.isascii()


def decode_label(value: bytes | None) -> LabelMessage:
    """Parse and validate a message of the labels topic."""
    record = _load_object(value)
    try:
        if not isinstance(record, dict):
            SCHEMA.parse(record)  # raises the schema's reason
        return LabelMessage(SCHEMA.parse_id(record), SCHEMA.parse_label(record))
    except SchemaError as error:
        raise InvalidMessage(str(error)) from None


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
    """The message for a prediction; non-finite probabilities become null, numpy scalars
    (as some models predict) plain numbers."""
    write_id, write = _WRITERS.get(type(id)), _WRITERS.get(type(prediction))
    if write_id is not None and write is not None and type(model_version) is type(partition) is int:
        # the encoder's bytes, by a template: each label's name once (the last one's number)
        items = {}
        for label, p in probabilities.items():
            name = str(label)
            number = float.__repr__(float(p)) if math.isfinite(p) else "null"
            items[name] = f"{encode_basestring_ascii(name)}: {number}"
        return (
            f'{{"id": {write_id(id)}, "prediction": {write(prediction)}, "probabilities": '
            f'{{{", ".join(items.values())}}}, "model_version": {model_version}, '
            f'"partition": {partition}}}'
        ).encode("ascii")
    probabilities = {
        str(label): (float(p) if math.isfinite(p) else None) for label, p in probabilities.items()
    }
    return _ENCODER.encode(
        {
            "id": id,
            "prediction": prediction,
            "probabilities": probabilities,
            "model_version": model_version,
            "partition": partition,
        }
    ).encode("utf-8")


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot write a {type(value).__name__} prediction as JSON: {value!r}")


_ENCODER = json.JSONEncoder(allow_nan=False, default=_plain)
# what the encoder writes for a value of each plain type (exactly these types: not a subclass)
_WRITERS = {
    str: encode_basestring_ascii,
    int: int.__repr__,
    bool: lambda value: "true" if value else "false",
    type(None): lambda value: "null",
}
