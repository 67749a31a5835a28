"""`river-cw tail`: print what `river-cw serve` committed for a topic, as JSON lines.

Predictions (`TOPIC.predictions`) are printed as the server wrote them; dead letters
(`--dead-letters`, `TOPIC.dead-letters`) as `{"reason", "topic", "partition", "offset", "size",
"key", "value"}` with the record's key and first bytes (decoded as UTF-8, bad bytes escaped) and
`"truncated"` where the server cut an over-large record. Only records of committed transactions
are printed, in the order their transactions committed (`streams.kafka.committed`: on the
demo broker by a client-side filter, elsewhere by librdkafka's read_committed); the
records of aborted ones never are. Reads from the end unless `--from-beginning`; stops after
`--idle-timeout` seconds without a record (exit status 0), else on Ctrl-C (130).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time

from streams.cli.security import add_connection_arguments, kafka_settings
from streams.kafka.client import BrokerUnavailable, TopicError, check_connection, topic_partitions
from streams.kafka.committed import CommittedReader

SHOWN_BYTES = 200  # of a dead letter's value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_arguments(parser)
    parser.add_argument("--topic", required=True, help="the examples topic `serve` reads")
    parser.add_argument(
        "--dead-letters", action="store_true", help="the dead letters, with their reasons"
    )
    parser.add_argument("--predictions-topic", help="default: TOPIC.predictions")
    parser.add_argument("--dead-letter-topic", help="default: TOPIC.dead-letters")
    parser.add_argument(
        "--from-beginning", action="store_true", help="from the first record (default: new ones)"
    )
    parser.add_argument(
        "--idle-timeout",
        type=float,
        metavar="S",
        help="stop after S seconds without a record (default: until Ctrl-C)",
    )
    parser.add_argument("--connect-timeout-ms", type=int, default=10000)


def dead_letter(record) -> dict:
    """A dead letter as a JSON-ready dict: why, where from, and its first bytes."""
    headers = {name: value.decode("utf-8", "backslashreplace") for name, value in record.headers}
    shown = {
        "reason": headers.get("reason"),
        "topic": headers.get("topic"),
        "partition": int(headers["partition"]) if "partition" in headers else None,
        "offset": int(headers["offset"]) if "offset" in headers else None,
        "size": int(headers["size"]) if "size" in headers else None,
        "key": None if record.key is None else record.key.decode("utf-8", "backslashreplace"),
        "value": None
        if record.value is None
        else record.value[:SHOWN_BYTES].decode("utf-8", "backslashreplace"),
    }
    if "truncated" in headers:
        shown["truncated"] = int(headers["truncated"])
    return shown


def run(args: argparse.Namespace) -> int:
    try:
        settings = kafka_settings(args, connect_timeout_ms=args.connect_timeout_ms)
    except ValueError as error:
        print(f"river-cw tail: error: {error}", file=sys.stderr)
        return 2
    if args.dead_letters:
        topic = args.dead_letter_topic or f"{args.topic}.dead-letters"
    else:
        topic = args.predictions_topic or f"{args.topic}.predictions"
    interrupted = []
    signal.signal(signal.SIGINT, lambda *_: interrupted.append(True))
    signal.signal(signal.SIGTERM, lambda *_: interrupted.append(False))
    try:
        check_connection(settings)
        partitions = topic_partitions(settings, topic)
        reader = CommittedReader(settings, topic, partitions)
    except (BrokerUnavailable, TopicError) as error:
        print(f"river-cw tail: error: {error}", file=sys.stderr)
        return 1
    try:
        if not args.from_beginning:
            reader.seek_to_end()
        last = time.monotonic()
        while not interrupted:
            records = reader.poll(100)
            for record in records:
                line = json.dumps(dead_letter(record)) if args.dead_letters else None
                value = record.value or b""
                print(line or value.decode("utf-8", "backslashreplace"), flush=True)
            now = time.monotonic()
            if records:
                last = now
            elif args.idle_timeout is not None and now - last >= args.idle_timeout:
                break
    finally:
        reader.close()
    return 130 if interrupted and interrupted[0] else 0
