"""Probabilities a service can use: log loss (and accuracy) by progressive validation of the
Gaussian classifiers as they come (calibrated: a Newton temperature on the margins with a noise
term) and with ``calibrate=False`` (the papers' probabilities), voted RDA (its hinge scores
calibrated on a grid of temperatures) and river's LogisticRegression, on SMS spam and books
(bag of words) and a9a.

    python benchmarks/calibration.py [--limit 10000] [--seed 0] [--figure PATH]

The table goes to standard output: ``> docs/calibration_table.md`` writes the guide's
(tests/project/test_docs_generated.py checks it).

``--figure PATH`` writes, instead of the table, a reliability diagram for docs/guide/choosing.md:
on SMS spam and a9a, each prediction's probability of the positive label (progressive validation)
for AROW() (calibrated), AROW(calibrate=False) and river's LogisticRegression, in ten
equal-width bins, the observed frequency of the positive label against the bin's mean predicted
probability. The binned numbers go beside PATH (same name, ``.json``); ``draw`` redraws the
figure from them (tests/project/test_docs_figures.py does, and computes the sample again).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from river import linear_model

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import river_cw
from benchmarks.intercept import progressive, shared


def models():
    for cls in (river_cw.AROW, river_cw.CW, river_cw.NHERD, river_cw.SCW, river_cw.SOP):
        for on in (True, False):
            name = f"{cls.__name__}(){'' if on else ' calibrate=False'}"
            yield name, lambda cls=cls, on=on: cls(calibrate=on)
    yield "VotedRDA (hinge, calibrated)", river_cw.VotedRDA
    yield "river LogisticRegression", linear_model.LogisticRegression


BINS = 10
RELIABILITY_STREAMS = {  # name -> shared file; the positive label is the second in sorted order
    "SMS spam (positive: spam)": "sms_spam_collection",
    "a9a (positive: -1, income at most 50K)": "libsvm_a9a",
}
RELIABILITY_MODELS = {
    "AROW() (calibrated)": river_cw.AROW,
    "AROW(calibrate=False)": lambda: river_cw.AROW(calibrate=False),
    "river LogisticRegression": linear_model.LogisticRegression,
}
SAMPLE = {"stream": "SMS spam (positive: spam)", "model": "AROW() (calibrated)", "limit": 500}


def reliability(model, examples, bins: int = BINS) -> list[list]:
    """Per equal-width bin of the predicted probability of the positive label (progressive
    validation: predict, then learn), ``[count, mean predicted probability, observed frequency of
    the positive label]``, the two means rounded to 4 digits and ``None`` in an empty bin."""
    sums = [[0, 0.0, 0] for _ in range(bins)]
    for x, y in examples:
        p = model.predict_proba_one(x).get(True, 0.0)
        cell = sums[min(int(p * bins), bins - 1)]
        cell[0] += 1
        cell[1] += p
        cell[2] += y
        model.learn_one(x, y)
    return [[n, round(p / n, 4), round(k / n, 4)] if n else [0, None, None] for n, p, k in sums]


def reliability_numbers(data: dict) -> dict:
    """The figure's numbers: per stream (name -> examples) and model, the bins of
    `reliability`; and the sample the tests compute again."""
    sample = data[SAMPLE["stream"]][: SAMPLE["limit"]]
    return {
        "bins": BINS,
        "streams": {
            stream: {
                "examples": len(examples),
                "models": {
                    name: reliability(factory(), examples)
                    for name, factory in RELIABILITY_MODELS.items()
                },
            }
            for stream, examples in data.items()
        },
        "sample": {
            **SAMPLE,
            "bins": reliability(RELIABILITY_MODELS[SAMPLE["model"]](), sample),
        },
    }


def draw(numbers: dict, out: Path) -> None:
    """The reliability diagram, one column per stream: observed frequency against mean predicted
    probability per bin (marker area growing with the bin's count) beside the diagonal, and
    below, the number of predictions in each bin (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    streams = numbers["streams"]
    width = 1 / numbers["bins"]
    fig, axes = plt.subplots(
        2,
        len(streams),
        figsize=(10, 6.6),
        dpi=100,
        gridspec_kw={"height_ratios": [3, 1]},
        sharex=True,
    )
    markers = ("o", "s", "^")
    for column, (stream, run) in enumerate(streams.items()):
        top, bottom = axes[0][column], axes[1][column]
        top.plot([0, 1], [0, 1], color="0.5", lw=1, ls="--")
        for k, (bins, marker) in enumerate(zip(run["models"].values(), markers)):
            kept = [b for b in bins if b[0]]
            color = f"C{k}"
            top.plot(
                [b[1] for b in kept],
                [b[2] for b in kept],
                color=color,
                lw=1,
                alpha=0.6,
            )
            top.scatter(
                [b[1] for b in kept],
                [b[2] for b in kept],
                s=[8 + 4 * b[0] ** 0.5 for b in kept],
                marker=marker,
                color=color,
                edgecolor="black",
                linewidth=0.4,
                zorder=3,
            )
            lefts = [i * width + (k - 1) * width / 3 for i in range(len(bins))]
            bottom.bar(
                [left + width / 2 for left in lefts],
                [b[0] for b in bins],
                width=width / 3,
                color=color,
            )
        top.set_xlim(0, 1)
        top.set_ylim(-0.02, 1.02)
        top.set_title(f"{stream}, {run['examples']:,} examples", fontsize=11)
        top.grid(True, alpha=0.3)
        bottom.set_yscale("log")
        bottom.set_xlabel("mean predicted probability of the positive label (10 bins)")
        bottom.grid(True, axis="y", alpha=0.3)
    axes[0][0].set_ylabel("observed frequency of the positive label")
    axes[1][0].set_ylabel("predictions\nin the bin")
    handles = [Line2D([], [], color="0.5", lw=1, ls="--", label="perfectly calibrated")]
    for k, (name, marker) in enumerate(zip(RELIABILITY_MODELS, markers)):
        handles.append(
            Line2D([], [], color=f"C{k}", marker=marker, markeredgecolor="black", label=name)
        )
    fig.legend(handles=handles, loc="lower center", ncol=4, fontsize=9)
    fig.suptitle(
        "Reliability of the probabilities, progressive validation (predict, then learn);\n"
        "a marker's area grows with the number of predictions in its bin",
        fontsize=12,
    )
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(out)
    plt.close(fig)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=10000, help="examples per stream")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--figure",
        type=Path,
        metavar="PATH",
        help="write the reliability diagram to PATH (PNG) and its numbers beside it (.json)",
    )
    args = parser.parse_args(argv)
    if args.figure is not None:
        data = {
            stream: shared(f"{file}.jsonl.gz", args.seed, args.limit)
            for stream, file in RELIABILITY_STREAMS.items()
        }
        numbers = reliability_numbers(data)
        args.figure.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(numbers, indent=1) + "\n"
        args.figure.with_suffix(".json").write_text(text, encoding="utf-8")
        draw(numbers, args.figure)
        return
    names = ("sms_spam_collection", "mdsd_processed_acl_books", "libsvm_a9a")
    data = {n: shared(f"{n}.jsonl.gz", args.seed, args.limit) for n in names}
    data = {n: d for n, d in data.items() if d is not None}
    print(
        f"engine: {river_cw.ENGINE}; log loss (accuracy), progressive validation, one pass",
        file=sys.stderr,
    )
    print("| model | " + " | ".join(f"{n} ({len(d):,})" for n, d in data.items()) + " |")
    print("|---|" + "---:|" * len(data))
    start = time.perf_counter()
    for name, factory in models():
        cells = []
        for examples in data.values():
            accuracy, log_loss = progressive(factory(), examples)
            cells.append(f"{log_loss:.3f} ({accuracy:.3f})")
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    print(f"\n{time.perf_counter() - start:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
