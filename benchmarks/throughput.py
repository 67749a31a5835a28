"""Learning throughput of every classifier next to river's own linear models, in one run.

A text stream from ../shared/data goes through river's `BagOfWords` once; every model then
learns the same feature dicts with `learn_one` in file order (shuffled with a fixed seed), so
the times are the models' own. Each model runs `--repeat` times, in rounds over all models, and
keeps its best CPU time.
Prints a markdown table with examples/s, features/s and the ratio to river's PAClassifier and
LogisticRegression measured in the same run.

    python benchmarks/throughput.py [--data FILE ...] [--limit 4000] [--repeat 3] [--write PATH]

``--write PATH`` also writes examples/s and the ratio to river's PAClassifier of every corpus
side by side as one markdown table (docs/tables/throughput.md, benchmarks/markdown.py).

The default streams are short SMS messages (15 tokens) and long product reviews (135 tokens).
The Gaussian models run on the active engine (`river_cw.ENGINE`, printed with each table: the
compiled one when built); ``RIVER_CW_PURE_PYTHON=1`` measures the pure-Python engine.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import time
from pathlib import Path

from river import linear_model

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import river_cw
from benchmarks import markdown

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def models():
    return {
        "river PAClassifier": lambda: linear_model.PAClassifier(),
        "river LogisticRegression": lambda: linear_model.LogisticRegression(),
        "river Perceptron": lambda: linear_model.Perceptron(),
        "AROW": lambda: river_cw.AROW(),  # the arrowhead, drop, intercept prior 100
        "AROW arrowhead project": lambda: river_cw.AROW(
            diagonal="project", initial_intercept_variance=None
        ),
        "AROW diagonal": lambda: river_cw.AROW(covariance="diagonal", diagonal="project"),
        "AROW diagonal drop": lambda: river_cw.AROW(covariance="diagonal", diagonal="drop"),
        "CW stdev": lambda: river_cw.CW(),
        "CW var": lambda: river_cw.CW(variant="var"),
        "CW stdev exact": lambda: river_cw.CW(covariance="diagonal", diagonal="exact"),
        "CW var exact": lambda: river_cw.CW(variant="var", covariance="diagonal", diagonal="exact"),
        "NHERD": lambda: river_cw.NHERD(),
        "NHERD exact": lambda: river_cw.NHERD(covariance="diagonal", diagonal="exact"),
        "SOP": lambda: river_cw.SOP(),
        "SCW-I": lambda: river_cw.SCW(),
        "SCW-II": lambda: river_cw.SCW(variant="II"),
        "VotedRDA": lambda: river_cw.VotedRDA(),
    }


def load(name: str, limit: int, seed: int = 0):
    with gzip.open(DATA / name, "rt", encoding="utf-8") as fh:
        examples = [json.loads(line) for line in fh]
    random.Random(seed).shuffle(examples)
    labels = sorted({ex["label"] for ex in examples})
    # imported here, not with the module: the callgrind children (benchmarks/callgrind.py)
    # import this module for `models` and read the stream pickled, and river's text features
    # pull in river.tree and river.datasets, a tenth of a second of imports that valgrind
    # runs at a seventh of the speed
    from river import feature_extraction

    bow = feature_extraction.BagOfWords(lowercase=True)
    return [(bow.transform_one(ex["text"]), ex["label"] == labels[-1]) for ex in examples[:limit]]


def cpu_time(make, stream) -> float:
    """CPU seconds of one pass: process time is far steadier than wall time on a busy machine."""
    model = make()
    start = time.process_time()
    for x, y in stream:
        model.learn_one(x, y)
    return time.process_time() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data",
        nargs="+",
        default=["sms_spam_collection.jsonl.gz", "mdsd_sorted_acl_text.jsonl.gz"],
    )
    parser.add_argument("--limit", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--write", metavar="PATH", help="also write the tables as one markdown table"
    )
    args = parser.parse_args(argv)

    cells = {}
    for name in args.data:
        stream = load(name, args.limit)
        times = report(name, stream, args.repeat)
        pa = times["river PAClassifier"]
        cells[name] = {m: [f"{len(stream) / s:,.0f}", f"{pa / s:.2f}x"] for m, s in times.items()}
    if args.write is not None:
        markdown.write(args.write, markdown.wide("model", ["examples/s", "vs PAClassifier"], cells))


def report(name: str, stream: list, repeat: int) -> dict:
    """Prints the table of `stream`; returns each model's best CPU seconds."""
    n_features = sum(len(x) for x, _ in stream)
    times = dict.fromkeys(models(), float("inf"))
    for _ in range(repeat):  # rounds over all models, so load changes hit them alike
        for model, make in models().items():
            times[model] = min(times[model], cpu_time(make, stream))
    pa, lr = times["river PAClassifier"], times["river LogisticRegression"]
    print(
        f"\n{name}: {len(stream)} examples, {n_features / len(stream):.0f} features each, "
        f"learn_one only, engine {river_cw.ENGINE!r}\n"
    )
    print("| model | examples/s | features/s | vs PAClassifier | vs LogisticRegression |")
    print("|---|---:|---:|---:|---:|")
    for model, seconds in times.items():
        print(
            f"| {model} | {len(stream) / seconds:,.0f} | {n_features / seconds:,.0f} "
            f"| {pa / seconds:.2f}x | {lr / seconds:.2f}x |"
        )
    return times


if __name__ == "__main__":
    main()
