"""Probabilities a service can use: log loss (and accuracy) by progressive validation of the
Gaussian classifiers as they come (calibrated: a Newton temperature on the margins with a noise
term) and with ``calibrate=False`` (the papers' probabilities), voted RDA (its hinge scores
calibrated on a grid of temperatures) and river's LogisticRegression, on SMS spam and books
(bag of words) and a9a.

    python benchmarks/calibration.py [--limit 10000] [--seed 0]

The table goes to standard output: ``> docs/calibration_table.md`` writes the guide's
(tests/project/test_docs_generated.py checks it).
"""

from __future__ import annotations

import argparse
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


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=10000, help="examples per stream")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
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
