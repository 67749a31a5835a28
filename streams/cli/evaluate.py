"""`river-cw evaluate`: compare models side by side on a stream, with label noise and drift.

With no file it runs on the SMS Spam Collection bundled with the package; with no `--model`
it compares a default set of confidence-weighted models with river's passive-aggressive
classifier. The stream is held in memory (it may be shuffled, and the class set and length
are needed for noise, drift positions and the progress bar); for endless or very long streams
use `streams.evaluate.progressive.evaluate` from Python.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import os
import pathlib
import random
import sys
import typing

from streams.cli import records
from streams.evaluate import drift
from streams.evaluate.noise import LabelNoise
from streams.evaluate.sharded import MIX_METHODS
from streams.io import files

# The models, river's metrics (scipy.stats), matplotlib and tqdm are imported where they are
# used, so that `river-cw evaluate --help` answers at once (tests/test_startup.py).
if typing.TYPE_CHECKING:
    from river import metrics

    from streams.evaluate.progressive import Evaluation

DEFAULT_MODELS = ["AROW()", "CW()", "SCW()", "NHERD()", "river.linear_model.PAClassifier()"]
DENSE_MODELS = [spec for spec in DEFAULT_MODELS if spec != "CW()"]
"""The default line-up on numeric features: CW's hard constraint (every example classified with
the required confidence) has no solution on noisy dense data, where its variances collapse
(Phishing with 10% label noise: 0.464, below the majority class; benchmarks/dense.py)."""
SYNTHETIC_LENGTH = 10_000


def _count(minimum: int):
    """An argparse type: an integer of at least `minimum`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    return parse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Progressive validation: each model predicts every example before it learns it, so "
        "every score is on data the model has not seen. A majority-class baseline runs "
        "alongside. A running table is printed at doubling intervals while the models learn."
    )
    parser.add_argument(
        "files",
        nargs="*",
        help="data files: JSON lines, CSV or libsvm, plain or .gz; '-' reads standard input "
        "(JSON lines unless --format says otherwise) (default: bundled SMS spam)",
    )
    parser.add_argument(
        "--format",
        choices=["jsonl", "csv", "libsvm"],
        help="file format, when the file name does not tell",
    )
    records.add_arguments(parser)
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
        f"repeat to compare (default: {' '.join(DEFAULT_MODELS)}; on numeric features, "
        "without CW())",
    )
    parser.add_argument(
        "--metric",
        default="accuracy",
        metavar="NAME",
        help="accuracy (default), f1 (of the rarer class), f1:CLASS, logloss, or a river "
        "classification metric such as 'MCC()' or 'metrics.BalancedAccuracy()'",
    )
    parser.add_argument(
        "--delay",
        type=_count(0),
        default=0,
        metavar="N",
        help="labels arrive N examples late: each example is learned just before the one N "
        "later is predicted, as river's progressive_val_score(delay=N) (default: 0)",
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
        type=_count(0),
        metavar="N",
        help="drift position (default: middle of the stream; a quarter for recurring)",
    )
    parser.add_argument(
        "--drift-width",
        type=_count(1),
        metavar="N",
        help="width of gradual drift (default: a tenth of the stream)",
    )
    parser.add_argument(
        "--drift-period",
        type=_count(1),
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
        type=_count(1),
        metavar="N",
        help=f"use the first N examples, after shuffling (synthetic: {SYNTHETIC_LENGTH:,})",
    )
    parser.add_argument(
        "--every",
        type=_count(1),
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
        type=_count(1),
        metavar="N",
        help="length of the tuning prefix (default: a tenth of the stream)",
    )
    parser.add_argument(
        "--shards",
        type=_count(1),
        metavar="P",
        help="also run each model as P partitions of a consumer group, each copy learning its "
        "shard (by a hash of the example) and mixed as `river-cw serve --mix` mixes, to choose "
        "--mix-every before deploying",
    )
    parser.add_argument(
        "--mix",
        nargs="+",
        choices=MIX_METHODS,
        default=["kl", "off"],
        help="with --shards: mixing rules to compare; off = isolated per-partition models "
        "(default: kl off)",
    )
    parser.add_argument(
        "--mix-every",
        nargs="+",
        type=_count(1),
        default=[100],
        metavar="N",
        help="with --shards: mix every N examples per shard; several values compare them "
        "(default: 100)",
    )
    parser.add_argument(
        "--quiet", action="store_true", help="print only the final table, no running table"
    )
    parser.add_argument(
        "--plot",
        metavar="PATH",
        help="write the learning curves to this figure: PNG, PDF or SVG by extension",
    )
    parser.add_argument("--csv", metavar="PATH", help="write the learning curves as tidy CSV")
    parser.add_argument("--json", metavar="PATH", help="write summary, curves and settings as JSON")
    parser.add_argument(
        "--markdown",
        metavar="PATH",
        help="write the data description, final table and tuned parameters as markdown",
    )
    parser.add_argument("--title", help="title of the figure (default: a description of the data)")


