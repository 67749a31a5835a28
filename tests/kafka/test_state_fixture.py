"""A state written by the first versioned format restores in this version, bit for bit.

tests/kafka/data/state_format_1.json holds the state-topic records (snapshots, changes and the
tombstones of a later snapshot) that `river-cw serve` wrote for four `AROW()` partitions, text and
dense, binary and multi-class (`tests.kafka.state_fixture` made it, once), and what a restore
must give. The file is never regenerated: every later version must restore it, or refuse it in
one line naming the migration."""

from __future__ import annotations

import base64
import json

import pytest
from kafka import KafkaProducer

from river_cw import state
from streams.kafka import state_topic
from streams.kafka.client import KafkaSettings, create_topics
from streams.kafka.envelope import StateKeys
from streams.kafka.learner import PartitionState
from tests.kafka.state_fixture import PATH, expected

FIXTURE = json.loads(PATH.read_text())
TEXT = {"0": True, "1": True, "2": False, "3": False}  # the partitions of text examples


def what_a_restore_gives(restored: PartitionState, partition: str) -> dict:
    """`expected` of a restored state, without the model's bytes (a later version may write
    another format)."""
    found = expected(restored, TEXT[partition])
    del found["model"]
    return found


@pytest.mark.parametrize("partition", sorted(FIXTURE["expected"]))
def test_the_models_of_format_1_load_bit_for_bit(partition):
    wanted = FIXTURE["expected"][partition]
    model = state.loads(base64.b64decode(wanted["model"]))
    as_state = PartitionState("t", 0, model)
    found = expected(as_state, TEXT[partition])
    for name in ("classes", "weights", "variances", "intercept", "probabilities"):
        assert found[name] == wanted[name], name


@pytest.mark.kafka
def test_the_state_topic_of_format_1_restores_bit_for_bit(kafka_broker):
    """The records produced as they were written, in order, to a state topic of the fixture's
    name (the parts are signed for it); each partition restores to the state the server had."""
    settings = KafkaSettings(kafka_broker.bootstrap_servers)
    topic = FIXTURE["state_topic"]
    create_topics(
        settings.bootstrap_servers, {topic: len(FIXTURE["expected"])}, state_topic.TOPIC_CONFIG
    )
    producer = KafkaProducer(**settings.kafka_python())
    for record in FIXTURE["records"]:
        value = record["value"]
        producer.send(
            topic,
            value=None if value is None else base64.b64decode(value),
            key=record["key"].encode(),
            partition=record["partition"],
            headers=[(name, base64.b64decode(v)) for name, v in record["headers"]],
        )
    producer.flush()
    producer.close()
    keys = StateKeys.parse(FIXTURE["key"], "the fixture's key")
    for partition, wanted in FIXTURE["expected"].items():
        restored = state_topic.restore(settings, topic, int(partition), keys)
        assert restored.changes > 0  # the changes after the last snapshot were read
        wanted = {name: value for name, value in wanted.items() if name != "model"}
        assert what_a_restore_gives(restored.state, partition) == wanted
        assert restored.state.model_spec == "AROW()" + (" --text" if TEXT[partition] else "")
