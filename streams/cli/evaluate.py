"""`river-cw evaluate`: compare models side by side on a stream, with label noise and drift.

With no file it runs on the SMS Spam Collection bundled with the package; with no `--model`
it compares a default set of confidence-weighted models with river's passive-aggressive
classifier. The stream is held in memory (it may be shuffled, and the class set and length
are needed for noise, drift positions and the progress bar); for endless or very long streams
use `streams.evaluate.progressive.evaluate` from Python.

Without noise, every number it prints for a model is the one river's
``evaluate.progressive_val_score`` gives for that model on the same parsed stream, for every
metric and `--delay` (`streams.evaluate.progressive`; tests/evaluation/test_differential.py checks it). The
model is the spec as `streams.models.specs.prepare` fits it to the stream: a river classifier
that learns only booleans gets the stream's two labels as True and False (`BinaryLabels`), and
answers in them. What cannot be scored so is refused before the run, in one line: a metric of
probabilities for a model without them, a delay as long as the stream, a drift outside it.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import sys

from streams.cli import evaluate_output, evaluate_topic, records
from streams.cli.evaluate_input import SYNTHETIC_LENGTH
from streams.evaluate import drift
from streams.evaluate.noise import LabelNoise
from streams.evaluate.results import BASELINE, Evaluation
from streams.evaluate.sharded import MIX_METHODS

# The models (river_cw, river.multiclass), river's metrics (scipy.stats), matplotlib and tqdm
# are imported where they are used, so that `river-cw evaluate --help` answers at once and
# `streams.cli.defer` sees scipy.stats first (tests/project/test_startup.py).

DEFAULT_MODELS = ["AROW()", "CW()", "SCW()", "NHERD()", "river.linear_model.PAClassifier()"]
DENSE_MODELS = [spec for spec in DEFAULT_MODELS if spec != "CW()"]
"""The default line-up on numeric features: CW's hard constraint (every example classified with
the required confidence) has no solution on noisy dense data, where its variances collapse with
either covariance (Phishing with 10% label noise: 0.404 with the default arrowhead, 0.464
diagonal, below the majority class's 0.554; benchmarks/dense.py --part noise)."""


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
        "alongside. A line naming the engine (compiled C or pure Python) comes first, then a "
        "running table printed at doubling intervals while the models learn."
    )
    add_stream_arguments(parser)
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
    evaluate_topic.add_arguments(parser)


def add_stream_arguments(parser: argparse.ArgumentParser) -> None:
    """The options saying which stream to read, and how to shuffle, drift and cut it: those of
    `river-cw evaluate` and `river-cw produce` alike."""
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
        help="stop at a malformed line or record (default) or skip and count it",
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


def run(args: argparse.Namespace) -> int:
    interrupt = evaluate_topic.Interrupt()
    failures: tuple[type[Exception], ...] = (ValueError, OSError, *evaluate_topic.errors(args))
    try:
        evaluate_topic.check(args)
        evaluate_output.check(args)
        result = _run(args, interrupt)
    except failures as error:
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
    if result.info.get("unlabelled"):
        print(
            f"{result.info['unlabelled']:,} examples never got their label: predicted, not scored"
        )
    for line in evaluate_output.tuned(result.info) + evaluate_output.mixing(result.info):
        print(line)
    evaluate_output.write(result, args)
    return 130 if interrupt.requested else 0


