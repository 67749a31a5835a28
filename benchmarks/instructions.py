"""Instructions per feature of `learn_one`, or (`--predict`) of `predict_one`, counted by
valgrind's callgrind: repeatable where CPU time on a shared machine is not.

The stream is prepared once (river's `BagOfWords`, as in `throughput.py`) and pickled; a child
process under callgrind then has every model learn it, one after the other, calling
`time.process_time` (a marker: callgrind dumps its counters at each call, `--dump-before`)
just before and after each model's pass, so each pass is counted alone: imports, loading,
construction and a warm-up of a few examples are outside (the child runs its imports with
callgrind's instrumentation off: benchmarks/callgrind.py). With `--predict` each model learns
the whole stream first, outside the counted pass, which then predicts it. One child per engine: the compiled
one and, for the models in `PYTHON_ROWS`, the pure-Python one. The children hash strings with a
fixed seed (PYTHONHASHSEED=0 unless set), so that counts repeat from run to run: with a random
seed, the hashes of the features place them differently in the tables, and counts vary by ~1%.
Prints a markdown table of instructions per feature and the ratio to river's PAClassifier, and
exits non-zero when a ratio misses its `--require` bound (a guard CI can run).

    python benchmarks/instructions.py [--data FILE ...] [--limit 300] [--require AROW=10 ...]
    python benchmarks/instructions.py --predict   # predict_one, the stream learned first
    python benchmarks/instructions.py --text   # raw text in: predict_one and learn_one
    python benchmarks/instructions.py --figure docs/figures/speed.png   # and a bar chart
    python benchmarks/instructions.py --write docs/tables/learn_one.md   # the guide's table

``--figure PATH`` also writes the counts per corpus beside PATH (same name, ``.json``) and draws
each model's ratio to river's PAClassifier there as a bar chart, for docs/guide/speed.md; ``draw``
redraws it from the JSON (tests/project/test_docs_figures.py does). ``--write PATH`` writes the
corpora's tables side by side as one markdown table (`learn_table`, benchmarks/markdown.py).

Needs valgrind (`apt-get install valgrind`); without it the benchmark says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import pickle
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import callgrind, markdown
from benchmarks.throughput import load, models

PYTHON_ROWS = ("AROW", "CW stdev exact")  # the pure-Python engine, for reference
WARM_UP = 5  # examples learned before counting (first-call imports and caches)


def learn(model, stream) -> None:
    for x, y in stream:
        model.learn_one(x, y)


def predict(model, stream) -> None:
    for x, _ in stream:
        model.predict_one(x)


def predict_and_learn(model, stream) -> None:
    for x, y in stream:
        model.predict_one(x)
        model.learn_one(x, y)


def child(mode: str, path: str, names: list[str]) -> None:
    with open(path, "rb") as fh:
        stream = pickle.load(fh)
    if mode == "text":
        from benchmarks import text_throughput  # river's text features: see throughput.load

        makers, run = text_throughput.pipelines(), predict_and_learn
    else:
        makers, run = models(), learn if mode == "learn" else predict
    callgrind.start_counting()
    for name in names:
        model = makers[name]()
        if mode == "predict":
            learn(model, stream)  # the weights the predictions read: every feature learned
        run(model, stream[:WARM_UP])
        time.process_time()  # marker: counting starts
        run(model, stream[WARM_UP:])
        time.process_time()  # marker: counting stops


def instructions(mode: str, names: list[str], path: str, env: dict) -> dict[str, int]:
    """Instructions of each model's pass, from the parts callgrind counts between the markers."""
    parts = callgrind.counts([__file__, "--child", mode, path, *names], env)
    # part 1 runs up to the first marker; then one part per pass, one between passes
    return {name: parts[1 + 2 * i] for i, name in enumerate(names)}


def count_learning(
    mode: str, data: str, limit: int, names, required: dict, python: bool, counted: dict
) -> list[str]:
    """The table of `learn_one` (mode "learn") or `predict_one` ("predict") on BagOfWords'
    dicts; the misses of `required`. Each model's instructions per feature go to
    ``counted[data]``."""
    names = list(dict.fromkeys(["river PAClassifier", *(names or models())]))
    stream = load(data, limit + WARM_UP)
    n_features = sum(len(x) for x, _ in stream[WARM_UP:])
    with tempfile.NamedTemporaryFile(suffix=".pkl") as fh:
        pickle.dump(stream, fh)
        fh.flush()
        counts = instructions(mode, names, fh.name, {})
        python = [name for name in names if name in PYTHON_ROWS and python]
        if python:
            pure = instructions(mode, python, fh.name, {"RIVER_CW_PURE_PYTHON": "1"})
            counts.update({f"{name} (pure Python)": count for name, count in pure.items()})
    n = len(stream) - WARM_UP
    call = "learn_one" if mode == "learn" else "predict_one"
    title = f"{data}: {n} examples, {n_features / n:.0f} features each, {call}, callgrind"
    counted[data] = {k: c / n_features for k, c in counts.items()}
    return table(
        title,
        counted[data],
        "river PAClassifier",
        "instructions/feature",
        required,
    )


