"""What `river-cw evaluate` scores, from its options: the stream, the metric and the noise.

`load` opens the files (or the bundled SMS data, or synthetic SEA) as a stream read from its
start again at every pass (`Replay`), applies the drift and `--limit`, and counts the stream
once before the run (`Stream`: its length, its labels and its first example), keeping no row:
the classes, the rarer class of a binary metric, the default curve resolution, the drift
position and the checks of `--delay` and `--tune-size` come from that count, and the run then
reads the stream a second time, every model fed in that one pass. Standard input, which cannot
be read twice, is first copied to a temporary file (deleted at the end). What needs more than
one example at a time says so in `--help`: `--shuffle` holds the whole stream (each concept,
under drift), and `--tune` its prefix. Drift between files counts the files' lengths in a pass
of their own.

`load` checks that the drift position lies inside the stream it returns: the position it prints
is where the models meet the drift, and the plot marks it there.

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
import contextlib
import dataclasses
import itertools
import pathlib
import random
import shutil
import sys
import tempfile
import typing
from collections.abc import Callable, Hashable, Iterable, Iterator

from streams.cli import records
from streams.evaluate import drift
from streams.io import files
from streams.io.base import STDIN, FileStream
from streams.io.jsonl import JSONLines

# river's metrics (scipy.stats), progressive validation and the model specs (river_cw) are
# imported where a metric is parsed: `river-cw evaluate --help` reads SYNTHETIC_LENGTH without
# them, and `streams.cli.defer` must see scipy.stats before river.metrics does.
if typing.TYPE_CHECKING:
    from river import metrics

__all__ = ["SYNTHETIC_LENGTH", "Replay", "Stream", "load", "noise_rate", "parse_metric"]

SYNTHETIC_LENGTH = 10_000

Example = tuple[dict, Hashable]


class Replay:
    """Examples read from their start again at every iteration: `make` returns a fresh iterator
    (a file read again, a synthetic stream drawn again from its seed), so that a stream can be
    counted first and then scored without holding its rows.

    Parameters
    ----------
    make
        A function of no argument returning an iterator of (x, y).

    Examples
    --------

    >>> stream = Replay(lambda: iter([({"a": 1}, True), ({"a": 0}, False)]))
    >>> [y for _, y in stream], [y for _, y in stream]
    ([True, False], [True, False])

    """

    def __init__(self, make: Callable[[], Iterator[Example]]):
        self.make = make

    def __iter__(self) -> Iterator[Example]:
        return iter(self.make())


@dataclasses.dataclass
class Stream:
    """What `river-cw evaluate` scores: the examples, read once by the run, and what a pass
    over them before the run counted.

    Any source can feed the command so: an iterable of (x, y) that a first pass (`count`) can
    read before the run reads it again, from the start and in the same order.

    Parameters
    ----------
    examples
        The (x, y) pairs; iterating them again gives the same pairs.
    description
        What the examples are, for the tables and the figure.
    readers
        The file readers, whose skipped lines the command reports.
    drift_at
        The drift position (None without drift).
    length
        The number of examples.
    labels
        The examples of each label.
    first
        The first example's features (None for an empty stream).
    """

    examples: Iterable[Example]
    description: str
    readers: list
    drift_at: int | None
    length: int
    labels: collections.Counter
    first: dict | None

    @classmethod
    def count(
        cls, examples: Iterable[Example], description: str, readers: list, drift_at: int | None
    ) -> Stream:
        """The stream of `examples`, counted in one pass that keeps no row."""
        stream = iter(examples)
        first = next(stream, None)
        if first is None:
            return cls(examples, description, readers, drift_at, 0, collections.Counter(), None)
        labels = collections.Counter(y for _, y in itertools.chain([first], stream))
        return cls(examples, description, readers, drift_at, labels.total(), labels, first[0])


def load(args: argparse.Namespace, stack: contextlib.ExitStack) -> Stream:
    """The examples the options describe (shuffled, drifted, limited), or `ValueError`; a copy of
    standard input lives as long as `stack`."""
    rng = random.Random(args.seed)
    schema, delimiter = records.schema(args), records.delimiter(args)
    readers = [
        _spooled(args, stack, schema, delimiter)
        if str(path) == STDIN
        else files.open_stream(path, args.format, args.on_error, schema, delimiter)
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
    sources = readers or [files.sms_spam(args.on_error)]
    examples: Iterable[Example]
    if args.shuffle:  # the whole stream, in memory (--help says so)
        rows = list(itertools.chain.from_iterable(sources))
        rng.shuffle(rows)
        examples = rows[: args.limit]
        name += f", shuffled (seed {args.seed})"
    else:
        examples = Replay(
            lambda: itertools.islice(itertools.chain.from_iterable(sources), args.limit)
        )
    stream = Stream.count(examples, name, readers, None)
    if args.drift != "flip":
        return stream
    position = args.drift_at if args.drift_at is not None else stream.length // 2
    _inside(position, stream.length, "the stream")
    classes = sorted(stream.labels, key=str)
    flipped = Replay(lambda: drift.label_flip(examples, position, classes))
    return Stream.count(flipped, f"{name}, labels flip at {position:,}", readers, position)


def _spooled(args, stack: contextlib.ExitStack, schema, delimiter) -> FileStream:
    """Standard input's reader, on a copy of it in a temporary file: the stream is read twice
    (counted, then scored). Messages still name `<stdin>`."""
    spool = stack.enter_context(tempfile.NamedTemporaryFile(prefix="river-cw-stdin-"))  # noqa: SIM115
    shutil.copyfileobj(sys.stdin.buffer, spool)
    spool.flush()
    reader = files.open_stream(spool.name, args.format or "jsonl", args.on_error, schema, delimiter)
    reader.source = "<stdin>"
    return reader


def _drift(args, readers, name, rng) -> Stream:
    """Concept drift between files, domains of one file, or (no file) synthetic SEA concepts."""
    concepts: list | None
    if args.domains:
        domains = args.domains.split(",")
        concepts = [
            JSONLines(readers[0].path, args.on_error, {"domain": d}, readers[0].schema)
            for d in domains
        ]
        name += f", {' -> '.join(domains)}"
        first = f"the first domain ({domains[0]})"
    elif len(readers) >= 2:
        concepts = list(readers)
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
        if args.shuffle:  # each concept whole, in memory (--help says so)
            concepts = [list(concept) for concept in concepts]
            for concept in concepts:
                rng.shuffle(concept)
            name += f", shuffled (seed {args.seed})"
        lengths = [sum(1 for _ in concept) for concept in concepts]
        if args.domains:
            for domain, length in zip(domains, lengths):
                if not length:
                    raise ValueError(f"no records with domain {domain!r} in {readers[0].path}")
        n = min(sum(lengths), sys.maxsize if args.limit is None else args.limit)
        default = min(lengths[0], n // (4 if recurring else 2))
    position = args.drift_at if args.drift_at is not None else default
    if concepts is not None and position > lengths[0]:
        raise ValueError(
            f"--drift-at {position:,} is beyond the end of {first}, {lengths[0]:,} examples"
        )
    _inside(position, n, "the stream")
    width = args.drift_width if args.drift_width is not None else max(1, n // 10)
    period = args.drift_period if args.drift_period is not None else max(1, position)

    def drifting() -> Iterator[Example]:
        if concepts is None:
            stream = drift.synthetic(args.drift, position, width, period, args.seed)
        else:
            stream = drift.concept_drift(concepts, args.drift, position, width, period, args.seed)
        return itertools.islice(stream, n)

    counted = Stream.count(Replay(drifting), name, readers, position)
    if counted.length < n:
        name += f", ending where a concept runs out at {counted.length:,}"
    _inside(position, counted.length, "the stream, where a concept runs out,")
    name += f", {args.drift} drift at {position:,}"
    if args.drift == "gradual":
        name += f", width {width:,}"
    elif recurring:
        name += f", period {period:,}"
    counted.description = name
    return counted


def _inside(position: int, length: int, what: str) -> None:
    """`ValueError` unless a drift at `position` happens inside a stream of `length` examples."""
    if not 0 < position < length:
        raise ValueError(
            f"the drift position {position:,} is not inside {what} of {length:,} examples: "
            "give --drift-at between 1 and the stream's length"
        )


def parse_metric(text: str, labels: Iterable | None) -> metrics.base.ClassificationMetric:
    """A fresh river metric for --metric; with `labels` None, only the spelling is checked.

    `labels` are the stream's labels, one per example, or their counts (a `Counter`).

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
