"""The versioned state format: a model as bytes that every later river-cw reads back.

A pickle names the modules and functions that rebuild an object, so moving one of them breaks
every pickle written before. This format names no Python module: it describes the model by its
public class, its hyperparameters, its labels and the numbers of its state, and `loads` rebuilds
it in whatever engine serves (compiled or pure Python), bit for bit. A state written by this
version loads in every later version, or is refused with a `ValueError` saying why.

It describes the Gaussian classifiers (`AROW`, `CW`, `NHERD`, `SCW`, `SOP`: every covariance,
diagonal, arrowhead or full, with forgetting, calibration and an intercept), `VotedRDA`, and
`river_cw.text.TextClassifier` around either (with a tokenizer given by a pattern, not by a
function). Their labels, feature names and the values of their hyperparameters may be ``str``,
``int``, ``bool``, ``float``, ``None``, tuples of these and `river_cw.INTERCEPT`. Anything else
(a subclass, a river pipeline, a feature name of another type) raises `TypeError`: pickle it.

The models' own pickles go through it (their ``__reduce_ex__`` names only `loads`), so a pickle
of one of these models survives a release too; `copy.deepcopy` copies them as before.

The layout (format 2), all integers little-endian:

- 4 bytes ``RCWS``, then the format as a 4-byte unsigned integer (2);
- the header's length (4 bytes) and the header, a JSON object (ASCII);
- the arrays the header lists under ``"arrays"`` (``[type, count]``: ``"f8"`` float64, ``"i8"``
  int64, ``"u1"`` bytes), one after the other, their bytes little-endian;
- the CRC-32 (`zlib.crc32`) of everything before it (4 bytes).

The header holds ``"model"`` (the class name), ``"parameters"`` (the constructor's arguments),
``"labels"`` (``classes_``, in order), ``"skipped_updates"``, the calibration (a Gaussian
classifier's ``"temperature"``, ``[a, H]``, an array, or null, and, for one that sets its own
forgetting, ``"surprise"``, ``[n, e, q_bar]``, an array: `river_cw.surprise`, and where it may
centre, ``"log_score"``, ``[a', H', n, L, H, V]``, an array (absent from a state written before
the log score, which restores a model that reads the 0-1 surprise alone); for one that
calibrates, ``"flips"``, ``[n, eps]``, an array: `river_cw.flips` (absent from a state written
before it, which restores the prior share); where its
features are centred, ``"centring"``, null for a model that learns them as they are (and for a
state written before centring, which restores such a model), ``{"seen": n, "means": block}``
while it decides, ``{"centre": block}`` once centred, a block of one number per feature:
`river_cw.centring`; voted RDA's
``"calibration"``, the running losses of its temperatures, an array, or null) and the engine's
state: ``"gaussian"`` (its
``"covariance"`` and that covariance's parts, `river_cw.covariances.Covariance.parts`) or, for
`VotedRDA`, ``"rda"`` (the engine's attributes, `river_cw._engines.rda_engine.STATE`); a
`TextClassifier` holds its bag-of-words parameters and its ``"classifier"``, a header of its
own. Format 1 (river-cw 0.x before the Newton temperature) held a Gaussian classifier's
calibration as voted RDA's, the running losses of a grid of temperatures: it loads with the
grid's best temperature and a curvature of 1 (the Newton step's start), and every number else
as it was. Values are JSON of their own type (a float is written exactly, with its decimal point or
exponent) or tagged: ``{"tuple": [...]}``, ``{"set": [...]}``, ``{"frozenset": [...]}``,
``{"float": "inf"}`` for a float JSON cannot hold, ``{"river_cw": "INTERCEPT"}``. A block of
weights is ``{"keys": [...], "widths": [[count, width], ...], "numbers": array}``: its features
in order, each with ``width`` numbers of the array (runs of equal widths). An array is
``{"array": i}`` (the i-th listed), with its ``"shape"`` where it is a matrix.

The engines' parts, by covariance:

- ``"diagonal"``: ``initial_variance``; ``blocks``, per label block each feature's ``[mean,
  variance]``;
- ``"arrowhead"``: ``initial_variance``, ``root`` (the intercept), ``root_variance``; ``blocks``,
  each feature's ``[a_j, k_j, c_j]`` and the root's ``[mu_b, S]`` (`river_cw._engines.arrowhead`);
- ``"full"``: ``initial_variance``, ``n_blocks``, ``index`` (``(block, feature, row)`` tuples),
  ``mean`` (an array) and ``chol`` (the precision's Cholesky factor R, a matrix;
  `river_cw._engines.full`);
- voted RDA's ``"rda"``: ``blocks`` (each block's ``keys`` and its records as columns: ``s``,
  ``first``, ``closed``, ``inv0``, ``sqr0``, ``inv1``, ``sqr1`` and ``cut``, whether ``inv1`` and
  ``sqr1`` are set), ``cuts`` (the heap, as columns: ``ceiling``, ``pushed``, ``first`` and the
  ``block`` and position ``at`` of the record), ``counters`` (``live_cuts``, ``k``, ``c``, ``t``,
  ``inv``, ``sqr``, ``pushed``), ``counts`` and ``history`` (the voters: each block's ``keys``,
  ``lengths``, ``updates`` and ``values``), as `river_cw._engines.rda_engine` names them.

>>> import river_cw
>>> from river_cw import state
>>> model = river_cw.AROW()
>>> model.learn_one({"free": 1.0, "prize": 2.0}, "spam")
>>> model.learn_one({"lunch": 1.0}, "ham")
>>> data = state.dumps(model)
>>> data[:4], state.FORMAT
(b'RCWS', 2)
>>> copy = state.loads(data)
>>> copy.weights == model.weights and copy.classes_ == model.classes_
True
>>> state.loads(data[:-1])
Traceback (most recent call last):
...
ValueError: the state's checksum does not match: it was cut short or altered
"""

