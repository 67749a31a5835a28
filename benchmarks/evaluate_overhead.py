"""The evaluation's own work per example, against the model's: `river-cw evaluate`'s loop.

A model's rate is what a bare loop of its calls achieves on the examples in memory: ``predict_one``
then ``learn_one`` ("predict + learn"), and the same with ``predict_proba_one`` as well (the
calls progressive validation makes of a model with probabilities: the log-loss column).
`streams.evaluate.progressive.evaluate` then runs the same model (a fresh one) over the same
examples, alone and next to the majority-class baseline that `river-cw evaluate` always adds, with
the command's curve resolution (a hundredth of the stream). The examples are parsed before the
clock starts: reading a file is the reader's work, not the evaluation's. Every contender runs once
per round, in turn, and each keeps its fastest round (CPU time, so other processes' load counts
less).

    python benchmarks/evaluate_overhead.py [--examples 100000] [--model "AROW()"] [--rounds 3]

Prints a markdown table: examples per second of each, its ratio to the model's predict + learn,
and the evaluation's own microseconds per example (evaluate's time less the three calls').
"""

from __future__ import annotations

import argparse
import itertools
import time

from streams.evaluate.progressive import evaluate
from streams.io.files import sms_spam
from streams.models.specs import parse, prepare


def examples(n: int) -> list:
    """The bundled SMS messages, repeated to `n` examples."""
    return list(itertools.islice(itertools.cycle(list(sms_spam())), n))


def seconds(run) -> float:
    start = time.process_time()
    run()
    return time.process_time() - start


def contenders(spec: str, stream: list) -> dict:
    labels = sorted({y for _, y in stream})

    def build():
        return prepare(parse(spec), text=True, labels=labels)

    def predict_learn():
        model = build()
        for x, y in stream:
            model.predict_one(x)
            model.learn_one(x, y)

    def predict_proba_learn():
        model = build()
        for x, y in stream:
            model.predict_one(x)
            model.predict_proba_one(x)
            model.learn_one(x, y)

    every = max(1, len(stream) // 100)
    return {
        "predict + learn": predict_learn,
        "predict + predict_proba + learn": predict_proba_learn,
        "evaluate, one model": lambda: evaluate([build()], stream, every=every, progress=False),
        "evaluate, with the baseline": lambda: evaluate(
            [build()], stream, every=every, progress=False, baseline=True
        ),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=100_000)
    parser.add_argument("--model", default="AROW()")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    stream = examples(args.examples)
    runs = contenders(args.model, stream)
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(args.rounds):
        for name, run in runs.items():
            best[name] = min(best[name], seconds(run))
    n = len(stream)
    model = best["predict + learn"]
    calls = best["predict + predict_proba + learn"]
    print(
        f"\n{args.model} on {n:,} SMS messages (bundled, repeated), CPU time, best of {args.rounds}\n"
    )
    print("| run | examples/s | x predict + learn | evaluation's own us/example |")
    print("|---|---:|---:|---:|")
    for name, spent in best.items():
        own = f"{(spent - calls) / n * 1e6:.2f}" if name == "evaluate, one model" else ""
        print(f"| {name} | {n / spent:,.0f} | {model / spent:.2f} | {own} |")


if __name__ == "__main__":
    main()
