"""Mini-batch learning and predicting: `learn_many`, `predict_many` and `predict_proba_many` on
dicts and on CSR arrays next to river's PAClassifier's `learn_one` loop, in one run.

A text stream from ../shared/data goes through river's `BagOfWords` once (as in
`throughput.py`; `river_cw.text.BagOfWords` gives the same dicts); the CSR matrix is built from those dicts with their vocabulary (column j is the j-th
token seen) and, for hashed ids, the same matrix without names (column j is the int j). Every
model then learns the same examples in file order (shuffled with a fixed seed) in batches of
`--batch` rows (the batches are cut beforehand, as a stream hands them over: a scipy slice costs
more than the kernel learning it); river's PAClassifier (which has no `learn_many`) and river_cw's
own `learn_one` loop learn them one by one. The prediction passes (`predict_many`,
`predict_proba_many`) predict the same batches with a model that has learned the stream once
(`learn_many`, outside the timing and the counts). Each pass runs `--repeat` times, in rounds over all
passes, and keeps its best CPU time. Prints a markdown table of features/s (stored entries of
the rows) and the ratio to river's PAClassifier of the same run. With `--warm` every model
(river's too) has learned the stream once before the timed pass learns it again: the steady
state of a long stream, where most features are known (a fresh model spends much of the pass
adding features). With `--per-batch` the `learn_many` passes also print the features/s of each
batch (best of the rounds): a new model's rate as its features accumulate.

    python benchmarks/batch.py [--data FILE ...] [--limit 4000] [--batch 1000] [--repeat 3] [--warm]
                               [--per-batch]
    python benchmarks/batch.py --instructions   # instructions per feature, by callgrind
    python benchmarks/batch.py --instructions --warm --passes "AROW learn_many CSR hashed" \
        --require "AROW learn_many CSR hashed=25"   # a guard (tests/engines/test_instructions.py)
    python benchmarks/batch.py --instructions --warm --passes "AROW learn_many CSR hashed" \
        "AROW default learn_many CSR hashed" \
        --within "AROW default learn_many CSR hashed/AROW learn_many CSR hashed=1.2"

With ``--instructions`` a child process under valgrind's callgrind runs every pass once and
dumps its counters at markers (calls of `time.process_time`) around each pass, after every pass
has run once on a few rows, as `benchmarks/instructions.py` does: counts repeat where CPU time
on a shared machine does not. ``--passes`` keeps only the named passes (and river's, the
reference); ``--require PASS=RATIO`` fails (exit status 1) unless PASS's ratio to river's
PAClassifier is at least RATIO, ``--within PASS/OTHER=RATIO`` unless PASS's instructions per
feature are at most RATIO times OTHER's (the default model's kernel against the diagonal's).
``--write PATH`` also writes the corpora's tables side by side as one markdown table
(docs/tables/batch_*.md, benchmarks/markdown.py).
"""

from __future__ import annotations

import argparse
import pickle
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from river import linear_model
from scipy import sparse

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import river_cw
from benchmarks import callgrind, markdown
from benchmarks.instructions import WARM_UP
from benchmarks.instructions import table as count_table
from benchmarks.throughput import DATA, load

REFERENCE = "river PAClassifier learn_one"
# The diagonal covariance's batch kernels (learn_rows, score_rows: river_cw/_engines/_batch.h with
# _diagonal.c's hooks), under the names of the tables in docs/guide/speed.md, measured with the
# diagonal defaults of before issue 30; and the default model ("AROW default": the arrowhead
# covariance, "drop", an intercept prior of 100), the same kernels with _arrowhead.c's hooks.
DIAGONAL = {"covariance": "diagonal"}
MODELS = {
    "AROW": lambda: river_cw.AROW(diagonal="project", **DIAGONAL),
    "AROW drop": lambda: river_cw.AROW(diagonal="drop", **DIAGONAL),
    "SCW-I": lambda: river_cw.SCW(**DIAGONAL),
    "CW var exact": lambda: river_cw.CW(variant="var", covariance="diagonal", diagonal="exact"),
    "AROW default": river_cw.AROW,
}
PREDICTING = ["AROW", "AROW default"]  # the models whose prediction passes run


def stream(name: str, limit: int):
    """(dicts, labels, CSR matrix, vocabulary) of the first `limit` shuffled examples."""
    examples = load(name, limit)  # river's BagOfWords (river_cw.text.BagOfWords: the same counts)
    dicts = [x for x, _ in examples]
    labels = [y for _, y in examples]
    vocabulary: dict = {}
    indptr, indices, data = [0], [], []
    for x in dicts:
        for token, count in x.items():
            indices.append(vocabulary.setdefault(token, len(vocabulary)))
            data.append(float(count))
        indptr.append(len(indices))
    X = sparse.csr_array(
        (np.array(data), np.array(indices), np.array(indptr)), shape=(len(dicts), len(vocabulary))
    )
    return dicts, labels, X, list(vocabulary)