from __future__ import annotations

import json
import math
import struct
import sys
import zlib
from array import array
from itertools import chain, count, groupby, repeat
from typing import Any

import numpy as np

from . import calibration, covariances, flips
from ._engines.rda_engine import STATE
from .arow import AROW
from .base import INTERCEPT
from .centring import WARM_UP, Centring
from .cw import CW
from .labels import order_key
from .nherd import NHERD
from .rda import VotedRDA
from .scw import SCW
from .sop import SOP
from .text import TextClassifier

__all__ = [
    "FORMAT",
    "MAGIC",
    "dumps",
    "dumps_weights",
    "from_json",
    "loads",
    "loads_weights",
    "to_json",
]

MAGIC = b"RCWS"
FORMAT = 2
"""The format `dumps` writes; `loads` reads it and every earlier one."""

_GAUSSIAN = {cls.__name__: cls for cls in (AROW, CW, NHERD, SCW, SOP)}
_FIXED = struct.Struct("<4sII")  # magic, format, the header's length
_CRC = struct.Struct("<I")
_TYPES = {"f8": "d", "i8": "q", "u1": "B"}  # an array's type in the header, its array code
_LITTLE = sys.byteorder == "little"


# -- values ---------------------------------------------------------------------------------


def to_json(value):
    """The JSON form of a label, a feature name or a hyperparameter's value (see the module).

    Parameters
    ----------
    value
        A ``str``, ``int``, ``bool``, ``float``, ``None``, a tuple, set or frozenset of these,
        or `river_cw.INTERCEPT`; anything else raises `TypeError`.

    Examples
    --------

    >>> from river_cw import INTERCEPT
    >>> to_json(("spam", 1, 2.5, True)), to_json(INTERCEPT), to_json(float("inf"))
    ({'tuple': ['spam', 1, 2.5, True]}, {'river_cw': 'INTERCEPT'}, {'float': 'inf'})
    >>> from_json({"tuple": ["spam", 1, 2.5, True]})
    ('spam', 1, 2.5, True)

    """
    kind = type(value)
    if value is None or kind in (str, bool, int):
        return value
    if kind is float:
        return value if math.isfinite(value) else {"float": repr(value)}
    if kind is tuple:
        return {"tuple": [to_json(v) for v in value]}
    if kind in (set, frozenset):
        return {kind.__name__: [to_json(v) for v in sorted(value, key=order_key)]}
    if value is INTERCEPT:
        return {"river_cw": "INTERCEPT"}
    raise TypeError(
        f"the state format holds str, int, bool, float, None, tuples and sets of them and "
        f"river_cw.INTERCEPT, not {kind.__name__} {value!r}: pickle this model"
    )


