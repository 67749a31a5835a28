"""Serve AROW on a Kafka topic: predictions out, delayed labels in, state in a state topic.

Starts a local Tansu broker, writes the bundled SMS stream to a topic keyed by id (every other
label held back and sent later on a labels topic, keyed by the same id), serves it with
`ModelServer` (exactly-once: predictions committed in Kafka transactions), and scores the
committed predictions against the true labels.
"""

import json

from kafka import KafkaProducer

from streams.cli.serve import build_model
from streams.io.files import sms_spam
from streams.kafka.broker import TansuBroker
from streams.kafka.client import KafkaSettings, create_topics
from streams.kafka.committed import committed_consumer
from streams.kafka.config import Topics
from streams.kafka.envelope import StateKeys
from streams.kafka.messages import encode_example, encode_label
from streams.kafka.server import ModelServer

examples = list(sms_spam())
with TansuBroker() as broker:
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
        topics=Topics("sms", labels="sms.labels"),  # sms.predictions, sms.dead-letters, ...
        # a demo on a broker of our own: the state is not authenticated. On a shared cluster,
        # StateKeys.from_file("state.key") (see streams.kafka.envelope for making one)
        state_keys=StateKeys.insecure(),
        idle_timeout=1.0,  # a demo: stop once the topics are drained
    )
    state = server.run()[0]

    consumer = committed_consumer(  # committed transactions only
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
