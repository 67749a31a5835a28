"""`river-cw evaluate` streams: its memory does not grow with the stream's length.

The command runs in a subprocess on 100,000 and on 800,000 examples, from a file and from
standard input, and reports its peak resident memory (`ru_maxrss`); the longer stream may take
at most 1.3x the shorter one's. (Holding the examples in a list, as the command once did, took
about 0.4 KB per example of these: some 330 MB more for the longer stream.)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# the child runs the command, then prints its peak resident memory (KB on Linux) to stderr
PEAK = """
import resource, sys
from streams.cli import main
try:
    main(sys.argv[1:])
finally:
    print("peak", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""


def write_examples(path: Path, n: int) -> None:
    """`n` short JSON lines of two numeric features and a boolean label."""
    block = "".join(
        f'{{"x": {{"a": {i % 7 - 3}, "b": {i % 5 * 0.25}}}, "label": {str(i % 7 > 3).lower()}}}\n'
        for i in range(1000)
    )
    with open(path, "w", encoding="utf-8") as fh:
        for _ in range(n // 1000):
            fh.write(block)


def peak_kb(path: Path, n: int, stdin: bool) -> int:
    """The command's peak resident memory on the file, given by name or on standard input."""
    argv = ["evaluate", "-" if stdin else str(path), "--model", "AROW()", "--quiet"]
    with open(path, "rb") as fh:
        run = subprocess.run(
            [sys.executable, "-c", PEAK, *argv],
            stdin=fh if stdin else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=True,
        )
    assert run.stdout.splitlines()[-1].split()[2] == f"{n:,}"  # AROW's row: every example
    return int(run.stderr.split("peak")[-1])


@pytest.mark.slow
@pytest.mark.parametrize("stdin", [False, True], ids=["file", "stdin"])
def test_memory_is_bounded_in_the_streams_length(tmp_path, stdin):
    short, long = tmp_path / "short.jsonl", tmp_path / "long.jsonl"
    write_examples(short, 100_000)
    write_examples(long, 800_000)
    assert peak_kb(long, 800_000, stdin) <= 1.3 * peak_kb(short, 100_000, stdin)
