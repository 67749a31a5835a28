"""JSON lines: one record per line, read by the example schema (`streams.io.schema`).

The records are those of the shared data and of the Kafka messages: features in `x`, raw text in
`text`, or flat records (`Schema(flat=True)`); a text example comes out as
`x = {"text": str}`, ready for `feature_extraction.BagOfWords(on="text")`.
"""

from __future__ import annotations

from streams.io.base import Example, LineStream
from streams.io.schema import SCHEMA, Schema, loads

__all__ = ["JSONLines"]


class JSONLines(LineStream):
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
