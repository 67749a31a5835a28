"""File sources: JSON lines, CSV and svmlight/libsvm, plain or gzip, as streams of (x, y).

Every reader yields `(x, y)` in file order and knows the line it is on. Two kinds of error:

* A record that cannot be an example (bad JSON, JSON nested too deep, an integer too large for
  a float, a feature that is neither a finite number nor a string (in libsvm: not a number), a
  float, NaN or missing label, a CSV field over
  the csv module's size limit, bytes that are not UTF-8, ...) raises `MalformedLineError` naming
  the file and the line, or, with `on_error="skip"`, is skipped and counted (`n_skipped`, with
  the first errors kept in `errors`).
* A file that cannot be read on (a truncated or corrupt gzip stream, an I/O error) ends the
  stream with `UnreadableFileError` naming the file and the last line read, whatever
  `on_error` says: nothing after that point can be trusted.

A header that cannot be used (no label column, the same column name twice) is a
`MalformedLineError` whatever `on_error` says, since no row can be read without it. A UTF-8
byte order mark at the start of a file is ignored.

Records follow the one example schema of `streams.io.schema`, shared with the Kafka messages:
JSON lines are parsed by a `Schema` (features in `x`, raw text in `text`, or flat records);
labels of every format are checked by `schema.check_label` (a string, integer or boolean,
never a float). Text examples come out as `x = {"text": str}`, ready for
`feature_extraction.BagOfWords(on="text")`.

river's own `stream.iter_csv` and `stream.iter_libsvm` are not reused for parsing: their
generators stop at the first bad line (a generator that raised is finished, so a bad line
cannot be skipped), they report no line numbers, and `iter_csv` silently zips rows that
have too many or too few fields. The readers here keep river's conventions: feature names
are strings, libsvm values are floats, and the compression is found from the file itself.

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
import contextlib
import csv
import gzip
import importlib.resources
import io
import math
import os
import pathlib
import sys
import typing
import zlib
from collections.abc import Callable, Iterator

from streams.io.schema import SCHEMA, Schema, check_label, loads

__all__ = [
    "CSV",
    "FileStream",
    "JSONLines",
    "LibSVM",
    "MalformedLineError",
    "UnreadableFileError",
    "open_stream",
    "sms_spam",
]

STDIN = "-"
GZIP_MAGIC = b"\x1f\x8b"
BOM = "\ufeff"
MAX_KEPT_ERRORS = 100

Example = tuple[dict, typing.Hashable]


class MalformedLineError(ValueError):
    """A line of a data file that cannot be read as an example.

    Parameters
    ----------
    path
        The file.
    line
        The line's number (1-based).
    reason
        What is wrong, in words.
    """

    def __init__(self, path: str, line: int, reason: str):
        super().__init__(f"{path}, line {line}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason


class UnreadableFileError(ValueError):
    """A data file that cannot be read past some point: a truncated or corrupt gzip stream.

    Parameters
    ----------
    path
        The file.
    line
        The last line read whole (0 when nothing could be read).
    reason
        What went wrong, in words.
    """

    def __init__(self, path: str, line: int, reason: str):
        super().__init__(f"{path}: cannot read past line {line}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason


def _unreadable(error: Exception) -> str:
    """What went wrong reading a file, in words."""
    if isinstance(error, EOFError):
        return f"truncated gzip stream ({error})"
    if isinstance(error, zlib.error):
        return f"corrupt gzip data ({error})"
    if isinstance(error, gzip.BadGzipFile):
        return f"not a valid gzip stream ({error})"
    return f"{type(error).__name__}: {error}"


def _clip(text: str, width: int = 40) -> str:
    """The repr of a token for an error message, cut to about `width` characters."""
    return repr(text if len(text) <= width else text[: width - 3] + "...")


class FileStream(abc.ABC):
    """Base of the file readers: opening (plain or gzip), line numbers and error policy.

    Iterating reads the file from the start again, so a stream can be replayed; `n_skipped`
    and `errors` describe the latest pass.

    Parameters
    ----------
    path
        A file path, `"-"` for standard input (read once), or an `importlib.resources`
        traversable.
    on_error
        `"raise"` (default) stops at the first malformed line with a `MalformedLineError`;
        `"skip"` drops it and counts it in `n_skipped` (the first 100 are kept in `errors`).

    Examples
    --------

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "two.jsonl"
    >>> _ = path.write_text('{"text": "hi", "label": "ham"}\\nnot json\\n')
    >>> stream = JSONLines(path, on_error="skip")
    >>> list(stream), stream.n_skipped
    ([({'text': 'hi'}, 'ham')], 1)
    >>> stream.errors[0].line, stream.errors[0].reason
    (2, 'bad JSON: Expecting value: line 1 column 1 (char 0)')

    """

    def __init__(self, path, on_error: str = "raise"):
        if on_error not in ("raise", "skip"):
            raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
        self.path = pathlib.Path(path) if isinstance(path, (str, os.PathLike)) else path
        self.source = "<stdin>" if str(path) == STDIN else str(self.path)  # for messages
        self.on_error = on_error
        self.n_skipped = 0
        self.errors: list[MalformedLineError] = []

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r})"

    def __iter__(self) -> Iterator[Example]:
        self.n_skipped = 0
        self.errors = []
        with self._open() as raw:
            compressed = raw.peek(2)[:2] == GZIP_MAGIC
            fh = gzip.GzipFile(fileobj=raw) if compressed else raw
            yield from self._examples(self._lines(fh))

    def _open(self) -> typing.ContextManager[io.BufferedReader]:
        if self.source == "<stdin>":
            # not closed after reading; a BufferedReader, which typeshed calls a BinaryIO
            return contextlib.nullcontext(typing.cast(io.BufferedReader, sys.stdin.buffer))
        return self.path.open("rb")

    def _lines(self, fh: io.BufferedIOBase) -> Iterator[tuple[int, str]]:
        """Yield (line number, decoded line); a line that is not UTF-8 is a malformed line.

        A failure to read (truncated or corrupt gzip, an I/O error) raises
        `UnreadableFileError` with the number of the last line read.
        """
        number = 0
        raw_lines = iter(fh)
        while True:
            try:
                raw = next(raw_lines, None)
            except (EOFError, zlib.error, OSError) as error:
                raise UnreadableFileError(self.source, number, _unreadable(error)) from error
            if raw is None:
                return
            number += 1
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                self._reject(number, f"not UTF-8 ({error.reason} at byte {error.start})")
                continue
            yield number, line[1:] if number == 1 and line.startswith(BOM) else line

    def _reject(self, line: int, reason: str) -> None:
        error = MalformedLineError(self.source, line, reason)
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
    """JSON lines in the format of `../shared/data`: one record per line, read by a `Schema`.

    Parameters
    ----------
    path
        The file, plain or gzip.
    on_error
        `"raise"` or `"skip"`, see `FileStream`.
    where
        Keep only the records whose fields equal these values, e.g. `{"domain": "books"}`.
    schema
        Where the label, the text and the features are (`streams.io.schema.Schema`); every
        record needs a label.

    Examples
    --------

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "flat.jsonl"
    >>> _ = path.write_text('{"a": 1, "b": 0.5, "spam": true}\\n')
    >>> list(JSONLines(path, schema=Schema(flat=True, label_field="spam")))
    [({'a': 1, 'b': 0.5}, True)]

    """

    def __init__(
        self,
        path,
        on_error: str = "raise",
        where: dict | None = None,
        schema: Schema = SCHEMA,
    ):
        super().__init__(path, on_error)
        self.where = dict(where or {})
        self.schema = schema

    def _parse(self, line: str) -> Example | None:
        record = loads(line)
        if self.where and (
            not isinstance(record, dict)
            or any(record.get(key) != value for key, value in self.where.items())
        ):
            return None
        example = self.schema.parse(record, need_label=True, strings=True)
        return example.x, example.label


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
        Applied to the label token; the default `int` reads `+1`, `-1` and class numbers. It
        must give a string, an integer or a boolean (`schema.check_label`), never a float.

    Examples
    --------

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
        except (TypeError, ValueError):
            raise ValueError(f"bad label {_clip(tokens[0])}") from None
        check_label(y)
        x = {}
        for token in tokens[1:]:
            name, sep, value = token.partition(":")
            if not sep or not name or not value:
                raise ValueError(f"expected name:value, got {_clip(token)}")
            if name == "qid":
                continue
            try:
                number = float(value)
            except ValueError:
                raise ValueError(
                    f"feature {_clip(name)} has a non-numeric value {_clip(value)}"
                ) from None
            if not math.isfinite(number):
                raise ValueError(f"feature {_clip(name)} has a non-finite value {_clip(value)}")
            if name in x:
                raise ValueError(f"feature {_clip(name)} appears twice")
            x[name] = number
        return x, y


class CSV(FileStream):
    """CSV with a header row: one column is the label, the others are features.

    A cell that reads as a number is that number (it must be finite); any other is kept as its
    string, a categorical value for river's encoders (``preprocessing.OneHotEncoder() | ...``).
    Empty cells are missing features (left out of `x`). The column named by `text`, if any,
    holds raw text and becomes `x["text"]`. Labels stay strings, as written (``"True"`` too).

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
    **kwargs
        Passed to `csv.reader` (e.g. `delimiter=";"`).

    Examples
    --------

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "toy.csv"
    >>> _ = path.write_text("a,b,label\\n1,,yes\\n0.5,red,no\\n")
    >>> list(CSV(path))
    [({'a': 1.0}, 'yes'), ({'a': 0.5, 'b': 'red'}, 'no')]

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
        try:
            header = next((row for row in reader if row), None)  # blank lines before it aside
        except csv.Error as error:
            raise MalformedLineError(
                self.source, position["line"], f"bad CSV header: {error}"
            ) from None
        if header is None:
            return
        self._check_header(header, position["line"])
        while True:
            try:
                row = next(reader, None)
            except csv.Error as error:  # e.g. a field over csv.field_size_limit()
                self._reject(position["line"], f"bad CSV: {error}")
                continue
            if row is None:
                return
            if not row:
                continue
            try:
                yield self._row(header, row)
            except ValueError as error:
                self._reject(position["line"], str(error))

    def _check_header(self, header: list[str], line: int) -> None:
        reason = None
        duplicates = sorted({name for name in header if header.count(name) > 1})
        if duplicates:
            reason = f"duplicate column names in the header: {duplicates}"
        elif self.target not in header:
            reason = f"no {self.target!r} column in header {header}"
        if reason:
            raise MalformedLineError(self.source, line, reason)

    def _row(self, header: list[str], row: list[str]) -> Example:
        if len(row) != len(header):
            raise ValueError(f"expected {len(header)} fields, got {len(row)}")
        x: dict = {}
        y = None
        for name, value in zip(header, row):
            if name == self.target:
                y = value
            elif name == self.text:
                x["text"] = value
            elif value != "":
                x[name] = _cell(name, value)
        if y == "":
            raise ValueError(f"empty {self.target!r}")
        return x, y


