"""Keeping up with concept drift: accuracy over the 2,000 examples after the drift, for each
Gaussian rule without forgetting, with fixed rates and with the rate its surprise sets
(``forgetting="auto"``, the default of AROW, NHERD and SCW), beside river's
`drift.DriftRetrainingClassifier` (ADWIN on the errors; a new model trained in the background)
around the model that never forgets.

The project's drift simulators (`streams.evaluate.drift`): SEA's threshold moving at example 5,000
(standardised features), books reviews followed by kitchen reviews (bag of words), and SMS spam
whose two labels swap meaning at example 3,000. Progressive validation: every example is
predicted, then learned; only the predictions after the drift are scored.

    python benchmarks/forgetting.py [--forgetting 0.01 0.05] [--seed 1]

The tables go to standard output: ``> docs/forgetting_table.md`` writes the guide's
(tests/project/test_docs_generated.py checks it).
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import random
import sys
import time
from pathlib import Path

from river import drift as river_drift
from river import feature_extraction, metrics, preprocessing

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import river_cw
from streams.evaluate import drift

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
AFTER = 2000


def sms(seed: int) -> list:
    with gzip.open(DATA / "sms_spam_collection.jsonl.gz", "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    random.Random(seed).shuffle(rows)
    return [({"text": row["text"]}, row["label"]) for row in rows]


def streams(seed: int) -> dict:
    """name -> (examples, drift position, how to prepare the features)."""
    out = {
        "SEA, sudden at 5,000": (
            list(itertools.islice(drift.synthetic("sudden", 5000, seed=seed), 5000 + AFTER)),
            5000,
            preprocessing.StandardScaler,
        ),
    }
    text = lambda: feature_extraction.BagOfWords(on="text", lowercase=True)  # noqa: E731
    if (DATA / "mdsd_sorted_acl_text.jsonl.gz").exists():
        reviews = list(drift.domains(DATA / "mdsd_sorted_acl_text.jsonl.gz", seed=seed))
        out["books -> kitchen at 2,000"] = (reviews, 2000, text)
    if (DATA / "sms_spam_collection.jsonl.gz").exists():
        flipped = list(drift.label_flip(sms(seed)[: 3000 + AFTER], 3000, ["ham", "spam"]))
        out["SMS, labels swap at 3,000"] = (flipped, 3000, text)
    return out


def after_drift(model, examples, position: int) -> float:
    metric = metrics.Accuracy()
    for i, (x, y) in enumerate(examples[: position + AFTER]):
        if i >= position:
            metric.update(y, model.predict_one(x))
        model.learn_one(x, y)
    return metric.get()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--forgetting", type=float, nargs="+", default=[0.01, 0.05])
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    data = streams(args.seed)
    rules = [river_cw.AROW, river_cw.CW, river_cw.NHERD, river_cw.SCW, river_cw.SOP]
    columns = ["forgetting 0"] + [f"forgetting {f:g}" for f in args.forgetting]
    columns += ['"auto"', "DriftRetrainingClassifier"]
    print(
        f"engine: {river_cw.ENGINE}; accuracy over the {AFTER:,} examples after the drift",
        file=sys.stderr,
    )
    start = time.perf_counter()
    for name, (examples, position, prepare) in data.items():
        print(f"**{name}**\n\n| model | " + " | ".join(columns) + " |")
        print("|---|" + "---:|" * len(columns))
        for rule in rules:
            cells = []
            for f in [0.0, *args.forgetting, "auto"]:
                cells.append(after_drift(prepare() | rule(forgetting=f), examples, position))
            retrain = river_drift.DriftRetrainingClassifier(rule(forgetting=0.0))
            cells.append(after_drift(prepare() | retrain, examples, position))
            row = " | ".join(f"{c:.3f}" for c in cells)
            print(f"| {rule.__name__} | {row} |", flush=True)
        print()
    print(f"{time.perf_counter() - start:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
