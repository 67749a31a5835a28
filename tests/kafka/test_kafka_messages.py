"""Message schema of the Kafka topics: what is accepted, and the reason given for what is not."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from streams.io.schema import SCHEMA, SchemaError, loads
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


# the short paths of the common forms (`loads`, `decode_example`, `encode_prediction`) against
# the full checks and the JSON encoder they stand for
DOCUMENTS = [
    b'{"id": 1, "text": "hi", "label": "spam"}',
    b'{"id": "a", "x": {"f": 1, "g": -2.5e-3, "h": true}, "label": 3}',
    b'{"id": 1, "x": {}, "label": false}',
    b'\xef\xbb\xbf{"id": 1, "text": "a BOM"}',
    b'  {"id": 1, "text": "spaces"}  ',
    b'{"id": 1, "text": "caf\xc3\xa9", "label": "caf\xc3\xa9"}',
    b'{"id": "caf\xc3\xa9", "x": {"caf\xc3\xa9": 1}}',
    b'{"id": "\\u00e9", "text": "an escape"}',
    b'{"id": "\\ud800", "text": "a lone surrogate"}',
    b'{"id": 1, "text": "t", "label": "\\udc00"}',
    b'{"id": 1, "x": {"\\udc00": 1}}',
    b'{"id": 1, "x": {"a": 1e999}}',
    b'{"id": 1, "x": {"a": 1e308, "b": 1e308}}',
    b'{"id": 1, "x": {"a": 1' + b"0" * 330 + b', "b": -1' + b"0" * 330 + b"}}",
    b'{"id": 1, "x": {"a": 1' + b"0" * 400 + b"}}",
    b'{"id": 1, "x": {"a": "1"}}',
    b'{"id": 1, "x": {"a": null, "b": [1], "c": {}}}',
    b'{"id": 1, "x": {"a": NaN}}',
    b'{"id": 1, "x": null, "text": "both?"}',
    b'{"id": 1, "x": {}, "text": "both"}',
    b'{"id": 1, "text": null}',
    b'{"id": 1, "text": 5}',
    b'{"id": 1}',
    b'{"id": true, "text": "a boolean id"}',
    b'{"id": 1.0, "text": "a float id"}',
    b'{"id": null, "text": "a null id"}',
    b'{"text": "no id"}',
    b'{"id": 1, "text": "t", "label": 1.5}',
    b'{"id": 1, "text": "t", "label": null}',
    b'{"id": 1, "text": "t", "label": [1]}',
    b'{"id": 1, "text": "t"} {"id": 2}',
    b'[{"id": 1, "text": "t"}]',
    b'"a string"',
    b"12",
    b"",
    b"\xff",
    b"[" * 5000,
    # integers beyond 64 bits, which orjson reads as floats: read again by the standard decoder
    b'{"id": 123456789012345678901, "text": "a wide id"}',
    b'{"id": 1, "text": "t", "label": -9223372036854775809}',
    b'{"id": 1, "x": {"a": 18446744073709551616, "b": 1}}',
    b'{"id": 1, "x": {"a": 18446744073709551615}}',
    b'{"id": 1, "x": {"a": -9223372036854775808, "b": 9.3e18, "c": 9.2e18}}',
    b'{"id": 1, "x": {"a": 1' + b"0" * 300 + b"}}",
    b'{"id": 1, "x": {"a": 1.7976931348623159e308}}',
    b'{"id": 1, "x": {"a": 2.4703282292062328e-324, "b": -0.0, "c": 0.1e1}}',
    b'{"id": 1, "text": "t", "id": 2, "x": null}',
    b'{"id": 1, "text": "raw \x7f and \xe2\x80\xa8", "label": "caf\\u00e9"}',
    b'{"id": 1, "text": "\\ud83d\\ude00 a pair"}',
    b'{"id": 1, "text": "\xed\xa0\x80 an encoded surrogate"}',
    b'{"id": 1, "text": "t"}\n',
    b'{"id": 1, "text": "t",}',
    b'{"id": 1, "text": "t" /* a comment */}',
]


def outcome(decode, value):
    try:
        return decode(value)
    except SchemaError as error:
        return type(error), str(error)


def test_loads_decodes_as_the_full_decoder_says():
    for value in DOCUMENTS:  # a bytearray takes the full path, which names every fault
        assert outcome(loads, value) == outcome(loads, bytearray(value)), value


def test_decode_example_takes_what_the_schema_takes_and_says_why_not():
    for value in DOCUMENTS:  # repr: an int and the float equal to it differ, as do 0.0 and -0.0
        assert repr(outcome(decode_example, value)) == repr(outcome(_schema_example, value)), value


class Digits(str):
    """A number's text as drawn, written into the document as it is."""


INTEGERS = st.integers(min_value=-(2**70), max_value=2**70)  # 64 bits and beyond
NUMBERS = st.one_of(
    INTEGERS,
    st.floats(allow_nan=False),  # infinities: the standard decoder's Infinity, refused
    st.sampled_from([2**63, -(2**63), 2**64 - 1, 2**64, 9.3e18, 1e308, 5e-324, -0.0]),
    st.integers(min_value=2**63, max_value=2**70).flatmap(lambda n: st.sampled_from([n, -n])),
    # decimal texts: digits past a double's precision, exponents past its range
    st.from_regex(
        r"-?(0|[1-9][0-9]{0,40})(\.[0-9]{1,40})?([eE][+-]?[0-9]{1,3})?", fullmatch=True
    ).map(Digits),
)
NAMES = st.one_of(st.text("abc", max_size=2), st.text(max_size=6))  # and surrogates
VALUES = st.one_of(NUMBERS, st.booleans(), st.none(), NAMES)