def run(args: argparse.Namespace) -> int:
    from streams.evaluate.progressive import BASELINE

    try:
        _check_outputs(args)
        result = _run(args)
    except (ValueError, OSError) as error:
        print(f"river-cw evaluate: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("river-cw evaluate: interrupted", file=sys.stderr)
        return 130
    if not args.quiet:
        print("\nFinal scores (progressive validation: each example predicted, then learned):")
    print(result.table())
    if not args.quiet:
        print(f"{BASELINE}: the baseline, which predicts the most frequent label so far")
    for line in _tuned(result.info):
        print(line)
    if args.plot:
        column = "recent_metric" if args.drift else "metric"
        marks = [result.info["drift_at"]] if args.drift and not args.tune else []
        result.plot(args.plot, title=args.title or result.info["data"], column=column, marks=marks)
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


def _check_outputs(args: argparse.Namespace) -> None:
    """Fail before the run on an output path that cannot be written (or a bad figure type)."""
    if args.plot:
        from streams.evaluate import plots

        plots.check_path(args.plot)
    for option in ("plot", "csv", "json", "markdown"):
        path = getattr(args, option)
        if path is None:
            continue
        path = pathlib.Path(path)
        folder = path.parent
        if path.is_dir():
            raise ValueError(f"--{option} {str(path)!r} is a directory")
        if not folder.is_dir():
            raise ValueError(f"--{option} {str(path)!r}: no directory {str(folder)!r}")
        if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
            raise ValueError(f"--{option} {str(path)!r}: not writable")


def _tuned(info: dict) -> list[str]:
    """One line per noise level saying which parameters the tuner picked."""
    lines = []
    for level, chosen in info.get("tuned", {}).items():
        picks = ", ".join(f"{spec} -> {pick}" for spec, pick in chosen.items())
        lines.append(f"tuned on the first {info['tune_size']:,} examples at noise {level}: {picks}")
    return lines


def _run(args: argparse.Namespace) -> Evaluation:
    from streams.evaluate.progressive import BASELINE, Evaluation, iter_evaluate, metric_name
    from streams.evaluate.tuning import tune
    from streams.models.specs import parse, prepare

    for spec in args.model or ():  # fail on a bad spec, or one not a classifier, before reading
        prepare(parse(spec))
    _metric(args.metric, None)
    examples, description, readers, drift_at = _load(args)
    for reader in readers:
        if reader.n_skipped:
            print(
                f"skipped {reader.n_skipped:,} malformed lines in {reader.source}; "
                f"first: {reader.errors[0]}",
                file=sys.stderr,
            )
    if not examples:
        raise ValueError("the stream is empty")
    classes = sorted({y for _, y in examples}, key=str)
    metric = _metric(args.metric, [y for _, y in examples])
    text = isinstance(examples[0][0].get("text"), str)
    bool_labels = all(isinstance(c, bool) for c in classes)
    specs = args.model or (DEFAULT_MODELS if text else DENSE_MODELS)

    def build(spec):
        return prepare(parse(spec), text=text, bool_labels=bool_labels)

    if args.delay:
        description += f", labels {args.delay:,} examples late"
    every = args.every if args.every is not None else max(1, len(examples) // 100)
    results = []
    info: dict = {
        "data": description,
        "drift_at": drift_at,
        "examples": len(examples),
        "classes": classes,
        "seed": args.seed,
        "models": specs,
        "metric": metric_name(metric),
        "delay": args.delay,
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
            chosen, _ = tune(specs, examples[:size], build, noise, metric)
            models, stream = {spec: build(chosen[spec]) for spec in specs}, examples[size:]
            info.setdefault("tuned", {})[noise.name] = chosen
            info["tune_size"] = size
        models = _sharded(models, args)
        table = None if args.quiet else RunningTable([BASELINE, *models], metric_name(metric))
        if table:
            table.start(f"{description}, label noise {noise.name}")
        for result in iter_evaluate(
            models,
            stream,
            noise,
            every=every,
            total=len(stream),
            delay=args.delay,
            metric=metric,
            baseline=True,
        ):
            if table:
                table.update(result)
        if table:
            table.finish(result)
        results.append(result)
    if args.tune:
        info["data"] += f"; parameters tuned on the first {info['tune_size']:,}, scored on the rest"
    return Evaluation.concat([*results, Evaluation([], info)])


def _sharded(models: dict, args: argparse.Namespace) -> dict:
    """With --shards, each model followed by its sharded versions (`streams.evaluate.sharded`); a model
    that cannot be mixed gets the isolated shards only."""
    if not args.shards:
        return models
    from streams.evaluate.sharded import ShardedClassifier, shard_name

    out = {}
    for name, model in models.items():
        out[name] = model
        for method in args.mix:
            for every in args.mix_every if method != "off" else args.mix_every[:1]:
                try:
                    sharded = ShardedClassifier(model, args.shards, every, method)
                except ValueError as error:
                    print(f"{name}: not mixed ({error})", file=sys.stderr)
                    break
                out[f"{name}, {shard_name(args.shards, method, every)}"] = sharded
    return out


class RunningTable:
    """Progress while the models learn: a row at doubling intervals of the learning curve
    (its first point, then twice as many examples, four times ...), as Vowpal Wabbit prints.

    Each row gives the examples seen and, per model, the metric so far and, in parentheses,
    the accuracy since the previous row (so drift shows).
    """

    def __init__(self, names: list[str], metric: str):
        self.names = names
        self.metric = metric
        self.widths = [max(13, len(_short(name))) for name in names]
        self.next_step = 0
        self.last_step = 0
        self.previous: dict[str, tuple[int, int]] = {}  # model -> (step, mistakes) at last row

    def start(self, description: str) -> None:
        self.next_step = self.last_step = 0
        self.previous = {}
        what = (
            "accuracy so far (since the previous row)"
            if self.metric == "Accuracy"
            else f"{self.metric} so far (accuracy since the previous row)"
        )
        self._print(f"Progressive validation on {description}: {what}")
        cells = [_short(name).ljust(width) for name, width in zip(self.names, self.widths)]
        self._print("  ".join(["examples".rjust(10), *cells]).rstrip())

    def update(self, partial: Evaluation) -> None:
        step = partial.records[-1]["step"]
        if step >= self.next_step:
            self._row(partial, step)
            self.next_step = 2 * step

    def finish(self, result: Evaluation) -> None:
        step = result.records[-1]["step"]
        if step != self.last_step:
            self._row(result, step)

    def _row(self, partial: Evaluation, step: int) -> None:
        latest = {r["model"]: r for r in partial.records[-len(self.names) :]}
        cells = []
        for name, width in zip(self.names, self.widths):
            record = latest[name]
            last_step, last_mistakes = self.previous.get(name, (0, 0))
            recent = 1.0 - (record["mistakes"] - last_mistakes) / (step - last_step)
            value = "-" if record["metric"] is None else f"{record['metric']:.3f}"
            cells.append(f"{value} ({recent:.3f})".ljust(width))
            self.previous[name] = (step, record["mistakes"])
        self.last_step = step
        self._print("  ".join([f"{step:>10,}", *cells]).rstrip())

    @staticmethod
    def _print(line: str) -> None:
        from tqdm.auto import tqdm

        tqdm.write(line)  # clears and redraws a progress bar around the line
        sys.stdout.flush()


def _short(name: str) -> str:
    """A model's column title: its spec without the module path, cut at 30 characters.

    >>> _short("river.linear_model.PAClassifier(C=0.01)")
    'PAClassifier(C=0.01)'
    """
    head = name.split("(")[0]
    if "|" not in name and "." in head:
        name = head.rsplit(".", 1)[1] + name[len(head) :]
    return name if len(name) <= 30 else name[:27] + "..."


def _metric(text: str, labels: list | None) -> metrics.base.ClassificationMetric:
    """A fresh river metric for --metric; with `labels` None, only the spelling is checked.

    A binary river metric (F1, MCC, ROCAUC ...) scores one class against the others: its
    `pos_val`, or else the rarer class (see `evaluation.OneClass`).
    """
    from river import metrics

    from streams.evaluate.progressive import OneClass
    from streams.models.specs import parse

    name, _, label = text.partition(":")
    key = name.strip().lower().replace("-", "").replace("_", "").replace(" ", "")
    if key == "accuracy":
        return metrics.Accuracy()
    if key in ("logloss", "crossentropy"):
        return metrics.CrossEntropy()
    metric: metrics.base.ClassificationMetric
    if key == "f1":
        metric = metrics.F1()
    else:
        spec = text if "." in text.split("(")[0] else f"metrics.{text}"
        try:
            parsed = parse(spec)
        except ValueError as error:
            raise ValueError(
                f"--metric {text!r}: expected accuracy, f1, f1:CLASS, logloss or a river "
                f"classification metric such as 'MCC()' ({error})"
            ) from None
        if not isinstance(parsed, metrics.base.ClassificationMetric):
            raise ValueError(f"--metric {text!r} is not a classification metric")
        metric = parsed
    if labels is None or not isinstance(metric, metrics.base.BinaryMetric):
        return metric
    counts = collections.Counter(labels)
    by_name = {str(c): c for c in counts}
    wanted = label or (None if metric.pos_val is True else str(metric.pos_val))
    if wanted is None:
        if all(isinstance(c, bool) for c in counts):
            return metric  # river's own case: True is the positive class
        return OneClass(metric, min(counts, key=lambda c: (counts[c], str(c))))  # the rarer
    if wanted not in by_name:
        raise ValueError(
            f"--metric {text!r}: unknown class {wanted!r}; the classes are {sorted(by_name)}"
        )
    return OneClass(metric, by_name[wanted])


def _load(args: argparse.Namespace) -> tuple[list, str, list[files.FileStream], int | None]:
    """The examples (shuffled, drifted, limited), their description, readers and drift position."""
    rng = random.Random(args.seed)
    schema, delimiter = records.schema(args), records.delimiter(args)
    readers = [
        files.open_stream(path, args.format, args.on_error, schema, delimiter)
        for path in args.files
    ]
    name = ", ".join(pathlib.Path(r.source).name for r in readers)
    name = name or "SMS Spam Collection (bundled)"
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
            list(files.JSONLines(readers[0].path, args.on_error, {"domain": d}, readers[0].schema))
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