_TAGS = {
    "tuple": lambda items: tuple(from_json(v) for v in items),
    "set": lambda items: {from_json(v) for v in items},
    "frozenset": lambda items: frozenset(from_json(v) for v in items),
    "float": lambda text: float(text) if text in ("inf", "-inf", "nan") else _bad(text),
    "river_cw": lambda name: INTERCEPT if name == "INTERCEPT" else _bad(name),
}


def from_json(obj):
    """The value whose JSON form (`to_json`) is `obj`; `ValueError` for no such form.

    Parameters
    ----------
    obj
        What `to_json` returned, after a trip through JSON.

    Examples
    --------

    >>> import json
    >>> from_json(json.loads('{"tuple": [1, {"float": "-inf"}, {"river_cw": "INTERCEPT"}]}'))
    (1, -inf, river_cw.INTERCEPT)

    """
    if obj is None or type(obj) in (str, bool, int, float):
        return obj
    if type(obj) is dict and len(obj) == 1:
        (tag, content), *_ = obj.items()
        if tag in _TAGS and isinstance(content, (list, str)):
            return _TAGS[tag](content)
    return _bad(obj)


def _bad(obj):
    raise ValueError(f"the state holds {obj!r}, which is no value of the format")


# -- the container ---------------------------------------------------------------------------


class _Writer:
    """A header's arrays, collected as it is built (`add` returns the reference to put in it)."""

    def __init__(self):
        self.arrays: list[tuple[str, bytes, int]] = []

    def add(self, kind: str, values) -> dict:
        data = values if isinstance(values, array) else array(_TYPES[kind], values)
        if not _LITTLE:
            data = array(data.typecode, data)
            data.byteswap()
        self.arrays.append((kind, data.tobytes(), len(data)))
        return {"array": len(self.arrays) - 1}

    def blocks(self, blocks) -> list[dict]:
        """Blocks of weights, ``{key: numbers}``, as the header holds them (see the module)."""
        out = []
        for block in blocks:
            runs = [[len(list(run)), width] for width, run in groupby(map(len, block.values()))]
            out.append(
                {
                    "keys": [k if type(k) is str else to_json(k) for k in block],
                    "widths": runs,
                    "numbers": self.add("f8", array("d", chain.from_iterable(block.values()))),
                }
            )
        return out

    def bytes(self, header: dict) -> bytes:
        header["arrays"] = [[kind, count] for kind, _, count in self.arrays]
        text = json.dumps(header, separators=(",", ":"), allow_nan=False).encode("ascii")
        parts = [_FIXED.pack(MAGIC, FORMAT, len(text)), text]
        parts += [data for _, data, _ in self.arrays]
        body = b"".join(parts)
        return body + _CRC.pack(zlib.crc32(body))


