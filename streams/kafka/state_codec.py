"""The bytes of a partition's state: how the state topic's parts and the checkpoint files hold it.

A part is a snapshot (a whole `PartitionState`) or a commit's changes (the state with its
model's Gaussian engine left out, and the weights that engine wrote since the previous commit:
`streams.kafka.changelog`). Its models travel in river-cw's versioned state format
(`river_cw.state`), which names no Python module, so that a state written by this version is
read by every later one; a model that format does not describe (a river pipeline, river's own
models, a subclass) travels as a pickle, which the state topic's envelope signs
(`streams.kafka.envelope`) and a later version may fail to load.

The layout (version 1), integers little-endian:

- 4 bytes ``RCWP``, the version (4 bytes), the header's length (4 bytes) and the header, JSON;
- the blobs the header lists, one after the other;
- the CRC-32 (`zlib.crc32`) of everything before it (4 bytes).

The header holds ``"kind"`` (``"snapshot"`` or ``"changes"``), ``"state"`` (the
`PartitionState`'s fields: offsets, counters, the pending examples and labels in the JSON forms
of `river_cw.state.to_json`, oldest first, and the mixing state, `streams.models.mixing.MixState`,
or null) and ``"blobs"``, each ``[name, encoding, length]``: ``"model"`` and ``"anchor"`` (the
mixing state's) in the encoding ``"river-cw"`` (`river_cw.state.dumps`; a changes part's model
without its engine) or ``"pickle"``, and a changes part's ``"weights"`` in ``"river-cw"``
(`river_cw.state.dumps_weights`).

>>> from river_cw import AROW
>>> from streams.kafka.learner import PartitionState
>>> state = PartitionState("t", 0, AROW(), offsets={"t": 2}, learned=2)
>>> state.model.learn_one({"a": 1.0}, "spam")
>>> data = encode(state)
>>> data[:4], decode(data).state().offsets
(b'RCWP', {'t': 2})
"""

from __future__ import annotations

import json
import pickle
import struct
import zlib
from dataclasses import dataclass

from river_cw import state as model_state
from streams.kafka.learner import PartitionState
from streams.models.mixing import MixState

__all__ = ["MAGIC", "VERSION", "Part", "decode", "encode"]

MAGIC = b"RCWP"
VERSION = 1
SNAPSHOT, CHANGES = "snapshot", "changes"
_FIXED = struct.Struct("<4sII")  # magic, version, the header's length
_CRC = struct.Struct("<I")

_COUNTERS = (
    "partition",
    "predicted",
    "learned",
    "dead_letters",
    "expired",
    "scored",
    "correct",
    "examples_seen",
    "batches",
)
_MIX_COUNTERS = (
    "round",
    "examples",
    "learned",
    "learned_at_anchor",
    "learned_at_publication",
    "models_from",
)


def encode(state: PartitionState, weights: list[dict] | None = None) -> bytes:
    """The bytes of a snapshot of `state`, or with `weights` (its engine's changes since its
    mark: `streams.kafka.changelog.changes`) of a changes part, the engine left out.

    Parameters
    ----------
    state
        The partition's state.
    weights
        None for a snapshot.
    """
    blobs = [_model("model", state.model, gaussian=weights is None)]
    if state.mixing is not None:
        blobs.append(_model("anchor", state.mixing.anchor))
    if weights is not None:
        blobs.append(("weights", "river-cw", model_state.dumps_weights(weights)))
    header = {
        "kind": SNAPSHOT if weights is None else CHANGES,
        "state": _fields(state),
        "blobs": [[name, encoding, len(data)] for name, encoding, data in blobs],
    }
    text = json.dumps(header, separators=(",", ":"), allow_nan=False).encode("ascii")
    body = b"".join([_FIXED.pack(MAGIC, VERSION, len(text)), text, *(b[2] for b in blobs)])
    return body + _CRC.pack(zlib.crc32(body))


def _model(name: str, model, gaussian: bool = True) -> tuple[str, str, bytes]:
    try:
        return name, "river-cw", model_state.dumps(model, gaussian=gaussian)
    except TypeError:
        if not gaussian:  # a changelog writes changes of the models the format describes
            raise
        return name, "pickle", pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL)


def _x(x: dict) -> list:
    return [[model_state.to_json(f), model_state.to_json(v)] for f, v in x.items()]


