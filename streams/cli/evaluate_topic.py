"""`river-cw evaluate --topic`: the stream read from a Kafka topic (the ``[kafka]`` extra).

The topic holds the server's messages (`streams.kafka.messages`); `streams.kafka.examples`
reads its committed records in a repeatable order (`streams.kafka.ordered`: by timestamp, then
by the sequence number `river-cw produce` writes, then partition and offset) up to the end it
had at the start, or, with ``--follow``, on as they come until Ctrl-C or ``--idle-timeout``.
Labels may come on ``--labels-topic``, joined by id: each example is then predicted when it
arrives and learned when its label does (the real delay).

A topic read to its end is a stream like a file's (`streams.cli.evaluate_input`): read twice,
counted then scored, each pass from the beginning to the ends the first one found, so that
the command takes the same memory whatever the topic's length and its numbers are those of a
file holding the same records. A followed topic is read once, as it comes, and not counted:
its classes are not known in advance (each model learns them as they come: a river binary
classifier is wrapped in river's OneVsRestClassifier), its learning curve starts at every
example (unless ``--every``) and coarsens as it grows, and what needs the classes or the
whole stream first (--shuffle, --tune, --drift flip, class-conditional --noise, a metric of one
class) is refused before the run, in one line.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import signal
from collections.abc import Iterable, Iterator

from streams.cli import records
from streams.cli.evaluate_input import Replay, Stream
from streams.cli.security import add_connection_arguments

__all__ = ["Interrupt", "add_arguments", "check", "errors", "load"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a Kafka stream, in a group of their own."""
    group = parser.add_argument_group(
        "Kafka (instead of files; the [kafka] extra)",
        "Read the committed records of a topic in the server's format (id, features or text, "
        "label): from the beginning to the end the topic had at the start (repeatable), in "
        "timestamp order across partitions (then partition, then offset). --on-error skip "
        "counts a bad record and names its partition and offset.",
    )
    group.add_argument(
        "--topic", dest="kafka_topic", metavar="TOPIC", help="the examples topic to evaluate on"
    )
    group.add_argument(
        "--labels-topic",
        metavar="TOPIC",
        help="labels ({id, label}) arrive on this topic, joined by id: each example is learned "
        "when its label arrives (the real delay); examples whose label never comes are "
        "counted, not scored",
    )
    group.add_argument(
        "--follow",
        action="store_true",
        help="then keep reading new records, the running table updating, until Ctrl-C or "
        "--idle-timeout, and print the final table (the stream is read once and not counted: "
        "the classes are learned as they come, the curve starts at every example unless "
        "--every; no --shuffle, --tune, --drift, class-conditional --noise or metric of one "
        "class)",
    )
    group.add_argument(
        "--idle-timeout",
        type=float,
        metavar="S",
        help="with --follow, stop after S seconds without a record (default: until Ctrl-C)",
    )
    add_connection_arguments(group)


def check(args: argparse.Namespace) -> None:
    """`ValueError` for options a topic cannot take, before anything is read."""
    if not args.kafka_topic:
        for option, given in (
            ("--labels-topic", args.labels_topic),
            ("--follow", args.follow),
            ("--idle-timeout", args.idle_timeout is not None),
            ("--bootstrap-servers", args.bootstrap_servers),
            ("--kafka-config", args.kafka_config),
        ):
            if given:
                raise ValueError(f"{option} needs --topic")
        return
    if args.files:
        raise ValueError("give data files or --topic, not both")
    if args.drift not in (None, "flip") or args.domains:
        raise ValueError(
            f"--drift {args.drift} draws its concepts from files: replay them onto the topic "
            f"with `river-cw produce FILES --drift {args.drift}`"
        )
    if args.labels_topic:
        if args.delay:
            raise ValueError("--labels-topic brings the real delays: --delay must be 0")
        for option, given in (
            ("--shuffle", args.shuffle),
            ("--tune", args.tune),
            ("--drift flip", args.drift),
        ):
            if given:
                raise ValueError(f"{option} needs the labels with the examples, not --labels-topic")
    if args.follow:
        for option, given in (
            ("--shuffle", args.shuffle),
            ("--tune", args.tune),
            ("--drift", args.drift),
            ("class-conditional --noise", any("=" in rate for rate in args.noise)),
        ):
            if given:
                raise ValueError(
                    f"--follow reads the stream once, as it comes, without counting it first: "
                    f"no {option}"
                )
    elif args.idle_timeout is not None:
        raise ValueError("--idle-timeout needs --follow")


def errors(args: argparse.Namespace) -> tuple[type[Exception], ...]:
    """What reading the topic raises besides `ValueError`: no broker, no topic."""
    if not args.kafka_topic:
        return ()
    from streams.kafka.client import BrokerUnavailable, TopicError

    return (BrokerUnavailable, TopicError)


class Interrupt:
    """While following, Ctrl-C (or SIGTERM) ends the stream instead of the process: the
    evaluation then finishes and prints its final table."""

    def __init__(self):
        self.requested = False

    def __call__(self) -> bool:
        return self.requested

    def install(self) -> None:
        def stop(*_):
            self.requested = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)


def load(args: argparse.Namespace, stack: contextlib.ExitStack, interrupt: Interrupt) -> Stream:
    """The topic's stream, as `streams.cli.evaluate_input.load` makes a file's (flipped,
    limited; shuffled in memory), each pass reading the topic from its beginning to the ends
    the first pass found; with --follow read once, as it comes (`Stream.live`); with
    --labels-topic river's questions and answers (`Stream.answers`)."""
    from streams.cli.evaluate_input import load as load_files
    from streams.cli.security import kafka_settings
    from streams.kafka.examples import TopicExamples

    reader = TopicExamples(
        kafka_settings(args),
        args.kafka_topic,
        labels_topic=args.labels_topic,
        schema=records.schema(args),
        on_error=args.on_error,
        follow=args.follow,
        idle_timeout=args.idle_timeout,
        stopped=interrupt,
    )
    if args.follow:
        interrupt.install()
    if not args.labels_topic:
        if args.follow:
            live = itertools.islice(reader, args.limit)
            return Stream.live(live, f"{reader.source}, followed", [reader])
        return load_files(args, stack, [reader])
    name = f"{reader.source}, labels as they arrive"
    if args.follow:
        events = _first(reader.answers(), args.limit)
        return Stream.live(events, f"{name}, followed", [reader], answers=True)
    answers = Replay(lambda: _first(reader.answers(), args.limit))
    return Stream.count(answers, name, [reader], None, answers=True)


def _first(events: Iterable[tuple], limit: int | None) -> Iterator[tuple]:
    """River's questions and answers of the first `limit` examples (all without a limit): the
    later examples' are left out, and the events end when each of the first has its answer (or
    the topic ends), as `--limit` cuts a file before `--delay` delays its labels."""
    if limit is None:
        yield from events
        return
    waiting, asked = 0, False  # of the first examples: those not answered yet, all asked?
    for event in events:
        i, _, y = event
        if i >= limit:
            continue
        waiting += 1 if y is None else -1
        asked = asked or i == limit - 1
        yield event
        if asked and not waiting:
            return
