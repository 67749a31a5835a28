"""Text in -> prediction and update, end to end, next to river's `BagOfWords | PAClassifier`.

Every pipeline (river's `Pipeline`, written `+` in the tables) reads the raw examples ({"text": ..., "label": ...}, shuffled with a fixed seed)
and runs `predict_one` then `learn_one` on each, as a server that predicts and learns does. The
pipelines run in interleaved rounds (`--repeat`) and each keeps its best CPU time, so the ratios
come from one run on one (noisy, shared) machine. A second table times the tokenizer alone:
`transform_one` of river's `BagOfWords` against `river_cw.text.BagOfWords`.

    python benchmarks/text_throughput.py [--data FILE ...] [--limit 4000] [--repeat 5]

Instruction counts of the tokenizers (repeatable where timing is not): run
`--count-only {none,river,river_cw}` under `valgrind --tool=callgrind` and subtract `none`
(which loads the data and tokenizes nothing) from the others; divide by the token count that
`--count-only tokens` prints.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import time
from pathlib import Path

from river import feature_extraction, linear_model

import river_cw
from river_cw import text

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
STREAMS = ["sms_spam_collection.jsonl.gz", "mdsd_sorted_acl_text.jsonl.gz"]


def pipelines():
    return {
        "river BagOfWords + PAClassifier": lambda: (
            feature_extraction.BagOfWords(on="text") | linear_model.PAClassifier()
        ),
        "river_cw BagOfWords + PAClassifier": lambda: (
            text.BagOfWords(on="text") | linear_model.PAClassifier()
        ),
        "river_cw BagOfWords + AROW": lambda: text.BagOfWords(on="text") | river_cw.AROW(),
        "river_cw TextClassifier(AROW)": lambda: text.TextClassifier(river_cw.AROW(), on="text"),
    }


def tokenizers():
    return {
        "river": feature_extraction.BagOfWords(on="text"),
        "river_cw": text.BagOfWords(on="text"),
    }


def load(name: str, limit: int, seed: int = 0):
    with gzip.open(DATA / name, "rt", encoding="utf-8") as fh:
        examples = [json.loads(line) for line in fh]
    random.Random(seed).shuffle(examples)
    labels = sorted({ex["label"] for ex in examples})
    return [({"text": ex["text"]}, ex["label"] == labels[-1]) for ex in examples[:limit]]


def run_pipeline(model, stream) -> float:
    start = time.process_time()
    for x, y in stream:
        model.predict_one(x)
        model.learn_one(x, y)
    return time.process_time() - start


def run_tokenizer(bow, stream) -> float:
    transform = bow.transform_one
    start = time.process_time()
    for x, _ in stream:
        transform(x)
    return time.process_time() - start


def best_times(runners: dict, stream, repeat: int) -> dict:
    best = dict.fromkeys(runners, float("inf"))
    for _ in range(repeat):
        for name, run in runners.items():
            best[name] = min(best[name], run(stream))
    return best


def table(title: str, best: dict, reference: str, n: int, tokens: int) -> None:
    print(f"\n{title}\n")
    print("| | examples/s | tokens/s | speed-up |")
    print("|---|---:|---:|---:|")
    for name, seconds in best.items():
        speed_up = best[reference] / seconds
        print(f"| {name} | {n / seconds:,.0f} | {tokens / seconds:,.0f} | {speed_up:.2f}x |")


def report(name: str, limit: int, repeat: int) -> None:
    stream = load(name, limit)
    river_bow = feature_extraction.BagOfWords(on="text")
    tokens = sum(sum(river_bow.transform_one(x).values()) for x, _ in stream)
    ascii_share = sum(x["text"].isascii() for x, _ in stream) / len(stream)
    print(
        f"\n## {name}: {len(stream)} examples, {tokens / len(stream):.1f} tokens each, "
        f"{ascii_share:.1%} ASCII (compiled tokenizer: {text.COMPILED}, engine: "
        f"{getattr(river_cw, 'ENGINE', 'python')})"
    )
    makers = pipelines()
    runners = {k: (lambda s, make=make: run_pipeline(make(), s)) for k, make in makers.items()}
    best = best_times(runners, stream, repeat)
    table("Predict and learn, text in", best, next(iter(makers)), len(stream), tokens)
    bows = tokenizers()
    runners = {k: (lambda s, bow=bow: run_tokenizer(bow, s)) for k, bow in bows.items()}
    best = best_times(runners, stream, repeat)
    table("Tokenizer alone (transform_one)", best, "river", len(stream), tokens)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", nargs="+", default=STREAMS)
    parser.add_argument("--limit", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--count-only", choices=["none", "river", "river_cw", "tokens"])
    args = parser.parse_args(argv)
    if args.count_only:
        stream = [x for name in args.data for x in load(name, args.limit)]
        if args.count_only == "tokens":
            bow = feature_extraction.BagOfWords(on="text")
            print("tokens:", sum(sum(bow.transform_one(x).values()) for x, _ in stream))
        elif args.count_only != "none":
            run_tokenizer(tokenizers()[args.count_only], stream)
        return
    for name in args.data:
        report(name, args.limit, args.repeat)


if __name__ == "__main__":
    main()
