"""The tables the guides include: what a benchmark writes with ``--write PATH``.

A guide never holds a measured table itself: the benchmark that measures it writes it to
docs/tables/NAME.md (``--write docs/tables/NAME.md``), and the guide includes the file
(``--8<-- "tables/NAME.md"``, pymdownx.snippets). tests/project/test_docs_tables.py runs a quick
variant of each command and compares what does not depend on the machine with the committed file.

Every table has the same form: a header, a rule (the first column left-aligned, the others
right-aligned), one row per line. `wide` lays results of several corpora side by side, one group
of columns per corpus.
"""

from __future__ import annotations

from pathlib import Path

CORPORA = {  # the data files' names in a table's header
    "sms_spam_collection.jsonl.gz": "SMS",
    "mdsd_sorted_acl_text.jsonl.gz": "reviews",
    "enron_spam_lbjava_subset.jsonl.gz": "Enron",
}


def corpus(name: str) -> str:
    """The label of the data file `name` in a table's header."""
    return CORPORA.get(name, name)


def table(header: list[str], rows: list[list[str]]) -> str:
    """A markdown table: `header`, then `rows` (lists of cells, as many as the header's)."""
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"a row of {len(row)} cells under {len(header)} columns: {row}")
    lines = [
        f"| {' | '.join(header)} |",
        f"|---|{'---:|' * (len(header) - 1)}",
        *(f"| {' | '.join(row)} |" for row in rows),
    ]
    return "\n".join(lines) + "\n"


def wide(first: str, columns: list[str], cells: dict[str, dict[str, list[str]]]) -> str:
    """One table of several corpora: `cells` maps a data file to {row name: its cells under
    `columns`}; each corpus gets `columns`, headed by its label; rows in the first corpus's order."""
    header = [first]
    for name in cells:
        header += [f"{corpus(name)}: {column}" for column in columns]
    names = list(next(iter(cells.values())))
    rows = [[row, *(cell for by_row in cells.values() for cell in by_row[row])] for row in names]
    return table(header, rows)


def write(path: str | Path, text: str) -> None:
    """Write `text` to `path` (its folder made if need be), and say so."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(f"\nwrote {path}")
