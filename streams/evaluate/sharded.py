"""Offline simulation of a consumer group that mixes its partitions' models (no broker).

`ShardedClassifier` is a river classifier made of P copies of a model: each example goes to
the shard its content hashes to (as Kafka sends a record to the partition its key hashes to),
which predicts and learns it; every shard publishes its model after `mix_every` examples and
continues from the mix as soon as every shard has published, with the protocol of
`streams.models.mixing` that `river-cw serve --mix` runs (there, over Kafka). Its progressive
validation (`streams.evaluate.progressive`) shows what a deployment with P partitions would score for a
choice of the mixing period, before deploying: `evaluate_mixing` runs one model learning the
whole stream next to P shards mixed every N examples by each method (``"off"``: never mixed,
the isolated per-partition models of `river-cw serve` without ``--mix``). A round that cannot
be mixed (`river_cw.combine` refuses it) is skipped as the server skips it, each shard keeping
its model: `ShardedClassifier.failed_rounds` counts them, and `evaluate_mixing`'s result holds
every mixing model's rounds and failed rounds in ``info["mixing"]``.

Examples
--------

>>> import river_cw
>>> from streams.io.files import sms_spam
>>> from river_cw.text import BagOfWords
>>> stream = list(sms_spam())[:1000]
>>> model = BagOfWords(on="text") | river_cw.AROW()
>>> result = evaluate_mixing(model, stream, shards=4, mix_every=[50], methods=["kl", "off"])
>>> [(r["model"], round(r["accuracy"], 2)) for r in result.summary]
[('one model', 0.95), ('4 shards, kl every 50', 0.94), ('4 shards, off', 0.91)]
"""

from __future__ import annotations

import copy
import typing
import zlib
from collections.abc import Iterable, Sequence

from river import base

from streams.evaluate.results import Evaluation

# The models and the mixing (river_cw, numpy) and progressive validation (river's metrics) are
# imported where they run: `river-cw evaluate --help` reads MIX_METHODS without them.
if typing.TYPE_CHECKING:
    from streams.models.mixing import Mixer

__all__ = ["ShardedClassifier", "evaluate_mixing", "mixing_rounds", "shard_name"]

MIX_METHODS = ("kl", "l2", "off")


def shard_of(x: dict, shards: int) -> int:
    """The shard of an example: a CRC-32 of its content (stable across runs and processes)."""
    key = repr(sorted(x.items(), key=lambda item: repr(item[0])))
    return zlib.crc32(key.encode("utf-8", "backslashreplace")) % shards


class ShardedClassifier(base.Classifier):
    """`shards` copies of `model`, each predicting and learning its shard of the stream, mixed
    every `mix_every` examples per shard: a Kafka group's mixing, offline.

    Shards publish and adopt mixes as the partitions of `river-cw serve --mix` do
    (`streams.models.mixing`); here a mix is adopted as soon as the last shard has published.
    A round that cannot be mixed is skipped, as the server skips it (`failed_rounds`).
    An example's shard is a CRC-32 of its content, as Kafka partitions by key.

    Parameters
    ----------
    model
        A model `river_cw.combine` can mix (it is copied, not modified).
    shards
        The number of shards (a topic's partitions).
    mix_every
        Each shard publishes what it learned every `mix_every` of its examples.
    method
        ``"kl"`` or ``"l2"`` (see `river_cw.combine`), or ``"off"``: isolated shards.

    Examples
    --------

    >>> import river_cw
    >>> from streams.evaluate.sharded import ShardedClassifier
    >>> model = ShardedClassifier(river_cw.AROW(), shards=2, mix_every=1)
    >>> for x, y in [({"a": 1.0}, True), ({"b": 1.0}, False)] * 2:
    ...     model.learn_one(x, y)
    >>> model.rounds, model.predict_one({"a": 1.0}), model.predict_one({"b": 1.0})
    (2, True, False)

    """

    def __init__(self, model, shards: int = 4, mix_every: int = 100, method: str = "kl"):
        if shards < 1:
            raise ValueError(f"shards must be >= 1, got {shards!r}")
        if method not in MIX_METHODS:
            raise ValueError(f"method must be one of {MIX_METHODS}, got {method!r}")
        self.model = model
        self.shards = shards
        self.mix_every = mix_every
        self.method = method
        from river_cw import combine
        from streams.models.mixing import Mixer, MixState, Rounds, clone

        self._models = [clone(model) for _ in range(shards)]
        self._mixers: list[Mixer] = []
        if method != "off":
            combine([model], method=method, base=model)  # ValueError: cannot be mixed
            self._rounds = Rounds(shards, method)
            self._mixers = [Mixer(MixState.starting(model), mix_every) for _ in range(shards)]

    @property
    def _multiclass(self):
        return True

    @property
    def models(self) -> list:
        """The shards' models (copies)."""
        from streams.models.mixing import clone

        return [clone(model) for model in self._models]

    @property
    def rounds(self) -> int:
        """Mixing rounds completed (skipped ones included)."""
        return self._mixers[0].state.round if self._mixers else 0

    @property
    def failed_rounds(self) -> int:
        """Rounds skipped because they could not be mixed (each shard kept its model)."""
        return self._rounds.failed if self._mixers else 0

    def predict_one(self, x: dict, **kwargs):
        """The prediction of the shard of `x`.

        Parameters
        ----------
        x
            The features.
        **kwargs
            Passed to the shard's model.
        """
        return self._models[shard_of(x, self.shards)].predict_one(x, **kwargs)

    def predict_proba_one(self, x: dict, **kwargs) -> dict:
        """The probabilities of the shard of `x`.

        Parameters
        ----------
        x
            The features.
        **kwargs
            Passed to the shard's model.
        """
        return self._models[shard_of(x, self.shards)].predict_proba_one(x, **kwargs)

    def learn_one(self, x: dict, y, **kwargs) -> None:
        """Learn `x` in its shard, then publish and mix the shards that are due.

        Parameters
        ----------
        x
            The features.
        y
            The label.
        **kwargs
            Passed to the shard's model (e.g. a sample weight ``w``).
        """
        p = shard_of(x, self.shards)
        self._models[p].learn_one(x, y, **kwargs)
        if not self._mixers:
            return
        self._mixers[p].state.record(x, y)
        while any(mixer.due() for mixer in self._mixers):
            for q, mixer in enumerate(self._mixers):
                if mixer.due():
                    self._rounds.add(mixer.publish(self._models[q], q))
            first = self._mixers[0].state
            mix = self._rounds.mix(first.round, first)
            if mix is None:
                return
            self._models = [m.adopt(model, mix) for m, model in zip(self._mixers, self._models)]
            self._rounds.forget(mix.round + 1)


