"""A producer of outputs reports every failed delivery, a record followed by a `Delivery` (the
state topic's parts and marks) included: librdkafka calls a record's own callback instead of the
producer's, which once left such a failure unseen and the part's offset None."""

from __future__ import annotations

import pytest

from streams.kafka.broker import free_port
from streams.kafka.client import BrokerUnavailable, KafkaSettings
from streams.kafka.outputs import Delivery, Outputs


def test_a_failed_delivery_followed_by_a_delivery_fails_the_flush():
    settings = KafkaSettings(f"127.0.0.1:{free_port()}", transaction_timeout_ms=200)
    outputs = Outputs(settings)  # nothing listens: the record times out after 200 ms
    outputs._timeout = 30.0  # the flush outwaits the record's timeout, so its report comes
    delivery = Delivery()
    try:
        outputs.send("state", b"part", b"0", delivery=delivery)
        with pytest.raises(BrokerUnavailable, match="1 messages were not delivered"):
            outputs.flush()
    finally:
        outputs.close()
    assert delivery.error is not None
    with pytest.raises(RuntimeError, match="the record is not delivered"):
        _ = delivery.offset
