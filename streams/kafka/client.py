"""Kafka clients: the connection settings, their one mapping onto each client, and admin helpers.

Two clients, each where it is the right one (measured: benchmarks/README.md):

- librdkafka (`confluent-kafka`) serves the hot path: the server's consumer of examples and
  labels (`streams.kafka.source`) and its producers of outputs, in transactions or not
  (`streams.kafka.outputs`). It produces and consumes a record in a microsecond or two where
  kafka-python takes tens, and commits a transaction in about a millisecond against 20-30.
- kafka-python reads transactional topics record by record, control markers included, which
  librdkafka never shows its caller: `streams.kafka.committed` applies the commit/abort markers
  itself on brokers that do not list aborted transactions (the demo broker), for the state and
  models topics, `river-cw tail`, `river-cw evaluate --topic` and the tests; on the others
  librdkafka's read_committed serves. kafka-python also looks at logs here (`log_reaches`, `topic_partitions`); librdkafka's
  admin client creates topics (with the broker's default replication factor, `create_topics`).

`KafkaSettings.librdkafka` and `KafkaSettings.kafka_python` are the only places that turn the
settings into a client's configuration: the connection's security (TLS, SASL:
`streams.kafka.security.ClientSecurity`) reaches every client through them.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import KafkaError as LibrdkafkaError
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, TopicPartition
from kafka.errors import KafkaTimeoutError

from streams.kafka.security import ClientSecurity

__all__ = [
    "BrokerUnavailable",
    "KafkaSettings",
    "TopicError",
    "check_connection",
    "create_topics",
    "fallback_replication",
    "log_reaches",
    "topic_partitions",
    "topic_replication",
]

LIBRDKAFKA_LOG = logging.getLogger("librdkafka")
log = logging.getLogger(__name__)


class BrokerUnavailable(RuntimeError):
    """No Kafka broker answered at the bootstrap address, or it stopped answering."""


class TopicError(RuntimeError):
    """A topic is missing or the topics are not co-partitioned."""


@dataclass(frozen=True)
class KafkaSettings:
    """Connection and group settings.

    Short group timeouts let two members split partitions in a few seconds (the demo broker
    holds a join for 3 s); a member must poll again within max_poll_interval_ms, a commit
    included. `transaction_timeout_ms`: the broker aborts a transaction left open that long,
    and a commit that cannot finish within it is given up (the partition is then restored).
    `security`: TLS and SASL (`streams.kafka.security`; default plaintext).
    `committed_reads`: how records of committed transactions are read back
    (`streams.kafka.committed`): ``"broker"`` (librdkafka's read_committed, for brokers that
    list aborted transactions), ``"client"`` (the client-side filter, for those that do not)
    or ``"auto"`` (the client-side filter on the demo broker only).
    """

    bootstrap_servers: str = "127.0.0.1:9092"
    session_timeout_ms: int = 6000
    heartbeat_interval_ms: int = 1000
    max_poll_interval_ms: int = 10000
    connect_timeout_ms: int = 10000  # give up at start when no broker answers within this
    fetch_max_wait_ms: int = 100
    transaction_timeout_ms: int = 60000
    security: ClientSecurity = field(default_factory=ClientSecurity)
    committed_reads: str = "auto"

    def librdkafka(self, **properties) -> dict:
        """A librdkafka (confluent-kafka) configuration: the connection and `properties`."""
        return {
            "bootstrap.servers": self.bootstrap_servers,
            "socket.connection.setup.timeout.ms": self.connect_timeout_ms,
            "logger": LIBRDKAFKA_LOG,
            **self.security.librdkafka(),
            **properties,
        }

    def kafka_python(self, **config) -> dict:
        """A kafka-python configuration: the connection and `config`."""
        return {
            "bootstrap_servers": self.bootstrap_servers,
            "bootstrap_timeout_ms": self.connect_timeout_ms,
            **self.security.kafka_python(),
            **config,
        }


def check_connection(settings: KafkaSettings) -> None:
    """Return once a broker answers; else `BrokerUnavailable` within the connect timeout, saying
    in one line why when librdkafka knows: an untrusted certificate, failed authentication, a
    listener speaking another protocol."""
    reasons = _Reasons()
    admin = AdminClient(settings.librdkafka(error_cb=reasons.error, logger=reasons))
    deadline = time.monotonic() + settings.connect_timeout_ms / 1000
    while True:
        try:
            admin.list_topics(timeout=0.25)
            return
        except KafkaException:
            admin.poll(0)  # serves the error callback
        if reasons.decisive is not None:
            raise BrokerUnavailable(
                f"cannot connect to the Kafka broker at {settings.bootstrap_servers}: "
                + reasons.decisive
            )
        if time.monotonic() > deadline:
            raise BrokerUnavailable(
                f"cannot reach a Kafka broker at {settings.bootstrap_servers} within "
                f"{settings.connect_timeout_ms} ms: {reasons.why(settings.security.protocol)}"
            )


class _Reasons:
    """librdkafka's errors and log lines while connecting, for `check_connection` (log lines
    go on to the `librdkafka` logger)."""

    DECISIVE = (LibrdkafkaError._SSL, LibrdkafkaError._AUTHENTICATION)

    def __init__(self):
        self.decisive: str | None = None
        self.hint: str | None = None

    def error(self, error) -> None:
        if error.code() in self.DECISIVE and self.decisive is None:
            self.decisive = _one_line(error.str())

    def log(self, level: int, fmt: str, *args) -> None:
        LIBRDKAFKA_LOG.log(level, fmt, *args)
        message = str(args[-1]) if args else fmt
        if "security.protocol" in message and self.hint is None:
            self.hint = _one_line(message)

    def why(self, protocol: str) -> str:
        return self.hint or (
            f"no answer (is the address right, and does its listener speak {protocol}?)"
        )


def _one_line(message: str) -> str:
    """librdkafka's message without its timing suffix, on one line."""
    return " ".join(re.sub(r" \(after \d+ms in state \w+\)", "", message).split())


