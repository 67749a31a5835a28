"""Secured connections against the real broker: TLS through a TLS-terminating proxy in front of
Tansu's plaintext listener (the broker advertises the proxy, so every client goes through TLS),
SASL against Tansu with `--authentication`.

The server serves exactly once over TLS, restarting in the middle (its restore reads the state
topic over TLS too); `serve`, `inspect` and `tail` take `--kafka-config`. An untrusted
certificate, a client speaking another protocol than the listener, and a wrong password each
end the command with a one-line error within the connect timeout, and no secret is logged.

SCRAM end to end (a user that logs in) is not tested: Tansu 0.6's `user create` must talk to the
broker, which with `--authentication` refuses it before any login (the command takes no
credentials), and its in-memory storage does not survive a restart without `--authentication`.
"""

from __future__ import annotations

import json
import time

import pytest

from river_cw import AROW
from streams import cli
from streams.kafka.broker import TansuBroker, free_port
from streams.kafka.client import BrokerUnavailable, KafkaSettings, check_connection, create_topics
from streams.kafka.security import ClientSecurity
from tests.conftest import require_broker_package
from tests.kafka.kafka_support import (
    assert_exactly_once,
    model_server,
    produce_examples,
    read_all,
    read_topic,
    serve_until,
    synthetic,
)
from tests.kafka.tls_support import TlsProxy, certificates

pytestmark = pytest.mark.kafka
CONNECT_MS = 4000
SECRET = "hunter2-never-logged"


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    """(broker, proxy, certificates): Tansu reached through the TLS proxy only."""
    require_broker_package()
    certs = certificates(tmp_path_factory.mktemp("certificates"))
    port = free_port()
    with TansuBroker(advertised=f"127.0.0.1:{port}") as broker:
        proxy = TlsProxy(broker.bootstrap_servers, certs, port)
        try:
            yield broker, proxy, certs
        finally:
            proxy.stop()


def tls_settings(address: str, certs) -> KafkaSettings:
    security = ClientSecurity(protocol="SSL", ca_location=str(certs.ca))
    return KafkaSettings(address, connect_timeout_ms=CONNECT_MS, security=security)


def test_serving_over_tls_is_exactly_once_across_a_restart(tls, topic_name):
    _, proxy, certs = tls
    settings = tls_settings(proxy.address, certs)
    topic = topic_name("tls")
    create_topics(settings, {topic: 2, f"{topic}.predictions": 2})
    stream = synthetic(0, 400)
    produce_examples(settings, topic, stream[:200], partitions=lambda i: i % 2)
    first = model_server(AROW(), settings, topic, None, checkpoint_every=30)
    serve_until(first, read_all(first, topic, 100, (0, 1)), what="100 read in each partition")
    produce_examples(settings, topic, stream[200:], partitions=lambda i: i % 2)
    second = model_server(AROW(), settings, topic, None, checkpoint_every=30)  # restores over TLS
    serve_until(second, read_all(second, topic, 200, (0, 1)), what="200 read in each partition")
    assert_exactly_once(settings, topic, stream, 2, AROW)


def test_the_commands_take_a_kafka_config_file(tls, topic_name, tmp_path, capsys):
    _, proxy, certs = tls
    settings = tls_settings(proxy.address, certs)
    topic = topic_name("tls-cli")
    create_topics(settings, {topic: 1})
    produce_examples(settings, topic, synthetic(0, 20))
    config = tmp_path / "client.properties"
    config.write_text(f"bootstrap.servers={proxy.address}\nsecurity.protocol=SSL\n")
    # the CA comes from the environment, as a secret would
    env = {"RIVER_CW_KAFKA_SSL_CA_LOCATION": str(certs.ca)}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        common = ["--topic", topic, "--kafka-config", str(config)]
        assert cli.main(["serve", *common, "--model", "AROW()", "--idle-timeout", "1"]) == 0
        assert cli.main(["inspect", *common]) == 0
        assert f"partition 0 of {topic}: AROW()" in capsys.readouterr().out
        assert cli.main(["tail", *common, "--from-beginning", "--idle-timeout", "1"]) == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted(int(p["id"]) for p in printed) == list(range(20))
    assert len(read_topic(settings, f"{topic}.predictions")) == 20


def refused(settings: KafkaSettings) -> tuple[str, float]:
    """`check_connection`'s error and how long it took."""
    started = time.monotonic()
    with pytest.raises(BrokerUnavailable) as error:
        check_connection(settings)
    return str(error.value), time.monotonic() - started


def test_an_untrusted_certificate_or_another_protocol_is_one_line_within_the_timeout(tls):
    broker, proxy, certs = tls
    untrusted = KafkaSettings(
        proxy.address,
        connect_timeout_ms=CONNECT_MS,
        security=ClientSecurity(protocol="SSL", ca_location=str(certs.other_ca)),
    )
    message, seconds = refused(untrusted)
    assert message.startswith(f"cannot connect to the Kafka broker at {proxy.address}: ")
    assert "certificate verify failed" in message and "\n" not in message
    assert seconds < CONNECT_MS / 1000
    for settings, protocol in (
        (KafkaSettings(proxy.address, connect_timeout_ms=CONNECT_MS), "PLAINTEXT"),
        (tls_settings(broker.bootstrap_servers, certs), "SSL"),
    ):
        message, seconds = refused(settings)
        assert message == (
            f"cannot reach a Kafka broker at {settings.bootstrap_servers} within {CONNECT_MS} "
            f"ms: no answer (is the address right, and does its listener speak {protocol}?)"
        )
        assert seconds < CONNECT_MS / 1000 + 1.0


def test_a_wrong_password_is_one_line_within_the_timeout_and_never_logged(tmp_path, capfd):
    require_broker_package()
    config = tmp_path / "client.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\nsasl.username=river\n"
    )
    with TansuBroker(authentication=True) as broker, pytest.MonkeyPatch.context() as patch:
        patch.setenv("RIVER_CW_KAFKA_SASL_PASSWORD", SECRET)
        started = time.monotonic()
        code = cli.main(
            ["serve", "--bootstrap-servers", broker.bootstrap_servers, "--topic", "t",
             "--model", "AROW()", "--kafka-config", str(config), "--log-level", "debug",
             "--connect-timeout-ms", str(CONNECT_MS)]
        )  # fmt: skip
        seconds = time.monotonic() - started
        assert cli.main(["tail", "--bootstrap-servers", broker.bootstrap_servers, "--topic", "t",
                         "--kafka-config", str(config)]) == 1  # fmt: skip
    out, err = capfd.readouterr()
    assert code == 1 and seconds < CONNECT_MS / 1000
    (line,) = [line for line in err.splitlines() if line.startswith("river-cw serve: error")]
    assert line.startswith(
        f"river-cw serve: error: cannot connect to the Kafka broker at {broker.bootstrap_servers}"
    )
    assert "SASL authentication error" in line
    assert "river-cw tail: error: cannot connect to the Kafka broker" in err
    assert "SCRAM" in err  # debug logging was on ...
    assert SECRET not in out + err  # ... and the password is nowhere
