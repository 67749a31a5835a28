"""Bytes per learned feature, measured with tracemalloc, feature names excluded.

A model learns a stream of examples whose features are all distinct (``--features`` of them,
``--width`` per example), so every feature it sees is a new weight. The names and the example
dicts are built before tracing starts and stay alive, so what tracemalloc counts is what the
model allocated: its weights and their bookkeeping. The Gaussian models run on the engine
of the child process it runs in (``RIVER_CW_PURE_PYTHON=1`` for the pure-Python one).

    python benchmarks/memory.py [--features 1000000] [--width 100] [--write PATH]

Prints a markdown table of bytes per learned feature, next to river's PAClassifier; ``--write
PATH`` also writes it to PATH (docs/tables/memory.md, benchmarks/markdown.py).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

from river import linear_model

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import river_cw
from benchmarks import markdown

MODELS = {
    "river PAClassifier": linear_model.PAClassifier,
    "AROW": river_cw.AROW,
    "CW var exact": lambda: river_cw.CW(variant="var", covariance="diagonal", diagonal="exact"),
    "VotedRDA": river_cw.VotedRDA,
}
ENGINES = {"compiled": {}, "pure Python": {"RIVER_CW_PURE_PYTHON": "1"}}


def measure(make, n_features: int, width: int) -> float:
    """Bytes the model holds per feature after learning `n_features` distinct ones."""
    names = [f"f{i}" for i in range(n_features)]
    stream = [
        ({name: 1.0 for name in names[i : i + width]}, (i // width) % 2 == 0)
        for i in range(0, n_features, width)
    ]
    model = make()
    model.learn_one(*stream[0])  # lazily created structures (labels, blocks) outside the count
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for x, y in stream[1:]:
        model.learn_one(x, y)
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return (after - before) / (n_features - width)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--features", type=int, default=1_000_000)
    parser.add_argument("--width", type=int, default=100)
    parser.add_argument("--write", metavar="PATH", help="also write the table as markdown")
    parser.add_argument("--child", nargs=1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(measure(MODELS[args.child[0]], args.features, args.width))
        return
    print(f"\n{args.features:,} distinct features, {args.width} per example, tracemalloc\n")
    header = ["model", "engine", "bytes per learned feature"]
    print(f"| {' | '.join(header)} |")
    print("|---|---|---:|")
    rows = []
    for model in MODELS:
        for engine, env in ENGINES.items():
            if model.startswith("river ") and env:
                continue
            run = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    model,
                    "--features",
                    str(args.features),
                    "--width",
                    str(args.width),
                ],
                capture_output=True,
                text=True,
                check=True,
                env={**os.environ, **env},
            )
            label = "river" if model.startswith("river ") else engine
            rows.append([model, label, f"{float(run.stdout):.0f}"])
            print(f"| {' | '.join(rows[-1])} |")
    if args.write is not None:
        markdown.write(args.write, markdown.table(header, rows))


if __name__ == "__main__":
    main()
