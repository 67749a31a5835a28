"""`river-cw serve`: run a model on a Kafka topic (see `streams.kafka.server` for the guarantees)."""

from __future__ import annotations

import argparse
import logging
import pickle
import signal
import sys

from confluent_kafka import KafkaException
from kafka.errors import KafkaError
from river import base

from river_cw import combine, state
from streams.cli.security import (
    add_connection_arguments,
    add_state_key_arguments,
    kafka_settings,
    state_keys,
)
from streams.kafka.checkpoint import CheckpointError
from streams.kafka.client import BrokerUnavailable, KafkaSettings, TopicError
from streams.kafka.config import GUARANTEES, MIXES, Mixing, ServeConfig, Topics
from streams.kafka.metrics import MetricsServer
from streams.kafka.server import ModelServer
from streams.kafka.state_topic import StateError
from streams.kafka.store import StateMismatch
from streams.models.mixing import MixError
from streams.models.specs import parse, prepare


def build_model(spec: str, text: bool = False):
    """The classifier a model spec describes (`streams.models.specs`), fitted for the stream as
    `river-cw evaluate` does: a bag of words in front for text, one-vs-rest around a
    binary-only river classifier.

    >>> print(build_model("AROW(r=0.5)", text=True))
    TextClassifier(AROW)
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
        "Exit status: 0 after SIGTERM or --idle-timeout, 130 after SIGINT (Ctrl-C); 1 when the "
        "broker is "
        "unreachable, a topic is missing, a stored state cannot be restored or was learned by "
        "another model; 2 for a bad --model, --init-model or --kafka-config, or no state key."
    )
    parser.add_argument(
        "--model",
        help="model spec as for evaluate, e.g. 'AROW(r=0.1)' or "
        "'river.linear_model.PAClassifier()'",
    )
    parser.add_argument(
        "--text",
        action="store_true",
        help="the examples are text: wrap a model that is not a pipeline in "
        "river_cw.text.TextClassifier(model, on='text') (BagOfWords in front)",
    )
    add_connection_arguments(parser)
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
        "--processing-guarantee",
        choices=GUARANTEES,
        default="exactly-once",
        help="exactly-once: outputs, state and offsets in one Kafka transaction per batch "
        "(read the outputs with isolation read_committed); at-least-once: outputs sent at "
        "once, repeated after a crash (default: %(default)s)",
    )
    parser.add_argument(
        "--state-topic",
        help="compacted topic of the partitions' states (default: TOPIC.state, created "
        "with as many partitions as TOPIC)",
    )
    parser.add_argument(
        "--replication-factor",
        type=int,
        default=-1,
        metavar="R",
        help="replicas of each topic serve creates (the state topic; the models topic with "
        "--mix); -1: the broker's default.replication.factor (default: %(default)s); 3 or more "
        "also sets their min.insync.replicas to 2. Existing topics are left as they are",
    )
    parser.add_argument(
        "--checkpoint-dir",
        help="optional local cache of the partitions' states (the state topic is the truth)",
    )
    parser.add_argument(
        "--checkpoint-every",
        type=int,
        default=1000,
        metavar="N",
        help="commit a batch (outputs, state, offsets) every N messages (default: %(default)s)",
    )
    parser.add_argument(
        "--checkpoint-seconds",
        type=float,
        default=5.0,
        metavar="T",
        help="... or every T seconds (default: %(default)s)",
    )
    parser.add_argument(
        "--snapshot-every",
        type=int,
        default=1000,
        metavar="N",
        help="a commit writes the state's changes since the previous one; a whole snapshot at "
        "least every N commits (default: %(default)s) ...",
    )
    parser.add_argument(
        "--snapshot-share",
        type=float,
        default=1.0,
        metavar="F",
        help="... or once the changes since the last snapshot exceed F times its size "
        "(default: %(default)s): a restore reads a snapshot and at most that much more",
    )
    parser.add_argument(
        "--mix",
        choices=("off", *MIXES),
        default="off",
        help="one model for the whole group: every partition publishes its model's changes to "
        "the models topic every --mix-every examples and goes on from the mix of all "
        "partitions (kl: precisions and precision-weighted means add; l2: means and log "
        "variances); off: one independent model per partition (default: %(default)s)",
    )
    parser.add_argument(
        "--mix-every",
        type=int,
        default=1000,
        metavar="N",
        help="examples learned by a partition between its publications (default: %(default)s)",
    )
    parser.add_argument(
        "--mix-seconds",
        type=float,
        default=10.0,
        metavar="T",
        help="... or after T seconds when it learned something or others wait for it, so "
        "that quiet partitions do not hold the rounds back (default: %(default)s)",
    )
    parser.add_argument(
        "--mix-lag",
        type=int,
        metavar="N",
        help="bounded staleness: a partition N examples past a publication whose round is not "
        "mixed yet waits for it (a backlog is then learned in step; a dead member holds the "
        "others until its partitions move); default: never wait",
    )
    parser.add_argument("--models-topic", help="the mixing rounds' topic (default: TOPIC.models)")
    add_state_key_arguments(parser)
    parser.add_argument(
        "--init-model",
        metavar="PATH",
        help="warm-start new partitions from this model instead of a fresh --model: a file of "
        "river-cw's versioned state format (inspect --export writes one) or a pickle",
    )
    parser.add_argument(
        "--discard-state",
        action="store_true",
        help="when the stored models differ from --model: start new models from the stored "
        "offsets (default: refuse to start)",
    )
    parser.add_argument(
        "--restore-timeout",
        type=float,
        default=120.0,
        metavar="S",
        help="give up restoring a partition's state after S seconds (default: %(default)s)",
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
    parser.add_argument(
        "--log-level",
        choices=("debug", "info", "warning"),
        default="info",
        help="debug adds the Kafka clients' own messages (kafka-python, librdkafka), whose "
        "warnings about what the server handles itself are otherwise hidden "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        metavar="P",
        help="serve Prometheus metrics on http://HOST:P/metrics, liveness on /health and "
        "readiness (partitions assigned and restored) on /ready (metric names: "
        "streams.kafka.metrics)",
    )
    parser.add_argument(
        "--metrics-host",
        default="0.0.0.0",
        metavar="HOST",
        help="the address the metrics endpoint listens on, e.g. 127.0.0.1 for this machine "
        "only (default: %(default)s, every interface)",
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


class _ClientsAsDebug(logging.Filter):
    """The Kafka clients' own records (kafka-python's `kafka.*`, librdkafka's) become DEBUG: the
    server logs what a person needs to know of what they report (a broker that cannot be
    reached, a lost partition) in its own words."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith(("kafka.", "librdkafka")) or record.name == "kafka":
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger().level <= logging.DEBUG
        return True