class _Reader:
    """The header and arrays of a state's bytes, checked (see `loads`)."""

    def __init__(self, data):
        data = bytes(data) if isinstance(data, (bytearray, memoryview)) else data
        if not isinstance(data, bytes):
            raise TypeError(f"a state is bytes, got {type(data).__name__}")
        if len(data) < _FIXED.size + _CRC.size or not data.startswith(MAGIC):
            raise ValueError(
                f"not a river-cw state (it starts with {data[:4]!r}, not {MAGIC!r}): a pickle "
                "is read with pickle.load"
            )
        _, version, size = _FIXED.unpack_from(data)
        self.version = version
        if version > FORMAT:
            raise ValueError(
                f"the state is of format {version}, newer than this river-cw reads (format "
                f"{FORMAT}): upgrade river-cw"
            )
        if version < 1:
            raise ValueError(f"the state is of format {version}: no river-cw writes it")
        body = memoryview(data)[: -_CRC.size]
        if _CRC.unpack_from(data, len(body))[0] != zlib.crc32(body):
            raise ValueError("the state's checksum does not match: it was cut short or altered")
        start = _FIXED.size + size
        try:
            self.header = json.loads(bytes(body[_FIXED.size : start]))
            self.arrays: list[array] = []
            for kind, count in self.header["arrays"]:
                code = _TYPES[kind]
                values = array(code)
                end = start + count * values.itemsize
                if count < 0 or end > len(body):
                    raise ValueError(f"array {len(self.arrays)} runs past the end")
                values.frombytes(body[start:end])
                if not _LITTLE:
                    values.byteswap()
                self.arrays.append(values)
                start = end
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"the state's header is malformed: {error!r}") from None
        if start != len(body):
            raise ValueError(f"the state holds {len(body) - start} bytes after its arrays")

    def array(self, ref: dict) -> array:
        return self.arrays[ref["array"]]

    def blocks(self, blocks: list[dict]) -> list[dict]:
        out = []
        for block in blocks:
            keys = [k if type(k) is str else from_json(k) for k in block["keys"]]
            numbers = self.array(block["numbers"]).tolist()
            entries: list[list[float]] = []
            start = 0
            for n, width in block["widths"]:
                end = start + n * width
                entries += [numbers[i : i + width] for i in range(start, end, width)]
                start = end
            if len(entries) != len(keys) or start != len(numbers):
                raise ValueError("a block's numbers do not fit its keys and widths")
            out.append(dict(zip(keys, entries)))
        return out


# -- models -----------------------------------------------------------------------------------


def dumps(model, *, gaussian: bool = True) -> bytes:
    """The state of `model` in the format (see the module).

    Parameters
    ----------
    model
        An `AROW`, `CW`, `NHERD`, `SCW`, `SOP` or `VotedRDA` (of these classes themselves, not
        of a subclass), or a `river_cw.text.TextClassifier` around one; `TypeError` for any
        other model, or for a label, feature name or value the format does not hold.
    gaussian
        False leaves the Gaussian's engine out (a changelog's header: `loads` with `gaussian=`
        puts an engine back in its place).

    Examples
    --------

    >>> from river_cw import CW, state
    >>> model = CW(covariance="diagonal", calibrate=True)
    >>> model.learn_one({"a": 1.0}, 1)
    >>> model.learn_one({"b": 1.0}, 0)
    >>> state.loads(state.dumps(model)).classes_
    [0, 1]

    """
    writer = _Writer()
    header = _model_header(writer, model, gaussian)
    return writer.bytes(header)


def loads(data: bytes, *, gaussian=None):
    """The model whose state `data` holds (`dumps`), in the engine that serves.

    Raises `ValueError` naming what is wrong with `data`: not a state, of a newer format, cut
    short or altered (its checksum), or malformed.

    Parameters
    ----------
    data
        What `dumps` returned, in this version or an earlier one.
    gaussian
        The engine of a state written with ``gaussian=False``: held, not copied.

    Examples
    --------

    >>> from river_cw import AROW, state
    >>> model = AROW()
    >>> model.learn_one({"a": 1.0}, "yes")
    >>> header = state.dumps(model, gaussian=False)  # a changelog's: the engine left out
    >>> state.loads(header, gaussian=model.gaussian).gaussian is model.gaussian
    True
    >>> state.loads(b"RCWS" + bytes(20))
    Traceback (most recent call last):
    ...
    ValueError: the state is of format 0: no river-cw writes it

    """
    reader = _Reader(data)
    header = reader.header
    if "model" not in header:
        raise ValueError("the state holds weights (`dumps_weights`), not a model")
    try:
        return _model(reader, header, gaussian)
    except (KeyError, IndexError, TypeError) as error:
        raise ValueError(f"the state is malformed: {error!r}") from None


