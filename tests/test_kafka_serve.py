"""The serving consumer against a real Tansu broker: round trip, poison messages, delayed labels."""

from __future__ import annotations

import json
import time

from kafka_support import assert_same_model, load_data, offline, produce, read_topic
from river import feature_extraction, linear_model

from streams import checkpoint
from streams.consumer import ModelServer
from streams.kafka_io import KafkaSettings, create_topics
from streams.messages import encode_example


def text_model():
    return feature_extraction.BagOfWords(on="text") | linear_model.PAClassifier()


def server(broker, topic, tmp_path, model, **kwargs) -> ModelServer:
    return ModelServer(
        model, KafkaSettings(broker.bootstrap_servers, connect_timeout_ms=5000),
        examples_topic=topic, predictions_topic=f"{topic}.predictions",
        dead_letter_topic=f"{topic}.dead", checkpoint_dir=tmp_path, **kwargs,
    )


def test_round_trip_final_model_equals_offline(kafka_broker, topic_name, tmp_path):
    rows = load_data("sms_spam_collection.jsonl.gz", 5000)
    examples = [(i, {"text": row["text"]}, row["label"] == "spam") for i, row in enumerate(rows)]
    topic = topic_name("round-trip")
    create_topics(kafka_broker.bootstrap_servers, {topic: 1, f"{topic}.predictions": 1})
    produce(kafka_broker.bootstrap_servers, topic, [encode_example(*e) for e in examples],
            keys=[e[0] for e in examples])

    started = time.monotonic()
    states = server(kafka_broker, topic, tmp_path, text_model(), idle_timeout=1.0).run()
    print(f"served 5000 in {time.monotonic() - started - 1.0:.2f} s")

    predictions = [json.loads(r.value) for r in
                   read_topic(kafka_broker.bootstrap_servers, f"{topic}.predictions", 5000)]
    reference, expected = offline(text_model(), examples)
    assert [p["id"] for p in predictions] == list(range(5000))
    assert predictions == [expected[i] for i in range(5000)]
    state = states[0]
    assert (state.learned, state.predicted, state.dead_letters) == (5000, 5000, 0)
    assert state.offsets == {topic: 5000}
    probe = [e[1] for e in examples]
    assert_same_model(state.model, reference, probe)
    saved = checkpoint.load(tmp_path / f"{topic}-0.ckpt")
    assert saved.offsets == {topic: 5000}
    assert_same_model(saved.model, reference, probe)
