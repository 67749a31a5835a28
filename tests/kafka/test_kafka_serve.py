"""The serving consumer against a real Tansu broker: round trip, poison messages, delayed labels."""

from __future__ import annotations

import copy
import json
import random

import pytest
from kafka import KafkaProducer
from river import feature_extraction

from river_cw import AROW
from streams.kafka import checkpoint
from streams.kafka.client import KafkaSettings, create_topics
from streams.kafka.messages import encode_example, encode_label, encode_prediction
from streams.kafka.server import ModelServer
from tests.conftest import read_jsonl, shuffled
from tests.kafka.kafka_support import (
    ServerThread,
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


def text_model():
    return feature_extraction.BagOfWords(on="text") | AROW()


def server(broker, topic, tmp_path, model, **kwargs) -> ModelServer:
    settings = KafkaSettings(broker.bootstrap_servers, connect_timeout_ms=5000)
    return model_server(model, settings, topic, tmp_path, **kwargs)


def test_round_trip_final_model_equals_offline(kafka_broker, topic_name, tmp_path):
    rows = read_jsonl("sms_spam_collection.jsonl.gz")[:5000]  # file order, ham and spam mixed
    examples = [(i, {"text": row["text"]}, row["label"]) for i, row in enumerate(rows)]
    topic = topic_name("round-trip")
    create_topics(kafka_broker.bootstrap_servers, {topic: 1, f"{topic}.predictions": 1})
    produce_examples(kafka_broker.bootstrap_servers, topic, examples)

    running = server(kafka_broker, topic, tmp_path, text_model())
    states = serve_until(running, read_all(running, topic, 5000), what="5000 served")

    predictions = [
        json.loads(r.value)
        for r in read_topic(kafka_broker.bootstrap_servers, f"{topic}.predictions", 5000)
    ]
    reference, expected = offline(text_model(), examples)
    assert [p["id"] for p in predictions] == [str(i) for i in range(5000)]
    assert predictions == [expected[str(i)] for i in range(5000)]
    state = states[0]
    assert (state.learned, state.predicted, state.dead_letters) == (5000, 5000, 0)
    assert state.offsets == {topic: 5000}
    probe = [e[1] for e in examples]
    assert_same_model(state.model, reference, probe)
    for saved in (
        stored_state(kafka_broker.bootstrap_servers, topic, 0),
        checkpoint.load(tmp_path / f"{topic}-0.ckpt")["state"],  # the local cache
    ):
        assert saved.offsets == {topic: 5000}
        assert_same_model(saved.model, reference, probe)


# (garbage, what its dead-letter reason says)
GARBAGE = [
    (b"not json at all", "bad JSON"),
    (b"", "bad JSON"),
    (b'{"id": 1, "x": {"a": 1}', "bad JSON"),
    (b"\xff\xfe\x00 binary", "not UTF-8"),
    (b'{"id": 2, "x": {"a": NaN}, "label": "1"}', "bad JSON: non-finite number NaN"),
    (b'{"id": 3, "x": {"a": -Infinity}}', "bad JSON: non-finite number -Infinity"),
    (b'{"id": 4, "x": {"a": 1e999}}', "feature 'a' has a value out of float64 range"),
    (b'{"id": 5, "x": {"a": "3"}}', "wrong type: feature 'a' has a non-numeric value"),
    (b'{"id": 6, "x": [1, 2]}', "wrong type: 'x' must be an object"),
    (b'{"id": [6], "x": {}}', "wrong type: 'id' must be a string or integer"),
    (b'{"id": 7, "x": {"a": 1}, "label": 1.5}', "wrong type: 'label'"),
    (b'{"id": 8, "text": 42}', "wrong type: 'text' must be a string"),
    (b"[1, 2, 3]", "unknown schema: expected a JSON object, got list"),
    (b'{"x": {"a": 1}, "label": "1"}', "unknown schema: no 'id' field"),
    (b'{"id": 9, "features": {"a": 1}}', "unknown schema: an example needs exactly one of"),
    (b'{"id": 10, "x": {"a": 1}, "text": "hi"}', "unknown schema: an example needs exactly one of"),
    (None, "empty message (no value)"),
    (
        b'{"id": "t", "text": "valid, not for AROW"}',
        "the model cannot predict it: TypeError: feature 'text'",
    ),
]


def test_poison_messages_go_to_the_dead_letter_topic(kafka_broker, topic_name, tmp_path):
    rows = shuffled(read_jsonl("spambase.jsonl.gz"), seed=1)
    good = [(i, row["x"], row["label"]) for i, row in enumerate(rows[:2000])]
    garbage = [GARBAGE[i % len(GARBAGE)] for i in range(20)]  # 1 %, every kind at least once
    stream = [("good", encode_example(*g), g) for g in good]
    positions = random.Random(2).sample(range(1, 2020), 20)  # none first: AROW must have learned
    for position, (value, reason) in zip(positions, garbage, strict=True):
        stream.insert(position, ("bad", value, reason))
    topic = topic_name("poison")
    create_topics(kafka_broker.bootstrap_servers, {topic: 1, f"{topic}.dead": 1})
    produce(
        kafka_broker.bootstrap_servers,
        topic,
        [value for _, value, _ in stream],
        keys=[f"k{offset}" for offset in range(len(stream))],
    )  # a null value needs a key

    running = server(kafka_broker, topic, tmp_path, AROW())
    state = serve_until(running, read_all(running, topic, len(stream)), what="all read")[0]

    assert (state.learned, state.predicted, state.dead_letters) == (2000, 2000, 20)
    letters = read_topic(kafka_broker.bootstrap_servers, f"{topic}.dead", 20)
    expected = [
        (offset, value, reason)
        for offset, (kind, value, reason) in enumerate(stream)
        if kind == "bad"
    ]
    assert len(letters) == 20
    for letter, (offset, value, reason) in zip(letters, expected, strict=True):
        headers = {k: v.decode() for k, v in letter.headers}
        assert (
            letter.key,
            letter.value,
            headers["topic"],
            headers["partition"],
            headers["offset"],
        ) == (f"k{offset}".encode(), value, topic, "0", str(offset))
        assert headers["reason"].startswith(reason), headers["reason"]
    reference, _ = offline(AROW(), good)  # a rejected example leaves AROW untouched
    assert_same_model(state.model, reference, [g[1] for g in good])


def test_delayed_labels_are_joined_and_learned(kafka_broker, topic_name, tmp_path):
    rows = shuffled(read_jsonl("spambase.jsonl.gz"), seed=3)
    data = {i: (row["x"], row["label"]) for i, row in enumerate(rows[:600])}
    inline = [i for i in data if i % 3 == 0]
    late = [i for i in data if i % 3 == 1]  # label after the example
    early = [i for i in data if i % 3 == 2]  # label before the example
    random.Random(4).shuffle(late)
    topic = topic_name("delayed")
    create_topics(
        kafka_broker.bootstrap_servers, {topic: 1, f"{topic}.labels": 1, f"{topic}.predictions": 1}
    )
    bootstrap = kafka_broker.bootstrap_servers
    model = AROW()
    running = ServerThread(
        server(kafka_broker, topic, tmp_path, model, labels_topic=f"{topic}.labels")
    )
    try:
        state = lambda: running.server.states.get(0)  # noqa: E731
        produce(
            bootstrap, f"{topic}.labels", [encode_label(i, data[i][1]) for i in early], keys=early
        )
        wait_until(
            lambda: state() and len(state().pending_labels) == len(early), what="early labels"
        )
        produce(
            bootstrap,
            topic,
            [encode_example(i, data[i][0], data[i][1] if i in inline else None) for i in data],
            keys=list(data),
        )
        wait_until(lambda: state().predicted == len(data), what="predictions")
        assert (state().learned, len(state().pending_examples)) == (400, 200)
        produce(
            bootstrap, f"{topic}.labels", [encode_label(i, data[i][1]) for i in late], keys=late
        )
        wait_until(lambda: state().learned == len(data), what="late labels learned")
    finally:
        running.stop()

    final = running.server.states[0]
    assert (final.learned, final.pending_examples, final.pending_labels, final.expired) == (
        600,
        {},
        {},
        0,
    )
    reference, expected = copy.deepcopy(model), {}
    for i, (x, y) in data.items():  # examples in order, learning those whose label is there
        expected[i] = json.loads(
            encode_prediction(
                str(i),
                reference.predict_one(x),
                reference.predict_proba_one(x),
                expected_learned(i),
                0,
            )
        )
        if i not in late:
            reference.learn_one(x, y)
    for i in late:  # then the late labels, in the order they were sent
        reference.learn_one(*data[i])
    assert_same_model(final.model, reference, [x for x, _ in data.values()])
    predictions = [json.loads(r.value) for r in read_topic(bootstrap, f"{topic}.predictions", 600)]
    assert predictions == [expected[i] for i in data]


def expected_learned(i: int) -> int:
    """Examples learned before example i arrives: those before it that are not late."""
    return sum(1 for j in range(i) if j % 3 != 1)


def test_pending_examples_and_labels_are_bounded(kafka_broker, topic_name, tmp_path):
    topic = topic_name("bounded")
    create_topics(kafka_broker.bootstrap_servers, {topic: 1, f"{topic}.labels": 1})
    bootstrap = kafka_broker.bootstrap_servers
    running = ServerThread(
        server(
            kafka_broker, topic, tmp_path, AROW(), labels_topic=f"{topic}.labels", max_pending=10
        )
    )
    try:
        state = lambda: running.server.states.get(0)  # noqa: E731
        produce(bootstrap, topic, [encode_example(i, {"a": float(i % 2)}) for i in range(30)])
        wait_until(lambda: state() and state().predicted == 30, what="predictions")
        assert list(state().pending_examples) == [str(i) for i in range(20, 30)]  # the newest 10
        # labels of the dropped examples wait in turn (the newest 10 of them), then the rest join
        produce(bootstrap, f"{topic}.labels", [encode_label(i, i % 2 == 1) for i in range(30)])
        wait_until(lambda: state().learned == 10, what="the kept examples learned")
    finally:
        running.stop()
    final = running.server.states[0]
    assert list(final.pending_labels) == [str(i) for i in range(10, 20)]
    assert final.pending_examples == {}
    assert final.expired == 20 + 10


class Fragile(AROW):
    """AROW that fails on purpose: predicting an example with feature 'bang', learning one with
    feature 'boom' (as any third-party model may fail on some input)."""

    def predict_proba_one(self, x):
        if "bang" in x:
            raise RuntimeError("bang")
        return super().predict_proba_one(x)

    def learn_one(self, x, y):
        if "boom" in x:
            raise ArithmeticError("boom")
        super().learn_one(x, y)


HUGE = "7" * 5000  # beyond Python's 4,300-digit int conversion limit
# poison kind -> (the examples topic's middle message, or a labels topic's, and the reason)
POISON = {
    "integer too large for a float": (
        b'{"id": 1, "x": {"a": 1' + b"0" * 400 + b'}, "label": "yes"}',
        "bad JSON: an integer of 401 digits",
    ),
    "integer beyond float range": (
        b'{"id": 1, "x": {"a": 1' + b"0" * 399 + b'}, "label": "yes"}',
        "feature 'a' has a value out of float64 range",
    ),
    "huge integer value": (
        f'{{"id": 1, "x": {{"a": {HUGE}}}}}'.encode(),
        "bad JSON: an integer of 5000 digits",
    ),
    "huge integer label": (
        f'{{"id": 1, "x": {{"a": 1}}, "label": {HUGE}}}'.encode(),
        "bad JSON: an integer of 5000 digits",
    ),
    "huge integer id": (
        f'{{"id": {HUGE}, "x": {{"a": 1}}}}'.encode(),
        "bad JSON: an integer of 5000 digits",
    ),
    "lone surrogate id": (b'{"id": "\\ud800", "x": {"a": 1}}', "bad id: str"),
    "invalid message over 1 MiB": (
        b'{"id": 1, "text": "' + b"spam " * 300_000,
        "bad JSON: Unterminated string",
    ),
    "valid message whose prediction is over 1 MiB": (
        b'{"id": "' + b"i" * 1_200_000 + b'", "x": {"a": 1}}',
        "its prediction would be 2,400,",
    ),
    "model fails to predict": (
        b'{"id": 1, "x": {"bang": 1}, "label": "yes"}',
        "the model cannot predict it: RuntimeError: bang",
    ),
    "model fails to learn": (
        b'{"id": 1, "x": {"boom": 1}, "label": "yes"}',
        "the model cannot learn it: ArithmeticError: boom",
    ),
    "huge integer id of a label": (
        f'{{"id": {HUGE}, "label": "yes"}}'.encode(),
        "bad JSON: an integer of 5000 digits",
    ),
    "lone surrogate label": (b'{"id": "b", "label": "\\udc00"}', "bad label: str"),
}
ON_LABELS_TOPIC = {"huge integer id of a label", "lone surrogate label"}


def test_each_poison_kind_is_dead_lettered_and_the_server_goes_on(
    kafka_broker, topic_name, tmp_path
):
    """One topic per poison kind, the poison between two good messages: both good ones are
    learned, the poison is dead-lettered with its reason, and the server keeps running."""
    bootstrap = kafka_broker.bootstrap_servers
    producer = KafkaProducer(bootstrap_servers=bootstrap, max_request_size=4_000_000)
    servers = {}
    for kind, (poison, _) in POISON.items():
        topic = topic_name("poison-kind")
        labels = f"{topic}.labels" if kind in ON_LABELS_TOPIC else None
        create_topics(bootstrap, {topic: 1, f"{topic}.dead": 1, **({labels: 1} if labels else {})})
        if labels:
            for i, value in enumerate([encode_label("a", "yes"), poison, encode_label("b", "no")]):
                producer.send(labels, key=f"k{i}".encode(), value=value)
            for id_, x in (("a", {"a": 1.0}), ("b", {"a": -1.0})):
                producer.send(topic, key=id_.encode(), value=encode_example(id_, x))
        else:
            good = (encode_example("a", {"a": 1.0}, "yes"), encode_example("b", {"a": -1.0}, "no"))
            for i, value in enumerate([good[0], poison, good[1]]):
                producer.send(topic, key=f"k{i}".encode(), value=value)
        servers[kind] = (
            topic,
            ServerThread(
                server(kafka_broker, topic, tmp_path / kind, Fragile(), labels_topic=labels)
            ),
        )
    producer.flush()
    producer.close()
    try:
        for kind, (_, running) in servers.items():
            state = lambda: running.server.states.get(0)  # noqa: E731
            wait_until(
                lambda: state() and (state().learned, state().dead_letters) == (2, 1),
                what=f"{kind}: two good messages learned and one dead letter",
            )
            assert running.thread.is_alive(), kind
    finally:
        for _, running in servers.values():
            running.server.stop()
        for _, running in servers.values():
            running.stop()
    for kind, (topic, running) in servers.items():
        poison, reason = POISON[kind]
        (letter,) = read_topic(bootstrap, f"{topic}.dead", 1)
        headers = {k: v.decode() for k, v in letter.headers}
        assert headers["reason"].startswith(reason), (kind, headers["reason"])
        origin = f"{topic}.labels" if kind in ON_LABELS_TOPIC else topic
        assert (headers["topic"], headers["partition"], headers["offset"]) == (origin, "0", "1")
        assert (letter.key, headers["size"]) == (b"k1", str(len(poison)))
        if len(poison) > 1_000_000:  # over-large: only its first bytes are forwarded
            assert (letter.value, headers["truncated"]) == (poison[:1024], "1024")
        else:
            assert letter.value == poison and "truncated" not in headers
        final = running.server.states[0]
        assert final.offsets[origin] == 3  # the checkpoint moved past the poison
        reference = Fragile()
        reference.learn_one({"a": 1.0}, "yes")
        reference.learn_one({"a": -1.0}, "no")
        assert_same_model(final.model, reference, [{"a": 0.5}])


def test_at_least_once_learns_exactly_once_and_sends_outputs_at_once(
    kafka_broker, topic_name, tmp_path
):
    rows = shuffled(read_jsonl("spambase.jsonl.gz"), seed=8)[:1000]
    examples = [(i, row["x"], row["label"]) for i, row in enumerate(rows)]
    topic = topic_name("at-least-once")
    bootstrap = kafka_broker.bootstrap_servers
    create_topics(bootstrap, {topic: 1, f"{topic}.predictions": 1})
    produce_examples(bootstrap, topic, examples[:600])

    def run(count: int):
        running = server(
            kafka_broker,
            topic,
            tmp_path,
            AROW(),
            processing_guarantee="at-least-once",
            checkpoint_every=100,
        )
        return serve_until(running, read_all(running, topic, count), what=f"{count} read")[0]

    run(600)
    produce_examples(bootstrap, topic, examples[600:])
    state = run(1000)  # resumes from the stored state (or its local cache)
    reference, expected = offline(AROW(), examples)
    assert (state.learned, state.offsets) == (1000, {topic: 1000})
    assert_same_model(state.model, reference, [x for _, x, _ in examples[:100]])
    assert_same_model(stored_state(bootstrap, topic, 0).model, reference, [examples[0][1]])
    plain = read_topic(bootstrap, f"{topic}.predictions", 1000, committed=False)
    assert [json.loads(r.value) for r in plain] == [expected[str(i)] for i in range(1000)]
