"""The committed state-topic fixture: the records a server of the first versioned format wrote.

`records()` learns four `AROW()` partitions as `river-cw serve` does (`PartitionLearner` on
encoded examples and labels, `StateStore.write` at each commit): text and dense examples, binary
and multi-class, with labels of several types and examples and labels still pending. Each
partition's commits write a snapshot, then changes (after a third label, a snapshot again). It
returns the state topic's records, in order, and what a restore must give for each partition:
its counters, offsets, pending examples and labels, and its model's labels, weights, variances
and probabilities on a few examples, every float by its bits.

    python -m tests.kafka.state_fixture   # writes tests/kafka/data/state_format_1.json

was run once, by the version that introduced the format; the file stays as it is, and
tests/kafka/test_state_fixture.py restores it in every later version.
"""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path
from types import SimpleNamespace

from river_cw import AROW, state
from streams.kafka.config import ServeConfig, Topics
from streams.kafka.envelope import StateKeys
from streams.kafka.learner import PartitionLearner, PartitionState
from streams.kafka.messages import encode_example, encode_label
from streams.kafka.store import StateStore
from streams.models.specs import prepare
from tests.support.bits import bits_of

PATH = Path(__file__).parent / "data" / "state_format_1.json"
KEY = "the state fixture key: 32 bytes or more"
TOPIC, STATE_TOPIC = "reviews", "reviews.state"
WORDS = ["good", "bad", "fine", "awful", "great", "dull", "plot", "cast", "score", "fun"]

# partition -> (what it learns, --text, its labels)
PARTITIONS = {
    0: ("text binary", True, ["pos", "neg"]),
    1: ("text multi-class", True, ["pos", "neg", "mixed"]),
    2: ("dense binary", False, [True, False]),
    3: ("dense multi-class", False, [2, 0, 1]),
}


class Recorder:
    """The outputs of `StateStore.write`: the records it sends, with offsets in order."""

    transactional = False

    def __init__(self):
        self.records: list[dict] = []

    def send(self, topic, value=None, key=None, partition=-1, headers=None, delivery=None):
        headers = [[name, base64.b64encode(v).decode()] for name, v in headers or ()]
        value = None if value is None else base64.b64encode(value).decode()
        self.records.append(
            {"partition": partition, "key": key.decode(), "value": value, "headers": headers}
        )
        if delivery is not None:
            offset = len(self.records) - 1
            delivery(None, SimpleNamespace(offset=lambda: offset))


def example(rng: random.Random, text: bool) -> dict:
    if text:
        return {"text": " ".join(rng.choice(WORDS) for _ in range(5))}
    return {"a": rng.uniform(5.0, 6.0), "b": rng.uniform(-1.0, 1.0)}


def probes(text: bool) -> list[dict]:
    rng = random.Random(99)
    return [example(rng, text) for _ in range(4)]


def expected(partition_state: PartitionState, text: bool) -> dict:
    """What a restore of the state must give, floats by their bits."""
    model = partition_state.model
    core = model.classifier if text else model
    return {
        "counters": {
            name: getattr(partition_state, name)
            for name in ("learned", "predicted", "batches", "dead_letters", "examples_seen")
        },
        "offsets": partition_state.offsets,
        "pending_examples": repr(bits_of(partition_state.pending_examples)),
        "pending_labels": repr(partition_state.pending_labels),
        "classes": repr(core.classes_),
        "weights": repr(bits_of(core.weights)),
        "variances": repr(bits_of(core.variances)),
        "intercept": repr(bits_of(core.intercept)),
        "probabilities": [repr(bits_of(model.predict_proba_one(x))) for x in probes(text)],
        "model": base64.b64encode(state.dumps(model)).decode(),
    }


def records() -> dict:
    keys = StateKeys.parse(KEY, "the fixture's key")
    config = ServeConfig(Topics(TOPIC, state=STATE_TOPIC), keys, snapshot_share=10.0)
    outputs = Recorder()
    expectations = {}
    for partition, (_, text, labels) in PARTITIONS.items():
        rng = random.Random(partition)
        spec = "AROW()" + (" --text" if text else "")
        model = prepare(AROW(), text=text)
        store = StateStore(None, config, model, spec)
        learner = PartitionLearner(PartitionState(TOPIC, partition, store.fresh()), model_spec=spec)
        offset = 0
        for commit in range(4):
            known = labels if commit >= 2 else labels[:2]  # a third label in the third commit
            for _ in range(6):
                x, y = example(rng, text), rng.choice(known)
                offset += 1
                if rng.random() < 0.2:  # its label comes later (or never)
                    learner.example(encode_example(str(offset), x))
                elif rng.random() < 0.1:  # its label comes first
                    learner.label(encode_label(str(offset), y))
                else:
                    learner.example(encode_example(str(offset), x, y))
            learner.state.offsets[TOPIC] = offset
            part = store.write(outputs, learner.state)
            store.saved(learner.state, part)
        expectations[str(partition)] = expected(learner.state, text)
    return {
        "key": KEY,
        "topic": TOPIC,
        "state_topic": STATE_TOPIC,
        "partitions": {str(p): what for p, (what, _, _) in PARTITIONS.items()},
        "records": outputs.records,
        "expected": expectations,
    }


if __name__ == "__main__":
    PATH.parent.mkdir(exist_ok=True)
    PATH.write_text(json.dumps(records(), indent=1) + "\n")
    print(f"wrote {PATH} ({PATH.stat().st_size:,} bytes)")
