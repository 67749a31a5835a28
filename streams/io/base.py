"""What every file reader shares: opening, numbered lines and the two kinds of error.

A reader (`FileStream`) opens its file plain or gzip (found from the file itself, not its name),
or standard input, and reads it as numbered UTF-8 lines; a UTF-8 byte order mark at the start of
a file is ignored. Two kinds of error:

* A record that cannot be an example (bad JSON, JSON nested too deep, an integer too large for
  a float, a feature that is neither a finite number nor a string (in libsvm: not a number), a
  float, NaN or missing label, a CSV field over the csv module's size limit, bytes that are not
  UTF-8, ...) raises `MalformedLineError` naming the file and the line, or, with
  `on_error="skip"`, is skipped and counted (`n_skipped`, with the first errors kept in
  `errors`).
* A file that cannot be read on (a truncated or corrupt gzip stream, an I/O error) ends the
  stream with `UnreadableFileError` naming the file and the last line read, whatever
  `on_error` says: nothing after that point can be trusted.

The formats are `streams.io.jsonl`, `streams.io.csv` and `streams.io.libsvm`;
`streams.io.files.open_stream` picks one by a file's name.
"""

from __future__ import annotations

import abc
import contextlib
import gzip
import io
import os
import pathlib
import sys
import typing
import zlib
from collections.abc import Iterator

__all__ = ["FileStream", "MalformedLineError", "UnreadableFileError"]

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


def clip(text: str, width: int = 40) -> str:
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
    >>> from streams.io.jsonl import JSONLines
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
        if str(self.path) == STDIN:
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


class LineStream(FileStream):
    """Base of the formats with one example per line; blank lines are ignored."""

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
