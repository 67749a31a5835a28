"""The suite's processes run one BLAS thread (tests/conftest.py sets ``OPENBLAS_NUM_THREADS`` and
``OMP_NUM_THREADS`` before anything imports numpy): in two workers on two cores, OpenBLAS's thread
per core spins for the other worker's core, and the full-covariance tests took eight times the
CPU. An import of numpy moved ahead of the setting would undo it silently; this fails instead."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

threadpoolctl = pytest.importorskip("threadpoolctl", reason="scikit-learn's, of the [dev] extra")
ROOT = Path(__file__).resolve().parents[2]


def blas_threads() -> set[int]:
    """The threads of each BLAS this process loaded (numpy's, at least)."""
    np.linalg.eigvalsh(np.eye(3))
    return {
        pool["num_threads"]
        for pool in threadpoolctl.threadpool_info()
        if pool["user_api"] == "blas"
    }


def test_this_process_runs_the_threads_the_environment_asks_for():
    assert blas_threads() == {int(os.environ["OPENBLAS_NUM_THREADS"])}


def test_a_process_a_test_starts_runs_them_too():
    code = "from tests.project.test_blas_threads import blas_threads; print(*blas_threads())"
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert run.stdout.split() == [os.environ["OPENBLAS_NUM_THREADS"]]
