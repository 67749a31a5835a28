"""Accuracy against non-zero weights along an l1 path (Xu, Gao, Xiao and Regan 2014, Figure 2 in
spirit): voted RDA next to river's passive-aggressive classifier and l1 logistic regression.

One pass of progressive validation (predict, then learn) over a binary task from
``../shared/data``, shuffled with a fixed seed; the non-zero weights are counted at the end, in
the predictor that makes the predictions. Prints a markdown table and writes a PNG plot, and
beside it (same name, ``.json``) the numbers it draws, which tests/project/test_docs_generated.py
recomputes.

    python benchmarks/sparsity.py [docs/sparsity.png] [--data FILE] [--seed 0]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from river import feature_extraction, linear_model, optim

from river_cw import VotedRDA

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

RDA_L1 = (0.0, 0.001, 0.003, 0.01, 0.03, 0.1)
LOGREG_L1 = (0.0, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2)


def load(path: Path, seed: int) -> list[tuple[dict, bool]]:
    """Examples as (features, label == the second label in sorted order); text is bag-of-words."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    labels = sorted({row["label"] for row in rows})
    if len(labels) != 2:
        raise SystemExit(f"{path.name} has {len(labels)} labels: this benchmark needs two")
    words = feature_extraction.BagOfWords(lowercase=True)
    stream = [
        (row["x"] if "x" in row else words.transform_one(row["text"]), row["label"] == labels[1])
        for row in rows
    ]
    random.Random(seed).shuffle(stream)
    return stream


def n_nonzero(model) -> int:
    if isinstance(model, VotedRDA):
        return model.n_nonzero
    return sum(1 for w in model.weights.values() if w != 0)


def progressive(model, stream) -> tuple[float, int, float]:
    start = time.perf_counter()
    correct = 0
    for x, y in stream:
        correct += model.predict_one(x) == y
        model.learn_one(x, y)
    return correct / len(stream), n_nonzero(model), time.perf_counter() - start


def candidates():
    """(method, parameter label, model) for every point of the plot."""
    for l1 in RDA_L1:
        yield "voted RDA, average", f"l1={l1:g}", VotedRDA(l1=l1)
    for l1 in RDA_L1:
        yield "voted RDA, last", f"l1={l1:g}", VotedRDA(l1=l1, prediction="last")
    for l1 in RDA_L1:
        model = VotedRDA(l1=l1, conservative=False)
        yield "plain RDA (every example), average", f"l1={l1:g}", model
    for l1 in LOGREG_L1:
        yield (
            "river LogisticRegression, SGD(0.01)",
            f"l1={l1:g}",
            linear_model.LogisticRegression(optimizer=optim.SGD(0.01), l1=l1),
        )
    yield "river PAClassifier (PA-I)", "C=1", linear_model.PAClassifier(C=1.0, mode=1)


def measure(data: Path, seed: int, verbose: bool = True) -> dict:
    """The points of the figure: ``{"data", "seed", "points": [[method, parameter, accuracy,
    non-zero weights], ...]}``; with `verbose`, a markdown table as they come (with seconds)."""
    stream = load(data, seed)
    n_features = len({f for x, _ in stream for f in x})
    if verbose:
        print(f"{data.name}: {len(stream)} examples, {n_features} features, seed {seed}\n")
        print("| method | parameter | progressive accuracy | non-zero weights | seconds |")
        print("|---|---|---:|---:|---:|")
    points = []
    for method, label, model in candidates():
        accuracy, nonzero, seconds = progressive(model, stream)
        points.append([method, label, accuracy, nonzero])
        if verbose:
            print(
                f"| {method} | {label} | {accuracy:.2%} | {nonzero:,} | {seconds:.1f} |", flush=True
            )
    return {"data": data.name, "seed": seed, "points": points}


def draw(numbers: dict, out: Path) -> None:
    """The figure of `measure`'s numbers."""
    curves: dict[str, list[tuple[int, float]]] = {}
    for method, _, accuracy, nonzero in numbers["points"]:
        curves.setdefault(method, []).append((nonzero, accuracy))
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    for (method, points), marker in zip(curves.items(), "osD^*"):
        xs, ys = zip(*points)
        ax.plot(xs, ys, marker=marker, label=method)
    ax.set_xscale("log")
    ax.set_xlabel("non-zero weights (log scale)")
    ax.set_ylabel("progressive accuracy")
    ax.set_title(f"{numbers['data'].split('.')[0]}: accuracy against sparsity along the l1 path")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", default="docs/sparsity.png", help="PNG to write")
    parser.add_argument("--data", type=Path, default=DATA / "mdsd_processed_acl_books.jsonl.gz")
    parser.add_argument("--seed", type=int, default=0, help="shuffling seed")
    args = parser.parse_args(argv)
    numbers = measure(args.data, args.seed)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(numbers, indent=1) + "\n", encoding="utf-8")
    draw(numbers, out)
    print(f"\nplot written to {out} ({out.stat().st_size // 1024} KB), its numbers beside it")


if __name__ == "__main__":
    main()