def dumps_weights(weights: list[dict]) -> bytes:
    """The weights a Gaussian engine wrote since its mark (its ``changed()``: per block,
    ``{feature: numbers}``) in the format, for a changelog.

    Parameters
    ----------
    weights
        Per block, ``{feature: tuple of floats}``.

    Examples
    --------

    >>> from river_cw import INTERCEPT
    >>> loads_weights(dumps_weights([{"a": (0.5, 0.25), INTERCEPT: (1.0, -0.0)}]))
    [{'a': (0.5, 0.25), river_cw.INTERCEPT: (1.0, -0.0)}]

    """
    writer = _Writer()
    return writer.bytes({"weights": writer.blocks(weights)})


def loads_weights(data: bytes) -> list[dict]:
    """The weights of `dumps_weights`: per block, ``{feature: tuple of floats}``.

    Parameters
    ----------
    data
        What `dumps_weights` returned.

    Examples
    --------

    >>> loads_weights(dumps_weights([{("t", 1): (1.0, 2.0, 3.0)}, {}]))
    [{('t', 1): (1.0, 2.0, 3.0)}, {}]

    """
    reader = _Reader(data)
    if "weights" not in reader.header:
        raise ValueError("the state holds a model, not weights")
    try:
        blocks = reader.blocks(reader.header["weights"])
    except (KeyError, IndexError, TypeError) as error:
        raise ValueError(f"the weights are malformed: {error!r}") from None
    return [{f: tuple(numbers) for f, numbers in block.items()} for block in blocks]


def _parameters(model, names) -> dict:
    missing = [name for name in names if not hasattr(model, name)]
    if missing:  # a model of no version (they all set every parameter)
        raise TypeError(f"the model lacks its parameters {missing}: pickle it")
    return {name: to_json(getattr(model, name)) for name in names}


def _names(cls) -> list[str]:
    import inspect

    return [name for name in inspect.signature(cls.__init__).parameters if name != "self"]


def _model_header(writer: _Writer, model, gaussian: bool) -> dict:
    kind = type(model)
    if kind is TextClassifier:
        names = [name for name in _names(kind) if name != "classifier"]
        return {
            "model": kind.__name__,
            "parameters": _parameters(model, names),
            "classifier": _model_header(writer, model.classifier, gaussian),
        }
    if kind is VotedRDA and gaussian:
        state = model.__getstate__()  # the engine's attributes, its calibration queue added up
        header = _labelled(writer, model)
        header["calibration"] = _array(writer, state["_calibration"])
        header["rda"] = _rda_header(writer, state)
        return header
    if _GAUSSIAN.get(kind.__name__) is kind:
        header = _labelled(writer, model)
        header["temperature"] = _array(writer, model._temperature)
        if model._surprise is not None:
            header["surprise"] = _array(writer, model._surprise)
        if model._log_score is not None:
            header["log_score"] = _array(writer, model._log_score)
        if model._flips is not None:
            header["flips"] = _array(writer, model._flips)
        header["centring"] = _centring_header(writer, model._centring)
        header["gaussian"] = None
        if gaussian:
            entry = covariances.of(model)
            parts = {"covariance": entry.name, **entry.parts(model.gaussian)}
            header["gaussian"] = {name: _part(writer, name, v) for name, v in parts.items()}
        return header
    raise TypeError(
        f"the state format describes river_cw's AROW, CW, NHERD, SCW, SOP and VotedRDA and a "
        f"TextClassifier around one{'' if gaussian else ' (with a Gaussian)'}, not "
        f"{kind.__module__}.{kind.__qualname__}: pickle this model"
    )


def _labelled(writer: _Writer, model) -> dict:
    """The header of a classifier: its class, parameters, labels and counters."""
    return {
        "model": type(model).__name__,
        "parameters": _parameters(model, _names(type(model))),
        "labels": [to_json(label) for label in model.classes_],
        "skipped_updates": model.n_skipped_updates,
    }


def _array(writer: _Writer, values) -> dict | None:
    """An array of float64 `values` (a sequence, or None: null)."""
    return None if values is None else writer.add("f8", array("d", values))


