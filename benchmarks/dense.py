"""Dense streams (issue 30): every classifier, raw and standardised, next to river's linear models;
the covariance structures against each other; CW under label noise; the text corpora as a check.

Progressive validation by river's own `evaluate.progressive_val_score` (each example predicted,
then learned; one pass), default parameters, every model of a table in the same run. The metric
is ``metrics.Accuracy() + metrics.LogLoss()``: river then asks each model for probabilities and
scores accuracy on their argmax. Labels are booleans (river's LogisticRegression needs them).

Parts (``--part``, any of them; all by default):

- ``today``: every river_cw classifier raw and after ``StandardScaler()``, river's
  LogisticRegression, PAClassifier and Perceptron raw, and the majority class (river's
  ``dummy.PriorClassifier``), on every dense stream.
- ``structures``: AROW's covariance structures on the raw streams (diagonal, arrowhead, full,
  full over the dense features and diagonal over the rest, online centring naive and accounted
  for; `benchmarks/covariance_prototypes.py`), every Gaussian rule with the arrowhead, river's
  three again.
- ``noise``: CW's collapse on dense noisy data and what addresses it.
- ``text``: SMS, Enron and the reviews (`river_cw.text.TextClassifier`): every rule diagonal and
  arrowhead, river's PAClassifier.

The dense streams: river's bundled binary datasets (Bananas, Phishing, the first examples of
Shuttle), Phishing with 10% label noise (flipped in what the model learns, scored on the clean
label), river's synthetic generators at each seed (Hyperplane with drift, ``mag_change=0.001``,
and without; SEA; Agrawal; Sine), the SEA stream of the README with its sudden drift at the
middle, threshold streams (one or three features uniform on [0, 1] or [5, 6], labelled by their
mean above the middle), and the shared dense corpora (a9a, Spambase, shuffled with seed 1).

    python benchmarks/dense.py [--quick] [--part today structures noise text]
                               [--limit 10000] [--seeds 1 2 3]
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

from river import base, datasets, dummy, evaluate, linear_model, metrics, preprocessing
from river.datasets import synth

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import river_cw
from benchmarks.covariance_prototypes import BlockAROW, CentredAROW
from benchmarks.intercept import DATA, shared
from river_cw.text import TextClassifier
from streams.evaluate import drift
from streams.evaluate.noise import LabelNoise
from streams.evaluate.synthetic import uniform_threshold

GAUSSIANS = [river_cw.AROW, river_cw.CW, river_cw.NHERD, river_cw.SCW, river_cw.SOP]
RIVER = {
    "river LR": linear_model.LogisticRegression,
    "river PA": linear_model.PAClassifier,
    "river Perceptron": linear_model.Perceptron,
}
NOISY_PHISHING = "Phishing 10% noise"


class NoisyLabels(base.Classifier):
    """`model` learning labels flipped with probability `p` (`LabelNoise`, the same flips for
    every model), predicting as it: river scores it on the clean label."""

    def __init__(self, model: base.Classifier, p: float, seed: int = 1):
        self.model = model
        self.p = p
        self.seed = seed
        self._noise = LabelNoise(p, classes=[False, True], seed=seed)

    def learn_one(self, x, y):
        self.model.learn_one(x, self._noise(y))

    def predict_proba_one(self, x):
        return self.model.predict_proba_one(x)

    def predict_one(self, x):
        return self.model.predict_one(x)


# -- streams --------------------------------------------------------------------------------


def _binary(source, n: int) -> list:
    return [(x, bool(y)) for x, y in itertools.islice(source, n)]


def dense_streams(limit: int, seeds: list[int], threshold_n: int) -> dict[str, list]:
    """name -> examples (materialised, so every model sees the same ones)."""
    out = {
        "Bananas": _binary(datasets.Bananas(), limit),
        "Phishing": _binary(datasets.Phishing(), limit),
        NOISY_PHISHING: _binary(datasets.Phishing(), limit),
        "Shuttle": _binary(datasets.Shuttle(), limit),
    }
    for seed in seeds:
        out[f"Hyperplane drift s{seed}"] = _binary(synth.Hyperplane(seed, mag_change=0.001), limit)
        out[f"Hyperplane s{seed}"] = _binary(synth.Hyperplane(seed), limit)
        out[f"SEA s{seed}"] = _binary(synth.SEA(seed=seed), limit)
        out[f"Agrawal s{seed}"] = _binary(synth.Agrawal(seed=seed), limit)
        out[f"Sine s{seed}"] = _binary(synth.Sine(seed=seed), limit)
    out["SEA sudden drift (README)"] = _binary(
        drift.synthetic("sudden", position=limit // 2, seed=0), limit
    )
    for features, low in ((1, 0.0), (1, 5.0), (3, 0.0), (3, 5.0)):
        name = f"{features} x U[{low:g}, {low + 1:g}]"
        out[name] = uniform_threshold(threshold_n, features, low)
    for name, file in (("a9a", "libsvm_a9a"), ("Spambase", "spambase")):
        examples = shared(f"{file}.jsonl.gz", 1, limit)
        if examples is not None:
            out[name] = examples
    return out


def text_streams(limit: int) -> dict[str, list]:
    """The text corpora as ``({"text": ...}, label)``, shuffled with seed 1."""
    out = {}
    for name, file in (
        ("SMS", "sms_spam_collection"),
        ("Enron", "enron_spam_lbjava_subset"),
        ("reviews", "mdsd_sorted_acl_text"),
    ):
        path = DATA / f"{file}.jsonl.gz"
        if not path.exists():
            continue
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            rows = [json.loads(line) for line in fh]
        random.Random(1).shuffle(rows)
        second = sorted({row["label"] for row in rows})[1]
        out[name] = [({"text": r["text"]}, r["label"] == second) for r in rows[:limit]]
    return out


# -- model line-ups -------------------------------------------------------------------------


def scaled(factory: Callable) -> Callable:
    return lambda: preprocessing.StandardScaler() | factory()


def today_models() -> dict[str, Callable]:
    rules = {cls.__name__: cls for cls in GAUSSIANS} | {"VotedRDA": river_cw.VotedRDA}
    return (
        {"majority": dummy.PriorClassifier}
        | rules
        | {f"{name} sc": scaled(cls) for name, cls in rules.items()}
        | RIVER
    )


def structure_models() -> dict[str, Callable]:
    arrowhead = {
        f"{cls.__name__} arrowhead{' drop' if drop else ''}": (
            lambda cls=cls, drop=drop: cls(
                covariance="arrowhead", diagonal="drop" if drop else "project"
            )
        )
        for cls in GAUSSIANS
        for drop in (False, True)
    }
    return {
        "AROW diagonal": river_cw.AROW,
        "AROW full": lambda: river_cw.AROW(covariance="full"),
        "AROW block": BlockAROW,
        "AROW centred": lambda: preprocessing.StandardScaler(with_std=False) | river_cw.AROW(),
        "AROW centred accounted": CentredAROW,
        **arrowhead,
        "AROW arrowhead sc": scaled(lambda: river_cw.AROW(covariance="arrowhead")),
        "AROW arrowhead drop sc": scaled(
            lambda: river_cw.AROW(covariance="arrowhead", diagonal="drop")
        ),
        **RIVER,
    }


def noise_models() -> dict[str, Callable]:
    cw = river_cw.CW
    return {
        "majority": dummy.PriorClassifier,
        "CW": cw,
        "CW var": lambda: cw(variant="var"),
        "CW calibrate": lambda: cw(calibrate=True),
        "CW forgetting 0.01": lambda: cw(forgetting=0.01),
        "CW forgetting 0.05": lambda: cw(forgetting=0.05),
        "CW arrowhead": lambda: cw(covariance="arrowhead"),
        "CW arrowhead drop": lambda: cw(covariance="arrowhead", diagonal="drop"),
        "SCW": river_cw.SCW,
        "AROW": river_cw.AROW,
        "AROW arrowhead drop": lambda: river_cw.AROW(covariance="arrowhead", diagonal="drop"),
        **RIVER,
    }


def text_models() -> dict[str, Callable]:
    out = {}
    for cls in GAUSSIANS:
        for covariance, suffix in (("diagonal", ""), ("arrowhead", " arrowhead")):
            for drop in (False, True) if covariance == "arrowhead" else (False,):
                out[f"{cls.__name__}{suffix}{' drop' if drop else ''}"] = (
                    lambda cls=cls, covariance=covariance, drop=drop: cls(
                        covariance=covariance, diagonal="drop" if drop else "project"
                    )
                )
    out["river PA"] = linear_model.PAClassifier
    return {
        name: (lambda factory=factory: TextClassifier(factory(), on="text", lowercase=True))
        for name, factory in out.items()
    }


# -- running and printing -------------------------------------------------------------------


def score(factory: Callable, examples: list, noisy: bool) -> tuple[float, float]:
    """Accuracy and log loss by river's progressive validation."""
    model = factory()
    if noisy:
        model = NoisyLabels(model, 0.1)
    accuracy, log_loss = evaluate.progressive_val_score(
        examples, model, metrics.Accuracy() + metrics.LogLoss()
    )
    return accuracy.get(), log_loss.get()


