"""`river-cw produce`: replay a stream onto a Kafka topic, in the server's message format.

It reads any stream `river-cw evaluate` reads (files, standard input, the bundled SMS data, the
synthetic drift streams; shuffled, drifted and cut by the same options, `streams.cli.evaluate_input`),
as evaluate does in memory that does not grow with the stream (counted first, for the classes of
``--noise``, then read again and sent), and sends example i as ``{"id": i, "x": ... or "text": ..., "label": ...}`` keyed by its id
(`streams.kafka.writer`). ``--noise`` flips the labels sent as `evaluate --noise` flips the labels
its models learn (the same `LabelNoise`, seed and order). With ``--labels-topic`` the labels go
there, ``{"id": i, "label": ...}``, each just before the example ``--label-delay`` N later (so
that `evaluate --topic T --labels-topic L` scores what `evaluate FILE --delay N` scores), or
``--label-delay-seconds`` after its example. ``--rate`` paces the examples for live demos. At
the end it prints what the broker acknowledged: records per partition, first and last offsets.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import sys
import time

from streams.cli.evaluate_input import add_stream_arguments, at_least
from streams.cli.security import add_connection_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Replay a stream (files, standard input, the bundled SMS data, synthetic drift) onto a "
        "Kafka topic in the server's format, keyed by id (the example's number in the stream), "
        "with a progress bar; then print what was written per partition."
    )
    add_stream_arguments(parser)
    parser.add_argument("--topic", required=True, help="the examples topic (it must exist)")
    parser.add_argument(
        "--labels-topic",
        metavar="TOPIC",
        help="send the labels here, {id, label}, instead of inside the examples "
        "(co-partitioned with --topic: as many partitions)",
    )
    delays = parser.add_mutually_exclusive_group()
    delays.add_argument(
        "--label-delay",
        type=at_least(0),
        default=0,
        metavar="N",
        help="with --labels-topic, send each label just before the example N later, so that "
        "evaluate on the topics scores as evaluate --delay N on the file (0 and 1 alike: "
        "right after its example; default: 0)",
    )
    delays.add_argument(
        "--label-delay-seconds",
        type=float,
        metavar="S",
        help="with --labels-topic, send each label S seconds after its example",
    )
    parser.add_argument(
        "--noise",
        default="0",
        metavar="P",
        help="label noise on the labels sent, as evaluate --noise adds it (same --seed, same "
        "labels): a probability, or 'spam=0.3,ham=0.05' (default: 0)",
    )
    parser.add_argument(
        "--rate",
        type=float,
        metavar="R",
        help="send at most R examples per second (default: as fast as the broker takes them)",
    )
    add_connection_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from streams.kafka.client import BrokerUnavailable, TopicError
    from streams.kafka.writer import DeliveryFailed

    try:
        if not args.labels_topic and (args.label_delay or args.label_delay_seconds is not None):
            raise ValueError("--label-delay and --label-delay-seconds need --labels-topic")
        if args.rate is not None and not args.rate > 0:
            raise ValueError(f"--rate must be a positive number, got {args.rate}")
        return _run(args)
    except (ValueError, OSError) as error:
        print(f"river-cw produce: error: {error}", file=sys.stderr)
        return 2
    except (BrokerUnavailable, TopicError, DeliveryFailed) as error:
        print(f"river-cw produce: error: {error}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    with contextlib.ExitStack() as stack:  # a copy of standard input lives as long as the run
        return _produce(args, stack)


def _produce(args: argparse.Namespace, stack: contextlib.ExitStack) -> int:
    from river_cw.labels import order_key
    from streams.cli.evaluate_input import load, noise_rate, report_skipped
    from streams.cli.security import kafka_settings
    from streams.evaluate.noise import LabelNoise
    from streams.kafka.writer import ExampleWriter

    settings = kafka_settings(args)
    data = load(args, stack)  # counted (the classes of --noise), then read again to be sent
    report_skipped(data.readers)
    classes = sorted(data.labels or (), key=order_key)  # a file's stream is always counted
    noise = LabelNoise(noise_rate(args.noise, classes), classes=classes, seed=args.seed)
    writer = ExampleWriter(settings, args.topic, args.labels_topic)
    labels = _Labels(writer, args.label_delay, args.label_delay_seconds)
    interrupted = False
    start = time.monotonic()
    try:
        for i, (x, y) in enumerate(_progress(data.examples, data.length)):
            if args.rate is not None:
                time.sleep(max(0.0, start + i / args.rate - time.monotonic()))
            labels.before(i)
            label = noise(y)
            writer.example(i, x, None if args.labels_topic else label)
            labels.after(i, label)
        labels.rest()
    except KeyboardInterrupt:
        interrupted = True
    writer.flush()
    what = f"{data.description}, label noise {noise.name}"
    print(_summary(writer, what, interrupted))
    return 130 if interrupted else 0


class _Labels:
    """The labels waiting to be sent to the labels topic, by examples or by seconds."""

    def __init__(self, writer, delay: int, seconds: float | None):
        self.writer = writer
        self.delay = max(1, delay)  # 0 and 1 alike: the label right after its example
        self.seconds = seconds
        self.waiting: collections.deque = collections.deque()  # (example or due time, id, label)

    def before(self, i: int) -> None:
        """Send the labels due before example i."""
        now = time.monotonic()
        while self.waiting and (
            self.waiting[0][0] <= now if self.seconds is not None else self.waiting[0][0] <= i
        ):
            _, id_, label = self.waiting.popleft()
            self.writer.label(id_, label)

    def after(self, i: int, label) -> None:
        if self.writer.labels_topic is None:
            return
        due = time.monotonic() + self.seconds if self.seconds is not None else i + self.delay
        self.waiting.append((due, i, label))

    def rest(self) -> None:
        """Send the labels still waiting, in order (each at its time, by seconds)."""
        while self.waiting:
            due, id_, label = self.waiting.popleft()
            if self.seconds is not None:
                time.sleep(max(0.0, due - time.monotonic()))
            self.writer.label(id_, label)


def _progress(examples, total: int | None):
    """A tqdm bar on stderr over the examples, or none without the ``[progress]`` extra."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return examples
    return tqdm(examples, total=total, unit="ex", delay=1.0, leave=False)


def _summary(writer, what: str, interrupted: bool) -> str:
    """What the broker acknowledged, per topic and partition."""
    sent = sum(w.records for (topic, _), w in writer.written.items() if topic == writer.topic)
    head = f"wrote {sent:,} examples ({what}) to {writer.topic!r}"
    if writer.labels_topic:
        labels = sum(
            w.records for (topic, _), w in writer.written.items() if topic == writer.labels_topic
        )
        head += f" and {labels:,} labels to {writer.labels_topic!r}"
    if interrupted:
        head += " (interrupted)"
    lines = [head + ":"]
    for (topic, partition), written in sorted(writer.written.items()):
        lines.append(
            f"  {topic} partition {partition}: {written.records:,} records, "
            f"offsets {written.first}-{written.last}"
        )
    return "\n".join(lines)