def passes(dicts, labels, X, features, batch: int, warm: bool = False, only=None) -> dict:
    """name -> (make, learn): `make()` is a new model (warm: that has learned the stream once),
    `learn(model)` learns the whole stream once (a `learn_many` pass: `learn(model, seconds)`
    also appends each batch's CPU time to the list `seconds`); only the passes named in `only`
    (and river's) when it is given."""
    cuts = range(0, len(labels), batch)
    labels_of = [labels[a : a + batch] for a in cuts]

    def prepared(make, learn):
        def made():
            model = make()
            if warm:
                learn(model)
            return model

        return made, learn

    def loop(make):
        def learn(model):
            for x, y in zip(dicts, labels):
                model.learn_one(x, y)

        return prepared(make, learn)

    def many(make, rows, **kwargs):
        batches = [rows[a : a + batch] for a in cuts]

        def learn(model, seconds=None):
            for rows_, y in zip(batches, labels_of):
                if seconds is None:  # no clock: its calls are --instructions' markers
                    model.learn_many(rows_, y, **kwargs)
                    continue
                start = time.process_time()
                model.learn_many(rows_, y, **kwargs)
                seconds.append(time.process_time() - start)

        return prepared(make, learn)

    def predicting(make, method, rows, **kwargs):
        batches = [rows[a : a + batch] for a in cuts]

        def made():
            model = make()
            model.learn_many(dicts, labels)
            return model

        def predict(model):
            for rows_ in batches:
                getattr(model, method)(rows_, **kwargs)

        return made, predict

    out = {REFERENCE: loop(linear_model.PAClassifier)}
    for name, make in MODELS.items():
        out[f"{name} learn_one"] = loop(make)
        out[f"{name} learn_many dicts"] = many(make, dicts)
        out[f"{name} learn_many CSR vocabulary"] = many(make, X, features=features)
        out[f"{name} learn_many CSR hashed"] = many(make, X)
        if name in PREDICTING:
            for method in ("predict_many", "predict_proba_many"):
                out[f"{name} {method} dicts"] = predicting(make, method, dicts)
                out[f"{name} {method} CSR vocabulary"] = predicting(
                    make, method, X, features=features
                )
    if only is not None:
        out = {name: run for name, run in out.items() if name in only or name == REFERENCE}
    return out


def cpu_time(make, learn, batches: list | None = None) -> float:
    """CPU seconds of one pass on a model from `make()`; with a list `batches` (a `learn_many`
    pass), each batch's seconds are appended to it as well"""
    model = make()
    start = time.process_time()
    if batches is None:
        learn(model)
    else:
        learn(model, batches)
    return time.process_time() - start


def batch_table(sizes: list, seconds: dict) -> None:
    """features/s of each batch (`sizes`: its stored entries) of every `learn_many` pass"""
    print(f"\n| pass | {' | '.join(f'batch {i + 1}' for i in range(len(sizes)))} |")
    print(f"|---|{'---:|' * len(sizes)}")
    for pass_, s in seconds.items():
        print(f"| {pass_} | {' | '.join(f'{n / t / 1e6:.1f}M' for n, t in zip(sizes, s))} |")


def table(name: str, n_features: int, n_rows: int, seconds: dict, warm: bool) -> dict:
    """Prints the table of features/s; returns its cells by pass."""
    pa = seconds[REFERENCE]
    print(f"\n{title(name, n_features, n_rows, warm)}\n")
    print("| pass | features/s | vs PAClassifier |")
    print("|---|---:|---:|")
    cells = {p: [f"{n_features / s:,.0f}", f"{pa / s:.2f}x"] for p, s in seconds.items()}
    for pass_, (rate, ratio) in cells.items():
        print(f"| {pass_} | {rate} | {ratio} |")
    return cells


def title(name: str, n_features: int, n_rows: int, warm: bool) -> str:
    return (
        f"{name}: {n_rows} examples, {n_features / n_rows:.0f} features each, "
        f"engine {river_cw.ENGINE!r}{', warm models' if warm else ''}"
    )


def child(path: str) -> None:
    with open(path, "rb") as fh:
        dicts, labels, X, features, batch, warm, only = pickle.load(fh)
    # the process's first-call costs (imports, caches) stay outside the counts: every pass once
    # on the first few rows, as benchmarks/instructions.py warms up
    few = slice(0, WARM_UP)
    for make, learn in passes(
        dicts[few], labels[few], X[few], features, batch, False, only
    ).values():
        learn(make())
    callgrind.start_counting()
    for make, learn in passes(dicts, labels, X, features, batch, warm, only).values():
        model = make()
        time.process_time()  # marker: counting starts
        learn(model)
        time.process_time()  # marker: counting stops