def _fields(state: PartitionState) -> dict:
    to_json = model_state.to_json
    out: dict = {name: getattr(state, name) for name in _COUNTERS}
    out["topic"], out["model_spec"] = state.topic, state.model_spec
    out["offsets"] = [[topic, offset] for topic, offset in state.offsets.items()]
    out["pending_examples"] = [
        [to_json(id_), _x(x), to_json(prediction)]
        for id_, (x, prediction) in state.pending_examples.items()
    ]
    out["pending_labels"] = [
        [to_json(id_), to_json(label), seen] for id_, (label, seen) in state.pending_labels.items()
    ]
    mixing = state.mixing
    out["mixing"] = None
    if mixing is not None:
        out["mixing"] = {name: getattr(mixing, name) for name in _MIX_COUNTERS}
        out["mixing"]["fingerprint"] = mixing.fingerprint
        out["mixing"]["replay"] = (
            None if mixing.replay is None else [[_x(x), to_json(y)] for x, y in mixing.replay]
        )
    return out


@dataclass(frozen=True)
class Part:
    """A part's bytes read back (`decode`): its kind, its header's state and its blobs."""

    kind: str
    fields: dict
    blobs: dict  # name -> (encoding, bytes)

    @property
    def weights(self) -> list[dict]:
        """A changes part's weights (per block, ``{feature: numbers}``)."""
        return model_state.loads_weights(self.blobs["weights"][1])

    def state(self, gaussian=None) -> PartitionState:
        """The `PartitionState`; a changes part's model holds `gaussian`, the engine of the
        state before it with the part's `weights` written (`streams.kafka.changelog.apply`)."""
        if (gaussian is None) != (self.kind == SNAPSHOT):
            raise ValueError(f"a {self.kind} part's state is read with an engine: give it")
        try:
            return self._state(gaussian)
        except (KeyError, IndexError, TypeError) as error:
            raise ValueError(f"the {self.kind} part's state is malformed: {error!r}") from None

    def _state(self, gaussian) -> PartitionState:
        from_json, f = model_state.from_json, self.fields
        mixing = None
        if f["mixing"] is not None:
            m = f["mixing"]
            replay = m["replay"]
            mixing = MixState(
                self._model("anchor"),
                m["fingerprint"],
                replay=None if replay is None else [(_dict(x), from_json(y)) for x, y in replay],
                **{name: m[name] for name in _MIX_COUNTERS},
            )
        return PartitionState(
            f["topic"],
            model=self._model("model", gaussian),
            offsets={topic: offset for topic, offset in f["offsets"]},
            pending_examples={
                from_json(id_): (_dict(x), from_json(p)) for id_, x, p in f["pending_examples"]
            },
            pending_labels={
                from_json(id_): (from_json(label), seen) for id_, label, seen in f["pending_labels"]
            },
            model_spec=f["model_spec"],
            mixing=mixing,
            **{name: f[name] for name in _COUNTERS},
        )

    def _model(self, name: str, gaussian=None):
        encoding, data = self.blobs[name]
        if encoding == "pickle":  # the envelope verified it (`streams.kafka.state_topic`)
            return pickle.loads(data)
        if encoding != "river-cw":
            raise ValueError(f"the {name} is in an encoding {encoding!r} this version lacks")
        return model_state.loads(data, gaussian=gaussian)


def _dict(pairs: list) -> dict:
    return {model_state.from_json(f): model_state.from_json(v) for f, v in pairs}


def decode(data: bytes) -> Part:
    """The part whose bytes `encode` wrote; `ValueError` naming what is wrong (no part, of a
    newer version, cut short or altered, malformed). Its models load in `Part.state`.

    Parameters
    ----------
    data
        The bytes of a part (or of a checkpoint's state).
    """
    if not isinstance(data, bytes) or len(data) < _FIXED.size + _CRC.size:
        raise ValueError("not a river-cw partition state: too short")
    magic, version, size = _FIXED.unpack_from(data)
    if magic != MAGIC:
        raise ValueError(f"not a river-cw partition state (it starts with {magic!r})")
    if version > VERSION:
        raise ValueError(
            f"a partition state of version {version}, newer than this river-cw reads "
            f"({VERSION}): upgrade river-cw"
        )
    body = memoryview(data)[: -_CRC.size]
    if _CRC.unpack_from(data, len(body))[0] != zlib.crc32(body):
        raise ValueError("the partition state's checksum does not match: cut short or altered")
    start = _FIXED.size + size
    try:
        header = json.loads(bytes(body[_FIXED.size : start]))
        blobs = {}
        for name, encoding, length in header["blobs"]:
            blobs[name] = (encoding, bytes(body[start : start + length]))
            start += length
        kind, state = header["kind"], header["state"]
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"the partition state's header is malformed: {error!r}") from None
    if start != len(body) or kind not in (SNAPSHOT, CHANGES):
        raise ValueError("the partition state's blobs do not fit its header")
    return Part(kind, state, blobs)
