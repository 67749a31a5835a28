"""A data file's reader, chosen by its name, and the data that ships with the package.

`open_stream` opens JSON lines (`streams.io.jsonl`), CSV (`streams.io.csv`) or svmlight/libsvm
(`streams.io.libsvm`), plain or gzip, as a stream of `(x, y)`: every reader yields its examples
in file order and knows the line it is on, and a malformed line raises `MalformedLineError`
naming the file and the line, or is skipped and counted (`streams.io.base`). Records follow the
one example schema of `streams.io.schema`, shared with the Kafka messages; labels of every
format are checked by `schema.check_label` (a string, integer or boolean, never a float).

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
>>> stream = open_stream(path, on_error="skip")
>>> list(stream)
[({'a': 1}, 'pos'), ({'text': 'hi'}, 'neg')]
>>> stream.n_skipped, stream.errors[0].line
(1, 2)

"""

from __future__ import annotations

import importlib.resources
import pathlib

from streams.io.base import STDIN, FileStream
from streams.io.csv import CSV
from streams.io.jsonl import JSONLines
from streams.io.libsvm import LibSVM
from streams.io.schema import SCHEMA, Schema

__all__ = ["open_stream", "sms_spam"]

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
