"""The full covariance against a plain numpy peer: ``AROW(covariance="full")`` and olpy's AROW on
the same dense streams, side by side in one run (issue 44).

Both learners read every example once, in order, and predict it before they learn it
(progressive validation): accuracy is the share of those predictions that were right,
examples/s counts the prediction and the update by CPU time. They run in interleaved rounds
(`--repeat`), a fresh model each round, and each keeps its best time; BLAS runs one thread (an
idle BLAS thread spinning would bill the next contender).

- river-cw: ``AROW(covariance="full", forgetting=0)`` (r = 1, every prior variance 1, the
  intercept's too, no forgetting: the paper's AROW, as olpy's), ``predict_one`` then
  ``learn_one`` on the example's dict of floats;
- olpy (``pip install -e ".[benchmarks]"``; without it the olpy rows are skipped, and the run
  says so): ``olpy.classifiers.AROW(r=1)``, the same model (its Sigma starts at the identity),
  on the example as a dense numpy row with a constant 1 for the intercept: the sign of
  ``weights . x``, then its ``_update`` (what its ``fit`` runs per example), a dozen numpy lines
  over the full matrix.

The streams: Spambase (57 features, shuffled with seed 1), a9a (123 one-hot features, the first
`--limit` examples, shuffled with seed 1) and a synthetic stream of 20 correlated Gaussian
features labelled by a noisy linear concept (seed 1).

    python benchmarks/full_vs_olpy.py [--repeat 5] [--limit 10000] [--write PATH]

``--write PATH`` also writes the table as markdown (docs/tables/full_vs_olpy.md,
benchmarks/markdown.py).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: one BLAS thread
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import gc
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import river_cw
from benchmarks import markdown
from benchmarks.intercept import shared

SYNTHETIC_FEATURES = 20


def synthetic(n: int, seed: int = 1) -> list[tuple[dict, bool]]:
    """`n` examples of `SYNTHETIC_FEATURES` correlated Gaussian features (a random mixing of
    independent ones, shifted from 0), labelled by a linear concept with 5% of the labels
    flipped."""
    rng = np.random.default_rng(seed)
    mixing = rng.normal(size=(SYNTHETIC_FEATURES, SYNTHETIC_FEATURES)) / SYNTHETIC_FEATURES**0.5
    X = rng.normal(size=(n, SYNTHETIC_FEATURES)) @ mixing + 1.0
    truth = rng.normal(size=SYNTHETIC_FEATURES)
    y = (X - 1.0) @ truth > 0
    y ^= rng.random(n) < 0.05
    return [
        ({f"x{j}": float(v) for j, v in enumerate(row)}, bool(label)) for row, label in zip(X, y)
    ]


def streams(limit: int) -> dict[str, list]:
    """The streams by name, as (dict of floats, bool label); a missing shared file is left out."""
    found = {}
    for name, file in (("Spambase", "spambase.jsonl.gz"), ("a9a", "libsvm_a9a.jsonl.gz")):
        data = shared(file, 1, limit)
        if data is None:
            print(f"{name}: {file} not found beside the project (../shared/data); skipped")
            continue
        found[name] = [({f: float(v) for f, v in x.items()}, y) for x, y in data]
    found[f"synthetic, {SYNTHETIC_FEATURES} features"] = synthetic(limit)
    return found


def dense(data: list) -> tuple[np.ndarray, np.ndarray]:
    """The stream as olpy reads it: dense rows over every feature (sorted) and a constant 1,
    labels -1 or +1."""
    names = sorted({f for x, _ in data for f in x})
    column = {f: j for j, f in enumerate(names)}
    X = np.zeros((len(data), len(names) + 1))
    X[:, -1] = 1.0
    for i, (x, _) in enumerate(data):
        for f, v in x.items():
            X[i, column[f]] = v
    return X, np.array([1 if y else -1 for _, y in data])


def river_cw_pass(data: list) -> tuple[float, float]:
    """CPU seconds and accuracy of one progressive pass of a fresh
    ``AROW(covariance="full", forgetting=0)``."""
    model = river_cw.AROW(covariance="full", forgetting=0.0)
    correct = 0
    gc.collect()
    start = time.process_time()
    for x, y in data:
        correct += model.predict_one(x) == y
        model.learn_one(x, y)
    return time.process_time() - start, correct / len(data)


def olpy_pass(X: np.ndarray, Y: np.ndarray) -> tuple[float, float]:
    """CPU seconds and accuracy of one progressive pass of a fresh olpy AROW (r = 1)."""
    from olpy.classifiers import AROW

    model = AROW(r=1.0)
    model._setup(X)  # what its fit does first: Sigma = I
    model.weights = np.zeros(X.shape[1])
    correct = 0
    gc.collect()
    start = time.process_time()
    for x, y in zip(X, Y):
        correct += (1 if model.weights.dot(x) > 0 else -1) == y
        model._update(x, y)
    return time.process_time() - start, correct / len(Y)


HEADER = [
    "stream",
    "examples",
    "weights",
    "river-cw ex/s",
    "olpy ex/s",
    "ratio",
    "accuracy river-cw / olpy",
]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="interleaved rounds (best kept)")
    parser.add_argument("--limit", type=int, default=10_000, help="examples per stream at most")
    parser.add_argument("--write", metavar="PATH", help="also write the table as markdown")
    args = parser.parse_args(argv)
    try:
        import olpy  # noqa: F401
    except ImportError:
        olpy_available = False
        print('olpy is not installed (pip install -e ".[benchmarks]"): its rows are skipped')
    else:
        olpy_available = True
    print(f"engine: {river_cw.ENGINE}; load average before: {os.getloadavg()[0]:.2f}")
    print()
    print(f"| {' | '.join(HEADER)} |")
    print(f"|{'---|' * len(HEADER)}")
    rows = []
    for name, data in streams(args.limit).items():
        X, Y = dense(data)
        best = {"river-cw": (float("inf"), 0.0), "olpy": (float("inf"), 0.0)}
        for _ in range(args.repeat):
            best["river-cw"] = min(best["river-cw"], river_cw_pass(data))
            if olpy_available:
                best["olpy"] = min(best["olpy"], olpy_pass(X, Y))
        ours, olpys = (len(data) / best[k][0] for k in ("river-cw", "olpy"))
        ratio = f"{ours / olpys:.2f}x" if olpy_available else "-"
        rows.append(
            [
                name,
                f"{len(data):,}",
                str(X.shape[1]),
                f"{ours:,.0f}",
                f"{olpys:,.0f}" if olpy_available else "-",
                ratio,
                f"{best['river-cw'][1]:.4f} / {best['olpy'][1]:.4f}",
            ]
        )
        print(f"| {' | '.join(rows[-1])} |")
    print()
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    if args.write is not None:
        markdown.write(args.write, markdown.table(HEADER, rows))


if __name__ == "__main__":
    main()
