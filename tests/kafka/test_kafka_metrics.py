"""What an operator watches: Prometheus metrics, /health and /ready, the warning of a member
without partitions, and `river-cw tail`, against the real broker."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from river_cw import AROW
from streams.kafka.client import KafkaSettings, create_topics
from streams.kafka.messages import encode_example
from streams.kafka.metrics import MetricsServer
from tests.conftest import read_jsonl, shuffled
from tests.kafka.kafka_support import REPO, ServerThread, model_server, produce, wait_until

pytestmark = pytest.mark.kafka


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=60) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def samples(text: str) -> dict:
    """(metric sample name, sorted labels) -> value."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_metrics_health_and_readiness_are_served(kafka_broker, topic_name):
    rows = shuffled(read_jsonl("spambase.jsonl.gz"), seed=11)[:400]
    topic = topic_name("metrics")
    bootstrap = kafka_broker.bootstrap_servers
    create_topics(bootstrap, {topic: 2, f"{topic}.dead": 1})
    values = [encode_example(i, row["x"], row["label"]) for i, row in enumerate(rows)]
    values.insert(100, b"not json")
    produce(bootstrap, topic, values, partitions=[i % 2 for i in range(len(values))])
    server = model_server(AROW(), KafkaSettings(bootstrap), topic, None, checkpoint_every=50)
    http = MetricsServer(server, 0, host="127.0.0.1")
    try:
        assert get(http.port, "/ready")[0] == 503  # not serving yet
        running = ServerThread(server)
        try:
            wait_until(lambda: get(http.port, "/ready")[0] == 200, what="ready")
            learned = lambda: sum(s.learned for s in server.states.values())  # noqa: E731
            wait_until(lambda: learned() == 400, what="every example learned")
            wait_until(lambda: server.lag() == {0: 0, 1: 0}, what="no lag")
            assert running.thread.is_alive(), repr(running.error)
            assert get(http.port, "/health") == (200, "live\n")
            status, text = get(http.port, "/metrics")
        finally:
            running.stop()
        assert get(http.port, "/ready")[0] == 503  # stopped: no partition any more
    finally:
        http.close()
    assert status == 200
    found = samples(text)
    for p, bad in ((0, 1), (1, 0)):  # the bad record went to partition 0 (position 100)
        label = (("partition", str(p)),)
        assert found[("river_cw_predictions_total", label)] == 200
        assert found[("river_cw_learned_total", label)] == 200
        assert found[("river_cw_messages_total", (("partition", str(p)), ("topic", topic)))] == (
            200 + bad
        )
        state = server.states[p]
        assert found[("river_cw_prequential_accuracy", label)] == state.correct / state.scored
        assert 0.5 < found[("river_cw_prequential_accuracy_recent", label)] <= 1.0
        assert found[("river_cw_consumer_lag", label)] == 0
        assert found[("river_cw_restore_seconds", label)] >= 0
        assert found[("river_cw_skipped_updates_total", label)] == 0
    assert found[("river_cw_dead_letters_total", (("partition", "0"), ("reason", "invalid")))] == 1
    assert found[("river_cw_assigned_partitions", ())] == 2
    assert found[("river_cw_commit_seconds_count", ())] >= 8  # 2 x 200 / 50 at least


def test_a_member_without_partitions_says_why(kafka_broker, topic_name, caplog):
    caplog.set_level(logging.WARNING, logger="streams.kafka")
    topic, group = topic_name("crowded"), topic_name("crowded-group")
    create_topics(kafka_broker.bootstrap_servers, {topic: 1})
    settings = KafkaSettings(
        kafka_broker.bootstrap_servers, session_timeout_ms=3000, heartbeat_interval_ms=500
    )
    members = [
        ServerThread(model_server(AROW(), settings, topic, None, group_id=group)) for _ in range(2)
    ]
    try:
        # on a loaded machine the first assignment can itself take longer than the warning's
        # delay, and then both members warn before one of them gets the partition
        wait_until(
            lambda: (
                "no partition assigned" in caplog.text and any(m.server.states for m in members)
            ),
            40,
            "a member serving and the warning",
        )
        owners = [m for m in members if m.server.states]
        assert len(owners) == 1  # the other one waits as a standby
    finally:
        for member in members:
            member.server.stop()
        for member in members:
            member.stop()
    warnings = [r.getMessage() for r in caplog.records if "no partition" in r.getMessage()]
    assert 1 <= len(warnings) <= 2  # the standby's, and the owner's if it waited as long first
    for warning in warnings:
        assert (
            f"group {group!r}: it may have more members than {topic} has partitions (1" in warning
        )
        assert "restart the broker or serve with another --group-id" in warning