def run(title: str, streams: dict[str, list], models: dict[str, Callable]) -> dict:
    """Score every model on every stream; print the accuracy and log-loss tables (rows:
    streams) as markdown, a row as soon as it is done. Returns ``{stream: {model: (acc, ll)}}``."""
    print(f"\n### {title}: accuracy (log loss below)\n")
    print("| stream | " + " | ".join(models) + " |")
    print("|---|" + "---:|" * len(models), flush=True)
    results = {}
    for name, examples in streams.items():
        start = time.process_time()
        row = {m: score(f, examples, name == NOISY_PHISHING) for m, f in models.items()}
        results[name] = row
        cells = " | ".join(f"{acc:.3f}" for acc, _ in row.values())
        print(f"| {name} ({len(examples):,}) | {cells} |", flush=True)
        print(f"  {name}: {time.process_time() - start:.0f} s", file=sys.stderr)
    print(f"\n### {title}: log loss\n")
    print("| stream | " + " | ".join(models) + " |")
    print("|---|" + "---:|" * len(models))
    for name, row in results.items():
        print(f"| {name} | " + " | ".join(f"{ll:.2f}" for _, ll in row.values()) + " |")
    return results


def summary(results: dict, candidates: list[str]) -> None:
    """Per candidate, its accuracy minus the best of river's three models on each stream: the
    streams where it trails by more than a point, and the mean gap."""
    print(
        "\nAgainst the best of river's LogisticRegression, PAClassifier and Perceptron (points):\n"
    )
    for model in candidates:
        gaps = {
            stream: 100 * (row[model][0] - max(row[r][0] for r in RIVER))
            for stream, row in results.items()
            if model in row
        }
        behind = {s: g for s, g in gaps.items() if g < -1.0}
        listed = ", ".join(f"{s} {g:+.1f}" for s, g in behind.items()) or "none"
        mean = sum(gaps.values()) / len(gaps)
        print(
            f"- {model}: mean {mean:+.1f}; behind by more than 1 on {len(behind)} of "
            f"{len(gaps)}: {listed}"
        )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--part",
        nargs="+",
        default=["today", "structures", "noise", "text"],
        choices=["today", "structures", "noise", "text"],
    )
    parser.add_argument("--limit", type=int, default=10000, help="examples per stream")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="2,000 examples per stream, one seed, the threshold streams at 2,000",
    )
    args = parser.parse_args(argv)
    limit, seeds, threshold_n = args.limit, args.seeds, 5000
    if args.quick:
        limit, seeds, threshold_n = 2000, seeds[:1], 2000
    print(
        f"engine: {river_cw.ENGINE}; progressive validation (river), one pass, default "
        "parameters; 'sc' = after StandardScaler()"
    )
    start = time.process_time()
    dense = dense_streams(limit, seeds, threshold_n) if set(args.part) - {"text"} else {}
    if "today" in args.part:
        results = run("Today's models", dense, today_models())
        summary(results, ["AROW", "AROW sc", "NHERD", "SCW", "CW"])
    if "structures" in args.part:
        results = run("Covariance structures (raw features)", dense, structure_models())
        summary(results, [m for m in structure_models() if m not in RIVER])
    if "noise" in args.part:
        noisy = {k: dense[k] for k in (NOISY_PHISHING, "Phishing", "a9a", "Spambase") if k in dense}
        run("CW on dense noisy data", noisy, noise_models())
    if "text" in args.part:
        run("Text (TextClassifier, lowercase)", text_streams(limit), text_models())
    print(f"\n{time.process_time() - start:.0f} s CPU", file=sys.stderr)


if __name__ == "__main__":
    main()