def connect(factory: Callable, settings: KafkaSettings, **config):
    """A kafka-python client (`factory`: `KafkaConsumer`, `KafkaAdminClient`, ...) or
    `BrokerUnavailable` (saying why, from `check_connection`, where it can)."""
    try:
        return factory(**settings.kafka_python(**config))
    except KafkaTimeoutError as error:
        check_connection(settings)
        raise BrokerUnavailable(
            f"cannot reach a Kafka broker at {settings.bootstrap_servers} "
            f"within {settings.connect_timeout_ms} ms ({error})"
        ) from None


DEFAULT_REPLICATION = -1  # the broker's default.replication.factor (KIP-464, Kafka 2.4+)
# what a broker answers (or librdkafka says) when it cannot take DEFAULT_REPLICATION
_NO_DEFAULT_REPLICATION = (
    LibrdkafkaError._UNSUPPORTED_FEATURE,
    LibrdkafkaError.UNSUPPORTED_VERSION,
    LibrdkafkaError.INVALID_REPLICATION_FACTOR,
    LibrdkafkaError.INVALID_REQUEST,
)


def create_topics(
    bootstrap_servers: str | KafkaSettings,
    topics: dict[str, int],
    configs: dict[str, str] | None = None,
    replication_factor: int = DEFAULT_REPLICATION,
) -> None:
    """Create topics (name -> number of partitions, with topic `configs`) of
    `replication_factor` replicas each (-1: the broker's default); existing ones are left as
    they are. A broker that cannot take -1 (Apache Kafka before 2.4) gets the replicas of
    `fallback_replication`, said in a warning. `TopicError` when the broker refuses a topic."""
    settings = (
        bootstrap_servers
        if isinstance(bootstrap_servers, KafkaSettings)
        else KafkaSettings(bootstrap_servers)
    )
    check_connection(settings)  # BrokerUnavailable, saying why
    admin = AdminClient(settings.librdkafka())
    for name, partitions in topics.items():
        try:
            _create(admin, settings, name, partitions, replication_factor, configs or {})
        except KafkaException as exception:
            error = exception.args[0]
            if replication_factor != DEFAULT_REPLICATION or error.code() not in (
                _NO_DEFAULT_REPLICATION
            ):
                raise TopicError(f"cannot create topic {name!r}: {error.str()}") from None
            replicas = fallback_replication(len(admin.list_topics(timeout=5).brokers))
            log.warning(
                "the broker at %s cannot create topic %r with its default replication factor "
                "(%s): creating it with %d replicas (--replication-factor sets it)",
                settings.bootstrap_servers,
                name,
                error.str(),
                replicas,
            )
            create_topics(settings, {name: partitions}, configs, replicas)


