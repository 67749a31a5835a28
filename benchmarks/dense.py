"""Dense streams (issue 30): every classifier, raw and standardised, next to river's linear models;
the covariance structures against each other; CW under label noise; the text corpora as a check.

Progressive validation by river's own `evaluate.progressive_val_score` (each example predicted,
then learned; one pass), default parameters, every model of a table in the same run. The metric
is ``metrics.Accuracy() + metrics.LogLoss()``: river then asks each model for probabilities and
scores accuracy on their argmax. Labels are booleans (river's LogisticRegression needs them).

Parts (``--part``, any of them; all by default):

- ``today``: every river_cw classifier (default parameters) raw and after
  ``StandardScaler()``, AROW with the diagonal covariance of the defaults before issue 30, river's
  LogisticRegression, PAClassifier and Perceptron raw, and the majority class (river's
  ``dummy.PriorClassifier``), on every dense stream; the summary of docs/guide/dense.md.
- ``structures``: AROW's covariance structures on the raw streams (diagonal; full, with the
  intercept's prior variance 1 and `WIDE`; full over the dense features and diagonal over the
  rest; online centring, naive and accounted for, `benchmarks/covariance_prototypes.py`), every
  Gaussian rule with the arrowhead (project, drop, drop with a wide intercept prior: AROW's and
  NHERD's default), river's three again; ``AROW auto`` is derived from the full and arrowhead
  columns (full covariance on streams of at most `AUTO_WIDTH` features).
- ``noise``: CW's collapse on dense noisy data and what addresses it.
- ``text``: SMS, Enron and the reviews (`river_cw.text.TextClassifier`): every rule diagonal
  (project: the defaults before issue 30; drop) and arrowhead (project, the default of CW, SCW
  and SOP; drop with a wide intercept prior, AROW's and NHERD's), river's PAClassifier.

The dense streams: river's bundled binary datasets (Bananas, Phishing, the first examples of
Shuttle), Phishing with 10% label noise (flipped in what the model learns, scored on the clean
label), river's synthetic generators at each seed (Hyperplane with drift, ``mag_change=0.001``,
and without; SEA; Agrawal; Sine), the SEA stream of the drift tables (docs/guide/choosing.md) with its sudden drift at the
middle, threshold streams (one or three features uniform on [0, 1] or [5, 6], labelled by their
mean above the middle), and the shared dense corpora (a9a, Spambase, shuffled with seed 1).

    python benchmarks/dense.py [--quick] [--part today structures noise text]
                               [--limit 10000] [--seeds 1 2 3] [--figure docs/figures/dense.png]

``--figure PATH`` (with ``today``) also writes the summary's numbers beside PATH (same name,
``.json``) and draws them there as a dot plot, for docs/guide/dense.md; ``draw`` redraws it from
the JSON (tests/project/test_docs_figures.py does).
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

import numpy as np
from river import base, datasets, dummy, evaluate, linear_model, metrics, preprocessing
from river.datasets import synth

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import river_cw
from benchmarks.covariance_prototypes import BlockAROW, CentredAROW
from benchmarks.intercept import DATA, shared
from river_cw import INTERCEPT
from river_cw._engines.full import FullGaussian
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
    out["SEA sudden drift at 5,000"] = _binary(
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


def diagonal(cls=river_cw.AROW, **params):
    """The default before issue 30: diagonal covariance, the papers' scheme ("project"), no
    forgetting."""
    return lambda: cls(covariance="diagonal", diagonal="project", forgetting=0.0, **params)


def arrowhead(cls=river_cw.AROW, scheme="project"):
    """The arrowhead with `scheme` and the intercept's prior of every weight."""
    return lambda: cls(covariance="arrowhead", diagonal=scheme, initial_intercept_variance=None)


def today_models() -> dict[str, Callable]:
    rules = {cls.__name__: cls for cls in GAUSSIANS} | {"VotedRDA": river_cw.VotedRDA}
    return (
        {"majority": dummy.PriorClassifier}
        | rules
        | {f"{name} sc": scaled(cls) for name, cls in rules.items()}
        | {"AROW diagonal (before)": diagonal()}
        | RIVER
    )


WIDE = 100.0  # the intercept's prior variance of AROW's default (river_cw/_engines/arrowhead.py)


def proposed(cls=river_cw.AROW, **params):
    """AROW's and NHERD's default: the arrowhead, its drop scheme, a wide intercept prior."""
    return lambda: cls(
        covariance="arrowhead", diagonal="drop", initial_intercept_variance=WIDE, **params
    )


