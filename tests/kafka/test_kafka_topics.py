"""The topics `serve` creates, against the real broker: their replication factor (the broker's
default, or `--replication-factor`) and the configuration of a durable changelog; the metrics
endpoint's address (`--metrics-host`)."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from streams import cli
from streams.kafka.broker import free_port
from streams.kafka.client import KafkaSettings, create_topics, topic_replication
from streams.kafka.config import ServeConfig, Topics
from streams.kafka.envelope import StateKeys
from tests.kafka.kafka_support import produce_examples, synthetic

pytestmark = pytest.mark.kafka


def topic_configs(bootstrap: str, topic: str) -> dict[str, str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.TOPIC, topic)
    found = admin.describe_configs([resource])[resource].result(timeout=10)
    return {name: entry.value for name, entry in found.items()}


def serve(bootstrap: str, topic: str, *options: str) -> int:
    """`river-cw serve` on `topic` until it has been idle for a second."""
    return cli.main(
        [
            "serve",
            "--bootstrap-servers",
            bootstrap,
            "--topic",
            topic,
            "--model",
            "AROW()",
            "--idle-timeout",
            "1",
            "--checkpoint-every",
            "10",
            *options,
        ]
    )


def test_the_state_topic_takes_the_brokers_replication_and_a_changelogs_configuration(
    kafka_broker, topic_name
):
    bootstrap = kafka_broker.bootstrap_servers
    topic = topic_name("replicated-default")
    create_topics(bootstrap, {topic: 2})
    produce_examples(bootstrap, topic, synthetic(0, 20), partitions=lambda i: i % 2)
    assert serve(bootstrap, topic) == 0
    state = f"{topic}.state"
    assert topic_replication(KafkaSettings(bootstrap), state) == (1, 1)  # the demo broker's
    configs = topic_configs(bootstrap, state)
    assert configs["cleanup.policy"] == "compact"
    assert configs["message.timestamp.type"] == "CreateTime"  # as Kafka Streams' changelogs
    assert "min.insync.replicas" not in configs  # the broker's own


def test_replication_factor_3_also_asks_two_replicas_in_sync(kafka_broker, topic_name):
    # the demo broker keeps one copy whatever it is asked, but reports the replicas asked for
    bootstrap = kafka_broker.bootstrap_servers
    topic = topic_name("replicated-3")
    create_topics(bootstrap, {topic: 1})
    produce_examples(bootstrap, topic, synthetic(0, 20))
    assert serve(bootstrap, topic, "--replication-factor", "3", "--mix", "kl") == 0
    for created in (f"{topic}.state", f"{topic}.models"):
        assert topic_replication(KafkaSettings(bootstrap), created)[0] == 3
        assert topic_configs(bootstrap, created)["min.insync.replicas"] == "2"


@pytest.mark.parametrize("replicas", [0, -2, 1.5])
def test_a_bad_replication_factor_is_refused(replicas):
    with pytest.raises(ValueError, match="replication_factor must be -1"):
        ServeConfig(Topics("sms"), StateKeys.insecure(), replication_factor=replicas)


def test_the_metrics_endpoint_listens_on_metrics_host(kafka_broker, topic_name):
    bootstrap = kafka_broker.bootstrap_servers
    topic = topic_name("metrics-host")
    create_topics(bootstrap, {topic: 1})
    produce_examples(bootstrap, topic, synthetic(0, 20))
    port = free_port("127.0.0.2")
    answers: dict[str, object] = {}

    def probe() -> None:  # while serve runs in the main thread (it takes the signals)
        while "127.0.0.2" not in answers:
            try:
                with urllib.request.urlopen(f"http://127.0.0.2:{port}/health", timeout=1) as r:
                    answers["127.0.0.2"] = r.status
            except (urllib.error.URLError, ConnectionError):
                pass
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
            answers["127.0.0.1"] = "answered"
        except (urllib.error.URLError, ConnectionError) as error:
            answers["127.0.0.1"] = type(error).__name__

    prober = threading.Thread(target=probe, daemon=True)
    prober.start()
    options = ["--metrics-port", str(port), "--metrics-host", "127.0.0.2"]
    assert serve(bootstrap, topic, *options) == 0
    prober.join(5)
    assert answers["127.0.0.2"] == 200
    assert answers["127.0.0.1"] != "answered"  # only the address asked for
