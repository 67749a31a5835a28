"""The guides are written for users: no issue numbers, no talk of the machine a number was measured
on. The project's history goes to CHANGELOG.md and benchmarks/HISTORY.md, the maintainers'
measurements and their conditions to benchmarks/README.md; neither is checked here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])

# What a reader cannot act on: a tracker's numbers, the load of the machine a number came from,
# the project's history (which default a number was measured with, what came before)
LAB_NOTES = re.compile(
    r"\bissues?\s*#?\d+"
    r"|\bbusy\b|\b(?:2|two)[- ]cores?\b|\bloaded machine|\bquiet machine|\bunder load\b"
    r"|\bshared machine|\bdevelopment machine|\bother (?:jobs|work)\b|\bload (?:near|of) \d"
    r"|\b(?:former|old|previous|past|earlier|today's)\s+defaults?\b|\bbecame\s+the\s+default\b"
    r"|\bin\s+its\s+first\s+versions\b|\bused\s+to\s+be\b|\(before\)",
    re.IGNORECASE,
)


def lab_notes(text: str) -> list[tuple[int, str]]:
    """(line number, phrase) for each phrase of `text` a user has no use for."""
    return [
        (text.count("\n", 0, match.start()) + 1, match[0]) for match in LAB_NOTES.finditer(text)
    ]


def test_the_lint_finds_what_it_is_for():
    found = [
        phrase
        for _, phrase in lab_notes(
            "as issue 30 showed; see issues 12 and 13; one run on the busy 2-core machine,\n"
            "on two cores under load, while other work kept the load near 5, on a quiet machine;\n"
            "measured with the former default, today's default, the old defaults; once it became\n"
            "the default; river-cw's default in its first versions; AROW diagonal (before);\n"
            "what it used to be"
        )
    ]
    assert found == [
        "issue 30",
        "issues 12",
        "busy",
        "2-core",
        "two cores",
        "under load",
        "other work",
        "load near 5",
        "quiet machine",
        "former default",
        "today's default",
        "old defaults",
        "became\nthe default",
        "in its first versions",
        "(before)",
        "used to be",
    ]
    assert (
        lab_notes(
            "a Kafka issue; two partitions; this machine only; a busybox; the default; before it\n"
            "learns; the key used to sign; an earlier version's state; keeps the defaults"
        )
        == []
    )


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_docs_hold_no_lab_notes(document):
    found = lab_notes(document.read_text(encoding="utf-8"))
    assert found == [], (
        f"{document.relative_to(ROOT)}: {found}: write for users (history goes to CHANGELOG.md "
        "or benchmarks/HISTORY.md, measuring conditions to benchmarks/README.md)"
    )
