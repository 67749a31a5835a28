"""Serve AROW on a Kafka topic: predictions out, delayed labels in, checkpoints on disk.

Starts a local Tansu broker, writes the bundled SMS stream to a topic (every other label held
back and sent later on a labels topic), serves it with `ModelServer`, and scores the
predictions that come back against the true labels.
"""

import json
import tempfile

from kafka import KafkaConsumer, KafkaProducer

from streams.broker import TansuBroker
from streams.consumer import ModelServer
from streams.files import sms_spam
from streams.kafka_io import KafkaSettings, create_topics
from streams.messages import encode_example, encode_label
from streams.serve_cli import build_model

examples = list(sms_spam())
with TansuBroker() as broker, tempfile.TemporaryDirectory() as checkpoints:
    create_topics(broker.bootstrap_servers, {"sms": 1, "sms.labels": 1, "sms.predictions": 1})
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
    for i, (x, y) in enumerate(examples):  # odd ids come without their label...
        producer.send("sms", key=str(i).encode(), value=encode_example(i, x, None if i % 2 else y))
    for i, (_, y) in enumerate(examples):  # ...which arrives later
        if i % 2:
            producer.send("sms.labels", key=str(i).encode(), value=encode_label(i, y))
    producer.close()

    server = ModelServer(
        build_model("AROW(r=1.0)", text=True),  # BagOfWords(on="text") | AROW(r=1.0)
        KafkaSettings(broker.bootstrap_servers),
        examples_topic="sms",
        labels_topic="sms.labels",
        predictions_topic="sms.predictions",
        dead_letter_topic="sms.dead-letters",
        checkpoint_dir=checkpoints,
        idle_timeout=1.0,  # a demo: stop once the topics are drained
    )
    state = server.run()[0]

    consumer = KafkaConsumer(
        "sms.predictions",
        bootstrap_servers=broker.bootstrap_servers,
        auto_offset_reset="earliest",
        consumer_timeout_ms=1000,
    )
    predictions = [json.loads(record.value) for record in consumer]
    consumer.close()

right = sum(p["prediction"] == examples[int(p["id"])][1] for p in predictions)
print(f"{len(predictions):,} predictions, {right / len(predictions):.2%} right before learning")
print(
    f"learned {state.learned:,} examples, {len(state.pending_examples)} still waiting for a label"
)
