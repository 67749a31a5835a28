"""`river-cw` starts at once: the heavy modules are imported only where they are used.

river's packages import much more than the command line needs (river.metrics loads scipy.stats
for its geometric mean, river.feature_extraction loads river.tree, scikit-learn and pandas), and
so did river-cw's own modules (scipy.linalg for the full covariance, matplotlib for a plot not
asked for): `river-cw evaluate` on a small file took 1.4-1.6 s to start (issue 29). These tests
run the command in a fresh interpreter, in a directory of its own (so that no file there shadows
a module), and check which modules it loaded and how much CPU time it took, as a ratio to the
time of ``python -c "import river"`` measured alongside (not in seconds: machines differ).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys

import pytest

HEAVY = (
    "matplotlib",
    "scipy.stats",
    "scipy.integrate",
    "scipy.linalg",
    "sklearn",
    "pandas",
    "kafka",
    "confluent_kafka",
    "prometheus_client",
    "river.feature_extraction",
    "river.linear_model",
    "river.tree",
)
"""Modules `river-cw evaluate FILE --model "AROW()"` does without (scipy.stats and
scipy.integrate are deferred by `streams.cli.defer`: imported, not loaded)."""

LOADED = (
    "import json, sys\n"
    "deferred = lambda m: type(sys.modules[m]).__name__ == '_LazyModule'  # not loaded (yet)\n"
    "print(json.dumps([m for m in {heavy} if m in sys.modules and not deferred(m)]))"
)


@pytest.fixture
def files(tmp_path):
    """A directory to run in, a small text file and a small file of numeric features."""
    text, numbers = tmp_path / "text.jsonl", tmp_path / "numbers.jsonl"
    words = ["free", "prize", "now", "lunch", "at", "noon", "déjà", "vu"]
    with text.open("w", encoding="utf-8") as fh:
        for i in range(40):
            fh.write(json.dumps({"text": " ".join(words[i % 5 : i % 5 + 3]), "label": i % 2}))
            fh.write("\n")
    with numbers.open("w", encoding="utf-8") as fh:
        for i in range(40):
            fh.write(json.dumps({"x": {"a": i / 40, "b": (i * 7 % 40) / 40}, "label": i % 3 == 0}))
            fh.write("\n")
    run_in = tmp_path / "cwd"
    run_in.mkdir()
    return run_in, text, numbers


def evaluate_code(path) -> str:
    """Python code running `river-cw evaluate path --model "AROW()" --quiet`, as the command does."""
    argv = ["evaluate", str(path), "--model", "AROW()", "--quiet"]
    return f"from streams.cli import main\nassert main({argv!r}) == 0\n"


def cpu_seconds(code: str, cwd) -> float:
    """The CPU time (user and system) of a fresh interpreter running `code`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], cwd=cwd, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


@pytest.mark.parametrize("data", ["text", "numbers"])
def test_evaluate_loads_no_heavy_module(files, data):
    run_in, text, numbers = files
    code = evaluate_code(text if data == "text" else numbers) + LOADED.format(heavy=HEAVY)
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=run_in, check=True, capture_output=True, text=True
    )
    assert json.loads(out.stdout.splitlines()[-1]) == []


def test_help_loads_no_sub_command():
    code = (
        "import contextlib, io\nfrom streams.cli import main\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['--help'])\n"
        "import sys; print([m for m in sys.modules if m.startswith(('streams.', 'river_cw'))])"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.split() == ["['streams.cli']"]


def test_evaluate_starts_within_a_few_interpreter_starts(files):
    """`river-cw evaluate` on a small file takes at most 25 times the CPU time of
    ``import river`` (measured: 14 times; 45 times before the heavy modules were deferred, on
    the same machine), each the best of three interleaved runs."""
    run_in, text, _ = files
    command, river = evaluate_code(text), "import river"
    best = {command: float("inf"), river: float("inf")}
    for _ in range(3):
        for code in best:
            best[code] = min(best[code], cpu_seconds(code, run_in))
    assert best[command] < 25 * best[river], best


def test_a_deferred_module_loads_where_it_is_used(files):
    """river's geometric mean needs scipy.stats: deferred, it loads when the metric first
    computes."""
    run_in, text, _ = files
    code = evaluate_code(text).replace("'--quiet'", "'--quiet', '--metric', 'GeometricMean()'")
    code += LOADED.format(heavy=("scipy.stats", "scipy.integrate"))
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=run_in, check=True, capture_output=True, text=True
    )
    assert "GeometricMean" in out.stdout
    assert "scipy.stats" in json.loads(out.stdout.splitlines()[-1])