def count_text(data: str, limit: int, required: dict, counted: dict) -> list[str]:
    """The table of text in -> predict_one and learn_one; the misses of `required`. Each
    pipeline's instructions per example go to ``counted[data]``."""
    from benchmarks import text_throughput

    names = list(text_throughput.pipelines())
    stream = text_throughput.load(data, limit + WARM_UP)
    with tempfile.NamedTemporaryFile(suffix=".pkl") as fh:
        pickle.dump(stream, fh)
        fh.flush()
        counts = instructions("text", names, fh.name, {})
    n = len(stream) - WARM_UP
    title = f"{data}: {n} texts in, predict_one and learn_one, callgrind"
    counted[data] = {k: c / n for k, c in counts.items()}
    return table(title, counted[data], names[0], "instructions/example", required)


def table(title: str, counts: dict, reference: str, unit: str, required: dict) -> list[str]:
    print(f"\n{title}\n")
    print(f"| model | {unit} | vs {reference.removeprefix('river ')} |")
    print("|---|---:|---:|")
    failed = []
    for name, count in counts.items():
        ratio = counts[reference] / count
        print(f"| {name} | {count:,.0f} | {ratio:.2f}x |")
        if name in required and ratio < required[name]:
            bound = required[name]
            failed.append(f"{title.split(':')[0]}: {name} at {ratio:.2f}x, required {bound}x")
    return failed


REFERENCE = "river PAClassifier"
CORPORA = {
    "mdsd_sorted_acl_text.jsonl.gz": "product reviews",
    "sms_spam_collection.jsonl.gz": "SMS",
}


def learn_table(counted: dict, unit: str = "instr./feature") -> str:
    """The markdown table of `counted` ({file: {row: instructions}}, the reference first): per
    corpus, each row's count and the reference's count divided by it."""
    cells = {}
    for data, counts in counted.items():
        reference = next(iter(counts.values()))
        cells[data] = {k: [f"{c:,.0f}", f"{reference / c:.2f}x"] for k, c in counts.items()}
    versus = f"vs {next(iter(next(iter(counted.values())))).removeprefix('river ')}"
    return markdown.wide("model", [unit, versus], cells)


def draw(numbers: dict, out: Path) -> None:
    """The bar chart of `numbers` (``{"call", "limit", "corpora": {file: {model: instructions
    per feature}}}``): each model's ratio to river's PAClassifier, per corpus."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    corpora = numbers["corpora"]
    models = list(next(iter(corpora.values())))[::-1]  # the table's first row at the top
    height = 0.8 / len(corpora)
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(models) + 1.6), dpi=100)
    for i, (data, counts) in enumerate(corpora.items()):
        ratios = [counts[REFERENCE] / counts[m] for m in models]
        ys = [j + (len(corpora) - 1 - 2 * i) * height / 2 for j in range(len(models))]
        bars = ax.barh(ys, ratios, height, label=CORPORA.get(data, data))
        ax.bar_label(bars, fmt="%.1fx", fontsize=7, padding=2)
    ax.axvline(1, color="black", lw=1)
    ax.set_xlim(0, 1.1 * ax.get_xlim()[1])  # room for the labels of the longest bars
    ax.set_yticks(range(len(models)), models, fontsize=8)
    ax.set_ylim(-0.6, len(models) - 0.4)
    ax.set_xlabel("river's PAClassifier's instructions per feature / the model's (higher: faster)")
    ax.set_title(
        f"{numbers['call']} on bag-of-words features, against river's PAClassifier\n"
        f"(instructions counted by callgrind, {numbers['limit']} examples per corpus)",
        fontsize=11,
    )
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data",
        nargs="+",
        default=["mdsd_sorted_acl_text.jsonl.gz", "sms_spam_collection.jsonl.gz"],
    )
    parser.add_argument("--limit", type=int, default=300)
    parser.add_argument("--models", nargs="+", default=None, help="rows to count (default: all)")
    parser.add_argument(
        "--require",
        nargs="*",
        default=[],
        metavar="MODEL=RATIO",
        help="fail unless MODEL's ratio to PAClassifier is at least RATIO",
    )
    parser.add_argument("--no-python", action="store_true", help="no pure-Python rows")
    parser.add_argument(
        "--text",
        action="store_true",
        help="text in: predict_one and learn_one of text_throughput's pipelines",
    )
    parser.add_argument(
        "--predict",
        action="store_true",
        help="predict_one instead of learn_one, each model having learned the stream first",
    )
    parser.add_argument(
        "--figure",
        type=Path,
        metavar="PATH",
        help="learn_one or --predict: write the counts (PATH as .json) and their bar chart",
    )
    parser.add_argument(
        "--write", metavar="PATH", help="also write the corpora's tables as one markdown table"
    )
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child[0], args.child[1], args.child[2:])
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: no instruction counts (apt-get install valgrind)")
        return 0
    required = {name: float(ratio) for name, ratio in (r.rsplit("=", 1) for r in args.require)}
    failed, counted = [], {}
    for data in args.data:
        if args.text:
            failed += count_text(data, args.limit, required, counted)
        else:
            mode = "predict" if args.predict else "learn"
            failed += count_learning(
                mode, data, args.limit, args.models, required, not args.no_python, counted
            )
    if args.figure is not None and counted:
        call = "predict_one" if args.predict else "learn_one"
        numbers = {"call": call, "limit": args.limit, "corpora": counted}
        args.figure.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(numbers, indent=1) + "\n"
        args.figure.with_suffix(".json").write_text(text, encoding="utf-8")
        draw(numbers, args.figure)
    if args.write is not None and counted:
        unit = "instr./example" if args.text else "instr./feature"
        markdown.write(args.write, learn_table(counted, unit))
    for line in failed:
        print("FAILED", line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