def _part(writer: _Writer, name: str, value):
    if isinstance(value, np.ndarray):
        values = np.ascontiguousarray(value, dtype=np.float64)
        return {"shape": list(values.shape), **writer.add("f8", array("d", values.tobytes()))}
    if name == "blocks":
        return writer.blocks(value)
    return to_json(value)


def _unpart(reader: _Reader, name: str, value):
    if type(value) is dict and "shape" in value:
        values = np.frombuffer(reader.array(value), dtype=np.float64).copy()
        return values.reshape(value["shape"])
    if name == "blocks":
        return reader.blocks(value)
    return from_json(value)


def _model(reader: _Reader, header: dict, gaussian):
    name = header["model"]
    parameters = {k: from_json(v) for k, v in header["parameters"].items()}
    if name == "TextClassifier":
        classifier = _model(reader, header["classifier"], gaussian)
        return TextClassifier(classifier, **parameters)
    labels = [from_json(label) for label in header["labels"]]
    if name == "VotedRDA":
        ref = header["calibration"]
        calibration = None if ref is None else np.array(reader.array(ref))
        rda = VotedRDA(**parameters)
        state = _rda_state(reader, header["rda"])
        state.update(
            classes_=labels,
            _class_index={label: i for i, label in enumerate(labels)},
            n_skipped_updates=header["skipped_updates"],
            _calibration=calibration,
        )
        rda.__setstate__(state)
        return rda
    if name not in _GAUSSIAN:
        raise ValueError(f"the state holds a model {name!r}, which this river-cw does not know")
    model = _GAUSSIAN[name](**parameters)
    parts = header["gaussian"]
    if (parts is None) == (gaussian is None):
        raise ValueError(
            "the state holds a Gaussian and an engine was given"
            if gaussian is not None
            else "the state holds no Gaussian (a changelog's header): give its engine"
        )
    if gaussian is None:
        entry = covariances.COVARIANCES[parts["covariance"]]
        if entry.name != model.covariance:
            raise ValueError(f"a {entry.name} Gaussian for a model of {model.covariance!r}")
        gaussian = entry.assemble(
            {k: _unpart(reader, k, v) for k, v in parts.items() if k != "covariance"}
        )
        blocks = len(parts["blocks"]) if "blocks" in parts else parts["n_blocks"]
        if blocks != (1 if len(labels) <= 2 else len(labels)):
            raise ValueError(f"the state's weight blocks do not fit its labels {labels!r}")
    if len(set(labels)) != len(labels):
        raise ValueError(f"the state's labels are not distinct: {labels!r}")
    model._gaussian = gaussian  # set_gaussian would count the blocks through their views
    model.classes_, model._class_index = labels, {label: i for i, label in enumerate(labels)}
    model.n_skipped_updates = header["skipped_updates"]
    model._temperature = _temperature(reader, header)
    model._surprise = _surprise(reader, header, model)
    model._centring = _centring(reader, header, model)
    model._log_score = _log_score(reader, header, model)
    model._flips = _flips(reader, header, model)
    return model


def _centring_header(writer: _Writer, centring) -> dict | None:
    """Where a model's features are centred (`river_cw.centring.Centring`): null for a model
    that learns them as they are; ``{"centre": block}`` once centred; ``{"seen": n, "means":
    block}`` while deciding (a block of one number per feature)."""
    if centring is None:
        return None
    if centring.centre is not None:
        return {"centre": writer.blocks([{f: (m,) for f, m in centring.centre.items()}])[0]}
    means = writer.blocks([{f: (m,) for f, m in centring.means.items()}])[0]
    return {"seen": centring.seen, "means": means}


