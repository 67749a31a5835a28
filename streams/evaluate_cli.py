"""`river-cw evaluate`: compare models side by side on a stream, with label noise and drift.

With no file it runs on the SMS Spam Collection bundled with the package; with no `--model`
it compares a default set of confidence-weighted models with river's passive-aggressive
classifier. The stream is held in memory (it may be shuffled, and the class set and length
are needed for noise, drift positions and the progress bar); for endless or very long streams
use `streams.evaluation.evaluate` from Python.
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys

from streams import drift, files
from streams.evaluation import Evaluation, evaluate
from streams.noise import LabelNoise
from streams.specs import parse, prepare
from streams.tuning import tune

DEFAULT_MODELS = ["AROW()", "CW()", "SCW()", "NHERD()", "river.linear_model.PAClassifier()"]
SYNTHETIC_LENGTH = 10_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "files",
        nargs="*",
        help="data files: JSON lines, CSV or libsvm, plain or .gz (default: bundled SMS spam)",
    )
    parser.add_argument(
        "--format",
        choices=["jsonl", "csv", "libsvm"],
        help="file format, when the file name does not tell",
    )
    parser.add_argument(
        "--on-error",
        choices=["raise", "skip"],
        default="raise",
        help="stop at a malformed line (default) or skip and count it",
    )
    parser.add_argument(
        "--model",
        action="append",
        metavar="SPEC",
        help="a model spec, e.g. 'AROW(r=0.1)' or 'river.linear_model.PAClassifier(C=0.01)'; "
        f"repeat to compare (default: {' '.join(DEFAULT_MODELS)})",
    )
    parser.add_argument(
        "--noise",
        nargs="+",
        default=["0"],
        metavar="P",
        help="label-noise rates, one run each: a probability, or class-conditional "
        "'spam=0.3,ham=0.05' (default: 0)",
    )
    parser.add_argument(
        "--drift",
        choices=[*drift.KINDS, "flip"],
        help="concept drift between files, --domains, or (no file) SEA concepts; "
        "'flip' swaps the classes",
    )
    parser.add_argument(
        "--drift-at",
        type=int,
        metavar="N",
        help="drift position (default: middle of the stream; a quarter for recurring)",
    )
    parser.add_argument(
        "--drift-width",
        type=int,
        metavar="N",
        help="width of gradual drift (default: a tenth of the stream)",
    )
    parser.add_argument(
        "--drift-period",
        type=int,
        metavar="N",
        help="length of each turn of recurring drift (default: the drift position)",
    )
    parser.add_argument(
        "--domains",
        metavar="A,B",
        help="drift between values of the 'domain' field of one JSON-lines file (books,kitchen)",
    )
    parser.add_argument(
        "--shuffle",
        action="store_true",
        help="shuffle the examples (each concept on its own under drift) with --seed",
    )
    parser.add_argument(
        "--seed", type=int, default=1, help="seed for shuffling, noise and drift (default: 1)"
    )
    parser.add_argument(
        "--limit",
        type=int,
        metavar="N",
        help=f"use the first N examples, after shuffling (synthetic: {SYNTHETIC_LENGTH:,})",
    )
    parser.add_argument(
        "--every",
        type=int,
        metavar="K",
        help="learning-curve resolution (default: a hundredth of the stream)",
    )
    parser.add_argument(
        "--tune",
        action="store_true",
        help="pick hyper-parameters on a prefix of the stream, then evaluate on the rest",
    )
    parser.add_argument(
        "--tune-size",
        type=int,
        metavar="N",
        help="length of the tuning prefix (default: a tenth of the stream)",
    )
    parser.add_argument("--plot", metavar="PNG", help="write the learning curves to this PNG")
    parser.add_argument("--csv", metavar="PATH", help="write the learning curves as tidy CSV")
    parser.add_argument("--json", metavar="PATH", help="write summary, curves and settings as JSON")
    parser.add_argument(
        "--markdown",
        metavar="PATH",
        help="write the data description, final table and tuned parameters as markdown",
    )
    parser.add_argument("--title", help="title of the figure (default: a description of the data)")


def run(args: argparse.Namespace) -> int:
    try:
        result = _run(args)
    except (ValueError, OSError) as error:
        print(f"river-cw evaluate: error: {error}", file=sys.stderr)
        return 2
    print(result.table())
    for line in _tuned(result.info):
        print(line)
    if args.plot:
        metric = "recent_accuracy" if args.drift else "accuracy"
        marks = [result.info["drift_at"]] if args.drift and not args.tune else []
        result.plot(args.plot, title=args.title or result.info["data"], metric=metric, marks=marks)
    if args.csv:
        result.to_csv(args.csv)
    if args.json:
        result.to_json(args.json)
    if args.markdown:
        lines = [
            f"{result.info['data']}; {result.info['examples']:,} examples.",
            "",
            result.table(markdown=True),
        ]
        if "tuned" in result.info:
            lines += ["", *(f"- {line}" for line in _tuned(result.info))]
        with open(args.markdown, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
    return 0


def _tuned(info: dict) -> list[str]:
    """One line per noise level saying which parameters the tuner picked."""
    lines = []
    for level, chosen in info.get("tuned", {}).items():
        picks = ", ".join(f"{spec} -> {pick}" for spec, pick in chosen.items())
        lines.append(f"tuned on the first {info['tune_size']:,} examples at noise {level}: {picks}")
    return lines


def _run(args: argparse.Namespace) -> Evaluation:
    specs = args.model or DEFAULT_MODELS
    for spec in specs:
        parse(spec)  # fail on a bad spec before reading any data
    examples, description, readers, drift_at = _load(args)
    for reader in readers:
        if reader.n_skipped:
            print(
                f"skipped {reader.n_skipped:,} malformed lines in {reader.path}; "
                f"first: {reader.errors[0]}",
                file=sys.stderr,
            )
    if not examples:
        raise ValueError("the stream is empty")
    classes = sorted({y for _, y in examples}, key=str)
    text = isinstance(examples[0][0].get("text"), str)
    bool_labels = all(isinstance(c, bool) for c in classes)

    def build(spec):
        return prepare(parse(spec), text=text, bool_labels=bool_labels)

    every = args.every if args.every is not None else max(1, len(examples) // 100)
    results = []
    info: dict = {
        "data": description,
        "drift_at": drift_at,
        "examples": len(examples),
        "classes": classes,
        "seed": args.seed,
        "models": specs,
    }
    for rate in args.noise:
        noise = LabelNoise(_noise_rate(rate, classes), classes=classes, seed=args.seed)
        models, stream = {spec: build(spec) for spec in specs}, examples
        if args.tune:
            size = args.tune_size if args.tune_size is not None else max(1, len(examples) // 10)
            if not 0 < size < len(examples):
                raise ValueError(
                    f"--tune-size must be between 1 and {len(examples) - 1}, got {size}"
                )
            chosen, _ = tune(specs, examples[:size], build, noise)
            models, stream = {spec: build(chosen[spec]) for spec in specs}, examples[size:]
            info.setdefault("tuned", {})[noise.name] = chosen
            info["tune_size"] = size
        results.append(evaluate(models, stream, noise, every=every, total=len(stream)))
    if args.tune:
        info["data"] += f"; parameters tuned on the first {info['tune_size']:,}, scored on the rest"
    return Evaluation.concat([*results, Evaluation([], info)])


def _load(args: argparse.Namespace) -> tuple[list, str, list[files.FileStream], int | None]:
    """The examples (shuffled, drifted, limited), their description, readers and drift position."""
    rng = random.Random(args.seed)
    readers = [files.open_stream(path, args.format, on_error=args.on_error) for path in args.files]
    name = ", ".join(r.path.name for r in readers) or "SMS Spam Collection (bundled)"
    if args.domains and (
        args.drift not in drift.KINDS
        or len(readers) != 1
        or not isinstance(readers[0], files.JSONLines)
    ):
        raise ValueError("--domains needs --drift sudden|gradual|recurring and one JSON-lines file")
    if args.drift in drift.KINDS:
        return _drift(args, readers, name, rng)
    examples = list(itertools.chain.from_iterable(readers or [files.sms_spam(args.on_error)]))
    if args.shuffle:
        rng.shuffle(examples)
        name += f", shuffled (seed {args.seed})"
    examples, position = examples[: args.limit], None
    if args.drift == "flip":
        position = args.drift_at if args.drift_at is not None else len(examples) // 2
        examples = list(
            drift.label_flip(examples, position, sorted({y for _, y in examples}, key=str))
        )
        name += f", labels flip at {position:,}"
    return examples, name, readers, position


def _drift(args, readers, name, rng):
    """Concept drift between files, domains of one file, or (no file) synthetic SEA concepts."""
    if args.domains:
        domains = args.domains.split(",")
        concepts = [
            list(files.JSONLines(readers[0].path, args.on_error, where={"domain": d}))
            for d in domains
        ]
        for domain, concept in zip(domains, concepts):
            if not concept:
                raise ValueError(f"no records with domain {domain!r} in {readers[0].path}")
        name += f", {' -> '.join(domains)}"
    elif len(readers) >= 2:
        concepts = [list(reader) for reader in readers]
    elif not readers:
        concepts, name = None, "SEA (river synthetic), variant 0 -> 3"
    else:
        raise ValueError(
            f"{args.drift} drift needs concepts: two or more files, --domains, "
            "or no file for synthetic SEA"
        )
    if concepts is None:
        n = args.limit if args.limit is not None else SYNTHETIC_LENGTH
    else:
        n = min(sum(map(len, concepts)), sys.maxsize if args.limit is None else args.limit)
        if args.shuffle:
            for concept in concepts:
                rng.shuffle(concept)
            name += f", shuffled (seed {args.seed})"
    recurring = args.drift == "recurring"
    position = args.drift_at if args.drift_at is not None else n // (4 if recurring else 2)
    width = args.drift_width if args.drift_width is not None else max(1, n // 10)
    period = args.drift_period if args.drift_period is not None else max(1, position)
    if concepts is None:
        stream = drift.synthetic(args.drift, position, width, period, args.seed)
    else:
        stream = drift.concept_drift(concepts, args.drift, position, width, period, args.seed)
    name += f", {args.drift} drift at {position:,}"
    name += (
        f", width {width:,}"
        if args.drift == "gradual"
        else f", period {period:,}"
        if recurring
        else ""
    )
    return list(itertools.islice(stream, n)), name, readers, position


def _noise_rate(text: str, classes: list):
    """'0.1' -> 0.1; 'spam=0.3,ham=0.05' -> {'spam': 0.3, 'ham': 0.05}, keyed by the labels."""
    if "=" not in text:
        return _probability(text)
    by_name = {str(c): c for c in classes}
    rates = {}
    for item in text.split(","):
        label, _, value = (part.strip() for part in item.partition("="))
        if label not in by_name:
            raise ValueError(f"--noise: unknown class {label!r}; the classes are {classes}")
        rates[by_name[label]] = _probability(value)
    return rates


def _probability(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"--noise: {text!r} is not a probability") from None
