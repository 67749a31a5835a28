"""`river-cw evaluate`: compare models side by side on a stream, with label noise and drift.

With no file it runs on the SMS Spam Collection bundled with the package; with no `--model`
it compares a default set of confidence-weighted models with river's passive-aggressive
classifier; with `--topic` it reads a Kafka topic (`streams.cli.evaluate_topic`). The stream is
read twice and never held: counted first (its length and labels: the classes, the default
resolution, the checks; `streams.cli.evaluate_input`), then scored, every model of every noise
level fed in that one pass (`streams.evaluate.progressive.iter_levels`), so its memory does not
grow with the stream's length (tests/evaluation/test_memory.py). `--shuffle` holds the whole
stream, and `--tune` its prefix. A topic followed live (`--follow`) is read once and not
counted: what needs the count is derived (the curve's resolution), learned as it comes (the
classes) or refused.

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
import contextlib
import itertools
import sys

from streams.cli import evaluate_output, evaluate_topic
from streams.cli.evaluate_input import add_stream_arguments, at_least
from streams.evaluate.noise import LabelNoise
from streams.evaluate.results import BASELINE, POINTS, Evaluation
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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Progressive validation: each model predicts every example before it learns it, so "
        "every score is on data the model has not seen. A majority-class baseline runs "
        "alongside. A line naming the engine (compiled C or pure Python) comes first, then a "
        "running table printed at doubling intervals while the models learn. The stream is "
        "counted first (its length and labels), then scored in one pass for every model and "
        "noise level, in memory that does not grow with its length (except --shuffle)."
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
        type=at_least(0),
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
        help="label-noise rates, each with its own models, all in the same pass: a probability, "
        "or class-conditional 'spam=0.3,ham=0.05' (default: 0)",
    )
    parser.add_argument(
        "--every",
        type=at_least(1),
        metavar="K",
        help="learning-curve resolution (default: a hundredth of the stream; every example on "
        f"a followed topic); a curve keeps at most {POINTS:,} points, coarsening (every other "
        "dropped) past them",
    )
    parser.add_argument(
        "--tune",
        action="store_true",
        help="pick hyper-parameters on a prefix of the stream (held in memory), then evaluate "
        "on the rest",
    )
    parser.add_argument(
        "--tune-size",
        type=at_least(1),
        metavar="N",
        help="length of the tuning prefix (default: a tenth of the stream)",
    )
    parser.add_argument(
        "--shards",
        type=at_least(1),
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
        type=at_least(1),
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
    with contextlib.ExitStack() as stack:  # a copy of standard input lives as long as the run
        return _evaluate(args, stack, interrupt)


def _evaluate(
    args: argparse.Namespace, stack: contextlib.ExitStack, interrupt: evaluate_topic.Interrupt
) -> Evaluation:
    from river import metrics

    import river_cw
    from river_cw.labels import order_key
    from streams.cli.evaluate_input import load, noise_rate, parse_metric, report_skipped
    from streams.cli.running_table import RunningTable
    from streams.evaluate.progressive import iter_levels
    from streams.evaluate.scoring import metric_name
    from streams.evaluate.sharded import mixing_rounds
    from streams.evaluate.tuning import tune
    from streams.models.specs import parse, prepare

    for spec in args.model or ():  # fail on a bad spec, or one not a classifier, before reading
        prepare(parse(spec))
    parsed = parse_metric(args.metric, None)  # a bad --metric fails before the files are read
    if args.follow and isinstance(parsed, metrics.base.BinaryMetric):
        raise ValueError(
            f"--metric {args.metric}: --follow learns the classes as they come, and a metric of "
            "one class needs them first; use accuracy, logloss or a multi-class metric"
        )
    data = evaluate_topic.load(args, stack, interrupt) if args.kafka_topic else load(args, stack)
    description, length, live = data.description, data.length, data.length is None
    if not live:  # a live stream's readers have read nothing yet
        report_skipped(data.readers)
    if data.first is None:
        raise ValueError("the stream is empty")
    if data.labels is not None and not data.labels:
        raise ValueError(f"none of the {length:,} examples got its label: nothing to score")
    classes = None if data.labels is None else sorted(data.labels, key=order_key)
    metric = parse_metric(args.metric, data.labels)
    text = isinstance(data.first.get("text"), str)
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
    # a hundredth of the stream; a live stream's curve starts at every example, coarsening
    every = args.every or (1 if length is None else max(1, length // 100))
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
    if length is not None:  # what a live stream cannot know (--follow refuses --tune)
        if args.tune:
            size = args.tune_size if args.tune_size is not None else max(1, length // 10)
            if not 0 < size < length:
                raise ValueError(f"--tune-size must be between 1 and {length - 1}, got {size}")
            info["tune_size"] = size
        if args.delay >= length - size:
            raise ValueError(
                f"--delay {args.delay:,} is not shorter than the {length - size:,} examples "
                "scored: no label would arrive before the stream ends"
            )
    examples = iter(data.examples)
    prefix = list(itertools.islice(examples, size))  # --tune's prefix, the rest scored after it
    levels = []
    for rate in args.noise:
        noise = LabelNoise(noise_rate(rate, classes or []), classes=classes, seed=args.seed)
        models = {spec: build(spec) for spec in specs}
        if args.tune:
            chosen, _ = tune(specs, prefix, build, noise, metric)
            models = {name: build(chosen[spec]) for spec, name in _tuned_names(chosen)}
            info.setdefault("tuned", {})[noise.name] = chosen
        levels.append((noise, _sharded(models, args)))
    del prefix
    names = [BASELINE, *levels[0][1]]
    table = None if args.quiet else RunningTable(names, metric_name(metric), len(levels))
    if table:
        table.start(f"{description}, label noise {', '.join(n.name for n, _ in levels)}")
    if length is None or data.labels is None:  # a live stream's length is not known
        total = None
    elif data.answers:  # a question and an answer per labelled example
        total = length + data.labels.total()
    else:
        total = length - size
    result = Evaluation([], info, metric_name(metric), metric.bigger_is_better)
    for result in iter_levels(
        levels,
        examples,
        every=every,
        total=total,
        delay=args.delay,
        metric=metric,
        baseline=True,
        answers=data.answers,
    ):
        if table and result.records:
            table.update(result)
    if live:
        report_skipped(data.readers)
    if not result.records:  # a live stream stopped before the first label came
        raise ValueError("no example got its label: nothing to score")
    if table:
        table.finish(result)
    info.update(result.info)  # the questions asked and left unanswered, with answers
    if live and not data.answers:
        info["examples"] = result.records[-1]["step"]
    if args.shards:
        info["mixing"] = {noise.name: mixing_rounds(models) for noise, models in levels}
    if args.tune:
        info["data"] += f"; parameters tuned on the first {size:,}, scored on the rest"
    return Evaluation(result.records, info, result.metric, result.bigger_is_better)


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
    return (
        f"engine: pure Python (the compiled extensions did not import; {engine.PURE_PYTHON_COST})"
    )


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
