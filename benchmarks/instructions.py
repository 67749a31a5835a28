"""Instructions per feature of `learn_one`, counted by valgrind's callgrind: repeatable where
CPU time on a shared machine is not.

The stream is prepared once (river's `BagOfWords`, as in `throughput.py`) and pickled; each
model then learns it in a child process under callgrind, twice: with no example and with all of
them, so the difference is the learning alone (imports, loading and construction cancel out).
Prints a markdown table of instructions per feature and the ratio to river's PAClassifier, and
exits non-zero when a ratio misses its `--require` bound (a guard CI can run).

    python benchmarks/instructions.py [--data FILE ...] [--limit 300] [--require AROW=10 ...]

Needs valgrind (`apt-get install valgrind`); without it the benchmark says so and exits 0.
"""

from __future__ import annotations

import argparse
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from throughput import load, models  # noqa: E402

ENGINES = {"": {}, " (pure Python)": {"RIVER_CW_PURE_PYTHON": "1"}}
PYTHON_ROWS = ("AROW", "CW stdev exact")  # the pure-Python engine, for reference


def child(model: str, path: str, n: int) -> None:
    with open(path, "rb") as fh:
        stream = pickle.load(fh)[:n]
    learner = models()[model]()
    for x, y in stream:
        learner.learn_one(x, y)


def instructions(model: str, path: str, n: int, env: dict) -> int:
    run = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
         __file__, "--child", model, path, str(n)],
        capture_output=True, text=True, env={**os.environ, **env}, check=True,
    )
    return int(re.search(r"Collected : (\d+)", run.stderr).group(1))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", default=["mdsd_sorted_acl_text.jsonl.gz", "sms_spam_collection.jsonl.gz"])
    parser.add_argument("--limit", type=int, default=300)
    parser.add_argument("--models", nargs="+", default=None, help="rows to count (default: all)")
    parser.add_argument("--require", nargs="*", default=[], metavar="MODEL=RATIO",
                        help="fail unless MODEL's ratio to PAClassifier is at least RATIO")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child[0], args.child[1], int(args.child[2]))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: no instruction counts (apt-get install valgrind)")
        return 0
    required = {name: float(ratio) for name, ratio in (r.rsplit("=", 1) for r in args.require)}
    names = args.models or list(models())
    failed = []
    for data in args.data:
        stream = load(data, args.limit)
        n_features = sum(len(x) for x, _ in stream)
        with tempfile.NamedTemporaryFile(suffix=".pkl") as fh:
            pickle.dump(stream, fh)
            fh.flush()
            counts = {}
            for name in dict.fromkeys(["river PAClassifier", *names]):
                for suffix, env in ENGINES.items():
                    if suffix and name not in PYTHON_ROWS:
                        continue
                    empty = instructions(name, fh.name, 0, env)
                    full = instructions(name, fh.name, len(stream), env)
                    counts[name + suffix] = (full - empty) / n_features
        pa = counts["river PAClassifier"]
        print(f"\n{data}: {len(stream)} examples, {n_features / len(stream):.0f} features each, "
              "learn_one, callgrind\n")
        print("| model | instructions/feature | vs PAClassifier |")
        print("|---|---:|---:|")
        for name, count in counts.items():
            print(f"| {name} | {count:,.0f} | {pa / count:.2f}x |")
            if name in required and pa / count < required[name]:
                failed.append(f"{data}: {name} at {pa / count:.2f}x, required {required[name]}x")
    for line in failed:
        print("FAILED", line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
