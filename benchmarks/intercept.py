"""Does an intercept help? Every classifier with ``learn_intercept`` off and on, by progressive
validation (predict, then learn; one pass), next to river's LogisticRegression and
PAClassifier, on text (SMS spam, books sentiment) and dense streams (the one-feature threshold
stream, SEA with its sudden drift raw and standardised, a9a, Spambase standardised).

Prints a markdown table of accuracy and log loss to standard output; ``> docs/intercept_table.md``
writes the one docs/guide/dense.md ("An intercept or not") shows
(tests/project/test_docs_generated.py checks it).

    python benchmarks/intercept.py [--limit 10000] [--seed 0]
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

from river import feature_extraction, linear_model, metrics, preprocessing

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import river_cw
from streams.evaluate import drift
from streams.evaluate.synthetic import threshold_stream

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def shared(name: str, seed: int, limit: int) -> list | None:
    """A shared corpus as (features, label) pairs, shuffled with `seed`; text as bag-of-words;
    the label is True for the second label in sorted order (river's LogisticRegression needs
    booleans)."""
    path = DATA / name
    if not path.exists():
        return None
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    random.Random(seed).shuffle(rows)
    words = feature_extraction.BagOfWords(lowercase=True)
    second = sorted({row["label"] for row in rows})[1]
    return [
        (row["x"] if "x" in row else words.transform_one(row["text"]), row["label"] == second)
        for row in rows[:limit]
    ]


def streams(seed: int, limit: int) -> dict:
    """name -> (examples, whether to standardise the features first)."""
    sea = list(itertools.islice(drift.synthetic("sudden", position=limit // 2, seed=seed), limit))
    out = {
        "SMS spam (text)": (shared("sms_spam_collection.jsonl.gz", seed, limit), False),
        "books (text)": (shared("mdsd_processed_acl_books.jsonl.gz", seed, limit), False),
        "threshold x > 0.5": (list(threshold_stream(2000, seed)), False),
        "SEA raw": (sea, False),
        "SEA scaled": (sea, True),
        "a9a": (shared("libsvm_a9a.jsonl.gz", seed, limit), False),
        "Spambase scaled": (shared("spambase.jsonl.gz", seed, limit), True),
    }
    return {name: value for name, value in out.items() if value[0] is not None}


def models():
    """(name, factory) pairs: each Gaussian rule without and with an intercept, then river's."""
    rules = {
        "AROW": river_cw.AROW,
        "CW": river_cw.CW,
        "NHERD": river_cw.NHERD,
        "SCW": river_cw.SCW,
        "SOP": river_cw.SOP,
        "VotedRDA": river_cw.VotedRDA,
    }
    for name, cls in rules.items():
        for on in (False, True):
            yield f"{name} {'+b' if on else 'no b'}", lambda cls=cls, on=on: cls(learn_intercept=on)
    yield "river LogisticRegression", linear_model.LogisticRegression
    yield "river PAClassifier", linear_model.PAClassifier


def progressive(model, examples) -> tuple[float, float]:
    accuracy, log_loss = metrics.Accuracy(), metrics.LogLoss()
    for x, y in examples:
        proba = model.predict_proba_one(x)
        accuracy.update(y, model.predict_one(x))
        log_loss.update(y, proba.get(True, 0.0))
        model.learn_one(x, y)
    return accuracy.get(), log_loss.get()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=10000, help="examples per stream")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    data = streams(args.seed, args.limit)
    print(
        f"engine: {river_cw.ENGINE}; accuracy (log loss), progressive validation, one pass",
        file=sys.stderr,
    )
    print("| model | " + " | ".join(f"{s} ({len(e):,})" for s, (e, _) in data.items()) + " |")
    print("|---|" + "---:|" * len(data))
    start = time.perf_counter()
    for name, factory in models():
        cells = []
        for examples, scale in data.values():
            model = factory()
            if scale:
                model = preprocessing.StandardScaler() | model
            accuracy, log_loss = progressive(model, examples)
            cells.append(f"{accuracy:.3f} ({log_loss:.2f})")
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    print(f"\n{time.perf_counter() - start:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
