"""`river-cw evaluate` streams: its memory does not grow with the stream's length.

The command runs in a subprocess on 25,000 and on 200,000 examples, from a file and from
standard input, and reports its peak resident memory (`ru_maxrss`); the longer stream may take
at most 1.3x the shorter one's. Holding the examples in a list, as the command once did, took
about 0.4 KB per example of these: some 70 MB more for the longer stream, beside the command's
own 50 MB at either length (a ratio near 2.4). Eight-fold growth at these lengths proves the bound
as well as it did at 100,000 and 800,000, in a quarter of the time.

A Kafka topic, with its labels inside the examples or on a labels topic, is held to the same
ratio on the same lengths (`river-cw produce` writes them, at about 25,000 a second on the demo
broker), where holding the examples would take some 70 MB more than the command's own 80 MB.
(Before the reader bounded its fetches, these took 87 and 114 MB.)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHORT, LONG = 25_000, 200_000  # examples: the eight-fold growth every stream is held to

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
        return peak_of(argv, n, fh if stdin else subprocess.DEVNULL)


def peak_of(argv: list[str], n: int, stdin=subprocess.DEVNULL) -> int:
    """The peak resident memory of `river-cw ARGV`, which scores `n` examples with AROW."""
    run = subprocess.run(
        [sys.executable, "-c", PEAK, *argv],
        stdin=stdin,
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
    write_examples(short, SHORT)
    write_examples(long, LONG)
    assert peak_kb(long, LONG, stdin) <= 1.3 * peak_kb(short, SHORT, stdin)


@pytest.mark.slow
@pytest.mark.kafka
@pytest.mark.parametrize("labels", [False, True], ids=["topic", "labels-topic"])
def test_memory_is_bounded_in_the_topics_length(kafka_broker, topic_name, tmp_path, labels):
    from streams.kafka.client import create_topics

    servers = kafka_broker.bootstrap_servers
    peaks = []
    for n in (SHORT, LONG):
        path, topic = tmp_path / f"{n}.jsonl", topic_name("memory")
        write_examples(path, n)
        topics = [topic, f"{topic}.labels"] if labels else [topic]
        create_topics(servers, dict.fromkeys(topics, 2))
        source = ["--topic", topic, "--bootstrap-servers", servers]
        source += ["--labels-topic", topics[-1]] if labels else []
        produced = ["produce", str(path), *source] + (["--label-delay", "100"] if labels else [])
        subprocess.run(
            [sys.executable, "-m", "streams.cli", *produced],
            capture_output=True,
            cwd=ROOT,
            check=True,
        )
        peaks.append(peak_of(["evaluate", *source, "--model", "AROW()", "--quiet"], n))
    assert peaks[1] <= 1.3 * peaks[0]