def shard_name(shards: int, method: str, mix_every: int) -> str:
    """`evaluate_mixing`'s name of a sharded model.

    Parameters
    ----------
    shards
        The number of shards.
    method
        ``"kl"``, ``"l2"`` or ``"off"``.
    mix_every
        The mixing period, per shard.

    Examples
    --------

    >>> shard_name(4, "kl", 100)
    '4 shards, kl every 100'

    """
    return (
        f"{shards} shards, off"
        if method == "off"
        else f"{shards} shards, {method} every {mix_every}"
    )


def evaluate_mixing(
    model,
    stream: Iterable,
    shards: int = 4,
    mix_every: Sequence[int] = (100,),
    methods: Sequence[str] = MIX_METHODS,
    **kwargs,
) -> Evaluation:
    """Progressive validation of `model` learning the whole stream (``"one model"``) next to
    sharded copies of it mixed every N examples per shard (`ShardedClassifier`): what
    `river-cw evaluate --shards` runs to choose ``--mix-every`` before deploying.

    Parameters
    ----------
    model
        A model `river_cw.combine` can mix.
    stream
        The (x, y) pairs.
    shards
        The number of shards.
    mix_every
        The mixing periods to try, per shard.
    methods
        The mixing methods to try: ``"kl"``, ``"l2"``, ``"off"`` (isolated shards, once).
    **kwargs
        Passed to `streams.evaluate.progressive.evaluate` (``every``, ``noise``, ``metric``...).

    Examples
    --------

    >>> import itertools
    >>> import river_cw
    >>> from streams.evaluate.drift import synthetic
    >>> stream = list(itertools.islice(synthetic(seed=1), 400))
    >>> result = evaluate_mixing(river_cw.AROW(), stream, shards=2, mix_every=[50], progress=False)
    >>> sorted({record["model"] for record in result.records})
    ['2 shards, kl every 50', '2 shards, l2 every 50', '2 shards, off', 'one model']

    """
    from streams.evaluate.progressive import evaluate

    models = {"one model": copy.deepcopy(model)}
    for method in methods:
        for n in mix_every if method != "off" else mix_every[:1]:
            models[shard_name(shards, method, n)] = ShardedClassifier(model, shards, n, method)
    result = evaluate(models, stream, **kwargs)
    result.info["mixing"] = mixing_rounds(models)
    return result


def mixing_rounds(models: dict) -> dict:
    """The rounds and failed rounds (`ShardedClassifier.rounds`, `failed_rounds`) of the mixing
    models among `models`, by name: ``{name: {"rounds": ..., "failed": ...}}``.

    Parameters
    ----------
    models
        Models by name; those that are not mixing `ShardedClassifier` are left out.

    Examples
    --------

    >>> import river_cw
    >>> model = ShardedClassifier(river_cw.AROW(), shards=2, mix_every=1)
    >>> for x, y in [({"a": 1.0}, True), ({"b": 1.0}, False)] * 2:
    ...     model.learn_one(x, y)
    >>> mixing_rounds({"mixed": model, "alone": river_cw.AROW()})
    {'mixed': {'rounds': 2, 'failed': 0}}

    """
    return {
        name: {"rounds": model.rounds, "failed": model.failed_rounds}
        for name, model in models.items()
        if isinstance(model, ShardedClassifier) and model.method != "off"
    }