def _centring(reader: _Reader, header: dict, model):
    """The model's `Centring`, or None: a state written before centring (no ``"centring"``)
    restores a model that learns its features as they are, as it did."""
    found = header.get("centring")
    if found is None:
        return None
    if model._centring is None:
        raise ValueError(f"the state centres the features of a model that does not ({model!r})")
    if type(found) is not dict or found.keys() not in ({"centre"}, {"seen", "means"}):
        raise ValueError("a centring is {centre} or {seen, means}")
    key = "centre" if "centre" in found else "means"
    block = reader.blocks([found[key]])[0]
    if any(len(numbers) != 1 for numbers in block.values()):
        raise ValueError("a centring holds one number per feature")
    values = {f: numbers[0] for f, numbers in block.items()}
    if key == "centre":
        return Centring(WARM_UP, centre=values)
    seen = found["seen"]
    if type(seen) is not int or not 0 <= seen < WARM_UP or (seen == 0 and values):
        raise ValueError(f"a deciding centring has seen 0 to {WARM_UP - 1} examples, got {seen!r}")
    return Centring(seen, values)


def _temperature(reader: _Reader, header: dict):
    """A Gaussian classifier's temperature ``[a, H]`` (an ``array('d')``), or None; format 1's
    grid of running losses as its best temperature, with the Newton step's curvature at 1."""
    if reader.version == 1:
        ref = header["calibration"]
        if ref is None:
            return None
        return array("d", (calibration.best(np.array(reader.array(ref))), 1.0))
    return _numbers(reader, header["temperature"], "a temperature is [a, H]", 2)


def _surprise(reader: _Reader, header: dict, model):
    """The surprise ``[n, e, q_bar]`` of a model that sets its own forgetting
    (`river_cw.surprise`, an ``array('d')``), or None for one that does not."""
    ref = header.get("surprise")
    if (ref is None) != (model._surprise is None):
        raise ValueError(f"the state's surprise does not fit its forgetting={model.forgetting!r}")
    return _numbers(reader, ref, "a surprise is [n, e, q_bar]", 3)


def _log_score(reader: _Reader, header: dict, model):
    """The log score ``[a', H', n, L, H, V]`` of a model that sets its own forgetting and may
    centre (`river_cw.surprise`, an ``array('d')``), or None: a state written before the log
    score (none where the model keeps one) restores a model that reads the 0-1 surprise alone,
    as it did."""
    ref = header.get("log_score")
    if ref is not None and (model._surprise is None or model._centring is None):
        raise ValueError(
            "the state's log score belongs to a model that sets its own forgetting and centres"
        )
    return _numbers(reader, ref, "a log score is [a', H', n, L, H, V]", 6)


def _flips(reader: _Reader, header: dict, model):
    """The share of flipped labels ``[n, eps]`` of a calibrating model (`river_cw.flips`, an
    ``array('d')``), or None without calibration: a state written before it restores the prior,
    which the model's next examples move as they would have moved it from the start."""
    ref = header.get("flips")
    if ref is not None and model._temperature is None:
        raise ValueError("the state's share of flipped labels belongs to a calibrating model")
    if ref is None:
        return None if model._temperature is None else flips.start()
    return _numbers(reader, ref, "a share of flips is [n, eps]", 2)


def _numbers(reader: _Reader, ref, what: str, count: int):
    """The array `ref` names, `count` float64 (an ``array('d')``), or None for null; else a
    ValueError saying `what` it must be."""
    if ref is None:
        return None
    numbers = reader.array(ref)
    if len(numbers) != count or numbers.typecode != "d":
        raise ValueError(f"{what}, got {len(numbers)} numbers")
    return array("d", numbers)


# -- voted RDA --------------------------------------------------------------------------------


