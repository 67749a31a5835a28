"""Shared fixtures: the read-only data folder beside the repository."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def read_jsonl(name: str):
    """The examples of a shared data file, or a skip when the folder is absent."""
    path = SHARED_DATA / name
    if not path.exists():
        pytest.skip(f"{path} is not here: the shared data folder sits beside the repository in CI")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def shuffled(examples: list, seed: int = 0) -> list:
    """The files are label-sorted; online learners need them shuffled with a fixed seed."""
    examples = list(examples)
    random.Random(seed).shuffle(examples)
    return examples
