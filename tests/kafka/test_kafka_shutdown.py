"""Stopping `river-cw serve` at any moment: SIGTERM or Ctrl-C before the first assignment, in the
middle of a batch and during a mixing round; the process exits within 3 s (0, or 130 after
Ctrl-C), leaves its group so that the next member gets the partitions at once, and a restart
serves every example exactly once."""

from __future__ import annotations

import json
import os
import re
import signal
import time

import pytest

from streams.cli.serve import build_model
from streams.io.files import sms_spam
from streams.kafka.client import create_topics
from tests.kafka.kafka_support import (
    assert_exactly_once,
    produce_examples,
    read_topic,
    stored_state,
    wait_until,
)
from tests.kafka.test_kafka_crash import FORK, exits_cleanly, fork_server, stream

pytestmark = pytest.mark.kafka
PARTITIONS = 2


def text_arow():
    return build_model("AROW()", text=True)


EXIT_SECONDS = 3.0


def serve_argv(bootstrap, topic, group, *extra):
    return [
        "serve", "--model", "AROW()", "--text", "--topic", topic, "--bootstrap-servers",
        bootstrap, "--group-id", group, "--checkpoint-every", "100", "--log-seconds", "0.2",
        "--session-timeout-ms", "3000", "--heartbeat-interval-ms", "500", *extra,
    ]  # fmt: skip


def stop(process, signum) -> float:
    """Send `signum`; the seconds until the process exited."""
    sent = time.monotonic()
    os.kill(process.pid, signum)
    process.join(30)
    return time.monotonic() - sent


def consumed(log_path) -> int:
    return max((int(n) for n in re.findall(r"(\d+) messages in", log_path.read_text())), default=0)


def test_a_stop_at_any_moment_exits_in_time_and_loses_or_repeats_nothing(
    kafka_broker, topic_name, tmp_path
):
    examples = [(i, x, y) for i, (x, y) in enumerate(list(sms_spam())[:3000])]
    bootstrap = kafka_broker.bootstrap_servers
    topic, group = topic_name("stop"), topic_name("stop-group")
    create_topics(bootstrap, {topic: PARTITIONS, f"{topic}.predictions": PARTITIONS})
    producer = FORK.Process(target=stream, args=(bootstrap, topic, examples, 15.0))
    producer.start()
    argv = serve_argv(bootstrap, topic, group)

    # before its first assignment: SIGTERM while it joins the group
    log = tmp_path / "joining.log"
    process = fork_server(argv, log)
    time.sleep(0.3)
    assert "restored" not in log.read_text() and "no stored state" not in log.read_text()
    seconds = stop(process, signal.SIGTERM)
    assert process.exitcode == 0 and seconds < EXIT_SECONDS, (seconds, log.read_text())

    # in the middle of a batch: Ctrl-C, then SIGTERM; each next member is assigned at once
    for name, signum, code in (("ctrl-c", signal.SIGINT, 130), ("sigterm", signal.SIGTERM, 0)):
        log = tmp_path / f"{name}.log"
        process = fork_server(argv, log)
        wait_until(lambda: consumed(log) > 0, 15, f"{name}: assigned at once and serving")
        seconds = stop(process, signum)
        assert process.exitcode == code and seconds < EXIT_SECONDS, (seconds, log.read_text())
        assert "Traceback" not in log.read_text()
    producer.join(60)
    assert producer.exitcode == 0

    log = tmp_path / "final.log"
    lines = exits_cleanly(fork_server([*argv, "--idle-timeout", "2"], log), log).splitlines()
    loggers = {line.split()[2] for line in lines if line.strip()}
    assert all(name.startswith("streams.") for name in loggers), loggers  # no client chatter
    assert_exactly_once(bootstrap, topic, examples, PARTITIONS, text_arow)


def test_a_stop_during_a_mixing_round_exits_in_time_and_the_rounds_go_on(
    kafka_broker, topic_name, tmp_path
):
    examples = [(i, x, y) for i, (x, y) in enumerate(list(sms_spam())[:1200])]
    bootstrap = kafka_broker.bootstrap_servers
    topic, group = topic_name("stop-mix"), topic_name("stop-mix-group")
    create_topics(bootstrap, {topic: PARTITIONS, f"{topic}.predictions": 1})
    produce_examples(bootstrap, topic, examples, partitions=lambda i: i % PARTITIONS)
    argv = serve_argv(
        bootstrap, topic, group, "--mix", "kl", "--mix-every", "20", "--mix-lag", "20"
    )
    log = tmp_path / "mixing.log"
    process = fork_server(argv, log)
    wait_until(lambda: "mixed round 2 " in log.read_text(), 60, "mixing rounds")
    seconds = stop(process, signal.SIGTERM)
    assert process.exitcode == 0 and seconds < EXIT_SECONDS, (seconds, log.read_text())

    log = tmp_path / "final.log"
    exits_cleanly(fork_server([*argv, "--idle-timeout", "3"], log), log, timeout=180)
    states = [stored_state(bootstrap, topic, p) for p in range(PARTITIONS)]
    assert sum(s.learned for s in states) == len(examples)
    assert states[0].mixing.round == states[1].mixing.round
    committed = read_topic(bootstrap, f"{topic}.predictions", len(examples))
    assert sorted(int(json.loads(r.value)["id"]) for r in committed) == list(range(len(examples)))
