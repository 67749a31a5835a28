"""The options the Kafka commands share: the connection (`streams.kafka.security`) and, for
`serve` and `inspect`, authenticated state (`streams.kafka.envelope`).

``--kafka-config FILE`` (librdkafka's property names) and ``RIVER_CW_KAFKA_*`` variables say how
to connect to a secured cluster. A key file (``--state-key-file``) or the ``RIVER_CW_STATE_KEYS``
variable gives the keys that seal and verify what the server reads back from its state and
models topics; without either, the command refuses to run unless ``--insecure-state`` says the
topics' bytes are trusted.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Mapping

from streams.kafka.config import COMMITTED_READS, ENVIRONMENT_PREFIX
from streams.kafka.envelope import ENVIRONMENT, KEY_HINT, StateKeys

# streams.kafka.client and streams.kafka.security (kafka-python, librdkafka) are imported where
# the settings are made: `river-cw evaluate FILE` takes these options without loading a client.

log = logging.getLogger(__name__)
DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


def add_connection_arguments(parser: argparse._ActionsContainer) -> None:
    parser.add_argument(
        "--bootstrap-servers",
        help=f"default: --kafka-config's bootstrap.servers, else {DEFAULT_BOOTSTRAP}",
    )
    parser.add_argument(
        "--kafka-config",
        metavar="FILE",
        help="Kafka client properties for a secured cluster, with librdkafka's names: "
        "security.protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), ssl.ca.location, "
        "ssl.certificate.location, ssl.key.location, ssl.key.password, "
        "ssl.endpoint.identification.algorithm (https or none), sasl.mechanism (PLAIN, "
        "SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER), sasl.username, sasl.password, "
        "sasl.oauthbearer.token.provider (module:function), bootstrap.servers; a variable "
        f"{ENVIRONMENT_PREFIX}<NAME> (e.g. {ENVIRONMENT_PREFIX}SASL_PASSWORD) overrides a "
        "property: keep secrets out of command lines",
    )
    parser.add_argument(
        "--committed-reads",
        choices=COMMITTED_READS,
        default="auto",
        help="how records of committed transactions are read back (the state topic, tail's "
        "predictions, evaluate's topics): broker: librdkafka's read_committed, for brokers that list "
        "aborted transactions (Apache Kafka); client: a client-side filter of the commit and "
        "abort markers, for brokers that do not (Tansu); auto: client on the demo broker "
        "(recognised by Tansu's cluster id), else broker (default: %(default)s)",
    )


def kafka_settings(args: argparse.Namespace, environ: Mapping[str, str] = os.environ, **kw):
    """The `KafkaSettings` of `args`' connection options (`kw`: the other settings);
    `ValueError` naming the file and line of a bad property."""
    from streams.kafka.client import KafkaSettings
    from streams.kafka.security import ClientSecurity

    security = ClientSecurity.load(args.kafka_config, environ)
    servers = args.bootstrap_servers or security.bootstrap_servers or DEFAULT_BOOTSTRAP
    reads = getattr(args, "committed_reads", "auto")
    return KafkaSettings(servers, security=security, committed_reads=reads, **kw)


def add_state_key_arguments(parser: argparse.ArgumentParser) -> None:
    keys = parser.add_mutually_exclusive_group()
    keys.add_argument(
        "--state-key-file",
        metavar="PATH",
        help="HMAC keys (one per line, the first signs; older ones still verify, for rotation) "
        "that seal the state and models topics' records, so that bytes produced by anyone "
        f"else are never unpickled; or set ${ENVIRONMENT} (keys, comma-separated); {KEY_HINT}",
    )
    keys.add_argument(
        "--insecure-state",
        action="store_true",
        help="no key: trust every byte of the state and models topics (whoever can produce to "
        "them runs code in this process); for demos on a broker of your own",
    )


def state_keys(args: argparse.Namespace, environ: Mapping[str, str] = os.environ) -> StateKeys:
    """The keys `args` and the environment give; `ValueError` saying how to make one when
    there is none and ``--insecure-state`` was not given."""
    if args.state_key_file:
        return StateKeys.from_file(args.state_key_file)
    keys = StateKeys.from_environment(environ)
    if keys is not None:
        return keys
    if args.insecure_state:
        log.warning("--insecure-state: the state and models topics' records are not verified")
        return StateKeys.insecure()
    raise ValueError(
        f"no state key: give --state-key-file PATH or set ${ENVIRONMENT} ({KEY_HINT}), or "
        "--insecure-state to trust every byte of the state and models topics"
    )
