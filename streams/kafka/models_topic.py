"""The models topic of mixing (`river-cw serve --mix`): the partitions' contributions to rounds.

One partition (`<topic>.models`), so that every member reads every contribution in one log. A
contribution (`streams.models.mixing.Contribution`) is pickled, cut in chunks of at most
`streams.kafka.state_topic.CHUNK_BYTES` (keys ``<round>/<partition>/c<i>``) and closed by a manifest
(key ``<round>/<partition>``, JSON ``{"round", "partition", "chunks", "bytes"}``), all written in
the transaction of the partition that commits its state and offsets with it (see
`streams.models.mixing` for why). `Reader` reads committed records only (`streams.kafka.committed`) and
returns each complete contribution with the offset of its manifest.

The contributions of a round all lie after those of the rounds before it (a partition publishes
to round r + 1 only after round r was complete, all its records committed), so a partition that
has mixed round r needs the topic from after round r's last manifest only (`MixState.models_from`).
Pickle runs code on load: read only models topics your servers wrote.
"""

from __future__ import annotations

import json
import logging
import pickle

from kafka import TopicPartition

from streams.kafka.client import KafkaSettings
from streams.kafka.committed import committed_consumer
from streams.kafka.state_topic import CHUNK_BYTES, chunked
from streams.models.mixing import Contribution

FORMAT = "river-cw contribution 1"

log = logging.getLogger(__name__)


def models_topic(examples_topic: str) -> str:
    return f"{examples_topic}.models"


def write(outputs, topic: str, contribution: Contribution):
    """Send `contribution` with `outputs` (inside its open transaction)."""
    payload = {"format": FORMAT, "contribution": contribution}
    data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    name = f"{contribution.round}/{contribution.partition}"
    chunks = chunked(data)
    for i, chunk in enumerate(chunks):
        outputs.send(topic, chunk, f"{name}/c{i}".encode(), partition=0)
    manifest = {
        "round": contribution.round,
        "partition": contribution.partition,
        "chunks": len(chunks),
        "bytes": len(data),
    }
    outputs.send(topic, json.dumps(manifest).encode(), name.encode(), partition=0)


class Reader:
    """The committed contributions of a models topic, from an offset on."""

    def __init__(self, settings: KafkaSettings, topic: str):
        self._consumer = committed_consumer(
            bootstrap_servers=settings.bootstrap_servers,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=settings.fetch_max_wait_ms,
            max_partition_fetch_bytes=4 * CHUNK_BYTES,
        )
        self._tp = TopicPartition(topic, 0)
        self._consumer.assign([self._tp])
        self._chunks: dict[str, dict[int, bytes]] = {}
        self._next: int | None = None  # where reading goes on; None: not started

    def rewind(self, offset: int) -> None:
        """Read from `offset` next if that is before where reading was (contributions read
        again are returned again)."""
        if self._next is None or offset < self._next:
            self._consumer.seek(self._tp, offset)
            self._chunks.clear()
            self._next = offset

    def poll(self, timeout_ms: int = 0) -> list[tuple[Contribution, int]]:
        """The contributions completed by the records of one fetch, with their offsets."""
        found = []
        for records in self._consumer.poll(timeout_ms=timeout_ms).values():
            for record in records:
                key = record.key.decode()
                name, _, chunk = key.rpartition("/c") if "/c" in key else (key, "", "")
                if chunk:
                    self._chunks.setdefault(name, {})[int(chunk)] = record.value
                    continue
                manifest = json.loads(record.value)
                parts = self._chunks.pop(name, {})
                data = b"".join(parts.get(i, b"") for i in range(manifest["chunks"]))
                if len(parts) != manifest["chunks"] or len(data) != manifest["bytes"]:
                    log.warning(
                        "%s: contribution %s at offset %d is incomplete, skipped",
                        self._tp.topic,
                        name,
                        record.offset,
                    )
                    continue
                payload = pickle.loads(data)
                if not isinstance(payload, dict) or payload.get("format") != FORMAT:
                    raise ValueError(f"{self._tp.topic} holds no {FORMAT!r} records")
                found.append((payload["contribution"], record.offset))
        if self._next is not None:
            self._next = max(self._next, self._consumer.position(self._tp))
        return found

    def close(self) -> None:
        self._consumer.close(autocommit=False)
