"""kill -9 `river-cw serve` at random points while a producer streams: exactly once end to end.

Every partition's final model equals the offline run over its examples, and a consumer of
committed records sees exactly one prediction per example, the offline run's.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import random
import re
import signal
import sys
import time

import pytest
from kafka import KafkaProducer

from streams import cli
from streams.cli.serve import build_model
from streams.io.files import sms_spam
from streams.kafka.client import create_topics
from streams.kafka.messages import encode_example
from tests.kafka.kafka_support import assert_same_model, offline, read_topic, stored_state

MODEL = "AROW()"  # with --text: TextClassifier(AROW(), on="text")
PARTITIONS = 2
KILLS = 20
FORK = multiprocessing.get_context("fork")


def serve_in_child(argv: list[str], log_path) -> None:
    """The body of a forked server: `river-cw serve` with its output in `log_path`."""
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    sys.stdout = sys.stderr = open(fd, "w", buffering=1)  # noqa: SIM115 - until os._exit
    logging.root.handlers.clear()  # pytest's capture handlers came along with the fork
    os._exit(cli.main(argv))


def fork_server(argv: list[str], log_path):
    """`river-cw ARGV` in a forked process writing to `log_path`: it starts at once, its
    modules already imported (the test process runs no Kafka client thread while forking)."""
    log_path.write_bytes(b"")
    process = FORK.Process(target=serve_in_child, args=(argv, str(log_path)), daemon=True)
    process.start()
    return process


def exits_cleanly(process, log_path, timeout: float = 120) -> str:
    """Wait for a forked server to stop by itself (idle) and check it exits 0; its log."""
    try:
        process.join(timeout)
        assert process.exitcode == 0, log_path.read_text()
    finally:
        process.kill()
        process.join()
    return log_path.read_text()


def start_server(broker, topic, log_path, idle_timeout="30"):
    """`river-cw serve` in a forked process: it starts at once, its modules already imported
    (the test process runs no Kafka client thread while servers are forked)."""
    argv = [
        "serve",
        "--model",
        MODEL,
        "--text",
        "--topic",
        topic,
        "--bootstrap-servers",
        broker.bootstrap_servers,
        "--checkpoint-every",
        "200",
        "--checkpoint-seconds",
        "0.5",
        "--idle-timeout",
        idle_timeout,
        "--log-seconds",
        "0.5",
        "--connect-timeout-ms",
        "5000",
    ]
    return fork_server(argv, log_path)


def wait_until_serving(log_path, process, timeout=30.0):
    """Until the server has restored (or found no state for) every partition."""
    deadline = time.monotonic() + timeout
    while len(re.findall(r"partition \d+: (restored|no stored state)", log_path.read_text())) < (
        PARTITIONS
    ):
        assert process.is_alive(), f"server exited early:\n{log_path.read_text()}"
        assert time.monotonic() < deadline, f"not serving yet:\n{log_path.read_text()}"
        time.sleep(0.02)


def wait_until_consuming(log_path, process, timeout=30.0) -> bool:
    """Until the server logs progress with records consumed; False if none come in `timeout`."""
    deadline = time.monotonic() + timeout
    while not any(int(n) for n in re.findall(r"(\d+) messages in", log_path.read_text())):
        assert process.is_alive(), f"server exited early:\n{log_path.read_text()}"
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def stream(bootstrap, topic, examples, seconds):
    """Produce the examples keyed by id (partition id % 2) over about `seconds` seconds."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    step = 100
    for start in range(0, len(examples), step):
        for i, x, y in examples[start : start + step]:
            producer.send(
                topic, key=str(i).encode(), value=encode_example(i, x, y), partition=i % PARTITIONS
            )
        producer.flush()
        time.sleep(seconds * step / len(examples))
    producer.close()


@pytest.mark.kafka
@pytest.mark.slow
def test_kill_9_at_random_points_while_streaming_is_exactly_once(
    kafka_broker, topic_name, tmp_path
):
    examples = [(i, x, y) for i, (x, y) in enumerate(list(sms_spam())[:5000])]
    rng = random.Random(7)
    topic = topic_name("crash")
    bootstrap = kafka_broker.bootstrap_servers
    create_topics(bootstrap, {topic: PARTITIONS, f"{topic}.predictions": PARTITIONS})
    producer = FORK.Process(target=stream, args=(bootstrap, topic, examples, 20.0))
    producer.start()
    kills = 0
    try:
        # kill while the stream goes on (it lasts 20 s: each server gets some of it)
        while kills < KILLS and producer.is_alive():
            log_path = tmp_path / f"serve-{kills}.log"
            process = start_server(kafka_broker, topic, log_path)
            try:
                wait_until_serving(log_path, process)
                # kill mid-stream, not while starting (a loaded machine starts slowly)
                if not wait_until_consuming(log_path, process, timeout=10.0):
                    break  # the stream has ended
                time.sleep(rng.uniform(0.0, 0.5))
                assert process.is_alive(), "the server stopped before it could be killed"
                os.kill(process.pid, signal.SIGKILL)
                process.join(10)
                assert process.exitcode == -signal.SIGKILL
                kills += 1
            finally:
                process.kill()
                process.join()
    finally:
        producer.join()
    assert producer.exitcode == 0

    log_path = tmp_path / "serve-final.log"
    exits_cleanly(start_server(kafka_broker, topic, log_path, idle_timeout="2"), log_path)

    expected = {}
    for p in range(PARTITIONS):
        mine = [e for e in examples if e[0] % PARTITIONS == p]
        reference, predictions = offline(build_model(MODEL, text=True), mine)
        state = stored_state(bootstrap, topic, p)
        assert (state.learned, state.offsets) == (len(mine), {topic: len(mine)})
        assert_same_model(state.model, reference, [x for _, x, _ in mine[:300]])
        expected |= {i: m | {"partition": p} for i, m in predictions.items()}
    committed = [json.loads(r.value) for r in read_topic(bootstrap, f"{topic}.predictions", 5000)]
    ids = sorted(int(p["id"]) for p in committed)
    assert ids == list(range(len(examples))), "duplicates or missing predictions"
    assert all(p == expected[p["id"]] for p in committed)
    # the kills did interrupt transactions: their predictions are in the log, aborted
    written = read_topic(bootstrap, f"{topic}.predictions", 5000, committed=False)
    print(f"{kills} kills; {len(written) - len(committed)} predictions written and aborted")
    assert kills >= 1 and len(written) > len(committed)  # some kill hit an open transaction
