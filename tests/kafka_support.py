"""Helpers for the Kafka tests: producing, reading topics back, offline reference runs, threads."""

from __future__ import annotations

import copy
import json
import pickle
import threading
import time
from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from streams.kafka import state_topic
from streams.kafka.client import KafkaSettings
from streams.kafka.committed import committed_consumer
from streams.kafka.config import Mixing, Topics
from streams.kafka.messages import encode_example, encode_prediction
from streams.kafka.server import ModelServer

REPO = Path(__file__).resolve().parents[1]


def produce(
    bootstrap: str,
    topic: str,
    values: list[bytes],
    keys: list | None = None,
    partitions: list[int] | None = None,
) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    for i, value in enumerate(values):
        producer.send(
            topic,
            value=value,
            key=None if keys is None else str(keys[i]).encode(),
            partition=0 if partitions is None else partitions[i],
        )
    producer.flush()
    producer.close()


def produce_examples(bootstrap: str, topic: str, examples: list[tuple], partitions=None) -> None:
    """Publish ``(id, x, label)`` examples keyed by id; `partitions` maps an id to its partition."""
    produce(
        bootstrap,
        topic,
        [encode_example(*e) for e in examples],
        keys=[e[0] for e in examples],
        partitions=None if partitions is None else [partitions(e[0]) for e in examples],
    )


def model_server(
    model, settings, topic: str, checkpoint_dir, labels_topic=None, mix=None, **kwargs
):
    """A `ModelServer` on `topic`, writing to `topic.predictions` and `topic.dead`; `mix`: the
    keyword arguments of a `Mixing`."""
    return ModelServer(
        model,
        settings,
        topics=Topics(topic, dead_letters=f"{topic}.dead", labels=labels_topic),
        checkpoint_dir=checkpoint_dir,
        mixing=None if mix is None else Mixing(**mix),
        **kwargs,
    )


def read_topic(
    bootstrap: str, topic: str, count: int, timeout: float = 20.0, committed: bool = True
) -> list:
    """At least `count` records of every partition of `topic`, in partition then offset order;
    of committed transactions only (`streams.kafka.committed`) unless `committed` is False."""
    consumer = (committed_consumer if committed else KafkaConsumer)(
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        fetch_max_wait_ms=100,
    )
    try:
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or [])]
        consumer.assign(tps)
        records, deadline = [], time.monotonic() + timeout
        while len(records) < count and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=200).values():
                records.extend(batch)
        # one more short poll: catch anything beyond `count` (duplicates, strays)
        for batch in consumer.poll(timeout_ms=300).values():
            records.extend(batch)
    finally:
        consumer.close(autocommit=False)
    return sorted(records, key=lambda r: (r.partition, r.offset))


def stored_state(bootstrap: str, topic: str, partition: int):
    """The last committed state of `partition` of examples topic `topic` in its state topic."""
    state, _ = state_topic.restore(
        KafkaSettings(bootstrap), state_topic.state_topic(topic), partition
    )
    return state


def offline(model, examples: list[tuple]) -> tuple[object, dict]:
    """Progressive validation of a copy of `model` over (id, x, y): final model and the
    prediction message each example gets, by its id as a string (as the server normalises it),
    encoded as the server would encode it (partition 0)."""
    model = copy.deepcopy(model)
    predictions = {}
    for learned, (id_, x, y) in enumerate(examples):
        proba = model.predict_proba_one(x)
        predictions[str(id_)] = json.loads(
            encode_prediction(str(id_), model.predict_one(x), proba, learned, 0)
        )
        model.learn_one(x, y)
    return model, predictions


def assert_same_model(model, reference, probe: list) -> None:
    """Same state (pickles compared after one load, which settles object sharing) and the very
    same probabilities on `probe`."""
    canonical = lambda m: pickle.dumps(pickle.loads(pickle.dumps(m)))  # noqa: E731
    assert canonical(model) == canonical(reference)
    assert [model.predict_proba_one(x) for x in probe] == [
        reference.predict_proba_one(x) for x in probe
    ]


class ServerThread:
    """Runs `ModelServer.run` in a thread; `stop` joins it and re-raises what it raised."""

    def __init__(self, server):
        self.server, self.error = server, None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            self.server.run()
        except BaseException as error:
            self.error = error

    def stop(self, timeout: float = 30.0) -> None:
        self.server.stop()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the server did not stop"
        if self.error is not None:
            raise self.error


def wait_until(condition, timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
        time.sleep(0.05)
