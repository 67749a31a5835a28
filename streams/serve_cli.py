"""`river-cw serve`: run a model on a Kafka topic (see `streams.consumer` for the guarantees)."""

from __future__ import annotations

import argparse
import importlib
import logging
import signal
import sys

from streams.checkpoint import CheckpointError
from streams.consumer import ModelServer
from streams.kafka_io import BrokerUnavailable, KafkaSettings, TopicError


class _Names(dict):
    """`river.<name>` submodules on demand, for model expressions such as `linear_model.PAClassifier()`."""

    def __missing__(self, name: str):
        try:
            return importlib.import_module(f"river.{name}")
        except ImportError:
            raise KeyError(name) from None


def build_model(expression: str):
    """Evaluate a model expression: river submodules and the public names of `river_cw` in scope.

    >>> list(build_model("feature_extraction.BagOfWords() | linear_model.PAClassifier(C=0.5)").steps)
    ['BagOfWords', 'PAClassifier']
    """
    from river.base import Classifier

    import river_cw

    names = _Names({name: getattr(river_cw, name) for name in getattr(river_cw, "__all__", [])})
    try:
        model = eval(expression, {"__builtins__": {}}, names)  # an operator's own command line
    except Exception as error:
        raise ValueError(f"--model {expression!r}: {type(error).__name__}: {error}") from None
    if not isinstance(model, Classifier):  # true for a pipeline that ends in a classifier
        raise ValueError(f"--model {expression!r} is not a river classifier (got {type(model).__name__})")
    return model


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True,
                        help="river classifier or pipeline as a Python expression, with river "
                             "submodules and river_cw names in scope, e.g. "
                             "'feature_extraction.BagOfWords() | AROW()'")
    parser.add_argument("--bootstrap-servers", default="127.0.0.1:9092", help="default: %(default)s")
    parser.add_argument("--topic", required=True, help="examples topic")
    parser.add_argument("--labels-topic", help="delayed labels topic ({id, label}), "
                        "same number of partitions as --topic")
    parser.add_argument("--predictions-topic", help="default: TOPIC.predictions")
    parser.add_argument("--dead-letter-topic", help="default: TOPIC.dead-letters")
    who = parser.add_mutually_exclusive_group()
    who.add_argument("--group-id", help="join this consumer group (partitions split between members)")
    who.add_argument("--partitions", type=lambda s: [int(p) for p in s.split(",")],
                     help="read these partitions (comma separated) without a group; default: all")
    parser.add_argument("--checkpoint-dir", default="checkpoints",
                        help="one checkpoint per partition here, shared by the group (default: %(default)s)")
    parser.add_argument("--checkpoint-every", type=int, default=1000, metavar="N",
                        help="checkpoint every N messages (default: %(default)s)")
    parser.add_argument("--checkpoint-seconds", type=float, default=30.0, metavar="T",
                        help="... or every T seconds (default: %(default)s)")
    parser.add_argument("--max-pending", type=int, default=100_000,
                        help="unlabelled examples kept per partition for delayed labels (default: %(default)s)")
    parser.add_argument("--idle-timeout", type=float, metavar="S",
                        help="stop after S seconds without messages (default: run until SIGTERM/SIGINT)")
    parser.add_argument("--log-seconds", type=float, default=10.0, help="progress log period (default: %(default)s)")
    defaults = KafkaSettings()
    for name in ("session_timeout_ms", "heartbeat_interval_ms", "max_poll_interval_ms",
                 "connect_timeout_ms"):
        parser.add_argument("--" + name.replace("_", "-"), type=int, default=getattr(defaults, name),
                            help="default: %(default)s")


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("kafka").setLevel(logging.WARNING)  # its INFO is per-connection chatter
    try:
        model = build_model(args.model)
    except ValueError as error:
        print(f"river-cw serve: error: {error}", file=sys.stderr)
        return 2
    settings = KafkaSettings(
        args.bootstrap_servers, args.session_timeout_ms, args.heartbeat_interval_ms,
        args.max_poll_interval_ms, args.connect_timeout_ms,
    )
    server = ModelServer(
        model, settings,
        examples_topic=args.topic,
        labels_topic=args.labels_topic,
        predictions_topic=args.predictions_topic or f"{args.topic}.predictions",
        dead_letter_topic=args.dead_letter_topic or f"{args.topic}.dead-letters",
        group_id=args.group_id, partitions=args.partitions,
        checkpoint_dir=args.checkpoint_dir, checkpoint_every=args.checkpoint_every,
        checkpoint_seconds=args.checkpoint_seconds, max_pending=args.max_pending,
        idle_timeout=args.idle_timeout, log_seconds=args.log_seconds,
    )
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: server.stop())
    try:
        server.run()
    except (BrokerUnavailable, TopicError, CheckpointError) as error:
        print(f"river-cw serve: error: {error}", file=sys.stderr)
        return 1
    return 0
