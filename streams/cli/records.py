"""The command-line options that say how to read records: one definition for every command.

`river-cw evaluate` reads files and `river-cw serve` reads Kafka messages; both read records of
the one schema (`streams.io.schema`), so both take the same options for where the label, the text
and the features are. `add_arguments` adds them; `schema` and `delimiter` read them back.

>>> import argparse
>>> parser = argparse.ArgumentParser()
>>> add_arguments(parser)
>>> args = parser.parse_args(["--target", "spam", "--flat", "--delimiter", "\\\\t"])
>>> schema(args), delimiter(args)
(Schema(label_field='spam', text_field='text', features_field='x', id_field='id', flat=True), '\\t')

"""

from __future__ import annotations

import argparse

from streams.io.schema import Schema

__all__ = ["add_arguments", "delimiter", "schema"]

DELIMITERS = {"\\t": "\t", "tab": "\t"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add --target, --text-field, --flat and --delimiter (a group of their own)."""
    group = parser.add_argument_group("records")
    group.add_argument(
        "--target",
        "--label-field",
        dest="target",
        default="label",
        metavar="FIELD",
        help="the JSON field or CSV column holding the label (default: %(default)s)",
    )
    group.add_argument(
        "--text-field",
        default="text",
        metavar="FIELD",
        help="the JSON field or CSV column holding raw text, read as x = {'text': ...} "
        "(default: %(default)s)",
    )
    group.add_argument(
        "--flat",
        action="store_true",
        help="JSON records hold their features at the top level: every field but the id and "
        'the label is a feature, as in {"a": 1, "b": 2, "label": "spam"}',
    )
    group.add_argument(
        "--delimiter",
        default=",",
        metavar="C",
        help="the CSV field delimiter, one character; '\\t' or 'tab' for tabs (default: ,)",
    )


def schema(args: argparse.Namespace) -> Schema:
    """The `Schema` the options describe."""
    return Schema(label_field=args.target, text_field=args.text_field, flat=args.flat)


def delimiter(args: argparse.Namespace) -> str:
    """The CSV delimiter, or `ValueError` if it is not one character."""
    value = DELIMITERS.get(args.delimiter, args.delimiter)
    if len(value) != 1:
        raise ValueError(f"--delimiter must be one character, got {args.delimiter!r}")
    return value
