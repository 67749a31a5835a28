"""kill -9 `river-cw serve` at random points: the final model still equals an offline run."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time

import pytest

from streams import checkpoint
from streams.kafka_io import create_topics
from streams.serve_cli import build_model
from tests.conftest import read_jsonl, shuffled
from tests.kafka_support import REPO, assert_same_model, offline, produce_examples, read_topic

MODEL = "AROW()"  # with --text: BagOfWords(on="text") | AROW()


def start_server(broker, topic, checkpoint_dir, log_path):
    log = open(log_path, "wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streams.cli",
            "serve",
            "--model",
            MODEL,
            "--text",
            "--topic",
            topic,
            "--bootstrap-servers",
            broker.bootstrap_servers,
            "--partitions",
            "0",
            "--checkpoint-dir",
            str(checkpoint_dir),
            "--checkpoint-every",
            "100",
            "--idle-timeout",
            "1.5",
            "--log-seconds",
            "0.5",
            "--connect-timeout-ms",
            "5000",
        ],
        cwd=REPO,
        stdout=log,
        stderr=log,
    )
    log.close()
    return process


def wait_for_log(log_path, text, process, timeout=30.0):
    deadline = time.monotonic() + timeout
    while text not in log_path.read_text():
        assert process.poll() is None, f"server exited early:\n{log_path.read_text()}"
        assert time.monotonic() < deadline, f"no {text!r} in the log:\n{log_path.read_text()}"
        time.sleep(0.02)


@pytest.mark.kafka
@pytest.mark.slow
def test_kill_9_at_random_points_loses_and_repeats_nothing(kafka_broker, topic_name, tmp_path):
    rows = shuffled(read_jsonl("mdsd_sorted_acl_text.jsonl.gz"), seed=7)[:5000]
    examples = [(i, {"text": row["text"]}, row["label"]) for i, row in enumerate(rows)]
    rng = random.Random(7)
    topic = topic_name("crash")
    create_topics(kafka_broker.bootstrap_servers, {topic: 1, f"{topic}.predictions": 1})
    produce_examples(kafka_broker.bootstrap_servers, topic, examples)
    ckpt = tmp_path / f"{topic}-0.ckpt"

    progress = []  # examples learned in the checkpoint after each interruption
    for run, how in enumerate((signal.SIGKILL, signal.SIGKILL, signal.SIGTERM, signal.SIGKILL)):
        log_path = tmp_path / f"serve-{run}.log"
        process = start_server(kafka_broker, topic, tmp_path, log_path)
        try:
            wait_for_log(log_path, "partition 0:", process)
            time.sleep(rng.uniform(0.1, 0.6))
            assert process.poll() is None, "the server finished before it could be interrupted"
            process.send_signal(how)
            code = process.wait(timeout=10)
        finally:
            process.kill()
            process.wait()
        assert code == (0 if how == signal.SIGTERM else -signal.SIGKILL)
        state = checkpoint.load(ckpt)
        progress.append(0 if state is None else state.learned)
    # every interruption came before the end of the stream (the last run still has work to do)
    assert progress == sorted(progress) and progress[-1] < len(examples), progress

    log_path = tmp_path / "serve-final.log"
    process = start_server(kafka_broker, topic, tmp_path, log_path)
    try:
        assert process.wait(timeout=60) == 0, log_path.read_text()
    finally:
        process.kill()
        process.wait()

    state = checkpoint.load(ckpt)
    reference, expected = offline(build_model(MODEL, text=True), examples)
    assert (state.learned, state.offsets) == (len(examples), {topic: len(examples)})
    assert_same_model(state.model, reference, [e[1] for e in examples[:500]])
    # predictions are at-least-once: every id has one, and any repeat is the very same message
    predictions = [
        json.loads(r.value)
        for r in read_topic(kafka_broker.bootstrap_servers, f"{topic}.predictions", len(examples))
    ]
    assert {p["id"] for p in predictions} == {str(i) for i in range(len(examples))}
    assert all(p == expected[p["id"]] for p in predictions)
    print(
        f"checkpointed progress at interruptions: {progress}; "
        f"{len(predictions) - len(examples)} predictions repeated"
    )
