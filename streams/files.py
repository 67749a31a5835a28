"""File sources: JSON lines, CSV and svmlight/libsvm, plain or gzip, as streams of (x, y).

Every reader yields `(x, y)` in file order and knows the line it is on. A malformed line
raises `MalformedLineError` naming the file and the line, or, with `on_error="skip"`, is
skipped and counted (`n_skipped`, with the first errors kept in `errors`).

river's own `stream.iter_csv` and `stream.iter_libsvm` are not reused for parsing: their
generators stop at the first bad line (a generator that raised is finished, so a bad line
cannot be skipped), they report no line numbers, and `iter_csv` silently zips rows that
have too many or too few fields. The readers here keep river's conventions: feature names
are strings, libsvm values are floats, and the compression is found from the file itself.

Text examples (`{"text": ..., "label": ...}`) come out as `x = {"text": str}`, ready for
`feature_extraction.BagOfWords(on="text")`.

>>> import gzip, tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "toy.jsonl.gz"
>>> with gzip.open(path, "wt") as fh:
...     _ = fh.write('{"x": {"a": 1}, "label": "pos"}\\nnot json\\n')
...     _ = fh.write('{"text": "hi", "label": "neg"}\\n')
>>> stream = JSONLines(path, on_error="skip")
>>> list(stream)
[({'a': 1}, 'pos'), ({'text': 'hi'}, 'neg')]
>>> stream.n_skipped, stream.errors[0].line
(1, 2)

"""

from __future__ import annotations

import abc
import csv
import gzip
import importlib.resources
import json
import math
import os
import pathlib
import typing
from collections.abc import Callable, Iterator

from river_cw.validation import check_features

__all__ = [
    "CSV",
    "FileStream",
    "JSONLines",
    "LibSVM",
    "MalformedLineError",
    "open_stream",
    "parse_record",
    "sms_spam",
]

GZIP_MAGIC = b"\x1f\x8b"
MAX_KEPT_ERRORS = 100

Example = tuple[dict, typing.Hashable]


class MalformedLineError(ValueError):
    """A line of a data file that cannot be read as an example."""

    def __init__(self, path: str, line: int, reason: str):
        super().__init__(f"{path}, line {line}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason


def parse_record(record: typing.Any) -> Example:
    """Turn one decoded JSON record into `(x, y)`, or raise `ValueError` saying what is wrong.

    A record is `{"x": {name: number, ...}, "label": ...}` or `{"text": str, "label": ...}`;
    other keys are ignored.

    >>> parse_record({"text": "free entry", "label": "spam", "id": 7})
    ({'text': 'free entry'}, 'spam')
    >>> parse_record({"x": {"a": "1"}, "label": 1})
    Traceback (most recent call last):
    ...
    ValueError: feature 'a' has a non-numeric value: '1' (str)

    """
    if not isinstance(record, dict):
        raise ValueError(f"expected a JSON object, got {type(record).__name__}")
    if "label" not in record:
        raise ValueError("no 'label'")
    y = record["label"]
    if y is None or isinstance(y, (list, dict)):
        raise ValueError(f"'label' must be a string, number or boolean, got {y!r}")
    if ("x" in record) == ("text" in record):
        raise ValueError("expected exactly one of 'x' (features) and 'text'")
    if "text" in record:
        if not isinstance(record["text"], str):
            raise ValueError(f"'text' must be a string, got {type(record['text']).__name__}")
        return {"text": record["text"]}, y
    x = record["x"]
    if not isinstance(x, dict):
        raise ValueError(f"'x' must be an object of features, got {type(x).__name__}")
    try:
        check_features(x)
    except TypeError as error:
        raise ValueError(str(error)) from None
    return x, y


class FileStream(abc.ABC):
    """Base of the file readers: opening (plain or gzip), line numbers and error policy.

    Iterating reads the file from the start again, so a stream can be replayed; `n_skipped`
    and `errors` describe the latest pass.

    Parameters
    ----------
    path
        A file path, or an `importlib.resources` traversable.
    on_error
        `"raise"` (default) stops at the first malformed line with a `MalformedLineError`;
        `"skip"` drops it and counts it in `n_skipped` (the first 100 are kept in `errors`).

    """

    def __init__(self, path, on_error: str = "raise"):
        if on_error not in ("raise", "skip"):
            raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
        self.path = pathlib.Path(path) if isinstance(path, (str, os.PathLike)) else path
        self.on_error = on_error
        self.n_skipped = 0
        self.errors: list[MalformedLineError] = []

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r})"

    def __iter__(self) -> Iterator[Example]:
        self.n_skipped = 0
        self.errors = []
        with self.path.open("rb") as raw:
            compressed = raw.read(2) == GZIP_MAGIC
            raw.seek(0)
            fh = gzip.GzipFile(fileobj=raw) if compressed else raw
            yield from self._examples(self._lines(fh))

    def _lines(self, fh: typing.BinaryIO) -> Iterator[tuple[int, str]]:
        """Yield (line number, decoded line); a line that is not UTF-8 is a malformed line."""
        for number, raw in enumerate(fh, start=1):
            try:
                yield number, raw.decode("utf-8")
            except UnicodeDecodeError as error:
                self._reject(number, f"not UTF-8 ({error.reason} at byte {error.start})")

    def _reject(self, line: int, reason: str) -> None:
        error = MalformedLineError(str(self.path), line, reason)
        if self.on_error == "raise":
            raise error
        self.n_skipped += 1
        if len(self.errors) < MAX_KEPT_ERRORS:
            self.errors.append(error)

    @abc.abstractmethod
    def _examples(self, lines: Iterator[tuple[int, str]]) -> Iterator[Example]:
        """Turn numbered lines into examples, calling `_reject` on malformed ones."""


