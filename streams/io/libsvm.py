"""svmlight/libsvm lines, read as `river.stream.iter_libsvm` reads them, with line numbers."""

from __future__ import annotations

import math
from collections.abc import Callable

from streams.io.base import Example, LineStream, clip
from streams.io.schema import check_label

__all__ = ["LibSVM"]


class LibSVM(LineStream):
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
            raise ValueError(f"bad label {clip(tokens[0])}") from None
        check_label(y)
        x = {}
        for token in tokens[1:]:
            name, sep, value = token.partition(":")
            if not sep or not name or not value:
                raise ValueError(f"expected name:value, got {clip(token)}")
            if name == "qid":
                continue
            try:
                number = float(value)
            except ValueError:
                raise ValueError(
                    f"feature {clip(name)} has a non-numeric value {clip(value)}"
                ) from None
            if not math.isfinite(number):
                raise ValueError(f"feature {clip(name)} has a non-finite value {clip(value)}")
            if name in x:
                raise ValueError(f"feature {clip(name)} appears twice")
            x[name] = number
        return x, y
