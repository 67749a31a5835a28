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
the same results: an object of plain UTF-8 JSON is read by orjson, and an example whose fields
are plainly valid (ASCII ids, labels and feature names, finite numbers below 2**63) skips the
schema's field-by-field checks; anything else (a fault to name, a byte-order mark, a lone
surrogate, an integer beyond 64 bits, which orjson reads as a float) is read again by
`streams.io.schema.loads` and the schema decides. A prediction of plain values (string labels,
float probabilities) is written by orjson: compact JSON in UTF-8, each probability the shortest
text that reads back as the same float, a non-finite one as null; anything else by the standard
JSON encoder, as ASCII.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import numpy as np
import orjson

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
    """The JSON value of a record by `streams.io.schema.loads`, which names every fault."""
    if value is None:
        raise InvalidMessage("empty message (no value)")
    try:
        return loads(value)
    except SchemaError as error:
        raise InvalidMessage(str(error)) from None


def _plain_object(value) -> dict | None:
    """orjson's reading of a record that is a JSON object in UTF-8 bytes, or None (see the
    module: the record is then read again, by `_load_object`)."""
    if type(value) is bytes:
        try:
            record = orjson.loads(value)
        except orjson.JSONDecodeError:
            return None
        if type(record) is dict:
            return record
    return None


def decode_example(value: bytes | None) -> ExampleMessage:
    """Parse and validate a message of the examples topic (an id is required).

    A plainly valid record is taken at once: an object with an integer id or an ASCII one, no
    label or a boolean, an integer or an ASCII string, and exactly one of a text string and
    features with ASCII names and finite numbers (`math.fsum` of anything else raises, or sums
    to an infinity). The schema decides the rest, on the record read again (see the module).
    """
    record = _plain_object(value)
    if record is not None:
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
                    if math.isfinite(math.fsum(x.values())) and _within_64_bits(x):
                        return _example((id, x, label))
                except (TypeError, ValueError, OverflowError):
                    pass
    record = _load_object(value)
    try:
        example = SCHEMA.parse(record, need_id=True)
        return ExampleMessage(SCHEMA.parse_id(record), example.x, example.label)
    except SchemaError as error:
        raise InvalidMessage(str(error)) from None


def _within_64_bits(x: dict) -> bool:
    """Whether every number of `x` is below 2**63 in magnitude: orjson reads an integer beyond
    64 bits as a float, which the standard decoder reads as an int."""
    return not x or max(map(abs, x.values())) < _BEYOND_64_BITS


_BEYOND_64_BITS = 2.0**63
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
    (as some models predict) plain numbers, labels their `str`."""
    message = {
        "id": id,
        "prediction": prediction,
        "probabilities": probabilities,
        "model_version": model_version,
        "partition": partition,
    }
    if _FLOATS.issuperset(map(type, probabilities.values())):
        try:  # string labels and values orjson writes as they are (see the module)
            return orjson.dumps(message)
        except orjson.JSONEncodeError:  # a label not a str, numpy, a lone surrogate, a big int
            pass
    message["probabilities"] = {
        str(label): (float(p) if math.isfinite(p) else None) for label, p in probabilities.items()
    }
    return _ENCODER.encode(message).encode("utf-8")


_FLOATS = frozenset([float])


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot write a {type(value).__name__} prediction as JSON: {value!r}")


_ENCODER = json.JSONEncoder(allow_nan=False, default=_plain)
