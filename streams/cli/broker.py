"""`river-cw broker`: run a local Kafka-compatible broker (Tansu) in the foreground for demos."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from streams.cli.extras import MissingExtra
from streams.kafka.broker import BrokerError, BrokerNotInstalled, TansuBroker
from streams.kafka.client import create_topics


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: %(default)s)"
    )
    parser.add_argument(
        "--port",
        type=int,
        default=9092,
        help="port to listen on, 0 for a free one (default: %(default)s)",
    )
    parser.add_argument(
        "--topic",
        action="append",
        default=[],
        metavar="NAME[:PARTITIONS]",
        help="create this topic at start (repeatable; 1 partition by default)",
    )


def _parse_topic(spec: str) -> tuple[str, int]:
    name, _, partitions = spec.partition(":")
    if not name or (partitions and not partitions.isdigit()) or partitions == "0":
        raise ValueError(f"bad --topic {spec!r}: expected NAME or NAME:PARTITIONS, e.g. examples:4")
    return name, int(partitions or 1)


def run(args: argparse.Namespace) -> int:
    try:
        topics = dict(_parse_topic(spec) for spec in args.topic)
    except ValueError as error:
        print(f"river-cw broker: error: {error}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    try:
        with TansuBroker(args.host, args.port) as broker:
            if topics:
                create_topics(broker.bootstrap_servers, topics)
            created = ", ".join(f"{name} ({n} partitions)" for name, n in topics.items())
            print(
                f"Tansu broker on {broker.bootstrap_servers} (in-memory storage, pid {broker.pid})"
                + (f"; topics: {created}" if created else "")
                + "; Ctrl-C to stop",
                flush=True,
            )
            while not stop.wait(0.5):
                if not broker.running():
                    print(
                        f"river-cw broker: error: the broker exited:\n{broker.log_tail()}",
                        file=sys.stderr,
                    )
                    return 1
    except BrokerNotInstalled as error:  # one line, exit status 2 (streams.cli.main)
        raise MissingExtra("broker", error.reason) from None
    except BrokerError as error:
        print(f"river-cw broker: error: {error}", file=sys.stderr)
        return 1
    return 0
