"""Safe operations against the real broker: another model, a recreated topic, labels keyed
elsewhere, `river-cw inspect` (and --export), `serve --init-model`."""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys

import pytest
from kafka import KafkaAdminClient
from river import linear_model, preprocessing

from river_cw import AROW, NHERD, state
from streams import cli
from streams.cli.inspect import top_weights
from streams.kafka.client import KafkaSettings, TopicError, create_topics
from streams.kafka.messages import encode_example, encode_label
from streams.kafka.store import StateMismatch
from tests.conftest import read_jsonl, shuffled
from tests.kafka.kafka_support import (
    REPO,
    assert_same_model,
    model_server,
    offline,
    produce,
    produce_examples,
    read_all,
    read_topic,
    serve_until,
    stored_state,
    wait_until,
)

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def rows():
    return shuffled(read_jsonl("spambase.jsonl.gz"), seed=9)[:300]


def serve(broker, topic, model, count, partitions=(0,), **kwargs):
    """Serve `topic` until `count` records of each of its `partitions` are read."""
    settings = KafkaSettings(broker.bootstrap_servers, connect_timeout_ms=5000)
    server = model_server(model, settings, topic, None, **kwargs)
    return serve_until(server, read_all(server, topic, count, partitions), what=f"{count} read")


def test_a_different_model_is_refused_unless_the_stored_ones_are_discarded(
    kafka_broker, topic_name, rows
):
    examples = [(i, row["x"], row["label"]) for i, row in enumerate(rows)]
    topic = topic_name("other-model")
    create_topics(kafka_broker.bootstrap_servers, {topic: 1})
    produce_examples(kafka_broker.bootstrap_servers, topic, examples[:200])
    serve(kafka_broker, topic, AROW(), 200)
    mismatch = r"partition 0 was learned by AROW \( r=1\. .*\), not by the model given \(NHERD"
    with pytest.raises(StateMismatch, match=mismatch):
        serve(kafka_broker, topic, NHERD(), 200)
    produce_examples(kafka_broker.bootstrap_servers, topic, examples[200:])
    state = serve(kafka_broker, topic, NHERD(), 300, discard_state=True)[0]
    reference, _ = offline(NHERD(), examples[200:])  # from the stored offsets on, not from 0
    assert state.offsets == {topic: 300} and state.model_spec.startswith("NHERD ( C=1.")
    assert_same_model(state.model, reference, [x for _, x, _ in examples[:50]])


def test_stored_offsets_beyond_a_recreated_topic_stop_the_server(kafka_broker, topic_name, rows):
    examples = [(i, row["x"], row["label"]) for i, row in enumerate(rows)]
    topic = topic_name("recreated")
    bootstrap = kafka_broker.bootstrap_servers
    create_topics(bootstrap, {topic: 1})
    produce_examples(bootstrap, topic, examples[:100])
    serve(kafka_broker, topic, AROW(), 100)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.delete_topics([topic])
    admin.close()
    create_topics(bootstrap, {topic: 1})
    produce_examples(bootstrap, topic, examples[:10])
    with pytest.raises(TopicError, match=rf"read {topic}/0 up to offset 100, beyond the end"):
        serve(kafka_broker, topic, AROW(), 10)


def test_labels_waiting_for_examples_that_never_come_are_reported(kafka_broker, topic_name, caplog):
    caplog.set_level(logging.INFO, logger="streams.kafka")
    topic = topic_name("keyed-elsewhere")
    bootstrap = kafka_broker.bootstrap_servers
    create_topics(bootstrap, {topic: 2, f"{topic}.labels": 2})
    # examples of ids 0..19 in partition 0, their labels (keyed otherwise) in partition 1
    produce(bootstrap, topic, [encode_example(i, {"a": 1.0}) for i in range(20)])
    produce(
        bootstrap,
        f"{topic}.labels",
        [encode_label(i, True) for i in range(20)],
        partitions=[1] * 20,
    )
    settings = KafkaSettings(kafka_broker.bootstrap_servers, connect_timeout_ms=5000)
    server = model_server(
        AROW(),
        settings,
        topic,
        None,
        labels_topic=f"{topic}.labels",
        stale_label_after=0,
        log_seconds=0.2,
    )
    states = serve_until(
        server,
        lambda: (
            read_all(server, topic, 20)()
            and "partition 1: 20 labels have waited" in caplog.text
            and "labels waiting 20" in caplog.text
        ),
        what="the examples read and the stale labels reported",
    )
    assert (len(states[0].pending_examples), len(states[1].pending_labels)) == (20, 20)
    assert "partition 1: 20 labels have waited for their example" in caplog.text
    assert "are labels keyed by the same id as their examples" in caplog.text
    assert "labels waiting 20" in caplog.text