def full_wide() -> river_cw.AROW:
    """AROW with full covariance and the intercept's prior variance `WIDE`."""
    gaussian = FullGaussian(1.0)
    gaussian.set_precision({(0, INTERCEPT): 0}, np.zeros(1), np.array([[1.0 / WIDE]]))
    model = river_cw.AROW(covariance="full")
    model.set_gaussian(gaussian, [])
    return model


def structure_models() -> dict[str, Callable]:
    arrowheads = {}
    for cls in GAUSSIANS:
        name = cls.__name__
        arrowheads[f"{name} arrowhead"] = arrowhead(cls)
        arrowheads[f"{name} arrowhead drop"] = arrowhead(cls, "drop")
        arrowheads[f"{name} arrowhead drop wide"] = proposed(cls)
    return {
        "AROW diagonal": diagonal(),
        "AROW diagonal drop": lambda: river_cw.AROW(covariance="diagonal", diagonal="drop"),
        "AROW full": lambda: river_cw.AROW(covariance="full"),
        "AROW full wide": full_wide,
        "AROW block": BlockAROW,
        "AROW centred": lambda: preprocessing.StandardScaler(with_std=False) | diagonal()(),
        "AROW centred accounted": CentredAROW,
        **arrowheads,
        "AROW arrowhead drop wide sc": scaled(proposed()),
        **RIVER,
    }


def noise_models() -> dict[str, Callable]:
    cw = river_cw.CW
    return {
        "majority": dummy.PriorClassifier,
        "CW diagonal": diagonal(cw),
        "CW diagonal var": diagonal(cw, variant="var"),
        "CW diagonal calibrate=False": diagonal(cw, calibrate=False),
        "CW diagonal forgetting 0.01": diagonal(cw, forgetting=0.01),
        "CW diagonal forgetting 0.05": diagonal(cw, forgetting=0.05),
        "CW (default)": cw,
        "CW arrowhead drop wide": proposed(cw),
        "CW arrowhead drop wide forgetting 0.05": proposed(cw, forgetting=0.05),
        "CW var arrowhead drop wide": proposed(cw, variant="var"),
        "SCW diagonal": diagonal(river_cw.SCW),
        "SCW (default)": river_cw.SCW,
        "SCW arrowhead drop wide": proposed(river_cw.SCW),
        "AROW diagonal": diagonal(),
        "AROW (default)": proposed(),
        **RIVER,
    }


def text_models() -> dict[str, Callable]:
    out = {}
    for cls in GAUSSIANS:
        name = cls.__name__
        out[f"{name} diagonal (before)"] = diagonal(cls)
        out[f"{name} diagonal drop"] = lambda cls=cls: cls(covariance="diagonal", diagonal="drop")
        out[f"{name} arrowhead"] = arrowhead(cls)
        out[f"{name} arrowhead drop wide"] = proposed(cls)
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


def run(title: str, streams: dict[str, list], models: dict[str, Callable], digits=3) -> dict:
    """Score every model on every stream; print the accuracy (with `digits` decimals) and
    log-loss tables (rows: streams) as markdown, a row as soon as it is done. Returns ``{stream:
    {model: (acc, ll)}}``."""
    print(f"\n### {title}: accuracy (log loss below)\n")
    print("| stream | " + " | ".join(models) + " |")
    print("|---|" + "---:|" * len(models), flush=True)
    results = {}
    for name, examples in streams.items():
        start = time.process_time()
        row = {m: score(f, examples, name == NOISY_PHISHING) for m, f in models.items()}
        results[name] = row
        cells = " | ".join(f"{acc:.{digits}f}" for acc, _ in row.values())
        print(f"| {name} ({len(examples):,}) | {cells} |", flush=True)
        print(f"  {name}: {time.process_time() - start:.0f} s", file=sys.stderr)
    print(f"\n### {title}: log loss\n")
    print("| stream | " + " | ".join(models) + " |")
    print("|---|" + "---:|" * len(models))
    for name, row in results.items():
        print(f"| {name} | " + " | ".join(f"{ll:.2f}" for _, ll in row.values()) + " |")
    return results


AUTO_WIDTH = 32
"""`AROW auto` (derived, not run): full covariance up to this many features, else the arrowhead."""


def width(examples: list) -> int:
    return len({f for x, _ in examples for f in x})


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


