"""`river-cw produce` and `river-cw evaluate --topic` against the demo broker: a topic scores as
the file it was produced from (every metric and delay, to 1e-12), labels joined from a labels
topic, follow mode with an idle timeout, bad records named by partition and offset, and
produce's simulators (noise, drift) equal to evaluate's."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import subprocess
import sys
import time

import pytest

from river_cw.labels import order_key
from streams.cli import evaluate as evaluate_cli
from streams.cli import main
from streams.cli.evaluate_input import load
from streams.evaluate.noise import LabelNoise
from streams.kafka.client import KafkaSettings, create_topics
from streams.kafka.examples import TopicExamples
from streams.kafka.messages import encode_example
from streams.kafka.ordered import BUFFERED, every_partition, log_ends, ordered_records
from streams.kafka.outputs import Outputs
from tests.kafka.kafka_support import REPO, produce

MODELS = ["--model", "AROW()", "--model", "river.linear_model.PAClassifier()"]
STEADY = ("seconds", "throughput")  # the time the models took: not the same twice


def river_cw(*argv) -> int:
    """`river-cw ARGV` in this process: its exit status."""
    return main([str(a) for a in argv])


def evaluate(tmp_path, *argv) -> dict:
    """`river-cw evaluate ARGV --json` (asserting exit status 0): its JSON document."""
    path = tmp_path / f"result-{time.monotonic_ns()}.json"
    assert main(["evaluate", *map(str, argv), "--quiet", "--json", str(path)]) == 0
    return json.loads(path.read_text())


def scores(document: dict) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in STEADY} for r in document["records"]]


def assert_same_scores(topic: dict, file: dict) -> None:
    """Every record of the learning curves equal, the floats to 1e-12."""
    assert len(topic["records"]) == len(file["records"])
    for got, want in zip(scores(topic), scores(file)):
        assert got.keys() == want.keys()
        for key, value in want.items():
            if isinstance(value, float):
                assert got[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
            else:
                assert got[key] == value, key


@pytest.fixture
def topics(kafka_broker, topic_name):
    """A function making fresh topics of `partitions` partitions; the broker's address."""

    def make(*prefixes, partitions=3):
        names = [topic_name(p) for p in prefixes]
        create_topics(kafka_broker.bootstrap_servers, dict.fromkeys(names, partitions))
        return names

    return make, kafka_broker.bootstrap_servers


@pytest.mark.kafka
def test_a_topic_scores_as_the_file_it_was_produced_from(topics, tmp_path, capsys):
    make, servers = topics
    (topic,) = make("sms")
    assert (
        river_cw("produce", "--topic", topic, "--bootstrap-servers", servers, "--limit", 600) == 0
    )
    written = capsys.readouterr().out
    records = list(ordered_records(KafkaSettings(servers), [topic]))
    assert len(records) == 600
    # stamped by the clock, never ahead of it, many in one millisecond: their numbers order them
    assert max(r.timestamp for r in records) <= time.time() * 1000
    assert len({r.timestamp for r in records}) < 600
    for p in range(3):  # what it printed is what the topic holds
        mine = [r.offset for r in records if r.partition == p]
        assert f"{topic} partition {p}: {len(mine):,} records, offsets 0-{max(mine)}" in written
    source = ["--topic", topic, "--bootstrap-servers", servers]
    for options in (
        ["--metric", "accuracy"],
        ["--metric", "f1", "--delay", 7],
        ["--metric", "logloss", "--delay", 3, "--noise", 0.1],
        ["--metric", "MCC()", "--drift", "flip", "--every", 50],
    ):
        topic_run = evaluate(tmp_path, *source, *MODELS, *options)
        file_run = evaluate(tmp_path, "--limit", 600, *MODELS, *options)
        assert_same_scores(topic_run, file_run)
        assert topic_run["info"]["examples"] == 600


