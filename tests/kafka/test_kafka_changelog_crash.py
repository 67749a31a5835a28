"""kill -9 of `river-cw serve` at every kind of point of its commits of a large model's changelog.

A server warm-started from a large text model (`--init-model`, a snapshot of three chunks)
writes a snapshot every fourth commit and the changes in between. Each life of the server kills
itself with SIGKILL (a real kill -9, from inside the process so that it lands where intended) at
the n-th step of its state writes: before a chunk of a snapshot or of changes is sent, before
a manifest, before the commit of their transaction, or right after it (between a snapshot and
the changes that follow it), restore included. After the kills a last server finishes the
stream. The state restored, and the model `river-cw inspect --export` writes, are the offline
run's over the same records, bit for bit, and every prediction was committed exactly once.
"""

from __future__ import annotations

import os
import pickle
import random
import re
import signal

import pytest

from benchmarks.serve_throughput import text_model
from river_cw import state
from streams import cli
from streams.io.files import sms_spam
from streams.kafka.client import create_topics
from tests.kafka.kafka_support import (
    assert_exactly_once,
    assert_same_model,
    offline,
    produce_examples,
)
from tests.kafka.test_kafka_crash import FORK, exits_cleanly, fork_server, serve_in_child

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

KILLS = 12


def die_at_step(argv: list[str], log_path: str, step: int) -> None:
    """`serve_in_child`, killed by SIGKILL at the `step`-th state write: each record sent to
    the state topic and each commit, before and after it, counts one. It logs where first."""
    from streams.kafka.outputs import Outputs

    steps = [0]
    send, commit = Outputs.send, Outputs.commit

    def tick(where: str):
        steps[0] += 1
        if steps[0] == step:
            with open(log_path, "a") as log:
                log.write(f"killed {where}\n")
            os.kill(os.getpid(), signal.SIGKILL)

    def sending(self, topic, value=None, key=None, *args, **kwargs):
        if topic.endswith(".state"):
            tick(f"before sending {key.decode()}")
        return send(self, topic, value, key, *args, **kwargs)

    def committing(self, *args, **kwargs):
        tick("before a commit")
        commit(self, *args, **kwargs)
        tick("after a commit")

    Outputs.send, Outputs.commit = sending, committing
    serve_in_child(argv, log_path)


def test_kill_9_inside_the_commits_of_a_large_models_changelog_is_exactly_once(
    kafka_broker, topic_name, tmp_path
):
    model = text_model(60_000)  # the benchmark's model of random words
    init = tmp_path / "init.pkl"
    init.write_bytes(pickle.dumps(model))
    examples = [(i, x, y) for i, (x, y) in enumerate(list(sms_spam())[:2000])]
    topic = topic_name("changelog-crash")
    bootstrap = kafka_broker.bootstrap_servers
    create_topics(bootstrap, {topic: 1, f"{topic}.predictions": 1})
    produce_examples(bootstrap, topic, examples)
    argv = [
        "serve",
        "--init-model",
        str(init),
        "--topic",
        topic,
        "--bootstrap-servers",
        bootstrap,
        "--checkpoint-every",
        "20",
        "--snapshot-every",
        "4",
        "--idle-timeout",
        "2",
        "--connect-timeout-ms",
        "5000",
    ]
    rng = random.Random(11)
    kills = 0
    for life in range(KILLS):
        log_path = tmp_path / f"serve-{life}.log"
        log_path.write_bytes(b"")
        step = rng.randint(2, 30)
        process = FORK.Process(target=die_at_step, args=(argv, str(log_path), step), daemon=True)
        process.start()
        process.join(120)
        try:
            assert process.exitcode in (-signal.SIGKILL, 0), log_path.read_text()
        finally:
            process.kill()
            process.join()
        kills += process.exitcode == -signal.SIGKILL
    assert kills >= KILLS - 2, f"only {kills} kills: the stream ended first"
    where = "".join(path.read_text() for path in tmp_path.glob("serve-*.log"))
    points = set(
        re.findall(
            r"killed (before sending 0/c\d|before sending 0/changes/\d+/c|before sending 0$|before a commit|after a commit)",
            where,
            re.M,
        )
    )
    assert len(points) >= 4, where  # inside snapshots and changes, at and after commits

    log_path = tmp_path / "serve-final.log"
    final = exits_cleanly(fork_server(argv, log_path), log_path)
    assert "the changes of" in final  # restored from a snapshot and changes

    assert_exactly_once(bootstrap, topic, examples, 1, lambda: pickle.loads(init.read_bytes()))
    exported = tmp_path / "exported.rcw"
    assert (
        cli.main(
            [
                "inspect",
                "--bootstrap-servers",
                bootstrap,
                "--topic",
                topic,
                "--export",
                str(exported),
            ]
        )
        == 0
    )
    reference, _ = offline(pickle.loads(init.read_bytes()), examples)
    assert_same_model(
        state.loads(exported.read_bytes()), reference, [x for _, x, _ in examples[:100]]
    )
