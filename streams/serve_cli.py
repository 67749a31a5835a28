"""`river-cw serve`: run a model on a Kafka topic (see `streams.consumer` for the guarantees)."""

from __future__ import annotations

import argparse
import logging
import signal
import sys

from kafka.errors import KafkaError

from streams.checkpoint import CheckpointError
from streams.consumer import ModelServer
from streams.kafka_io import BrokerUnavailable, KafkaSettings, TopicError
from streams.specs import parse, prepare


def build_model(spec: str, text: bool = False):
    """The classifier a model spec describes (`streams.specs`), fitted for the stream as
    `river-cw evaluate` does: a bag of words in front for text, one-vs-rest around a
    binary-only river classifier.

    >>> list(build_model("AROW(r=0.5)", text=True).steps)
    ['BagOfWords', 'AROW']
    """
    return prepare(parse(spec), text=text)


def _partition_list(text: str) -> list[int]:
    try:
        return [int(p) for p in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected partition numbers like 0,2,3, got {text!r}"
        ) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = (
        'Examples are JSON {"id": ..., "x": {feature: number}} or {"id": ..., "text": "..."} '
        'with an optional "label"; delayed labels are {"id": ..., "label": ...}; key both by '
        "id (ids are normalised to strings). Predictions: {id, prediction, probabilities, "
        "model_version, partition}. A record that cannot be decoded, predicted or learned goes "
        "to the dead-letter topic with its original key and bytes (only the first 1024 bytes "
        "of a record over 1 MB) and headers reason, topic, partition, offset and size. "
        "Exit status: 0 after SIGTERM, SIGINT or --idle-timeout; 1 when the broker is "
        "unreachable, a topic is missing or a checkpoint is unreadable; 2 for a bad --model."
    )
    parser.add_argument(
        "--model",
        required=True,
        help="model spec as for evaluate, e.g. 'AROW(r=0.1)' or "
        "'river.linear_model.PAClassifier()'",
    )
    parser.add_argument(
        "--text",
        action="store_true",
        help="the examples are text: put BagOfWords(on='text') in front of a "
        "model that is not a pipeline",
    )
    parser.add_argument(
        "--bootstrap-servers", default="127.0.0.1:9092", help="default: %(default)s"
    )
    parser.add_argument("--topic", required=True, help="examples topic")
    parser.add_argument(
        "--labels-topic",
        help="delayed labels topic ({id, label}), same number of partitions as --topic",
    )
    parser.add_argument("--predictions-topic", help="default: TOPIC.predictions")
    parser.add_argument("--dead-letter-topic", help="default: TOPIC.dead-letters")
    who = parser.add_mutually_exclusive_group()
    who.add_argument(
        "--group-id", help="join this consumer group (partitions split between members)"
    )
    who.add_argument(
        "--partitions",
        type=_partition_list,
        help="read these partitions (comma separated) without a group; default: all",
    )
    parser.add_argument(
        "--checkpoint-dir",
        default="checkpoints",
        help="one checkpoint per partition here, shared by the group (default: %(default)s)",
    )
    parser.add_argument(
        "--checkpoint-every",
        type=int,
        default=1000,
        metavar="N",
        help="checkpoint every N messages (default: %(default)s)",
    )
    parser.add_argument(
        "--checkpoint-seconds",
        type=float,
        default=30.0,
        metavar="T",
        help="... or every T seconds (default: %(default)s)",
    )
    parser.add_argument(
        "--max-pending",
        type=int,
        default=100_000,
        help="unlabelled examples kept per partition for delayed labels (default: %(default)s)",
    )
    parser.add_argument(
        "--idle-timeout",
        type=float,
        metavar="S",
        help="stop after S seconds without messages (default: run until SIGTERM/SIGINT)",
    )
    parser.add_argument(
        "--log-seconds", type=float, default=10.0, help="progress log period (default: %(default)s)"
    )
    defaults = KafkaSettings()
    for name in (
        "session_timeout_ms",
        "heartbeat_interval_ms",
        "max_poll_interval_ms",
        "connect_timeout_ms",
    ):
        parser.add_argument(
            "--" + name.replace("_", "-"),
            type=int,
            default=getattr(defaults, name),
            help="default: %(default)s",
        )


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    logging.getLogger("kafka").setLevel(logging.WARNING)  # its INFO is per-connection chatter
    try:
        model = build_model(args.model, text=args.text)
    except ValueError as error:
        print(f"river-cw serve: error: {error}", file=sys.stderr)
        return 2
    settings = KafkaSettings(
        args.bootstrap_servers,
        args.session_timeout_ms,
        args.heartbeat_interval_ms,
        args.max_poll_interval_ms,
        args.connect_timeout_ms,
    )
    server = ModelServer(
        model,
        settings,
        examples_topic=args.topic,
        labels_topic=args.labels_topic,
        predictions_topic=args.predictions_topic or f"{args.topic}.predictions",
        dead_letter_topic=args.dead_letter_topic or f"{args.topic}.dead-letters",
        group_id=args.group_id,
        partitions=args.partitions,
        checkpoint_dir=args.checkpoint_dir,
        checkpoint_every=args.checkpoint_every,
        checkpoint_seconds=args.checkpoint_seconds,
        max_pending=args.max_pending,
        idle_timeout=args.idle_timeout,
        log_seconds=args.log_seconds,
    )
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: server.stop())
    try:
        server.run()
    except (BrokerUnavailable, TopicError, CheckpointError, KafkaError, OSError) as error:
        # infrastructure only: a bad record never gets here (it is dead-lettered)
        print(f"river-cw serve: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 1
    return 0