@pytest.mark.kafka
def test_labels_from_a_labels_topic_score_as_the_delay_they_were_sent_with(topics, tmp_path):
    make, servers = topics
    topic, labels = make("sms", "sms.labels")
    produce_args = ["--topic", topic, "--labels-topic", labels, "--bootstrap-servers", servers]
    assert river_cw("produce", *produce_args, "--limit", 400, "--label-delay", 25) == 0
    source = ["--topic", topic, "--labels-topic", labels, "--bootstrap-servers", servers]
    for metric in ("accuracy", "logloss"):
        topic_run = evaluate(tmp_path, *source, *MODELS, "--metric", metric)
        file_run = evaluate(tmp_path, "--limit", 400, *MODELS, "--metric", metric, "--delay", 25)
        assert_same_scores(topic_run, file_run)
    assert topic_run["info"]["unlabelled"] == 0
    # --limit cuts the examples, and their labels still come, as on the file before the delay
    topic_run = evaluate(tmp_path, *source, *MODELS, "--limit", 300, "--noise", 0, 0.2)
    file_run = evaluate(tmp_path, "--limit", 300, *MODELS, "--delay", 25, "--noise", 0, 0.2)
    assert_same_scores(topic_run, file_run)
    assert (topic_run["info"]["examples"], topic_run["info"]["unlabelled"]) == (300, 0)