def _run(args: argparse.Namespace, interrupt: evaluate_topic.Interrupt) -> Evaluation:
    from river import metrics

    import river_cw
    from river_cw.labels import order_key
    from streams.cli.evaluate_input import load, noise_rate, parse_metric
    from streams.cli.running_table import RunningTable
    from streams.evaluate.progressive import iter_evaluate
    from streams.evaluate.scoring import metric_name
    from streams.evaluate.sharded import mixing_rounds
    from streams.evaluate.tuning import tune
    from streams.models.specs import parse, prepare

    for spec in args.model or ():  # fail on a bad spec, or one not a classifier, before reading
        prepare(parse(spec))
    parse_metric(args.metric, None)  # a bad --metric fails before the files are read
    data = evaluate_topic.load(args, interrupt) if args.kafka_topic else load(args)
    examples, description, live, answers = data.examples, data.description, data.live, data.answers
    if live is not None:  # a followed topic: its first example says what the stream holds
        examples = list(itertools.islice(live, 1))
        live = itertools.chain(examples, live)
    else:
        _skipped(data.readers)
    if not examples:
        raise ValueError("the stream is empty")
    if answers is not None:  # river's questions (i, x, None) and answers (i, x, y)
        labels, first, length = (
            [e[2] for e in examples if e[2] is not None],
            examples[0][1],
            answers.asked,
        )
    else:
        labels, first, length = [y for _, y in examples], examples[0][0], len(examples)
    classes = None if live is not None else sorted(set(labels), key=order_key)
    metric = parse_metric(args.metric, None if live is not None else labels)
    if live is not None and isinstance(metric, metrics.base.BinaryMetric):
        raise ValueError(
            f"--metric {args.metric}: --follow learns the classes as they come, and a metric of "
            "one class needs them first; use accuracy, logloss or a multi-class metric"
        )
    text = isinstance(first.get("text"), str)
    specs = args.model or (DEFAULT_MODELS if text else DENSE_MODELS)

    def build(spec):
        return prepare(parse(spec), text=text, labels=classes)

    if not args.quiet:
        print(engine_line())
        for spec in specs:
            note = _arranged(build(spec))
            if note:
                print(f"{spec}: {note}")
    if args.delay:
        description += f", labels {args.delay:,} examples late"
    every = args.every if args.every is not None else max(1, length // 100)
    results = []
    info: dict = {
        "data": description,
        "drift_at": data.drift_at,
        "examples": length,
        "classes": classes,
        "seed": args.seed,
        "models": specs,
        "metric": metric_name(metric),
        "delay": args.delay,
        "engine": river_cw.ENGINE,
    }
    size = 0
    if args.tune:
        size = args.tune_size if args.tune_size is not None else max(1, len(examples) // 10)
        if not 0 < size < len(examples):
            raise ValueError(f"--tune-size must be between 1 and {len(examples) - 1}, got {size}")
        info["tune_size"] = size
    if live is None and args.delay >= len(examples) - size:
        raise ValueError(
            f"--delay {args.delay:,} is not shorter than the {len(examples) - size:,} examples "
            "scored: no label would arrive before the stream ends"
        )
    for rate in args.noise:
        noise = LabelNoise(noise_rate(rate, classes or []), classes=classes, seed=args.seed)
        models, stream = {spec: build(spec) for spec in specs}, live or examples
        if args.tune:
            chosen, _ = tune(specs, examples[:size], build, noise, metric)
            models, stream = (
                {name: build(chosen[spec]) for spec, name in _tuned_names(chosen)},
                examples[size:],
            )
            info.setdefault("tuned", {})[noise.name] = chosen
        models = _sharded(models, args)
        table = None if args.quiet else RunningTable([BASELINE, *models], metric_name(metric))
        if table:
            table.start(f"{description}, label noise {noise.name}")
        for result in iter_evaluate(
            models,
            stream,
            noise,
            every=every,
            total=len(stream) if isinstance(stream, list) else None,
            delay=args.delay,
            metric=metric,
            baseline=True,
            answers=answers is not None,
        ):
            if table:
                table.update(result)
        if table:
            table.finish(result)
        if args.shards:
            info.setdefault("mixing", {})[noise.name] = mixing_rounds(models)
        results.append(result)
    if live is not None:  # known once read
        _skipped(data.readers)
        info["examples"] = answers.asked if answers is not None else result.records[-1]["step"]
    if answers is not None:
        info["unlabelled"] = answers.unlabelled
    if args.tune:
        info["data"] += f"; parameters tuned on the first {size:,}, scored on the rest"
    return Evaluation.concat([*results, Evaluation([], info)])


def _skipped(readers: list) -> None:
    """Say on stderr how many malformed lines (or records) each reader skipped."""
    for reader in readers:
        if reader.n_skipped:
            print(
                f"skipped {reader.n_skipped:,} malformed lines or records in {reader.source}; "
                f"first: {reader.errors[0]}",
                file=sys.stderr,
            )


def engine_line() -> str:
    """The header's line saying which engine runs river_cw's models (`river_cw.ENGINE`; pure
    Python either asked for by ``RIVER_CW_PURE_PYTHON=1`` or the compiled extensions missing,
    as `river_cw.engine` read the switch at import)."""
    import river_cw
    from river_cw import engine

    if river_cw.ENGINE == "c":
        return "engine: compiled (C)"
    if engine.PURE_PYTHON:
        return "engine: pure Python (RIVER_CW_PURE_PYTHON=1)"
    return "engine: pure Python (the compiled extensions did not import; about 10x slower)"


def _tuned_names(chosen: dict[str, str]) -> list[tuple[str, str]]:
    """(spec, name) of the tuned models: the chosen spec, or "spec -> chosen" where two specs
    chose the same one."""
    counts = collections.Counter(chosen.values())
    return [
        (spec, pick if counts[pick] == 1 else f"{spec} -> {pick}") for spec, pick in chosen.items()
    ]


def _arranged(model) -> str | None:
    """What `prepare` did to fit a model to the stream's labels, in words (None for most)."""
    from river_cw.text import TextClassifier
    from streams.models.labels import BinaryLabels

    if isinstance(model, TextClassifier):
        model = model.classifier
    if isinstance(model, BinaryLabels):
        return (
            f"a binary classifier: it learns {model.positive!r} as True and {model.negative!r} "
            "as False (river_cw.labels) and answers in those labels"
        )
    multiclass = sys.modules.get("river.multiclass")  # not loaded: no model is wrapped in it
    if multiclass is not None and isinstance(model, multiclass.OneVsRestClassifier):
        return "a binary classifier, one per label (river's OneVsRestClassifier)"
    return None


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
