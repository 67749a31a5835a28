"""What the defaults' probabilities cost (issue 41): CPU time per example of each Gaussian rule as it
comes (calibrated, with its default forgetting) against the same rule with ``calibrate=False``
(the papers' probabilities; ``forgetting="auto"`` then never forgets), on two labels and more.

Each example is predicted with `predict_proba_one`, then learned (`learn_one`): what progressive
validation with a log loss, or the server, asks of a model. The streams: SMS spam (text, two
labels, through `river_cw.text.TextClassifier`), a9a (123 binary features, two labels), USPS (256
dense features, ten digits) and 20 Newsgroups (six groups, text): `--limit` examples of each
file of ../shared/data, shuffled with `--seed`. The models are interleaved over `--repeat` rounds, each one's least
CPU time kept (process time: the machine is shared); each round starts each stream with another
rule and takes the two variants in turn, so that no model always runs first on a stream.

    python benchmarks/calibration_cost.py [--limit 2000] [--repeat 5] [--seed 0]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import river_cw
from river_cw.text import TextClassifier

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
STREAMS = {  # name: (file, text?)
    "SMS (2 labels, text)": ("sms_spam_collection", True),
    "a9a (2 labels)": ("libsvm_a9a", False),
    "USPS (10 labels)": ("usps", False),
    "20 Newsgroups (6 labels, text)": ("20news_bydate_6groups", True),
}
RULES = {
    rule.__name__: rule
    for rule in (river_cw.AROW, river_cw.CW, river_cw.NHERD, river_cw.SCW, river_cw.SOP)
}


def load(file: str, text: bool, limit: int, seed: int) -> list:
    """`limit` examples of the file, shuffled (20 Newsgroups is sorted by group)."""
    with gzip.open(DATA / f"{file}.jsonl.gz", "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    random.Random(seed).shuffle(rows)
    return [(row["text"] if text else row["x"], row["label"]) for row in rows[:limit]]


def cpu_time(make, stream) -> float:
    model = make()
    start = time.process_time()
    for x, y in stream:
        model.predict_proba_one(x)
        model.learn_one(x, y)
    return time.process_time() - start


def makers(rule, text: bool) -> dict:
    def wrap(**params):
        return (lambda: TextClassifier(rule(**params))) if text else (lambda: rule(**params))

    return {"default": wrap(), "calibrate=False": wrap(calibrate=False)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    streams = {
        name: load(file, text, args.limit, args.seed)
        for name, (file, text) in STREAMS.items()
        if (DATA / f"{file}.jsonl.gz").exists()
    }
    best: dict = {}
    rules = list(RULES.items())
    for round_ in range(args.repeat):
        for name, stream in streams.items():
            # each round starts each stream with another rule, and takes the variants in
            # turn: the first model timed after a stream's switch runs on colder caches
            for rule, cls in rules[round_ % len(rules) :] + rules[: round_ % len(rules)]:
                variants = list(makers(cls, STREAMS[name][1]).items())
                for variant, make in variants[:: -1 if round_ % 2 else 1]:
                    seconds = cpu_time(make, stream) / len(stream)
                    key = (name, rule, variant)
                    best[key] = min(best.get(key, seconds), seconds)
    print(
        f"predict_proba_one + learn_one, us of CPU per example, {args.limit:,} shuffled examples, "
        f"best of {args.repeat} interleaved rounds (engine: {river_cw.ENGINE})"
    )
    print("| stream | rule | default | calibrate=False | default against it |")
    print("|---|---|---:|---:|---:|")
    for name in streams:
        for rule in RULES:
            default, plain = (best[(name, rule, v)] for v in ("default", "calibrate=False"))
            print(
                f"| {name} | {rule} | {default * 1e6:.1f} | {plain * 1e6:.1f} | {default / plain:.2f}x |"
            )


if __name__ == "__main__":
    main()