@pytest.mark.kafka
def test_a_followed_labels_topic_scores_as_the_topic_read_to_its_end(topics, tmp_path):
    """--follow reads once without counting: river's questions and answers as they come, every
    noise level in the one pass; the models of a followed run learn the classes as they come,
    which river_cw's (and the baseline) take as they are."""
    make, servers = topics
    topic, labels = make("sms", "sms.labels")
    produce_args = ["--topic", topic, "--labels-topic", labels, "--bootstrap-servers", servers]
    assert river_cw("produce", *produce_args, "--limit", 300, "--label-delay", 10) == 0
    source = ["--topic", topic, "--labels-topic", labels, "--bootstrap-servers", servers]
    options = ["--model", "AROW()", "--every", 50, "--noise", 0, 0.1]
    path = tmp_path / "follow.json"
    done = subprocess.run(
        [sys.executable, "-m", "streams.cli", "evaluate", *map(str, source + options)]
        + ["--follow", "--idle-timeout", "2", "--quiet", "--json", str(path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    followed = json.loads(path.read_text())
    whole = evaluate(tmp_path, *source, *options)
    assert (followed["info"]["examples"], followed["info"]["unlabelled"]) == (300, 0)
    assert {r["noise"] for r in followed["records"]} == {"0%", "10%"}
    clean = [r for r in followed["records"] if r["noise"] == "0%"]
    assert_same_scores({"records": clean}, {"records": whole["records"][: len(clean)]})
    assert max(r["flipped"] for r in followed["records"]) > 10


@pytest.mark.kafka
@pytest.mark.parametrize("path", ["client", "broker"])
def test_a_topic_longer_than_the_read_buffers_comes_back_whole_and_in_order(topics, tmp_path, path):
    """Past `BUFFERED` records of a partition ahead of the others, the read leaves it and comes
    back to it: every record comes once, in the order of the keys, the last ones too, on either
    committed path."""
    make, servers = topics
    (topic,) = make("long", partitions=3)
    n = 3 * BUFFERED
    path_ = tmp_path / "long.jsonl"
    path_.write_text("".join(f'{{"x": {{"a": {i % 7}}}, "label": {i % 2}}}\n' for i in range(n)))
    assert river_cw("produce", path_, "--topic", topic, "--bootstrap-servers", servers) == 0
    records = ordered_records(KafkaSettings(servers, committed_reads=path), [topic])
    assert [json.loads(r.value)["id"] for r in records] == list(range(n))  # as produce sent them


@pytest.mark.kafka
@pytest.mark.parametrize("path", ["client", "broker"])
def test_every_read_stops_at_the_ends_the_first_found_and_a_follow_reads_on(topics, path):
    """What lets evaluate count a topic, then score it, holding none of it: every read stops
    at the ends the first one found; a followed read then gives what was written since."""
    make, servers = topics
    (topic,) = make("again", partitions=2)
    settings = KafkaSettings(servers, committed_reads=path)
    rows = [(i, {"a": float(i % 3)}, i % 3 == 0) for i in range(90)]
    send = lambda part: produce(  # noqa: E731
        servers,
        topic,
        [encode_example(*r) for r in part],
        [r[0] for r in part],
        [r[0] % 2 for r in part],
    )
    send(rows[:40])
    reader = TopicExamples(settings, topic)
    first = list(reader)
    send(rows[40:60])
    assert list(reader) == first and len(first) == 40
    followed = ordered_records(settings, [topic], follow=True, idle_timeout=1)
    history = [next(followed) for _ in range(60)]  # the ends are those of now
    send(rows[60:])
    ids = [json.loads(r.value)["id"] for r in history + list(followed)]
    assert sorted(ids[:60]) == list(range(60)) and sorted(ids[60:]) == list(range(60, 90))


@pytest.mark.kafka
def test_both_committed_paths_read_the_same_records_in_the_same_order(topics, tmp_path):
    """librdkafka's read_committed (the path for brokers that list aborted transactions) and
    the client-side filter (the demo broker's) read the same records, in the same order, up to
    the same ends, and evaluate scores them alike: where no transaction was aborted (the demo
    broker lists none, so there read_committed would return an aborted one's records)."""
    make, servers = topics
    topic, labels = make("paths", "paths.labels")
    settings = KafkaSettings(servers)
    assert (
        river_cw(
            *("produce", "--topic", topic, "--labels-topic", labels),
            *("--bootstrap-servers", servers, "--limit", 200, "--label-delay", 5),
        )
        == 0
    )
    owner = Outputs(settings, transactional_id=f"{topic}-0")
    try:  # committed transactions of several records, each partition ending with a marker
        for i in range(1000, 1012):
            x = {"text": f"call {i} now for a prize"}
            owner.send(topic, encode_example(i, x, ("ham", "spam")[i % 2]), str(i).encode(), i % 3)
            if i % 4 == 3:
                owner.commit({}, None)
    finally:
        owner.close()
    plain = [json.dumps({"id": i, "label": "spam"}).encode() for i in range(1000, 1012)]
    produce(servers, labels, plain, list(range(1000, 1012)), [i % 3 for i in range(12)])
    read = {}
    for path in ("client", "broker"):
        chosen = dataclasses.replace(settings, committed_reads=path)
        ends = log_ends(chosen, every_partition(chosen, [topic, labels]))
        records = ordered_records(chosen, [topic, labels])
        fields = [(r.topic, r.partition, r.offset, r.timestamp, r.headers) for r in records]
        source = ["--topic", topic, "--labels-topic", labels, "--bootstrap-servers", servers]
        run = evaluate(tmp_path, *source, *MODELS, "--committed-reads", path)
        read[path] = ends, fields, run
    assert read["broker"][:2] == read["client"][:2]
    ends, fields, run = read["client"]
    assert len(fields) == 2 * 200 + 2 * 12
    # and the commit markers of the 3 transactions, one in each of their partitions
    assert sum(ends.values()) == len(fields) + 3 * 3
    assert_same_scores(read["broker"][2], run)
    assert run["info"]["examples"] == 212 and run["info"]["unlabelled"] == 0


@pytest.mark.kafka
def test_examples_whose_label_never_comes_are_counted_not_scored(topics, tmp_path, capsys):
    make, servers = topics
    topic, labels = make("numbers", "numbers.labels", partitions=2)
    rows = [(i, {"a": float(i % 2)}, None) for i in range(40)]
    produce(
        servers,
        topic,
        [encode_example(*row) for row in rows],
        [r[0] for r in rows],
        [i % 2 for i in range(40)],
    )
    # labels for the first 30 only, one of them before its example's id ever comes
    values = [json.dumps({"id": i, "label": i % 2 == 1}).encode() for i in range(30)]
    produce(servers, labels, values, list(range(30)), [i % 2 for i in range(30)])
    document = evaluate(
        tmp_path,
        "--topic",
        topic,
        "--labels-topic",
        labels,
        "--bootstrap-servers",
        servers,
        "--model",
        "AROW()",
    )
    assert document["info"]["examples"] == 40
    assert document["info"]["unlabelled"] == 10
    assert {r["step"] for r in document["summary"]} == {30}
    source = ["--topic", topic, "--labels-topic", labels, "--bootstrap-servers", servers]
    assert river_cw("evaluate", *source, "--model", "AROW()", "--quiet") == 0
    assert "10 examples never got their label: predicted, not scored" in capsys.readouterr().out


@pytest.mark.kafka
def test_bad_records_are_counted_and_named_by_partition_and_offset(topics, tmp_path, capsys):
    make, servers = topics
    (topic,) = make("bad", partitions=2)
    good = [encode_example(i, {"a": float(i % 3)}, i % 3 == 0) for i in range(20)]
    produce(servers, topic, good, list(range(20)), [0] * 20)
    produce(servers, topic, [b"not json", b'{"x": {"a": 1}, "label": 1.5}'], [b"a", b"b"], [1, 1])
    source = ["--topic", topic, "--bootstrap-servers", servers, "--model", "AROW()"]
    document = evaluate(tmp_path, *source, "--on-error", "skip")
    assert document["info"]["examples"] == 20
    err = capsys.readouterr().err
    assert f"skipped 2 malformed lines or records in topic {topic!r}" in err
    assert f"topic {topic!r}, partition 1, offset 0: bad JSON" in err
    done = subprocess.run(
        [sys.executable, "-m", "streams.cli", "evaluate", *source],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.startswith(
        f"river-cw evaluate: error: topic {topic!r}, partition 1, offset 0: bad JSON"
    )
    assert "Traceback" not in done.stderr


@pytest.mark.kafka
def test_follow_reads_live_records_until_idle_then_prints_the_final_table(topics, tmp_path):
    make, servers = topics
    (topic,) = make("live", partitions=2)
    rows = [(i, {"a": float(i % 2), "b": 1.0}, i % 2 == 1) for i in range(300)]
    send = lambda part: produce(  # noqa: E731
        servers,
        topic,
        [encode_example(*r) for r in part],
        [r[0] for r in part],
        [r[0] % 2 for r in part],
    )
    send(rows[:100])
    path = tmp_path / "follow.json"
    with subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streams.cli",
            "evaluate",
            "--topic",
            topic,
            "--bootstrap-servers",
            servers,
            "--model",
            "AROW()",
            "--follow",
            "--idle-timeout",
            "3",
            "--every",
            "50",
            "--noise",
            "0",
            "0.1",
            "--json",
            str(path),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as follower:
        time.sleep(2)
        send(rows[100:200])
        time.sleep(1)
        send(rows[200:])
        out, err = follower.communicate(timeout=120)
    assert follower.returncode == 0, err
    assert "Final scores" in out
    document = json.loads(path.read_text())
    assert document["info"]["examples"] == 300
    assert {(r["noise"], r["step"]) for r in document["summary"]} == {("0%", 300), ("10%", 300)}


@pytest.mark.kafka
def test_produce_sends_the_labels_evaluate_noise_and_drift_would_make(topics, capsys):
    make, servers = topics
    (topic,) = make("sim", partitions=2)
    options = ["--drift", "gradual", "--limit", 500, "--seed", 3]
    produce_args = ["--topic", topic, "--bootstrap-servers", servers, "--noise", 0.2]
    assert river_cw("produce", *produce_args, *options) == 0
    parser = argparse.ArgumentParser()
    evaluate_cli.add_arguments(parser)
    with contextlib.ExitStack() as stack:
        stream = load(parser.parse_args(list(map(str, options))), stack)
        examples = list(stream.examples)
    classes = sorted(stream.labels, key=order_key)
    noise = LabelNoise(0.2, classes=classes, seed=3)
    # what evaluate's models learn; feature names are strings in JSON (SEA's are 0, 1, 2)
    expected = [({str(k): v for k, v in x.items()}, noise(y)) for x, y in examples]
    got = list(TopicExamples(KafkaSettings(servers), topic))
    assert got == expected
    assert sum(y != noisy for (_, y), (_, noisy) in zip(examples, got)) > 50


@pytest.mark.kafka
def test_produce_refuses_topics_a_label_could_not_follow_its_example_into(topics, capsys):
    make, servers = topics
    (topic,) = make("two", partitions=2)
    (labels,) = make("three", partitions=3)
    code = river_cw(
        "produce", "--topic", topic, "--labels-topic", labels, "--bootstrap-servers", servers
    )
    assert code == 1
    assert "same number of partitions" in capsys.readouterr().err
    assert river_cw("produce", "--topic", "missing-topic", "--bootstrap-servers", servers) == 1
    assert "topic 'missing-topic' does not exist" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--follow"], "--follow needs --topic"),
        (["data.jsonl", "--topic", "t"], "give data files or --topic, not both"),
        (["--topic", "t", "--labels-topic", "l", "--delay", "3"], "--delay must be 0"),
        (["--topic", "t", "--drift", "sudden"], "river-cw produce FILES --drift sudden"),
        (["--topic", "t", "--follow", "--noise", "spam=0.1"], "no class-conditional --noise"),
        (["--topic", "t", "--follow", "--tune"], "no --tune"),
        (["--topic", "t", "--labels-topic", "l", "--drift", "flip"], "--drift flip needs the"),
        (["--topic", "t", "--follow", "--metric", "f1"], "a metric of one class needs them"),
        (["--topic", "t", "--idle-timeout", "3"], "--idle-timeout needs --follow"),
    ],
)
def test_evaluate_refuses_what_a_topic_cannot_take_in_one_line(argv, message, capsys):
    assert river_cw("evaluate", *argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("river-cw evaluate: error: ") and message in err