def _rda_header(writer: _Writer, state: dict) -> dict:
    """Voted RDA's engine attributes (`river_cw._engines.rda_engine.STATE`): the records of a block as
    columns, the floats ``s, closed, inv0, sqr0, inv1, sqr1`` (0.0 for an open segment's inv1
    and sqr1), ``first`` and ``cut`` (whether the segment is cut); each cut as its ceiling
    ``last + 1`` (a float: the bound it comes from), its push number, ``first`` and its record's
    block and position."""
    where: dict[int, tuple[int, int]] = {}
    blocks = []
    for b, block in enumerate(state["_blocks"]):
        records = list(block.values())
        where.update(zip(map(id, records), zip(repeat(b), count())))
        s, first, closed, inv0, sqr0, inv1, sqr1 = zip(*records) if records else [()] * 7
        cut = [value is not None for value in inv1]
        columns: dict[str, Any] = {"s": s, "closed": closed, "inv0": inv0, "sqr0": sqr0}
        columns |= {
            name: [v if v is not None else 0.0 for v in values]
            for name, values in (("inv1", inv1), ("sqr1", sqr1))
        }
        blocks.append(
            {"keys": [k if type(k) is str else to_json(k) for k in block]}
            | {name: writer.add("f8", values) for name, values in columns.items()}
            | {"first": writer.add("i8", first), "cut": writer.add("u1", cut)}
        )
    cuts: dict[str, array] = {name: array("q") for name in ("pushed", "first", "block", "at")}
    ceilings = array("d")
    for last, pushed, start, rec in state["_cuts"]:
        if id(rec) not in where:
            raise TypeError("a cut of a record no block holds: pickle this model")
        ceilings.append(float(last + 1))
        for name, value in zip(cuts, (pushed, start, *where[id(rec)])):
            cuts[name].append(value)
    history = []
    for block in state["_history"]:
        lengths = array("q", (len(updates) for updates, _ in block.values()))
        history.append(
            {
                "keys": [k if type(k) is str else to_json(k) for k in block],
                "lengths": writer.add("i8", lengths),
                "updates": writer.add("i8", chain.from_iterable(u for u, _ in block.values())),
                "values": writer.add("f8", chain.from_iterable(v for _, v in block.values())),
            }
        )
    return {
        "blocks": blocks,
        "cuts": {"ceiling": writer.add("f8", ceilings)}
        | {name: writer.add("i8", values) for name, values in cuts.items()},
        "counters": {name[1:]: to_json(state[name]) for name in STATE if name not in _TABLES},
        "counts": writer.add("i8", state["_counts"]),
        "history": history,
    }


_TABLES = ("_blocks", "_cuts", "_counts", "_history")
_RECORD = ("s", "first", "closed", "inv0", "sqr0", "inv1", "sqr1", "cut")  # a block's columns


def _rda_state(reader: _Reader, header: dict) -> dict:
    """The engine attributes `_rda_header` wrote, with the records the cuts share."""
    blocks = []
    for block in header["blocks"]:
        keys = [k if type(k) is str else from_json(k) for k in block["keys"]]
        columns = [reader.array(block[name]).tolist() for name in _RECORD]
        if any(len(column) != len(keys) for column in columns):
            raise ValueError("voted RDA's records do not fit their keys")
        s, first, closed, inv0, sqr0, inv1, sqr1, cut = columns
        inv1 = [v if c else None for v, c in zip(inv1, cut)]
        sqr1 = [v if c else None for v, c in zip(sqr1, cut)]
        blocks.append(dict(zip(keys, map(list, zip(s, first, closed, inv0, sqr0, inv1, sqr1)))))
    rows = [list(block.values()) for block in blocks]
    table = header["cuts"]
    table_columns = [reader.array(table[n]) for n in ("ceiling", "pushed", "first", "block", "at")]
    cuts = [
        (int(ceiling) - 1, pushed, start, rows[b][at])
        for ceiling, pushed, start, b, at in zip(*table_columns, strict=True)
    ]
    history = []
    for block in header["history"]:
        keys = [k if type(k) is str else from_json(k) for k in block["keys"]]
        lengths = reader.array(block["lengths"])
        updates, values = reader.array(block["updates"]), reader.array(block["values"])
        entries, start = {}, 0
        for key, n in zip(keys, lengths, strict=True):
            entries[key] = (updates[start : start + n], values[start : start + n])
            start += n
        history.append(entries)
    counters = {f"_{name}": from_json(v) for name, v in header["counters"].items()}
    return {
        **counters,
        "_blocks": blocks,
        "_cuts": cuts,
        "_counts": reader.array(header["counts"]),
        "_history": history,
    }