def write(value, ascii: bool) -> str:
    if isinstance(value, Digits):
        return value
    if isinstance(value, dict):
        return (
            "{" + ", ".join(f"{write(k, ascii)}: {write(v, ascii)}" for k, v in value.items()) + "}"
        )
    return json.dumps(value, ensure_ascii=ascii)


@st.composite
def documents(draw) -> bytes:
    """An examples-topic record, mostly of a plain form (an id, a text or features, a label)
    with fields drawn around it, its numbers written by Python or as drawn digits, its strings
    as UTF-8 or escaped."""

    def often() -> bool:  # three times in four
        return draw(st.integers(0, 3)) > 0

    fields: dict = {}
    if often():
        fields["id"] = draw(st.one_of(INTEGERS, NAMES) if often() else VALUES)
    if often():
        names = st.text("abc", max_size=2) if often() else NAMES
        fields["x"] = draw(st.dictionaries(names, NUMBERS, max_size=3) if often() else VALUES)
    if "x" not in fields or not often():
        fields["text"] = draw(st.text(max_size=20) if often() else VALUES)
    if often():
        fields["label"] = draw(st.one_of(INTEGERS, NAMES, st.booleans()) if often() else VALUES)
    return write(fields, draw(st.booleans())).encode("utf-8", "surrogatepass")


@given(documents())
def test_decode_example_of_any_document_is_the_standard_decoders_and_the_schemas(value):
    assert repr(outcome(decode_example, value)) == repr(outcome(_schema_example, value)), value


def _schema_example(value: bytes) -> ExampleMessage:
    """The example by the schema's checks alone (what `decode_example` does for uncommon
    records)."""
    try:
        record = loads(bytearray(value))
        example = SCHEMA.parse(record, need_id=True)
        return ExampleMessage(SCHEMA.parse_id(record), example.x, example.label)
    except SchemaError as error:
        raise InvalidMessage(str(error)) from None


def standard_prediction(id, prediction, probabilities) -> str:
    """What the standard JSON encoder writes for a prediction (labels by `str`, non-finite
    probabilities null, numpy scalars as Python's)."""

    def plain(value):
        return value.item()

    return json.JSONEncoder(allow_nan=False, default=plain).encode(
        {
            "id": id,
            "prediction": prediction,
            "probabilities": {
                str(label): (float(p) if math.isfinite(p) else None)
                for label, p in probabilities.items()
            },
            "model_version": 12,
            "partition": 3,
        }
    )


def read_back(message: bytes | str) -> str:
    """A prediction read by the standard decoder, strictly (no NaN, no Infinity), as its repr:
    an int and the float equal to it differ, as do 0.0 and -0.0, and the keys' order counts."""

    def refuse(name):
        raise ValueError(f"not strict JSON: {name}")

    return repr(json.loads(message, parse_constant=refuse))


def assert_reads_as_the_standard_encoders(id, prediction, probabilities) -> None:
    message = encode_prediction(id, prediction, probabilities, 12, 3)
    assert read_back(message) == read_back(standard_prediction(id, prediction, probabilities))


@pytest.mark.parametrize(
    "id, prediction, probabilities",
    [
        ("1", "spam", {"spam": 0.75, "ham": 0.25}),
        (7, True, {True: 0.6847927285414301, False: 0.31520727145856986}),
        ("é\u2028\"'\\", 3, {3: 1e-300, 4: 1.0, 5: 0.0}),
        ("x", None, {}),
        ("x", "a", {"a": float("nan"), "b": float("inf"), "c": -0.0}),
        ("x", "True", {True: 0.5, "True": 0.25, 1.5: 0.125}),  # one name, the last one's number
        ("x", np.int64(4), {np.int64(4): np.float32(0.5)}),  # numpy: the encoder's path
        ("x", "a", {"a": np.float32(0.1), "b": np.float64(0.9)}),  # a float32's float64 value
        ("x", "a", {"a": 1, "b": False}),  # numbers written as floats
        ("x", 2.5, {2.5: 1}),
        ("\udc00", "a", {"\udc00": 1.0}),  # a lone surrogate, escaped
        (2**70, "a", {"a": 5e-324}),
    ],
)
def test_predictions_read_back_as_the_json_encoders(id, prediction, probabilities):
    assert_reads_as_the_standard_encoders(id, prediction, probabilities)


LABELS = st.one_of(st.text(max_size=8), st.integers(-(2**70), 2**70), st.booleans())
PROBABILITIES = st.one_of(
    st.floats(),  # NaN, the infinities, subnormals, -0.0
    st.floats(width=32).map(np.float32),
    st.floats().map(np.float64),
    st.integers(0, 1),
)


@given(
    st.one_of(st.text(max_size=8), st.integers(-(2**70), 2**70)),
    st.one_of(LABELS, st.none()),
    st.dictionaries(LABELS, PROBABILITIES, max_size=4),
)
def test_any_prediction_reads_back_as_the_json_encoders(id, prediction, probabilities):
    assert_reads_as_the_standard_encoders(id, prediction, probabilities)


def test_a_plain_prediction_is_compact_utf8_json():
    message = encode_prediction("é1", "spam", {"spam": 0.75, "ham": 1e-05}, 12, 3)
    assert (
        message
        == (
            '{"id":"é1","prediction":"spam","probabilities":{"spam":0.75,"ham":0.00001},'
            '"model_version":12,"partition":3}'
        ).encode()
    )