def _cell(name: str, value: str) -> float | str:
    """A CSV feature's value: the number it reads as (which must be finite), else the string."""
    try:
        number = float(value)
    except ValueError:
        return value
    if not math.isfinite(number):
        raise ValueError(f"column {_clip(name)}: {_clip(value)} is not finite")
    return number


FORMATS = {
    ".jsonl": JSONLines,
    ".ndjson": JSONLines,
    ".json": JSONLines,
    ".csv": CSV,
    ".svm": LibSVM,
    ".libsvm": LibSVM,
    ".svmlight": LibSVM,
}


def open_stream(
    path,
    format: str | None = None,
    on_error: str = "raise",
    schema: Schema = SCHEMA,
    delimiter: str = ",",
) -> FileStream:
    """The reader for a file, chosen by `format` or by its extension (`.gz` aside).

    Parameters
    ----------
    path
        The file (plain or gzip), or ``"-"`` for standard input (JSON lines unless `format`
        says otherwise).
    format
        ``"jsonl"``, ``"csv"`` or ``"libsvm"``; None chooses by the extension.
    on_error
        ``"raise"`` (a `MalformedLineError` naming the file and line) or ``"skip"`` (skip and
        count a malformed line).
    schema
        Where the label and the text are (and, for JSON lines, the features).
    delimiter
        The separator of CSV fields.

    Examples
    --------

    >>> open_stream("data/a9a.libsvm.gz")
    LibSVM('data/a9a.libsvm.gz')

    """
    readers = {"jsonl": JSONLines, "csv": CSV, "libsvm": LibSVM, "svmlight": LibSVM}
    if format is not None:
        if format not in readers:
            raise ValueError(f"unknown format {format!r}; expected one of {sorted(readers)}")
        reader = readers[format]
    elif str(path) == STDIN:
        reader = JSONLines
    else:
        suffixes = [s.lower() for s in pathlib.Path(path).suffixes]
        if suffixes and suffixes[-1] == ".gz":
            suffixes.pop()
        if not suffixes or suffixes[-1] not in FORMATS:
            raise ValueError(
                f"cannot tell the format of {str(path)!r} from its name; "
                f"name it *{{{','.join(FORMATS)}}}[.gz] or give the format"
            )
        reader = FORMATS[suffixes[-1]]
    if reader is JSONLines:
        return JSONLines(path, on_error, schema=schema)
    if reader is CSV:
        return CSV(path, on_error, schema.label_field, schema.text_field, delimiter=delimiter)
    return LibSVM(path, on_error)


def sms_spam(on_error: str = "raise") -> JSONLines:
    """The SMS Spam Collection bundled with the package (5,574 texts, ham/spam, CC BY 4.0).

    Almeida, T. A., Gomez Hidalgo, J. M. and Yamakami, A., 2011. Contributions to the study of
    SMS spam filtering: new collection and results. DocEng.

    Parameters
    ----------
    on_error
        ``"raise"`` or ``"skip"`` a malformed line (see `open_stream`).

    Examples
    --------

    >>> x, y = next(iter(sms_spam()))
    >>> sorted(x), y
    (['text'], 'ham')

    """
    resource = importlib.resources.files("streams.io") / "data" / "sms_spam_collection.jsonl.gz"
    return JSONLines(resource, on_error=on_error)