class _LineStream(FileStream):
    """A format with one example per line; blank lines are ignored."""

    def _examples(self, lines: Iterator[tuple[int, str]]) -> Iterator[Example]:
        for number, line in lines:
            if not line.strip():
                continue
            try:
                example = self._parse(line)
            except ValueError as error:
                self._reject(number, str(error))
                continue
            if example is not None:
                yield example

    @abc.abstractmethod
    def _parse(self, line: str) -> Example | None:
        """Parse one non-blank line (raise `ValueError` if malformed); None skips it silently."""


class JSONLines(_LineStream):
    """JSON lines in the format of `../shared/data`: one record per line (see `parse_record`).

    Parameters
    ----------
    path
        The file, plain or gzip.
    on_error
        `"raise"` or `"skip"`, see `FileStream`.
    where
        Keep only the records whose fields equal these values, e.g. `{"domain": "books"}`.

    """

    def __init__(self, path, on_error: str = "raise", where: dict | None = None):
        super().__init__(path, on_error)
        self.where = dict(where or {})

    def _parse(self, line: str) -> Example | None:
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"invalid JSON ({error.msg} at column {error.colno})") from None
        if self.where and (
            not isinstance(record, dict)
            or any(record.get(key) != value for key, value in self.where.items())
        ):
            return None
        return parse_record(record)


class LibSVM(_LineStream):
    """svmlight/libsvm lines: `label name:value name:value ... # comment`.

    Feature names stay strings and values become floats, as in `river.stream.iter_libsvm`.
    `qid:` pairs and comments are ignored, and a line with a label and no features is the
    all-zero example.

    Parameters
    ----------
    path
        The file, plain or gzip.
    on_error
        `"raise"` or `"skip"`, see `FileStream`.
    label_type
        Applied to the label token; the default `int` reads `+1`, `-1` and class numbers.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "toy.svm"
    >>> _ = path.write_text("+1 1:0.5 7:2 # first\\n-1 qid:3 2:1\\n")
    >>> list(LibSVM(path))
    [({'1': 0.5, '7': 2.0}, 1), ({'2': 1.0}, -1)]

    """

    def __init__(self, path, on_error: str = "raise", label_type: Callable = int):
        super().__init__(path, on_error)
        self.label_type = label_type

    def _parse(self, line: str) -> Example | None:
        tokens = line.split("#", 1)[0].split()
        if not tokens:
            return None
        try:
            y = self.label_type(tokens[0])
        except ValueError:
            raise ValueError(f"bad label {tokens[0]!r}") from None
        x = {}
        for token in tokens[1:]:
            name, sep, value = token.partition(":")
            if not sep or not name or not value:
                raise ValueError(f"expected name:value, got {token!r}")
            if name == "qid":
                continue
            try:
                number = float(value)
            except ValueError:
                raise ValueError(f"feature {name!r} has a non-numeric value {value!r}") from None
            if not math.isfinite(number):
                raise ValueError(f"feature {name!r} has a non-finite value {value!r}")
            if name in x:
                raise ValueError(f"feature {name!r} appears twice")
            x[name] = number
        return x, y