def inspect(capsys, *args: str) -> tuple[int, str, str]:
    """`river-cw inspect ARGS` in this process: exit status, output, errors."""
    code = cli.main(["inspect", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_top_weights_come_from_the_public_weights():
    model = linear_model.LogisticRegression()
    model.learn_one({"a": 1.0, "b": -3.0, "c": 0.1}, True)
    assert [f for f, _ in top_weights(preprocessing.StandardScaler() | model, 2)[None]] == [
        "b",
        "a",
    ]
    assert top_weights(NHERD(), 3) == {}  # nothing learned: no weights to show


def test_inspect_export_and_init_model(kafka_broker, topic_name, rows, tmp_path, capsys):
    examples = [(i, row["x"], row["label"]) for i, row in enumerate(rows)]
    topic, warm = topic_name("inspected"), topic_name("warm-started")
    bootstrap = kafka_broker.bootstrap_servers
    create_topics(bootstrap, {topic: 2, warm: 1, f"{warm}.predictions": 1})
    produce_examples(bootstrap, topic, examples[:200], partitions=lambda i: i % 2)
    serve(kafka_broker, topic, AROW(), 100, partitions=(0, 1), model_spec="AROW()")

    code, shown, errors = inspect(
        capsys, "--bootstrap-servers", bootstrap, "--topic", topic, "--top", "3"
    )
    assert code == 0, errors
    for p in (0, 1):
        assert f"partition {p} of {topic}: AROW()" in shown
    assert "learned 100, predicted 100, prequential accuracy 0." in shown
    assert f"offsets (next to read): {{'{topic}': 100}}" in shown
    assert "pending: 0 examples waiting for a label, 0 labels waiting for an example" in shown
    assert "weights" in shown  # the top ones, or a word that the model shows none

    path = tmp_path / "model.rcw"
    code, _, errors = inspect(
        capsys, "--bootstrap-servers", bootstrap, "--topic", topic, "--partition", "1",
        "--export", str(path),
    )  # fmt: skip
    assert code == 0, errors
    model = state.loads(path.read_bytes())  # the versioned format, which later versions read
    assert_same_model(model, stored_state(bootstrap, topic, 1).model, [examples[0][1]])
    code, _, errors = inspect(
        capsys, "--bootstrap-servers", bootstrap, "--topic", topic, "--export", "x"
    )
    assert code == 1 and "--export needs exactly one" in errors

    produce_examples(bootstrap, warm, examples[200:])
    with subprocess.Popen(
        [sys.executable, "-m", "streams.cli", "serve", "--init-model", str(path), "--topic", warm,
         "--bootstrap-servers", bootstrap, "--checkpoint-every", "100"],
        cwd=REPO, stderr=subprocess.PIPE, text=True,
    ) as served:  # fmt: skip
        predicted = lambda: len(read_topic(bootstrap, f"{warm}.predictions"))  # noqa: E731
        wait_until(lambda: predicted() >= 100, what="100 predictions committed")
        served.send_signal(signal.SIGTERM)
        assert served.wait(30) == 0, served.stderr.read()
    _, expected = offline(model, examples[200:])  # the exported model learning on
    predictions = [json.loads(r.value) for r in read_topic(bootstrap, f"{warm}.predictions", 100)]
    assert [p["probabilities"] for p in predictions] == [
        expected[str(i)]["probabilities"] for i in range(200, 300)
    ]