def tail(*args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "streams.cli", "tail", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_tail_prints_committed_predictions_and_dead_letters(kafka_broker, topic_name):
    rows = shuffled(read_jsonl("spambase.jsonl.gz"), seed=12)[:100]
    topic = topic_name("tailed")
    bootstrap = kafka_broker.bootstrap_servers
    create_topics(bootstrap, {topic: 1, f"{topic}.predictions": 1, f"{topic}.dead": 1})
    values = [encode_example(i, row["x"], row["label"]) for i, row in enumerate(rows)]
    produce(bootstrap, topic, [*values[:50], b'{"id": 1, "x": [1]}', *values[50:]])
    server = model_server(AROW(), KafkaSettings(bootstrap), topic, None, checkpoint_every=30)
    running = ServerThread(server)
    try:
        wait_until(lambda: server.states.get(0) and server.states[0].offsets.get(topic) == 101)
    finally:
        running.stop()
    common = ["--bootstrap-servers", bootstrap, "--topic", topic, "--idle-timeout", "1"]
    predictions = [json.loads(line) for line in tail(*common, "--from-beginning")]
    assert [p["id"] for p in predictions] == [str(i) for i in range(100)]  # once each
    # librdkafka's read_committed reads the same where no transaction was aborted
    broker = tail(*common, "--from-beginning", "--committed-reads", "broker")
    assert [json.loads(line) for line in broker] == predictions
    letters = tail(
        *common, "--from-beginning", "--dead-letters", "--dead-letter-topic", f"{topic}.dead"
    )
    (letter,) = [json.loads(line) for line in letters]
    assert letter["reason"].startswith("wrong type: 'x' must be an object")
    assert (letter["topic"], letter["partition"], letter["offset"]) == (topic, 0, 50)
    assert letter["value"] == '{"id": 1, "x": [1]}'
    assert tail(*common) == []  # from the end: nothing new


def test_a_round_that_cannot_be_mixed_is_served_through_logged_and_counted(
    kafka_broker, topic_name, monkeypatch, caplog
):
    """A mixing server whose round 2 `combine` refuses (the fault injected as in
    tests/mixing/test_mixing_protocol.py): it keeps serving, logs the round in one warning line,
    counts it in `river_cw_mixing_rounds_failed_total`, and mixes the rounds after it."""
    from tests.mixing.test_mixing_protocol import REFUSED, refusing

    caplog.set_level(logging.INFO, logger="streams.models.mixing")
    refused = refusing(monkeypatch, 2)
    rows = shuffled(read_jsonl("spambase.jsonl.gz"), seed=13)[:300]
    topic = topic_name("refused")
    bootstrap = kafka_broker.bootstrap_servers
    create_topics(bootstrap, {topic: 2})
    values = [encode_example(i, row["x"], row["label"]) for i, row in enumerate(rows)]
    produce(bootstrap, topic, values, partitions=[i % 2 for i in range(len(values))])
    server = model_server(
        AROW(),
        KafkaSettings(bootstrap),
        topic,
        None,
        checkpoint_every=50,
        checkpoint_seconds=0.5,
        mix={"method": "kl", "every": 25, "seconds": 0.5, "lag": 25},
    )
    http = MetricsServer(server, 0, host="127.0.0.1")
    try:
        running = ServerThread(server)
        try:  # every example learned, and the last round (all of them) mixed
            wait_until(
                lambda: (
                    len(server.states) == 2
                    and all(s.mixing.examples == len(rows) for s in server.states.values())
                ),
                60,
                "every example mixed",
            )
            status, text = get(http.port, "/metrics")
        finally:
            running.stop()
    finally:
        http.close()
    assert status == 200 and set(refused) == {2}
    found = samples(text)
    assert found[("river_cw_mixing_rounds_failed_total", ())] == 1
    for p in range(2):  # rounds 0 to 5 at least: 150 examples each, 25 a round
        assert found[("river_cw_mixing_rounds_total", (("partition", str(p)),))] >= 6
    warnings = [
        r.getMessage()
        for r in caplog.records
        if r.name == "streams.models.mixing" and r.levelno >= logging.WARNING
    ]
    assert warnings == [
        "round 2 not mixed (every partition keeps its model, mixing again next round): " + REFUSED
    ]