class CSV(FileStream):
    """CSV with a header row: one column is the label, the others are numeric features.

    Empty cells are missing features (left out of `x`). A column named like `text` holds
    raw text instead and becomes `x["text"]`. Labels stay strings, as written.

    Parameters
    ----------
    path
        The file, plain or gzip.
    on_error
        `"raise"` or `"skip"`, see `FileStream`.
    target
        The label column.
    text
        The text column, if the file has one.
    kwargs
        Passed to `csv.reader` (e.g. `delimiter=";"`).

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "toy.csv"
    >>> _ = path.write_text("a,b,label\\n1,,yes\\n0.5,2,no\\n")
    >>> list(CSV(path))
    [({'a': 1.0}, 'yes'), ({'a': 0.5, 'b': 2.0}, 'no')]

    """

    def __init__(
        self, path, on_error: str = "raise", target: str = "label", text: str = "text", **kwargs
    ):
        super().__init__(path, on_error)
        self.target = target
        self.text = text
        self.kwargs = kwargs

    def _examples(self, lines: Iterator[tuple[int, str]]) -> Iterator[Example]:
        position = {"line": 0}

        def feed() -> Iterator[str]:
            for number, line in lines:
                position["line"] = number
                yield line

        reader = csv.reader(feed(), **self.kwargs)
        header = next(reader, None)
        if header is None:
            return
        if self.target not in header:
            raise MalformedLineError(
                str(self.path), position["line"], f"no {self.target!r} column in header {header}"
            )
        for row in reader:
            if not row:
                continue
            try:
                yield self._row(header, row)
            except ValueError as error:
                self._reject(position["line"], str(error))

    def _row(self, header: list[str], row: list[str]) -> Example:
        if len(row) != len(header):
            raise ValueError(f"expected {len(header)} fields, got {len(row)}")
        x: dict = {}
        y = None
        for name, value in zip(header, row):
            if name == self.target:
                y = value
            elif name == self.text:
                x[name] = value
            elif value != "":
                try:
                    number = float(value)
                except ValueError:
                    raise ValueError(f"column {name!r}: {value!r} is not a number") from None
                if not math.isfinite(number):
                    raise ValueError(f"column {name!r}: {value!r} is not finite")
                x[name] = number
        if y == "":
            raise ValueError(f"empty {self.target!r}")
        return x, y


FORMATS = {
    ".jsonl": JSONLines,
    ".ndjson": JSONLines,
    ".json": JSONLines,
    ".csv": CSV,
    ".svm": LibSVM,
    ".libsvm": LibSVM,
    ".svmlight": LibSVM,
}


def open_stream(path, format: str | None = None, **options) -> FileStream:
    """The reader for a file, chosen by `format` or by its extension (`.gz` aside).

    `format` is one of `"jsonl"`, `"csv"`, `"libsvm"`; `options` go to the reader.

    >>> open_stream("data/a9a.libsvm.gz")
    LibSVM('data/a9a.libsvm.gz')

    """
    if format is not None:
        readers = {"jsonl": JSONLines, "csv": CSV, "libsvm": LibSVM, "svmlight": LibSVM}
        if format not in readers:
            raise ValueError(f"unknown format {format!r}; expected one of {sorted(readers)}")
        return readers[format](path, **options)
    suffixes = [s.lower() for s in pathlib.Path(path).suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes.pop()
    if not suffixes or suffixes[-1] not in FORMATS:
        raise ValueError(
            f"cannot tell the format of {str(path)!r} from its name; "
            f"name it *{{{','.join(FORMATS)}}}[.gz] or give the format"
        )
    return FORMATS[suffixes[-1]](path, **options)


def sms_spam(on_error: str = "raise") -> JSONLines:
    """The SMS Spam Collection bundled with the package (5,574 texts, ham/spam, CC BY 4.0).

    >>> x, y = next(iter(sms_spam()))
    >>> sorted(x), y
    (['text'], 'ham')

    """
    resource = importlib.resources.files("streams") / "data" / "sms_spam_collection.jsonl.gz"
    return JSONLines(resource, on_error=on_error)
