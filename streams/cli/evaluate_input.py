"""What `river-cw evaluate` scores, from its options: the stream, the metric and the noise.

`add_stream_arguments` adds the options that say which stream to read and how to shuffle, drift
and cut it, those of `river-cw evaluate` and `river-cw produce` alike; `load` reads them back.

`load` opens the files (or the bundled SMS data, or synthetic SEA, or the readers it is given: a
Kafka topic's, `streams.cli.evaluate_topic`) as a stream read from its start again at every
pass (`Replay`), applies the drift and `--limit`, and counts the stream once before the run
(`Stream`: its length, its labels and its first example), keeping no row: the classes, the
rarer class of a binary metric, the default curve resolution, the drift position and the checks
of `--delay` and `--tune-size` come from that count, and the run then reads the stream a second
time, every model fed in that one pass. Standard input, which cannot be read twice, is first
copied to a temporary file (deleted at the end). What needs more than one example at a time
says so in `--help`: `--shuffle` holds the whole stream (each concept, under drift), and
`--tune` its prefix. Drift between files counts the files' lengths in a pass of their own. A
stream that cannot be read twice, a Kafka topic followed live, is not counted (`Stream.live`).

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

__all__ = [
    "SYNTHETIC_LENGTH",
    "Replay",
    "Stream",
    "add_stream_arguments",
    "at_least",
    "load",
    "noise_rate",
    "parse_metric",
    "report_skipped",
]

SYNTHETIC_LENGTH = 10_000

Example = tuple[dict, Hashable]


def at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer of at least `minimum`.

    >>> at_least(1)("3")
    3
    """

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    return parse


def add_stream_arguments(parser: argparse.ArgumentParser) -> None:
    """The options saying which stream to read, and how to shuffle, drift and cut it: those of
    `river-cw evaluate` and `river-cw produce` alike."""
    parser.add_argument(
        "files",
        nargs="*",
        help="data files: JSON lines, CSV or libsvm, plain or .gz; '-' reads standard input "
        "(JSON lines unless --format says otherwise; copied to a temporary file, since the "
        "stream is read twice: counted, then read) (default: bundled SMS spam)",
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
        type=at_least(0),
        metavar="N",
        help="drift position (default: middle of the stream; a quarter for recurring)",
    )
    parser.add_argument(
        "--drift-width",
        type=at_least(1),
        metavar="N",
        help="width of gradual drift (default: a tenth of the stream)",
    )
    parser.add_argument(
        "--drift-period",
        type=at_least(1),
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
        help="shuffle the examples (each concept on its own under drift) with --seed; holds "
        "the whole stream in memory",
    )
    parser.add_argument(
        "--seed", type=int, default=1, help="seed for shuffling, noise and drift (default: 1)"
    )
    parser.add_argument(
        "--limit",
        type=at_least(1),
        metavar="N",
        help=f"use the first N examples, after shuffling (synthetic: {SYNTHETIC_LENGTH:,})",
    )


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
    read before the run reads it again, from the start and in the same order; or, once, a
    stream that cannot be read twice (`live`: a Kafka topic followed as it grows), which is
    then not counted. With `answers`, the examples are river's questions and answers as they
    happened (`streams.evaluate.progressive.iter_evaluate`'s `answers`: labels from a topic of
    their own).

    Parameters
    ----------
    examples
        The (x, y) pairs, or with `answers` the ``(i, x, None)`` and ``(i, x, y)`` events;
        iterating them again gives the same ones (once only for a live stream).
    description
        What the examples are, for the tables and the figure.
    readers
        The file readers (or the topic's), whose skipped lines or records the command reports.
    drift_at
        The drift position (None without drift).
    length
        The number of examples (None for a live stream).
    labels
        The examples of each label, of those that have one (None for a live stream).
    first
        The first example's features (None for an empty stream).
    answers
        The examples are questions and answers.
    """

    examples: Iterable
    description: str
    readers: list
    drift_at: int | None
    length: int | None
    labels: collections.Counter | None
    first: dict | None
    answers: bool = False

    @classmethod
    def count(
        cls,
        examples: Iterable,
        description: str,
        readers: list,
        drift_at: int | None,
        answers: bool = False,
    ) -> Stream:
        """The stream of `examples`, counted in one pass that keeps no row."""
        length, labels, first = _counted(examples, answers)
        return cls(examples, description, readers, drift_at, length, labels, first, answers)

    @classmethod
    def live(
        cls, examples: Iterable, description: str, readers: list, answers: bool = False
    ) -> Stream:
        """The stream of `examples`, read once as they come: its first example only is read
        now (it says whether the examples are texts), and nothing is counted."""
        stream = iter(examples)
        head = next(stream, None)
        if head is None:
            return cls([], description, readers, None, None, None, None, answers)
        rest = itertools.chain([head], stream)
        return cls(rest, description, readers, None, None, None, head[1 if answers else 0], answers)


def _counted(examples: Iterable, answers: bool) -> tuple[int, collections.Counter, dict | None]:
    """The length, the labels and the first example's features of `examples`, in one pass."""
    labels: collections.Counter = collections.Counter()
    length, first = 0, None
    if answers:
        for _, x, y in examples:
            if y is not None:
                labels[y] += 1
                continue
            length += 1
            first = x if first is None else first
        return length, labels, first
    stream = iter(examples)
    head = next(stream, None)
    if head is None:
        return 0, labels, None
    labels.update(y for _, y in itertools.chain([head], stream))
    return labels.total(), labels, head[0]


def load(
    args: argparse.Namespace, stack: contextlib.ExitStack, readers: list | None = None
) -> Stream:
    """The examples the options describe (shuffled, drifted, limited), or `ValueError`; a copy of
    standard input lives as long as `stack`. `readers` (a Kafka topic's, read again from its
    start at every pass) are read instead of the files."""
    rng = random.Random(args.seed)
    schema, delimiter = records.schema(args), records.delimiter(args)
    readers = readers or [
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
    length, labels, first = _counted(examples, answers=False)
    if args.drift != "flip":
        return Stream(examples, name, readers, None, length, labels, first)
    position = args.drift_at if args.drift_at is not None else length // 2
    _inside(position, length, "the stream")
    classes = sorted(labels, key=str)
    flipped = Replay(lambda: drift.label_flip(examples, position, classes))
    return Stream.count(flipped, f"{name}, labels flip at {position:,}", readers, position)


def report_skipped(readers: list) -> None:
    """Say on stderr how many malformed lines (or records) each reader skipped."""
    for reader in readers:
        if reader.n_skipped:
            print(
                f"skipped {reader.n_skipped:,} malformed lines or records in {reader.source}; "
                f"first: {reader.errors[0]}",
                file=sys.stderr,
            )


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

    examples = Replay(drifting)
    length, labels, head = _counted(examples, answers=False)
    if length < n:
        name += f", ending where a concept runs out at {length:,}"
    _inside(position, length, "the stream, where a concept runs out,")
    name += f", {args.drift} drift at {position:,}"
    if args.drift == "gradual":
        name += f", width {width:,}"
    elif recurring:
        name += f", period {period:,}"
    return Stream(examples, name, readers, position, length, labels, head)


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
