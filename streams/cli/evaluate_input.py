"""What `river-cw evaluate` scores, from its options: the stream, the metric and the noise.

`load` reads the files (or the bundled SMS data, or synthetic SEA), shuffles, applies the drift
and `--limit`, and checks that the drift position lies inside the stream it returns: the position
it prints is where the models meet the drift, and the plot marks it there.

Drift between files, or between `--domains` of one file, draws from the first concept until the
position and from the second after it (`streams.evaluate.drift.concept_drift`). By default the
position is the end of the first concept or the middle of the stream, whichever comes first (a
quarter of the stream for recurring drift), so two whole files make a stream of both: the first
file, then the second. A position beyond the first concept's end is refused, and so is one the
stream never reaches (a concept that runs out first: the stream ends where the concept it
draws from runs out).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import itertools
import pathlib
import random
import sys
import typing

from streams.cli import records
from streams.evaluate import drift
from streams.io import files
from streams.io.jsonl import JSONLines

# river's metrics (scipy.stats), progressive validation and the model specs (river_cw) are
# imported where a metric is parsed: `river-cw evaluate --help` reads SYNTHETIC_LENGTH without
# them, and `streams.cli.defer` must see scipy.stats before river.metrics does.
if typing.TYPE_CHECKING:
    from river import metrics

__all__ = ["SYNTHETIC_LENGTH", "Stream", "load", "noise_rate", "parse_metric"]

SYNTHETIC_LENGTH = 10_000


@dataclasses.dataclass
class Stream:
    """The examples to score, what they are, the readers that read them and the drift position
    (None without drift); a followed Kafka topic (`streams.cli.evaluate_topic`) gives its
    examples as they come (`live`, `examples` empty), a labels topic river's questions and
    answers instead of examples (`answers`, which counts them)."""

    examples: list
    description: str
    readers: list
    drift_at: int | None = None
    live: typing.Iterable | None = None
    answers: typing.Any = None


def load(args: argparse.Namespace, readers: list | None = None) -> Stream:
    """The examples the options describe (shuffled, drifted, limited), or `ValueError`;
    `readers` (a Kafka topic's) are read instead of the files."""
    rng = random.Random(args.seed)
    schema, delimiter = records.schema(args), records.delimiter(args)
    readers = readers or [
        files.open_stream(path, args.format, args.on_error, schema, delimiter)
        for path in args.files
    ]
    name = ", ".join(pathlib.Path(r.source).name for r in readers)
    name = name or "SMS Spam Collection (bundled)"
    if args.domains and (
        args.drift not in drift.KINDS or len(readers) != 1 or not isinstance(readers[0], JSONLines)
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
        _inside(position, len(examples), "the stream")
        examples = list(
            drift.label_flip(examples, position, sorted({y for _, y in examples}, key=str))
        )
        name += f", labels flip at {position:,}"
    return Stream(examples, name, readers, position)


def _drift(args, readers, name, rng) -> Stream:
    """Concept drift between files, domains of one file, or (no file) synthetic SEA concepts."""
    if args.domains:
        domains = args.domains.split(",")
        concepts = [
            list(JSONLines(readers[0].path, args.on_error, {"domain": d}, readers[0].schema))
            for d in domains
        ]
        for domain, concept in zip(domains, concepts):
            if not concept:
                raise ValueError(f"no records with domain {domain!r} in {readers[0].path}")
        name += f", {' -> '.join(domains)}"
        first = f"the first domain ({domains[0]})"
    elif len(readers) >= 2:
        concepts = [list(reader) for reader in readers]
        first = f"the first file ({pathlib.Path(readers[0].source).name})"
    elif not readers:
        concepts, name = None, "SEA (river synthetic), variant 0 -> 3"
    else:
        raise ValueError(
            f"{args.drift} drift needs concepts: two or more files, --domains, "
            "or no file for synthetic SEA"
        )
    recurring = args.drift == "recurring"
    if concepts is None:
        n = args.limit if args.limit is not None else SYNTHETIC_LENGTH
        default = n // (4 if recurring else 2)
    else:
        n = min(sum(map(len, concepts)), sys.maxsize if args.limit is None else args.limit)
        if args.shuffle:
            for concept in concepts:
                rng.shuffle(concept)
            name += f", shuffled (seed {args.seed})"
        default = min(len(concepts[0]), n // (4 if recurring else 2))
    position = args.drift_at if args.drift_at is not None else default
    if concepts is not None and position > len(concepts[0]):
        raise ValueError(
            f"--drift-at {position:,} is beyond the end of {first}, {len(concepts[0]):,} examples"
        )
    _inside(position, n, "the stream")
    width = args.drift_width if args.drift_width is not None else max(1, n // 10)
    period = args.drift_period if args.drift_period is not None else max(1, position)
    if concepts is None:
        stream = drift.synthetic(args.drift, position, width, period, args.seed)
    else:
        stream = drift.concept_drift(concepts, args.drift, position, width, period, args.seed)
    examples = list(itertools.islice(stream, n))
    if len(examples) < n:
        name += f", ending where a concept runs out at {len(examples):,}"
    _inside(position, len(examples), "the stream, where a concept runs out,")
    name += f", {args.drift} drift at {position:,}"
    if args.drift == "gradual":
        name += f", width {width:,}"
    elif recurring:
        name += f", period {period:,}"
    return Stream(examples, name, readers, position)


def _inside(position: int, length: int, what: str) -> None:
    """`ValueError` unless a drift at `position` happens inside a stream of `length` examples."""
    if not 0 < position < length:
        raise ValueError(
            f"the drift position {position:,} is not inside {what} of {length:,} examples: "
            "give --drift-at between 1 and the stream's length"
        )


def parse_metric(text: str, labels: list | None) -> metrics.base.ClassificationMetric:
    """A fresh river metric for --metric; with `labels` None, only the spelling is checked.

    A binary river metric (F1, MCC, ROCAUC ...) scores one class against the others: its
    `pos_val`, or else the rarer class (see `evaluation.OneClass`).
    """
    from river import metrics

    from streams.evaluate.scoring import OneClass
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


def noise_rate(text: str, classes: list):
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