def counts(dicts, labels, X, features, batch, warm, only) -> dict:
    with tempfile.TemporaryDirectory() as out:
        path = f"{out}/stream.pickle"
        with open(path, "wb") as fh:
            pickle.dump((dicts, labels, X, features, batch, warm, only), fh)
        totals = callgrind.counts(
            [__file__, "--child", path], {"PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        )
    names = list(passes(dicts, labels, X, features, batch, only=only))
    return {name: totals[1 + 2 * i] for i, name in enumerate(names)}


def bounded(name: str, count: dict, within: list) -> list:
    """Each (pass, other, ratio) of `within`: its ratio of instructions printed, and a failure
    line where pass's instructions exceed ratio times other's"""
    failed = []
    for pass_, other, ratio in within:
        measured = count[pass_] / count[other]
        print(f"{pass_} / {other}: {measured:.3f} (at most {ratio})")
        if measured > ratio:
            failed.append(f"{name}: {pass_} at {measured:.3f}x {other}, above {ratio}x")
    return failed


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data",
        nargs="+",
        default=["mdsd_sorted_acl_text.jsonl.gz", "sms_spam_collection.jsonl.gz"],
    )
    parser.add_argument("--limit", type=int, default=4000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--instructions", action="store_true")
    parser.add_argument("--warm", action="store_true", help="models that learned the stream once")
    parser.add_argument(
        "--per-batch",
        action="store_true",
        help="also the features/s of each batch of the learn_many passes",
    )
    parser.add_argument("--passes", nargs="+", default=None, help="passes to run (default: all)")
    parser.add_argument(
        "--require",
        nargs="*",
        default=[],
        metavar="PASS=RATIO",
        help="with --instructions: fail unless PASS's ratio is at least RATIO",
    )
    parser.add_argument(
        "--within",
        nargs="*",
        default=[],
        metavar="PASS/OTHER=RATIO",
        help="with --instructions: fail unless PASS's instructions are at most RATIO times OTHER's",
    )
    parser.add_argument(
        "--write", metavar="PATH", help="also write the tables as one markdown table"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args.child)
    if args.instructions and shutil.which("valgrind") is None:
        print("valgrind is not installed: no instruction counts")
        return 0
    required = {name: float(ratio) for name, ratio in (r.rsplit("=", 1) for r in args.require)}
    within = [
        (*pair.split("/", 1), float(ratio))
        for pair, ratio in (w.rsplit("=", 1) for w in args.within)
    ]
    failed, cells = [], {}
    for name in args.data:
        if not (DATA / name).exists():
            print(f"{DATA / name} is absent: skipped")
            continue
        dicts, labels, X, features = stream(name, args.limit)
        if args.instructions:
            count = counts(dicts, labels, X, features, args.batch, args.warm, args.passes)
            per_feature = {k: c / X.nnz for k, c in count.items()}
            failed += count_table(
                title(name, X.nnz, len(labels), args.warm),
                per_feature,
                REFERENCE,
                "instructions/feature",
                required,
            )
            pa = per_feature[REFERENCE]
            cells[name] = {k: [f"{c:,.0f}", f"{pa / c:.2f}x"] for k, c in per_feature.items()}
            failed += bounded(name, count, within)
            continue
        runs = passes(dicts, labels, X, features, args.batch, args.warm, args.passes)
        seconds = dict.fromkeys(runs, float("inf"))
        batches = {
            pass_: [float("inf")] * len(range(0, len(labels), args.batch))
            for pass_ in runs
            if "learn_many" in pass_
        }
        for _ in range(args.repeat):  # rounds over all passes: load changes hit them alike
            for pass_, (make, learn) in runs.items():
                each = [] if args.per_batch and pass_ in batches else None
                seconds[pass_] = min(seconds[pass_], cpu_time(make, learn, each))
                if each is not None:
                    batches[pass_] = list(map(min, batches[pass_], each))
        cells[name] = table(name, X.nnz, len(labels), seconds, args.warm)
        if args.per_batch:
            batch_table(
                [X[a : a + args.batch].nnz for a in range(0, len(labels), args.batch)], batches
            )
    if args.write is not None and cells:
        unit = "instr./feature" if args.instructions else "features/s"
        markdown.write(args.write, markdown.wide("pass", [unit, "vs PAClassifier"], cells))
    for line in failed:
        print("FAILED", line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