def _configure_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    handler.addFilter(_ClientsAsDebug())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    if level != "debug":  # spare the clients' chatter its formatting
        logging.getLogger("kafka").setLevel(logging.CRITICAL)


def run(args: argparse.Namespace) -> int:
    _configure_logging(args.log_level)
    try:
        model, spec = _model(args)
        if args.mix != "off":
            combine([model], method=args.mix, base=model)  # ValueError: it cannot be mixed
        config = _config(args, spec, state_keys(args))  # ValueError: e.g. no state key
        settings = kafka_settings(
            args,
            session_timeout_ms=args.session_timeout_ms,
            heartbeat_interval_ms=args.heartbeat_interval_ms,
            max_poll_interval_ms=args.max_poll_interval_ms,
            connect_timeout_ms=args.connect_timeout_ms,
        )
    except ValueError as error:
        print(f"river-cw serve: error: {error}", file=sys.stderr)
        return 2
    server = ModelServer(model, settings, config)
    stopped_by: list[int] = []

    def stop(signum, frame) -> None:
        stopped_by.append(signum)
        server.stop()

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, stop)
    metrics = None
    try:
        if args.metrics_port is not None:
            metrics = MetricsServer(server, args.metrics_port, args.metrics_host)
        server.run()
    except (
        BrokerUnavailable,
        TopicError,
        CheckpointError,
        StateError,
        StateMismatch,
        MixError,
        KafkaError,
        KafkaException,
        OSError,
    ) as error:
        # infrastructure only: a bad record never gets here (it is dead-lettered)
        print(f"river-cw serve: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 1
    finally:
        if metrics is not None:
            metrics.close()
    return 130 if signal.SIGINT in stopped_by else 0


def _config(args: argparse.Namespace, spec: str, keys) -> ServeConfig:
    """The server's configuration from the command line, its state sealed with `keys`."""
    mixing = None
    if args.mix != "off":
        mixing = Mixing(args.mix, args.mix_every, args.mix_seconds, args.mix_lag)
    return ServeConfig(
        Topics(
            args.topic,
            predictions=args.predictions_topic or "",
            dead_letters=args.dead_letter_topic or "",
            labels=args.labels_topic,
            state=args.state_topic or "",
            models=args.models_topic or "",
        ),
        keys,
        group_id=args.group_id,
        partitions=args.partitions,
        processing_guarantee=args.processing_guarantee,
        checkpoint_every=args.checkpoint_every,
        checkpoint_seconds=args.checkpoint_seconds,
        checkpoint_dir=args.checkpoint_dir,
        snapshot_every=args.snapshot_every,
        snapshot_share=args.snapshot_share,
        max_pending=args.max_pending,
        model_spec=spec,
        discard_state=args.discard_state,
        restore_timeout=args.restore_timeout,
        mixing=mixing,
        idle_timeout=args.idle_timeout,
        log_seconds=args.log_seconds,
        replication_factor=args.replication_factor,
    )


def _model(args: argparse.Namespace):
    """The model to serve and its spec, from --model or --init-model."""
    if args.init_model:
        try:
            with open(args.init_model, "rb") as fh:
                data = fh.read()
            model = state.loads(data) if data.startswith(state.MAGIC) else pickle.loads(data)
        except (OSError, ValueError, pickle.UnpicklingError, EOFError) as error:
            raise ValueError(f"cannot read --init-model {args.init_model}: {error}") from None
        if not isinstance(model, base.Classifier):
            raise ValueError(f"--init-model {args.init_model} holds no river classifier")
        return model, args.model or "init-model " + " ".join(repr(model).split())
    if not args.model:
        raise ValueError("give --model (a spec) or --init-model (a saved model)")
    spec = args.model + (" --text" if args.text else "")
    return build_model(args.model, text=args.text), spec