SUMMARY_COLUMNS = {
    "AROW": "AROW",
    "... after StandardScaler": "AROW sc",
    "NHERD": "NHERD",
    "SCW": "SCW",
    "AROW diagonal (before)": "AROW diagonal (before)",
}


BEST_OF_RIVER = "best of river's three"


def summary_table(results: dict) -> dict:
    """The summary of docs/guide/dense.md: the defaults of AROW (raw and scaled), NHERD and SCW,
    AROW's before issue 30 and the best of river's three per stream, a generator's seeds
    averaged. Prints it as markdown and returns its numbers, rounded as printed: ``{"columns":
    [...], "rows": [[stream, [accuracy per column]], ...]}``."""
    groups: dict[str, list] = {}
    for stream, row in results.items():
        name, _, seed = stream.rpartition(" s")
        groups.setdefault(name if seed.isdigit() else stream, []).append(row)
    columns = [*SUMMARY_COLUMNS, BEST_OF_RIVER]
    print("\n| stream | " + " | ".join(columns) + " |")
    print("|---|" + "---:|" * len(columns))
    table = {"columns": columns, "rows": []}
    for name, rows in groups.items():
        seeds = f", {len(rows)} seeds" if len(rows) > 1 else ""
        means = [sum(row[m][0] for row in rows) / len(rows) for m in SUMMARY_COLUMNS.values()]
        best = sum(max(row[r][0] for r in RIVER) for row in rows) / len(rows)
        cells = [f"{a:.3f}" for a in [*means, best]]
        print(f"| {name}{seeds} | " + " | ".join(cells) + " |")
        table["rows"].append([f"{name}{seeds}", [float(c) for c in cells]])
    return table


DRAWN = {  # the summary's columns the figure shows, and their markers
    "AROW": "o",
    "... after StandardScaler": "s",
    "NHERD": "^",
    "SCW": "D",
}


def draw(table: dict, out: Path) -> None:
    """The summary as a dot plot: per stream, each model's accuracy minus the best of river's
    three, in points."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = table["columns"]
    rows = table["rows"][::-1]  # the table's first stream at the top
    best = columns.index(BEST_OF_RIVER)
    fig, ax = plt.subplots(figsize=(8, 7), dpi=100)
    ax.axvspan(-1, 1, color="0.88", zorder=0, label="within a point of river's best")
    ax.axvline(0, color="black", lw=1, zorder=1)
    for (model, marker), offset in zip(DRAWN.items(), (0.24, 0.08, -0.08, -0.24)):
        k = columns.index(model)
        xs = [100 * (values[k] - values[best]) for _, values in rows]
        label = "AROW after StandardScaler" if model.startswith("...") else model
        ax.scatter(xs, [i + offset for i in range(len(rows))], marker=marker, label=label, zorder=2)
    ax.set_yticks(range(len(rows)), [name for name, _ in rows])
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_xlabel("accuracy minus river's best linear model (percentage points)")
    ax.set_title(
        "Dense streams, default parameters: river-cw against the best of\n"
        "river's LogisticRegression, PAClassifier and Perceptron",
        fontsize=11,
    )
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.09), ncol=3)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)


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
        "--figure",
        type=Path,
        metavar="PATH",
        help="with --part today: write the summary's numbers (PATH as .json) and its dot plot",
    )
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
        summary(results, [m for m in today_models() if m not in RIVER])
        table = summary_table(results)
        if args.figure is not None:
            args.figure.parent.mkdir(parents=True, exist_ok=True)
            text = json.dumps(table, indent=1) + "\n"
            args.figure.with_suffix(".json").write_text(text, encoding="utf-8")
            draw(table, args.figure)
    if "structures" in args.part:
        results = run("Covariance structures (raw features)", dense, structure_models())
        for name, row in results.items():  # covariance="auto", derived: full where d is small
            small = width(dense[name]) <= AUTO_WIDTH
            row["AROW auto"] = row["AROW full wide" if small else "AROW arrowhead drop wide"]
        summary(results, [m for m in [*structure_models(), "AROW auto"] if m not in RIVER])
    if "noise" in args.part:
        noisy = {k: dense[k] for k in (NOISY_PHISHING, "Phishing", "a9a", "Spambase") if k in dense}
        run("CW on dense noisy data", noisy, noise_models())
    if "text" in args.part:
        run("Text (TextClassifier, lowercase)", text_streams(limit), text_models(), digits=4)
    print(f"\n{time.process_time() - start:.0f} s CPU", file=sys.stderr)


if __name__ == "__main__":
    main()
