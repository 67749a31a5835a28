"""The log score for models of three labels or more (issue 41): measured, not built.

A binary model whose features are centred sets its forgetting from its log score
(`river_cw.surprise`); a multi-class model counts its mistakes. This prototype gives a
multi-class `AROW()` the log score from outside: before each update it reads the model's
calibrated probabilities of every label (`predict_proba_one`), steps EWMAs of the log loss of
the label (capped at `surprise.LOG_SCORE_CAP`), of the entropy ``H = -sum_k p_k log p_k`` and of
the loss's variance ``sum_k p_k log^2 p_k - H^2`` (weights as `surprise._average`), and sets
the model's forgetting to ``clip(GAIN (L - H - limit sd), 0, HIGHEST)`` after `WARM_UP`
examples, as `surprise.log_score_rate` does for two labels. Columns: today's `AROW()`,
``AROW(forgetting=0)``, the prototype at control limits of 2, 2.5 (the binary one) and 3
standard deviations (examples it forgot on in brackets), and river's SoftmaxRegression and
one-vs-rest LogisticRegression behind a StandardScaler, in the same run. Streams: river's
RandomRBFDrift with three labels (``change_speed=0.001``) at three seeds, LEDDrift at two, and
where nothing drifts RandomRBF with three labels, Waveform and ImageSegments. Accuracy / log
loss (river's `CrossEntropy`), progressive validation.

    python benchmarks/multiclass_log_score.py [--limit 8000] [--quick]

The outcome is in benchmarks/README.md, "The log score of three labels or more".
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

from river import base, datasets, evaluate, linear_model, metrics, multiclass, preprocessing
from river.datasets import synth

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import river_cw
from river_cw import surprise

LIMITS = (2.0, surprise.LOG_SCORE_LIMIT, 3.0)


class LogScoreDriven(base.Classifier):
    """`AROW()` whose forgetting the multi-class log score of its own calibrated probabilities
    sets from outside, with control limit `limit` (see the module's docstring)."""

    def __init__(self, limit: float = surprise.LOG_SCORE_LIMIT):
        self.limit = limit
        self.model = river_cw.AROW()
        self.model._surprise = None  # so that its forgetting is the number set here
        self.model._log_score = None
        self.averages = [0.0, 0.0, 0.0, 0.0]  # n, L, H, V
        self.forgot = 0

    def predict_proba_one(self, x):
        return self.model.predict_proba_one(x)

    def predict_one(self, x):
        return self.model.predict_one(x)

    def learn_one(self, x, y):
        proba = self.model.predict_proba_one(x)
        if len(proba) > 2 and y in proba:
            logs = [(p, math.log(p)) for p in proba.values() if p > 0.0]
            entropy = -sum(p * log_p for p, log_p in logs)
            spread = sum(p * log_p * log_p for p, log_p in logs)
            loss = -math.log(proba[y]) if proba[y] > 0.0 else math.inf
            n = self.averages[0] + 1.0
            weight = max(surprise.LAMBDA, 1.0 / n)
            self.averages[0] = n
            values = (min(loss, surprise.LOG_SCORE_CAP), entropy, max(spread - entropy**2, 0.0))
            for i, value in enumerate(values, 1):
                self.averages[i] += weight * (value - self.averages[i])
        n, loss, entropy, variance = self.averages
        rate = 0.0
        if n >= surprise.WARM_UP:
            sd = math.sqrt(variance * surprise.LAMBDA / (2.0 - surprise.LAMBDA))
            excess = loss - entropy - self.limit * sd
            rate = min(max(surprise.GAIN * excess, 0.0), surprise.HIGHEST)
        self.forgot += rate > 0.0
        self.model.forgetting = rate
        self.model.learn_one(x, y)


def streams(limit: int, quick: bool) -> dict[str, list]:
    seeds = (1,) if quick else (1, 7, 13)
    out = {
        f"RandomRBFDrift, 3 labels, seed {s}": list(
            synth.RandomRBFDrift(
                seed_model=s, seed_sample=s, n_classes=3, n_features=10, change_speed=0.001
            ).take(limit)
        )
        for s in seeds
    }
    for s in seeds[:2]:
        drift = synth.LEDDrift(seed=s, n_drift_features=4, noise_percentage=0.1)
        out[f"LEDDrift, seed {s}"] = list(drift.take(limit))
    rbf = synth.RandomRBF(seed_model=1, seed_sample=1, n_classes=3, n_features=10)
    out["RandomRBF, 3 labels (no drift)"] = list(rbf.take(limit))
    out["Waveform (no drift)"] = list(synth.Waveform(seed=1).take(limit))
    out["ImageSegments (no drift)"] = list(datasets.ImageSegments().take(limit))
    return out


def models() -> dict:
    return {
        "`AROW()`": river_cw.AROW,
        "`AROW(forgetting=0)`": lambda: river_cw.AROW(forgetting=0),
        **{f"log score, {k} sd": (lambda k=k: LogScoreDriven(k)) for k in LIMITS},
        "river softmax sc": lambda: (
            preprocessing.StandardScaler() | linear_model.SoftmaxRegression()
        ),
        "river one-vs-rest LR sc": lambda: (
            preprocessing.StandardScaler()
            | multiclass.OneVsRestClassifier(linear_model.LogisticRegression())
        ),
    }


def score(model, examples: list) -> str:
    accuracy, loss = evaluate.progressive_val_score(
        examples, model, metrics.Accuracy() + metrics.CrossEntropy()
    )
    forgot = f" [{model.forgot}]" if isinstance(model, LogScoreDriven) else ""
    return f"{accuracy.get():.4f} / {loss.get():.3f}{forgot}"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit", type=int, default=8000)
    parser.add_argument("--quick", action="store_true", help="one seed, 1,000 examples")
    args = parser.parse_args(argv)
    limit = 1000 if args.quick else args.limit
    start = time.process_time()
    makers = models()
    print("| stream | " + " | ".join(makers) + " |")
    print("|---|" + "---:|" * len(makers))
    for name, examples in streams(limit, args.quick).items():
        cells = [score(make(), examples) for make in makers.values()]
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    print(f"\n{time.process_time() - start:.0f} s CPU", file=sys.stderr)


if __name__ == "__main__":
    main()
