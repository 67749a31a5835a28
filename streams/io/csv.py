"""CSV with a header row, read as `river.stream.iter_csv` reads it, with line numbers.

Unlike `iter_csv`, a row with too many or too few fields is a malformed line, not zipped
silently; a number is read as a float and any other cell kept as its string.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator

from streams.io.base import Example, FileStream, MalformedLineError, clip

__all__ = ["CSV"]


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
        raise ValueError(f"column {clip(name)}: {clip(value)} is not finite")
    return number
