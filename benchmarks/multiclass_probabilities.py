"""Multi-class probabilities of the Gaussian classifiers: one scale for every pair, or each pair's own.

Both are ``P(z) ~ prod_{k != z} Phi(m_zk / s_zk)`` over the pairwise margins of the scores. "own":
``s_zk^2`` is the variance of the margin ``m_zk`` itself; its most probable label can differ from
the best mean score, so predicting it abandons the papers' rule. "decision" (the library's): one
``s`` for every pair, the standard deviation of the margin between the two best-scoring labels, so
the probabilities rank the labels as the scores do and the prediction is the best score. "mean":
one ``s`` too, the root of the mean of the pairwise variances. Each is scored by progressive
validation (accuracy of its most probable label, log loss), raw and with a temperature fitted
online as `calibrate=True` fits it (`river_cw.calibration`). The models learn the same way in
every column (the update rule does not depend on the probabilities), so one pass serves all.

    python benchmarks/multiclass_probabilities.py [--limit N] [--seed 0]
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import random
import sys
import time
from pathlib import Path

import numpy as np
from river import datasets, feature_extraction
from scipy.special import log_ndtr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import river_cw
from river_cw import calibration

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
SCALES = ("own", "decision", "mean")


def probit_losses(t: np.ndarray, label: int) -> np.ndarray:
    """Log loss at `label` of the pairwise Gaussian probabilities ``P(z) ~ prod_{k != z}
    Phi(a t[z, k])`` for every temperature a of `calibration.TEMPERATURES` (the grid the
    Gaussian classifiers calibrated on when this study ran)."""
    k = len(t)
    off = ~np.eye(k, dtype=bool)
    with np.errstate(all="ignore"):
        logp = np.where(off, log_ndtr(calibration.TEMPERATURES[:, None, None] * t), 0.0).sum(axis=2)
        if k == 2:  # Phi(a t) and Phi(-a t) already sum to 1
            return -logp[:, label]
        top = logp.max(axis=1)
        return top + np.log(np.exp(logp - top[:, None]).sum(axis=1)) - logp[:, label]


def standardised(s: np.ndarray, cov: np.ndarray) -> dict:
    """The matrices of standardised pairwise margins ``t[z, k]`` of every scale."""
    margins = s[:, None] - s[None, :]
    variances = np.diag(cov)[:, None] + np.diag(cov)[None, :] - 2 * cov
    off = ~np.eye(len(s), dtype=bool)
    best, second = np.argsort(-s, kind="stable")[:2]

    def t(v):
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(v > 0, margins / np.sqrt(np.maximum(v, 0.0)), np.sign(margins) * np.inf)
        out[~off] = 0.0
        return out

    return {
        "own": t(variances),
        "decision": t(np.full_like(variances, variances[best, second])),
        "mean": t(np.full_like(variances, variances[off].mean())),
    }


def probabilities(t: np.ndarray, temperature: float) -> np.ndarray:
    off = ~np.eye(len(t), dtype=bool)
    logp = np.where(off, log_ndtr(temperature * t), 0.0).sum(axis=1)
    p = np.exp(logp - logp.max())
    return p / p.sum()


def run(model, stream) -> dict:
    """scale -> (accuracy, log loss, calibrated log loss) over the examples scored while the
    model is multi-class and knows the label."""
    sums = {scale: calibration.start(prefer=1.0) for scale in SCALES}
    right = dict.fromkeys(SCALES, 0)
    loss = dict.fromkeys(SCALES, 0.0)
    calibrated = dict.fromkeys(SCALES, 0.0)
    n = 0
    for x, y in stream:
        k = model._class_index.get(y)
        if k is not None and len(model.classes_) >= 2:
            features = model._features(x)
            s = np.array(model._scores(features))
            cov = model.gaussian.score_covariance(features)
            if len(s) == 1:  # binary: every scale is the binary formula
                t0 = s[0] / math.sqrt(cov[0, 0]) if cov[0, 0] > 0 else math.copysign(math.inf, s[0])
                ts = dict.fromkeys(SCALES, np.array([[0.0, -t0], [t0, 0.0]]))
            else:
                ts = standardised(s, cov)
                n += 1
                for scale, t in ts.items():
                    p = probabilities(t, 1.0)
                    pc = probabilities(t, calibration.best(sums[scale]))
                    right[scale] += int(np.argmax(p) == k)
                    loss[scale] -= math.log(min(max(p[k], 1e-15), 1 - 1e-15))
                    calibrated[scale] -= math.log(min(max(pc[k], 1e-15), 1 - 1e-15))
            for scale, t in ts.items():  # the progressive log loss, before learning
                with np.errstate(all="ignore"):
                    total = sums[scale] + probit_losses(t, k)
                if np.isfinite(total).all():
                    sums[scale] = total
        model.learn_one(x, y)
    return {s: (right[s] / n, loss[s] / n, calibrated[s] / n) for s in SCALES}


def shared(name: str, seed: int, limit: int | None):
    path = DATA / name
    if not path.exists():
        print(f"{path} is not here: skipped", file=sys.stderr)
        return None
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    random.Random(seed).shuffle(rows)
    words = feature_extraction.BagOfWords()
    return [
        (row["x"] if "x" in row else words.transform_one(row["text"]), row["label"])
        for row in rows[:limit]
    ]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, help="examples per stream (default: all)")
    parser.add_argument("--seed", type=int, default=0, help="shuffle of the shared corpora")
    args = parser.parse_args(argv)
    rules = (river_cw.AROW, river_cw.CW, river_cw.NHERD, river_cw.SCW, river_cw.SOP)
    streams = {
        "ImageSegments": (list(datasets.ImageSegments())[: args.limit], ["diagonal", "full"]),
        "USPS": (shared("usps.jsonl.gz", args.seed, args.limit), ["diagonal"]),
        "20 Newsgroups, 6 groups (BagOfWords)": (
            shared("20news_bydate_6groups.jsonl.gz", args.seed, args.limit),
            ["diagonal"],
        ),
    }
    start = time.process_time()
    print("accuracy of the most probable label, log loss (calibrated log loss)\n")
    print("| data | model | " + " | ".join(SCALES) + " |")
    print("|---|---|" + "---:|" * len(SCALES))
    for data, (stream, covariances) in streams.items():
        if stream is None:
            continue
        for covariance in covariances:
            for rule in rules:
                if covariance == "full" and rule in (river_cw.NHERD, river_cw.SCW):
                    continue  # AROW, CW and SOP show full covariance; the rest cost time only
                result = run(rule(covariance=covariance), stream)
                cells = [f"{a:.4f}, {ll:.3f} ({c:.3f})" for a, ll, c in result.values()]
                label = rule.__name__ + (" full" if covariance == "full" else "")
                print(f"| {data} | {label} | " + " | ".join(cells) + " |", flush=True)
    print(f"\nCPU time {(time.process_time() - start) / 60:.1f} minutes")


if __name__ == "__main__":
    main()
