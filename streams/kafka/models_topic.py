"""The models topic of mixing (`river-cw serve --mix`): the partitions' contributions to rounds.

One partition (`<topic>.models`), so that every member reads every contribution in one log. A
contribution (`streams.models.mixing.Contribution`) is pickled, cut in chunks of at most
`streams.kafka.state_topic.CHUNK_BYTES` (keys ``<round>/<partition>/c<i>``) and closed by a manifest
(key ``<round>/<partition>``, JSON ``{"round", "partition", "chunks", "bytes"}``), all written in
the transaction of the partition that commits its state and offsets with it (see
`streams.models.mixing` for why). `Reader` reads committed records only (`streams.kafka.committed.CommittedReader`) and
returns each complete contribution with the offset of its manifest.

The contributions of a round all lie after those of the rounds before it (a partition publishes
to round r + 1 only after round r was complete, all its records committed), so a partition that
has mixed round r needs the topic from after round r's last manifest only (`MixState.models_from`).

Pickle runs code on load, and anyone allowed to produce to the models topic can write to it. So
a contribution's pickle is sealed (`streams.kafka.envelope`) in the context of its topic, round
and partition, and `Reader` unpickles only what verifies: a malformed, incomplete or forged
contribution (or a true one presented as another round's or partition's) is logged, reported
to `rejected` and ignored, and the rounds wait for the true one.
"""

from __future__ import annotations

import json
import logging
import pickle
from collections.abc import Callable

from streams.kafka.client import KafkaSettings
from streams.kafka.committed import CommittedReader
from streams.kafka.envelope import Forged, StateKeys
from streams.kafka.state_topic import CHUNK_BYTES, chunked
from streams.models.mixing import Contribution

FORMAT = "river-cw contribution 1"

log = logging.getLogger(__name__)


def models_topic(examples_topic: str) -> str:
    return f"{examples_topic}.models"


def context(topic: str, round_: int, partition: int) -> str:
    """Where a contribution belongs: what its envelope is bound to."""
    return f"{FORMAT}|{topic}|{round_}|{partition}"


def write(outputs, topic: str, contribution: Contribution, keys: StateKeys):
    """Send `contribution`, sealed with `keys`, with `outputs` (inside its open transaction)."""
    payload = {"format": FORMAT, "contribution": contribution}
    data = keys.seal(
        context(topic, contribution.round, contribution.partition),
        pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL),
    )
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
    """The committed contributions of a models topic that verify under `keys`, from an offset
    on; `rejected()` is called for each record ignored."""

    def __init__(
        self,
        settings: KafkaSettings,
        topic: str,
        keys: StateKeys,
        rejected: Callable[[], None] | None = None,
    ):
        self._reader = CommittedReader(settings, topic, [0], fetch_bytes=4 * CHUNK_BYTES)
        self._topic = topic
        self._keys = keys
        self._rejected = rejected or (lambda: None)
        self._chunks: dict[str, dict[int, bytes]] = {}
        self._next: int | None = None  # where reading goes on; None: not started

    def rewind(self, offset: int) -> None:
        """Read from `offset` next if that is before where reading was (contributions read
        again are returned again)."""
        if self._next is None or offset < self._next:
            self._reader.seek(0, offset)
            self._chunks.clear()
            self._next = offset

    def poll(self, timeout_ms: int = 0) -> list[tuple[Contribution, int]]:
        """The contributions completed by the records of one fetch, with their offsets."""
        found = []
        for record in self._reader.poll(timeout_ms):
            try:
                data = self._take(record)
            except (Forged, ValueError, KeyError, TypeError, AttributeError) as error:
                self._rejected()
                log.warning(
                    "%s: record at offset %d rejected (%s): ignored",
                    self._topic,
                    record.offset,
                    error,
                )
                continue
            if data is None:
                continue
            payload = pickle.loads(data)  # verified: written by a server holding the key
            if not isinstance(payload, dict) or payload.get("format") != FORMAT:
                raise ValueError(f"{self._topic} holds no {FORMAT!r} records")
            found.append((payload["contribution"], record.offset))
        if self._next is not None:
            self._next = max(self._next, self._reader.position(0))
        return found

    def _take(self, record) -> bytes | None:
        """A chunk kept (None), or a manifest: its contribution's verified payload."""
        key = record.key.decode()
        name, _, chunk = key.rpartition("/c") if "/c" in key else (key, "", "")
        if chunk:
            self._chunks.setdefault(name, {})[int(chunk)] = record.value
            return None
        manifest = json.loads(record.value)
        parts = self._chunks.pop(name, {})
        # chunks beyond the manifest's count are ignored: forged ones must not void a true one
        # (a transaction's records come out together, so a forged chunk cannot replace one)
        missing = [i for i in range(manifest["chunks"]) if i not in parts]
        data = b"".join(parts.get(i, b"") for i in range(manifest["chunks"]))
        if missing or len(data) != manifest["bytes"]:
            raise ValueError(f"contribution {name} is incomplete")
        where = context(self._topic, manifest["round"], manifest["partition"])
        return self._keys.open(where, data)

    def close(self) -> None:
        self._reader.close()