def _create(admin, settings, name, partitions, replication_factor, configs) -> None:
    """Create one topic; one that exists already is left as it is."""
    timeout = settings.connect_timeout_ms / 1000
    topic = NewTopic(name, partitions, replication_factor=replication_factor, config=configs)
    try:
        admin.create_topics([topic], request_timeout=timeout)[name].result(timeout)
    except KafkaException as exception:
        if exception.args[0].code() != LibrdkafkaError.TOPIC_ALREADY_EXISTS:
            raise


def fallback_replication(brokers: int) -> int:
    """The replicas of a topic on a broker that has no default for it: 3 (Kafka's advice for
    durable topics), or every broker of a smaller cluster.

    >>> fallback_replication(5), fallback_replication(2)
    (3, 2)
    """
    return max(1, min(3, brokers))


def topic_replication(settings: KafkaSettings, topic: str) -> tuple[int, int]:
    """The fewest replicas of a partition of `topic`, and the brokers of the cluster."""
    admin = AdminClient(settings.librdkafka())
    metadata = admin.list_topics(topic, timeout=settings.connect_timeout_ms / 1000)
    found = metadata.topics.get(topic)
    if found is None or found.error is not None or not found.partitions:
        raise TopicError(f"topic {topic!r} does not exist on the broker")
    replicas = min(len(partition.replicas) for partition in found.partitions.values())
    return replicas, len(metadata.brokers)


def topic_partitions(settings: KafkaSettings, topic: str) -> list[int]:
    """The partition numbers of `topic`; `TopicError` when it does not exist."""
    consumer = connect(KafkaConsumer, settings)
    try:
        partitions = consumer.partitions_for_topic(topic)
    finally:
        consumer.close(autocommit=False)
    if not partitions:
        raise TopicError(f"topic {topic!r} does not exist on the broker")
    return sorted(partitions)


def log_reaches(settings: KafkaSettings, topic: str, partition: int, offset: int) -> bool:
    """Whether `topic`/`partition` holds records up to `offset` (its end is at least there).

    Tansu's ListOffsets answers the base offset of the log's last batch + 1 (an understatement)
    and its fetch replies' high watermarks are unreliable, so past that answer the record at
    `offset - 1` is fetched.
    """
    if offset <= 0:
        return True
    consumer = connect(
        KafkaConsumer,
        settings,
        enable_auto_commit=False,
        auto_offset_reset="latest",
        fetch_max_wait_ms=settings.fetch_max_wait_ms,
    )
    tp = TopicPartition(topic, partition)
    try:
        consumer.assign([tp])
        if consumer.end_offsets([tp])[tp] >= offset:
            return True
        consumer.seek(tp, offset - 1)
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            if consumer.poll(timeout_ms=100).get(tp):
                return True
            if consumer.position(tp) > offset - 1:  # moved past it: a control marker
                return True
        return False
    finally:
        consumer.close(autocommit=False)
