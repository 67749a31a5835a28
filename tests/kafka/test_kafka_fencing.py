"""A member fenced by a newer owner of its partition, against the real broker: it stops serving
the partition within seconds, though it has nothing to commit, and says so in one line."""

from __future__ import annotations

import logging
import time

import pytest

from river_cw import AROW
from streams.kafka.client import KafkaSettings, create_topics
from streams.kafka.outputs import Outputs
from tests.kafka.kafka_support import (
    ServerThread,
    model_server,
    produce_examples,
    read_all,
    synthetic,
    wait_until,
)

pytestmark = pytest.mark.kafka


def test_a_quiet_member_fenced_by_a_newer_owner_stops_serving_within_seconds(
    kafka_broker, topic_name, caplog
):
    caplog.set_level(logging.WARNING, logger="streams.kafka")
    bootstrap = kafka_broker.bootstrap_servers
    topic = topic_name("fenced")
    create_topics(bootstrap, {topic: 1})
    settings = KafkaSettings(bootstrap, connect_timeout_ms=5000)
    produce_examples(bootstrap, topic, synthetic(0, 50))
    server = model_server(AROW(), settings, topic, None, checkpoint_every=10)
    running = ServerThread(server)
    newer = None
    try:
        wait_until(read_all(server, topic, 50), what="50 read")
        wait_until(lambda: not server.tasks[0].dirty, what="committed")
        # a newer owner's producer (a member that took the partition over) fences this one
        newer = Outputs(settings, f"river-cw.{topic}.state.0")
        fenced = time.monotonic()
        wait_until(lambda: 0 not in server.tasks, timeout=10, what="partition 0 dropped")
        assert time.monotonic() - fenced < server.config.owner_check_seconds + 2
        assert not server.ready()
    finally:
        running.stop()
        if newer is not None:
            newer.close()
    ours = [r for r in caplog.records if r.name.startswith("streams.")]  # `serve` shows these
    lines = [r.getMessage() for r in ours if "fenced" in r.getMessage()]
    assert lines == ["partition 0: fenced by a newer owner: no longer served here"]
