"""The one example schema of river-cw, shared by the file readers and the Kafka messages.

A record is a JSON object (a line of a JSON-lines file, a Kafka message, a CSV row made a dict):

    {"id": "42", "x": {"feature": 1.5, ...}, "label": "spam"}   # features, or
    {"id": "42", "text": "free entry ...", "label": "spam"}     # raw text for a river pipeline

- ``x`` maps feature names (strings) to finite real numbers (JSON numbers or booleans), and in
  files to strings as well (categorical values, for river's encoders such as
  ``preprocessing.OneHotEncoder``); a text record becomes ``x = {"text": str}``, ready for
  ``BagOfWords(on="text")``. With ``flat=True`` every field other than the id and the label is a
  feature (``{"a": 1, "b": 2, "label": 0}``).
- ``label`` is a string, an integer or a boolean (never a float, NaN or null): the label of a
  classifier. It may be missing where a label can come later (Kafka's labels topic).
- ``id`` is a string or an integer, normalised to a string, so an example with id 42 and a label
  with id "42" join.
- Other fields are ignored, so the lines of ``../shared/data`` can be used as they are.

`SchemaError` (a `ValueError`) says in one line what is wrong; callers add where (file and line,
or topic, partition and offset). `loads` decodes JSON text safely: integers of any size, deep
nesting, NaN/Infinity constants and lone surrogates give a `SchemaError`, never another
exception.

>>> SCHEMA.parse({"id": 42, "x": {"a": 1}, "label": "pos"})
Example(id='42', x={'a': 1}, label='pos')
>>> SCHEMA.parse({"text": "hi", "label": 1.5})
Traceback (most recent call last):
...
streams.io.schema.SchemaError: wrong type: 'label' must be a string, integer or boolean, got float 1.5
>>> Schema(flat=True, label_field="spam").parse(loads('{"a": 1, "b": 0.5, "spam": true}'))
Example(id=None, x={'a': 1, 'b': 0.5}, label=True)

"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Literal, overload

__all__ = ["SCHEMA", "Example", "Schema", "SchemaError", "check_label", "loads"]

MAX_DIGITS = 400  # longer JSON integers are refused: 10**400 is far beyond float64 anyway


class SchemaError(ValueError):
    """A record that does not follow the schema; the text is a one-line reason."""


@dataclass(frozen=True)
class Example:
    """One decoded record.

    Parameters
    ----------
    id
        The record's id as a string (integers normalised: 42 and "42" are one id), or None.
    x
        The features, ``{name: number}``, or ``{"text": str}`` for a text.
    label
        The label (a string, an integer or a boolean), or None when it comes later.

    Examples
    --------

    >>> Example("42", {"text": "see you at lunch"}).label is None  # its label comes later
    True

    """

    id: str | None
    x: dict  # features, or {"text": str}
    label: str | int | bool | None = None


def _parse_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_DIGITS:
        raise SchemaError(f"bad JSON: an integer of {len(digits)} digits (at most {MAX_DIGITS})")
    return int(digits)


def _reject_constant(name: str):
    raise SchemaError(f"bad JSON: non-finite number {name}")


_DECODER = json.JSONDecoder(parse_int=_parse_int, parse_constant=_reject_constant)
# the common case, decoded in one call of the C scanner: integers by `int` itself (a document
# that may hold one of more than MAX_DIGITS digits is left to _DECODER, which names it)
_COMMON = json.JSONDecoder(parse_constant=_reject_constant)
_LONG_DIGITS = re.compile(rb"[0-9]{%d}" % (MAX_DIGITS + 1))


def loads(data: bytes | str):
    """Decode one JSON document, or raise `SchemaError` with the reason.

    Parameters
    ----------
    data
        The document's bytes (UTF-8) or text.

    Examples
    --------

    >>> loads(b'{"a": NaN}')
    Traceback (most recent call last):
    ...
    streams.io.schema.SchemaError: bad JSON: non-finite number NaN

    """
    if type(data) is bytes and (len(data) <= MAX_DIGITS or not _LONG_DIGITS.search(data)):
        try:  # a UTF-8 document, without a BOM or spaces around it: anything else goes on below
            text = data.decode("utf-8")
            document, end = _COMMON.raw_decode(text)
            if end == len(text):
                return document
        except Exception:  # said below
            pass
    if isinstance(data, (bytes, bytearray, memoryview)):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as error:
            raise SchemaError(f"not UTF-8: {error}") from None
    if data.startswith("\ufeff"):
        data = data[1:]
    try:
        return _DECODER.decode(data)
    except SchemaError:
        raise
    except json.JSONDecodeError as error:
        raise SchemaError(f"bad JSON: {error}") from None
    except (ValueError, RecursionError) as error:
        raise SchemaError(f"bad JSON: {error}") from None


def describe(value) -> str:
    """A short description of a JSON value for error messages: its type and its beginning."""
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError):
        text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:37] + '...'}"


def _check_string(what: str, value: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise SchemaError(
            f"bad {what}: {describe(value)} is not valid Unicode (a lone surrogate)"
        ) from None


def check_features(x: dict, strings: bool = False) -> None:
    """Raise `SchemaError` naming the first feature that is not a finite real number, or, with
    `strings`, a string either (a categorical value, for river's encoders).

    JSON gives ints, floats and booleans; an int beyond float64 or a non-finite value is refused.
    """
    for name, value in x.items():
        if isinstance(name, str):
            _check_string("feature name", name)
        if strings and isinstance(value, str):
            _check_string(f"value of feature {name!r}", value)
            continue
        if not isinstance(value, (int, float)):
            raise SchemaError(
                f"wrong type: feature {name!r} has a "
                f"{'value neither a number nor a string' if strings else 'non-numeric value'} "
                f"{describe(value)}"
            )
        try:
            finite = math.isfinite(value)
        except OverflowError:
            finite = False
        if not finite:
            raise SchemaError(
                f"feature {name!r} has a value out of float64 range: {describe(value)}"
            )


def check_label(value, field: str = "label") -> None:
    """Raise `SchemaError` unless `value` is a label: a string, an integer or a boolean.

    Floats (NaN above all) are refused: a classifier's classes are compared for equality.
    Readers of other formats (CSV, libsvm) check their labels here too.

    Parameters
    ----------
    value
        The label.
    field
        Its name, for the message.

    Examples
    --------

    >>> check_label(float("nan"))
    Traceback (most recent call last):
    ...
    streams.io.schema.SchemaError: wrong type: 'label' must be a string, integer or boolean, got float NaN
    """
    if not isinstance(value, (str, int)):  # bool is an int
        raise SchemaError(
            f"wrong type: {field!r} must be a string, integer or boolean, got {describe(value)}"
        )
    if isinstance(value, str):
        _check_string(field, value)


@dataclass(frozen=True)
class Schema:
    """Where the fields of a record are; `parse` validates a record and returns an `Example`.

    Parameters
    ----------
    label_field
        The field holding the label.
    text_field
        The field holding raw text (becomes ``x = {"text": ...}``).
    features_field
        The field holding the features object.
    id_field
        The field holding the example id.
    flat
        Every field but the id and the label is a feature (no ``x`` object).

    Examples
    --------

    >>> Schema().parse({"id": 7, "text": "see you at lunch", "label": "ham"})
    Example(id='7', x={'text': 'see you at lunch'}, label='ham')
    >>> Schema(flat=True, label_field="spam").parse({"a": 1, "spam": True})
    Example(id=None, x={'a': 1}, label=True)

    """

    label_field: str = "label"
    text_field: str = "text"
    features_field: str = "x"
    id_field: str = "id"
    flat: bool = False

    def parse(
        self, record, *, need_label: bool = False, need_id: bool = False, strings: bool = False
    ) -> Example:
        """The `Example` of a decoded record; `SchemaError` if it breaks the schema.

        Parameters
        ----------
        record
            A decoded JSON object.
        need_label
            Refuse a record without a label.
        need_id
            Refuse a record without an id.
        strings
            A feature may hold a string (a categorical value) as well as a number.
        """
        if not isinstance(record, dict):
            raise SchemaError(f"unknown schema: expected a JSON object, got {describe(record)}")
        return Example(
            self.parse_id(record, required=need_id),
            self._features(record, strings),
            self.parse_label(record, required=need_label),
        )

    @overload
    def parse_id(self, record: dict, required: Literal[True] = True) -> str: ...
    @overload
    def parse_id(self, record: dict, required: bool) -> str | None: ...
    def parse_id(self, record: dict, required: bool = True) -> str | None:
        """The record's id as a string (integers normalised), or None when absent and allowed.

        Parameters
        ----------
        record
            A decoded JSON object.
        required
            Refuse a record without an id.
        """
        if self.id_field not in record:
            if required:
                raise SchemaError(f"unknown schema: no {self.id_field!r} field")
            return None
        value = record[self.id_field]
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise SchemaError(
                f"wrong type: {self.id_field!r} must be a string or integer, got {describe(value)}"
            )
        if isinstance(value, str):
            _check_string(self.id_field, value)
            return value
        return str(value)

    def parse_label(self, record: dict, required: bool = True):
        """The record's label, or None when missing (or null) and allowed.

        Parameters
        ----------
        record
            A decoded JSON object.
        required
            Refuse a record without a label.
        """
        value = record.get(self.label_field)
        if value is None:
            if required:
                raise SchemaError(f"unknown schema: no {self.label_field!r} (a non-null label)")
            return None
        check_label(value, self.label_field)
        return value

    def _features(self, record: dict, strings: bool) -> dict:
        if self.flat:
            skip = (self.id_field, self.label_field)
            x = {k: v for k, v in record.items() if k not in skip}
            check_features(x, strings)
            return x
        has_x, has_text = self.features_field in record, self.text_field in record
        if has_x == has_text:
            raise SchemaError(
                f"unknown schema: an example needs exactly one of {self.features_field!r} "
                f"(features) and {self.text_field!r}, got "
                + ("both" if has_x else f"fields {sorted(record)[:10]}")
            )
        if has_text:
            text = record[self.text_field]
            if not isinstance(text, str):
                raise SchemaError(
                    f"wrong type: {self.text_field!r} must be a string, got {describe(text)}"
                )
            return {"text": text}
        x = record[self.features_field]
        if not isinstance(x, dict):
            raise SchemaError(
                f"wrong type: {self.features_field!r} must be an object of features, "
                f"got {describe(x)}"
            )
        check_features(x, strings)
        return x


SCHEMA = Schema()
