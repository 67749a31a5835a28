"""`streams.kafka.security`: one parser of Kafka client properties, a translation per client, each
accepted by its client; bad properties named with their file and line; secrets never shown."""

from __future__ import annotations

import argparse

import pytest
from confluent_kafka import Producer
from kafka import KafkaConsumer
from kafka.net.sasl.oauth import AbstractTokenProvider

from streams.cli.security import add_connection_arguments, kafka_settings
from streams.kafka.client import KafkaSettings
from streams.kafka.security import ClientSecurity

SECRET = "s3cret-never-shown"


def token() -> tuple[str, float]:
    """An OAUTHBEARER token provider (named in properties as module:function)."""
    return "a-token", 4_000_000_000.0


@pytest.fixture
def pem(tmp_path):
    """Stand-ins for the PEM files (only their existence is checked before connecting)."""
    for name in ("ca.pem", "client.pem", "client.key"):
        (tmp_path / name).write_text("PEM\n")
    return tmp_path


def properties(pem, *lines: str) -> str:
    return "\n".join(lines).replace("PEM/", f"{pem}/") + "\n"


def test_sasl_ssl_with_mutual_tls_for_both_clients(pem):
    security = ClientSecurity.parse(
        properties(
            pem,
            "# a managed cluster",
            "security.protocol = SASL_SSL",
            "ssl.ca.location=PEM/ca.pem",
            "ssl.certificate.location=PEM/client.pem",
            "ssl.key.location=PEM/client.key",
            "ssl.key.password=" + SECRET,
            "ssl.endpoint.identification.algorithm=none",
            "sasl.mechanism=SCRAM-SHA-256",
            "sasl.username=river",
            "! a Java-style comment",
            "sasl.password=" + SECRET,
        ),
        "client.properties",
    )
    assert security.librdkafka() == {
        "security.protocol": "SASL_SSL",
        "ssl.endpoint.identification.algorithm": "none",
        "ssl.ca.location": f"{pem}/ca.pem",
        "ssl.certificate.location": f"{pem}/client.pem",
        "ssl.key.location": f"{pem}/client.key",
        "ssl.key.password": SECRET,
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": "river",
        "sasl.password": SECRET,
    }
    assert security.kafka_python() == {
        "security_protocol": "SASL_SSL",
        "ssl_check_hostname": False,
        "ssl_cafile": f"{pem}/ca.pem",
        "ssl_certfile": f"{pem}/client.pem",
        "ssl_keyfile": f"{pem}/client.key",
        "ssl_password": SECRET,
        "sasl_mechanism": "SCRAM-SHA-256",
        "sasl_plain_username": "river",
        "sasl_plain_password": SECRET,
    }
    assert SECRET not in repr(security) and SECRET not in repr(KafkaSettings(security=security))


def test_each_translation_is_accepted_by_its_client(pem):
    """Every name reaches a client that knows it (neither client connects when built; the
    system's CAs, as librdkafka reads a CA file when built)."""
    for text in (
        "security.protocol=SSL\nssl.endpoint.identification.algorithm=none\n",
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=u\n"
        "sasl.password=p\n",
        "security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\n"
        f"sasl.oauthbearer.token.provider={__name__}:token\n",
    ):
        settings = KafkaSettings(
            "127.0.0.1:1", security=ClientSecurity.parse(properties(pem, text), "f")
        )
        KafkaConsumer(**settings.kafka_python(api_version=(3, 0))).close()
        Producer(settings.librdkafka()).flush(0)


def test_oauthbearer_tokens_come_from_the_provider():
    security = ClientSecurity.parse(
        "security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\n"
        f"sasl.oauthbearer.token.provider={__name__}:token\n",
        "f",
    )
    assert security.librdkafka()["oauth_cb"]("librdkafka's config string") == token()
    provider = security.kafka_python()["sasl_oauth_token_provider"]
    assert isinstance(provider, AbstractTokenProvider) and provider.token() == "a-token"


def test_the_environment_overrides_the_file_and_plaintext_adds_nothing():
    text = "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=u\n"
    security = ClientSecurity.parse(text, "f", {"RIVER_CW_KAFKA_SASL_PASSWORD": SECRET})
    assert security.kafka_python()["sasl_plain_password"] == SECRET
    assert ClientSecurity().librdkafka() == {} == ClientSecurity().kafka_python()
    assert KafkaSettings().librdkafka().keys() == {
        "bootstrap.servers",
        "socket.connection.setup.timeout.ms",
        "logger",
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("security.protocol=TLS\n", "f: security.protocol must be one of"),
        (
            "ssl.truststore.location=x.jks\n",
            r"f, line 1: .*'ssl.truststore.location' \(give ssl.ca",
        ),
        ("# fine\nsasl.jaas.config=x\n", r"f, line 2: .*\(give sasl.username and sasl.password\)"),
        ("security.protocol=SASL_SSL\n", "needs a sasl.mechanism"),
        ("sasl.mechanism=PLAIN\n", "PLAINTEXT takes no sasl.mechanism"),
        ("security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n", "sasl.mechanism must be one of"),
        ("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n", "needs a username and password"),
        ("security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\n", "needs a token provider"),
        ("sasl.oauthbearer.token.provider=no.such:module\n", "is no module:function"),
        ("ssl.ca.location=/no/such.pem\n", "ssl.ca.location /no/such.pem: no such file"),
        ("ssl.endpoint.identification.algorithm=yes\n", "must be https or none"),
        ("security.protocol\n", "f, line 1: expected name=value"),
    ],
)
def test_bad_properties_are_named_with_where_they_come_from(text, message):
    with pytest.raises(ValueError, match=message):
        ClientSecurity.parse(text, "f")


def test_an_unknown_variable_is_named():
    with pytest.raises(ValueError, match=r"\$RIVER_CW_KAFKA_SASL_PASWORD: unknown"):
        ClientSecurity.parse("", "f", {"RIVER_CW_KAFKA_SASL_PASWORD": "x"})


def test_the_commands_settings_take_the_file_the_environment_and_the_flag(tmp_path):
    parser = argparse.ArgumentParser()
    add_connection_arguments(parser)
    path = tmp_path / "client.properties"
    path.write_text("bootstrap.servers=kafka:9093\nsecurity.protocol=SSL\n")
    args = parser.parse_args(["--kafka-config", str(path)])
    settings = kafka_settings(args, {}, connect_timeout_ms=5)
    assert (settings.bootstrap_servers, settings.security.protocol) == ("kafka:9093", "SSL")
    assert settings.connect_timeout_ms == 5
    args = parser.parse_args(["--kafka-config", str(path), "--bootstrap-servers", "b:1"])
    assert kafka_settings(args, {}).bootstrap_servers == "b:1"
    assert kafka_settings(parser.parse_args([]), {}).bootstrap_servers == "127.0.0.1:9092"
    with pytest.raises(ValueError, match="cannot read the Kafka client properties"):
        kafka_settings(parser.parse_args(["--kafka-config", str(tmp_path / "none")]), {})
