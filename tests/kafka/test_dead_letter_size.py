"""The dead-letter size limit (`streams.kafka.outputs.Outputs.dead_letter`), without a broker.

A dead letter forwards the record's key and value as they came unless together they exceed
`Outputs.forward_limit` bytes; then each is cut to its first `Outputs.head_bytes`. Either way
the message, headers included, fits the producer's request limit, so a record the broker
accepted can always be dead-lettered.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams.kafka.outputs import Outputs

LIMIT = Outputs.forward_limit
HEAD = Outputs.head_bytes
REQUEST_LIMIT = 1_100_000  # the producer's message.max.bytes (Outputs.__init__)


class Recorded(Outputs):
    """`Outputs` whose sends are recorded instead of produced."""

    def __init__(self):
        self.sent = []

    def send(self, topic: str, value=None, key=None, partition=-1, headers=None):
        self.sent.append((topic, {"key": key, "value": value, "headers": headers}))


def record(key: bytes | None, value: bytes | None, topic: str = "examples"):
    """A consumed record as the client hands it over: its fields are methods."""
    fields = {"topic": topic, "partition": 3, "offset": 41, "key": key, "value": value}
    return SimpleNamespace(**{name: (lambda v=v: v) for name, v in fields.items()})


def dead_letter(key, value, reason="bad JSON", topic="examples"):
    """The message `Outputs.dead_letter` sends for a record of this key and value."""
    outputs = Recorded()
    outputs.dead_letter("dead", record(key, value, topic), reason)
    [(sent_to, message)] = outputs.sent
    assert sent_to == "dead"
    return message


def header(message, name):
    values = [value for key, value in message["headers"] if key == name]
    return values[0].decode() if values else None


@pytest.mark.parametrize(
    "key_size, value_size",
    [(0, 0), (10, 100), (0, LIMIT), (LIMIT // 2, LIMIT - LIMIT // 2), (LIMIT, 0)],
)
def test_a_record_within_the_limit_is_forwarded_whole(key_size, value_size):
    key, value = b"k" * key_size, b"v" * value_size
    message = dead_letter(key, value)
    assert message["key"] == key and message["value"] == value
    assert header(message, "truncated") is None
    assert header(message, "size") == str(value_size)
    assert (header(message, "topic"), header(message, "partition")) == ("examples", "3")
    assert (header(message, "offset"), header(message, "reason")) == ("41", "bad JSON")


@pytest.mark.parametrize(
    "key_size, value_size",
    [
        (1, LIMIT),
        (0, LIMIT + 1),
        (LIMIT // 2 + 1, LIMIT - LIMIT // 2),
        (LIMIT + 1, 0),
        (10, 2 * LIMIT),
    ],
)
def test_a_key_and_value_over_the_limit_together_are_cut_to_their_heads(key_size, value_size):
    """The key counts: a value within the limit with a key that takes the pair over it is cut."""
    key, value = bytes(range(256)) * (key_size // 256 + 1), b"v" * value_size
    key = key[:key_size]
    message = dead_letter(key, value)
    assert message["key"] == key[:HEAD] and message["value"] == value[:HEAD]
    assert header(message, "truncated") == str(HEAD)
    assert header(message, "size") == str(value_size)


def test_a_record_without_a_key_is_forwarded_without_one():
    assert dead_letter(None, b"v" * 10)["key"] is None
    message = dead_letter(None, b"v" * (LIMIT + 1))
    assert message["key"] is None and message["value"] == b"v" * HEAD


@settings(max_examples=40, deadline=None)
@given(
    key_size=st.one_of(st.integers(0, 2 * LIMIT), st.sampled_from([LIMIT, LIMIT + 1])),
    value_size=st.one_of(st.integers(0, 2 * LIMIT), st.sampled_from([0, LIMIT, LIMIT + 1])),
    reason=st.text(max_size=50).map(lambda text: text * 400),
    topic=st.text(st.characters(codec="ascii"), min_size=1, max_size=249),
)
def test_a_dead_letter_always_fits_the_producers_request_limit(key_size, value_size, reason, topic):
    """Key, value and headers (a reason of up to 20,000 characters, cut to 10,000 of at most 4
    bytes each in UTF-8, and Kafka's longest topic name) within the producer's message limit,
    with room for the record's framing."""
    key, value = b"k" * key_size, b"v" * value_size
    message = dead_letter(key, value, reason, topic)
    forwarded = len(message["key"]) + len(message["value"])
    assert forwarded <= LIMIT
    if key_size + value_size <= LIMIT:
        assert message["key"] == key and message["value"] == value
    headers = sum(len(name) + len(content) for name, content in message["headers"])
    assert forwarded + headers + 1024 <= REQUEST_LIMIT
