"""Text in, prediction out, then learn: river-cw's `TextClassifier` against Vowpal Wabbit's Python
loop, river's pipeline and scikit-learn's out-of-core recipe, in one run (issue 29).

Every learner reads the raw examples ({"text": ..., "label": ...}, shuffled with a fixed seed)
once, in order, and predicts each before it learns it (progressive validation): accuracy is the
share of those predictions that were right, examples/s counts the whole path (text in, the
prediction, the update) by CPU time. The learners run in interleaved rounds (`--repeat`), a
fresh model each round, and each keeps its best time:

- river-cw: ``TextClassifier(rule(covariance="diagonal"), on="text")`` for each rule, and the
  default AROW (arrowhead covariance) (river's `BagOfWords` tokens, lowercased, accents
  stripped);
- Vowpal Wabbit (`pip install -e ".[benchmarks]"`, an optional dependency of this benchmark: without
  it the VW rows are skipped, and the run says so), from Python: each text made a VW line
  (``"1 | text"``, its ``|``, ``:`` and line breaks spaces; VW's own whitespace tokens), parsed once,
  learned, and the prediction VW made before the update read from the example; squared, logistic
  and hinge loss at ``-b 18`` and ``-b 24``;
- river: ``feature_extraction.BagOfWords(on="text") | linear_model.PAClassifier()`` (written
  with + in the table);
- scikit-learn: ``HashingVectorizer`` + ``SGDClassifier.partial_fit`` in batches of 256, each
  batch predicted by the model of the batches before it (the first by the majority class: no
  model yet).

    python benchmarks/vs_vw.py [--data FILE ...] [--limit 4000] [--repeat 5] [--write PATH]

``--write PATH`` also writes the corpora's tables side by side as one markdown table, the ratio
to VW logistic at ``-b 18`` in parentheses (docs/tables/vs_vw.md, benchmarks/markdown.py).
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from river import feature_extraction, linear_model

import river_cw
from benchmarks import markdown
from benchmarks.text_throughput import load
from river_cw.text import TextClassifier

STREAMS = [
    "sms_spam_collection.jsonl.gz",
    "mdsd_sorted_acl_text.jsonl.gz",
    "enron_spam_lbjava_subset.jsonl.gz",
]
RULES = {
    "AROW": river_cw.AROW,
    "CW": river_cw.CW,
    "SCW": river_cw.SCW,
    "NHERD": river_cw.NHERD,
    "SOP": river_cw.SOP,
}
VW_LOSSES = ("squared", "logistic", "hinge")
VW_BITS = (18, 24)
BATCH = 256
VW_SYNTAX = str.maketrans("|:\n\r", "    ")  # VW's separators, and lines: spaces in a text


def river_learner(make):
    def run(stream):
        model, right = make(), 0
        start = time.process_time()
        for x, y in stream:
            right += model.predict_one(x) == y
            model.learn_one(x, y)
        return time.process_time() - start, right

    return run


def vw_learner(vowpalwabbit, loss: str, bits: int):
    def run(stream):
        vw, right = vowpalwabbit.Workspace(f"--loss_function {loss} -b {bits} --quiet"), 0
        start = time.process_time()
        for x, y in stream:
            tokens = x["text"].translate(VW_SYNTAX)
            example = vw.parse(f"{1 if y else -1} | {tokens}")
            vw.learn(example)
            right += (example.get_simplelabel_prediction() > 0) == y  # made before the update
            vw.finish_example(example)
        seconds = time.process_time() - start
        vw.finish()
        return seconds, right

    return run


def sklearn_learner():
    from sklearn.feature_extraction.text import HashingVectorizer
    from sklearn.linear_model import SGDClassifier

    def run(stream):
        vectorizer, right, fitted = HashingVectorizer(), 0, False
        model = SGDClassifier(random_state=0)  # partial_fit shuffles a batch: accuracy repeats
        start = time.process_time()
        for i in range(0, len(stream), BATCH):
            batch = stream[i : i + BATCH]
            X = vectorizer.transform([x["text"] for x, _ in batch])
            y = [y for _, y in batch]
            predicted = model.predict(X) if fitted else [False] * len(batch)
            right += sum(p == t for p, t in zip(predicted, y))
            model.partial_fit(X, y, classes=[False, True])
            fitted = True
        return time.process_time() - start, right

    return run


def learners() -> tuple[dict, str | None]:
    """The learners of the table, and why the VW rows are missing (None: they are not)."""
    runs = {
        f"river-cw {name} diagonal": river_learner(
            lambda r=rule: TextClassifier(r(covariance="diagonal"), on="text")
        )
        for name, rule in RULES.items()
    }
    runs["river-cw AROW (default)"] = river_learner(
        lambda: TextClassifier(river_cw.AROW(), on="text")
    )
    try:
        import vowpalwabbit
    except ImportError:
        missing = "vowpalwabbit is not installed (pip install -e '.[benchmarks]'): no VW rows"
    else:
        missing = None
        for bits in VW_BITS:
            for loss in VW_LOSSES:
                runs[f"VW {loss} -b {bits}"] = vw_learner(vowpalwabbit, loss, bits)
    runs["river BagOfWords + PAClassifier"] = river_learner(
        lambda: feature_extraction.BagOfWords(on="text") | linear_model.PAClassifier()
    )
    runs[f"scikit-learn HashingVectorizer + SGDClassifier ({BATCH})"] = sklearn_learner()
    return runs, missing


def report(name: str, limit: int, repeat: int) -> dict[str, list[str]]:
    """Prints the table of the corpus `name`; returns each learner's accuracy and examples/s (the
    ratio to VW logistic at -b 18 in parentheses, when VW ran) as cells."""
    stream = load(name, limit)
    runs, missing = learners()
    best, right = dict.fromkeys(runs, float("inf")), {}
    for _ in range(repeat):
        for learner, run in runs.items():
            gc.collect()  # no learner's time pays for the garbage of the one before
            seconds, right[learner] = run(stream)
            best[learner] = min(best[learner], seconds)
    reference = "VW logistic -b 18" if missing is None else None
    print(f"\n## {name}: {len(stream):,} examples, best of {repeat} interleaved rounds\n")
    if missing:
        print(f"({missing})\n")
    print("| learner | accuracy | examples/s |" + (" vs VW logistic -b 18 |" if reference else ""))
    print("|---|---:|---:|" + ("---:|" if reference else ""))
    cells = {}
    for learner, seconds in best.items():
        row = f"| {learner} | {right[learner] / len(stream):.4f} | {len(stream) / seconds:,.0f} |"
        rate = f"{len(stream) / seconds:,.0f}"
        if reference:
            row += f" {best[reference] / seconds:.2f}x |"
            rate += f" ({best[reference] / seconds:.2f}x)"
        print(row)
        cells[learner] = [f"{right[learner] / len(stream):.4f}", rate]
    return cells


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", nargs="+", default=STREAMS)
    parser.add_argument("--limit", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--write", metavar="PATH", help="also write the tables as one markdown table"
    )
    args = parser.parse_args(argv)
    cells = {name: report(name, args.limit, args.repeat) for name in args.data}
    if args.write is not None:
        markdown.write(args.write, markdown.wide("learner", ["accuracy", "examples/s"], cells))


if __name__ == "__main__":
    main()
