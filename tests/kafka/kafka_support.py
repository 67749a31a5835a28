"""Helpers for the Kafka tests: producing, reading topics back, offline reference runs, threads."""

from __future__ import annotations

import copy
import json
import pickle
import random
import threading
import time
import uuid
from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from streams.kafka import state_topic
from streams.kafka.client import KafkaSettings
from streams.kafka.committed import committed_consumer
from streams.kafka.config import Mixing, Topics
from streams.kafka.envelope import StateKeys
from streams.kafka.messages import encode_example, encode_prediction
from streams.kafka.server import ModelServer

REPO = Path(__file__).resolve().parents[2]
KEY_TEXT = "the tests' state key: 32 bytes or more"
KEYS = StateKeys.parse(KEY_TEXT, "the tests' key")


def settings_of(bootstrap: str | KafkaSettings) -> KafkaSettings:
    """The settings of a broker given by address (plaintext) or by its settings."""
    return bootstrap if isinstance(bootstrap, KafkaSettings) else KafkaSettings(bootstrap)


def produce(
    bootstrap: str | KafkaSettings,
    topic: str,
    values: list[bytes],
    keys: list | None = None,
    partitions: list[int] | None = None,
) -> None:
    producer = KafkaProducer(**settings_of(bootstrap).kafka_python(linger_ms=5))
    for i, value in enumerate(values):
        key = None if keys is None else keys[i]
        producer.send(
            topic,
            value=value,
            key=key if key is None or isinstance(key, bytes) else str(key).encode(),
            partition=0 if partitions is None else partitions[i],
        )
    producer.flush()
    producer.close()


def produce_examples(bootstrap, topic: str, examples: list[tuple], partitions=None) -> None:
    """Publish ``(id, x, label)`` examples keyed by id; `partitions` maps an id to its partition."""
    produce(
        bootstrap,
        topic,
        [encode_example(*e) for e in examples],
        keys=[e[0] for e in examples],
        partitions=None if partitions is None else [partitions(e[0]) for e in examples],
    )


def synthetic(first: int, last: int) -> list[tuple]:
    """Examples ``(i, {"a", "b"}, label)`` for ids `first` to `last` - 1, two Gaussian
    features and a linear boundary (the same for the same `first`)."""
    rng = random.Random(first)
    rows = []
    for i in range(first, last):
        a, b = rng.gauss(0, 1), rng.gauss(0, 1)
        rows.append((i, {"a": a, "b": b}, a + 0.5 * b > 0))
    return rows


def model_server(
    model, settings, topic: str, checkpoint_dir, labels_topic=None, mix=None, **kwargs
):
    """A `ModelServer` on `topic`, writing to `topic.predictions` and `topic.dead`, its state
    sealed with `KEYS`; `mix`: the keyword arguments of a `Mixing`."""
    return ModelServer(
        model,
        settings,
        topics=Topics(topic, dead_letters=f"{topic}.dead", labels=labels_topic),
        state_keys=KEYS,
        checkpoint_dir=checkpoint_dir,
        mixing=None if mix is None else Mixing(**mix),
        **kwargs,
    )


END = b"--end of read_topic--"


def read_topic(
    bootstrap: str | KafkaSettings,
    topic: str,
    count: int | None = None,
    timeout: float = 60.0,
    committed: bool = True,
) -> list:
    """Every record of every partition of `topic` written so far, in partition then offset
    order; of committed transactions only (`streams.kafka.committed`) unless `committed` is
    False. An end mark (outside transactions) is appended to each partition and the topic read
    until every mark is seen: whatever was committed before is then read, duplicates included,
    whatever the timing. `count`, if given, is the least number of records expected."""
    consumer = (committed_consumer if committed else KafkaConsumer)(
        **settings_of(bootstrap).kafka_python(
            auto_offset_reset="earliest", enable_auto_commit=False, fetch_max_wait_ms=100
        )
    )
    try:
        partitions = sorted(consumer.partitions_for_topic(topic) or [])
        mark = END + uuid.uuid4().hex.encode()
        produce(bootstrap, topic, [b""] * len(partitions), [mark] * len(partitions), partitions)
        consumer.assign([TopicPartition(topic, p) for p in partitions])
        records, marked, deadline = [], set(), time.monotonic() + timeout
        while len(marked) < len(partitions):
            assert time.monotonic() < deadline, f"{topic}: end marks not read in {timeout} s"
            for batch in consumer.poll(timeout_ms=200).values():
                for record in batch:
                    if record.key == mark:
                        marked.add(record.partition)
                    elif not (record.key or b"").startswith(END):
                        records.append(record)
    finally:
        consumer.close(autocommit=False)
    assert count is None or len(records) >= count, (topic, len(records), count)
    return sorted(records, key=lambda r: (r.partition, r.offset))


def stored_state(bootstrap: str | KafkaSettings, topic: str, partition: int):
    """The last committed state of `partition` of examples topic `topic` in its state topic."""
    restored = state_topic.restore(
        settings_of(bootstrap), state_topic.state_topic(topic), partition, KEYS
    )
    return restored.state


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


def assert_exactly_once(bootstrap, topic, examples, partitions: int, new_model) -> None:
    """Every partition's stored state equals the offline run of `new_model()` over its
    examples (partition = id % `partitions`), and the committed predictions hold one per
    example, the offline run's: none lost, none twice."""
    expected = {}
    for p in range(partitions):
        mine = [e for e in examples if e[0] % partitions == p]
        state = stored_state(bootstrap, topic, p)
        assert (state.learned, state.offsets) == (len(mine), {topic: len(mine)})
        reference, predictions = offline(new_model(), mine)
        assert_same_model(state.model, reference, [x for _, x, _ in mine[:200]])
        expected |= {i: m | {"partition": p} for i, m in predictions.items()}
    records = read_topic(bootstrap, f"{topic}.predictions", len(examples))
    predictions = [json.loads(r.value) for r in records]
    assert sorted(int(p["id"]) for p in predictions) == list(range(len(examples)))
    assert all(p == expected[p["id"]] for p in predictions)


def assert_same_model(model, reference, probe: list) -> None:
    """Same state (pickles compared after one load, which settles object sharing) and the very
    same probabilities on `probe`."""
    canonical = lambda m: pickle.dumps(pickle.loads(pickle.dumps(m)))  # noqa: E731
    assert canonical(model) == canonical(reference)
    assert [model.predict_proba_one(x) for x in probe] == [
        reference.predict_proba_one(x) for x in probe
    ]


def serve_until(server, condition, timeout: float = 60.0, what: str = "condition") -> dict:
    """Run `server` in a thread until `condition()` holds (or the server stops by itself, with
    an error re-raised here), stop it (a final commit) and return its final states."""
    running = ServerThread(server)
    try:
        wait_until(lambda: condition() or not running.thread.is_alive(), timeout, what)
    finally:
        running.stop()
    return server.states


def read_all(server, topic: str, count: int, partitions=(0,)):
    """A condition: `server` has read `count` records of `topic` in each of `partitions`."""
    return lambda: all(
        server.states.get(p) is not None and server.states[p].offsets.get(topic) == count
        for p in partitions
    )


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
