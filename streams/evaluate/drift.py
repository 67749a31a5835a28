"""Concept drift simulators: switch between concepts (streams), or swap the meaning of labels.

`concept_drift` switches between any streams of (x, y): river's synthetic generators
(`synthetic`), the domains of the sentiment data (`domains`), or your own files. Its gradual
drift is river's `synth.ConceptDriftStream` (same sigmoid, same random draws, so the same
output for the same seed), generalised in three ways that river's class lacks: any iterable
can be a concept, not just a `SyntheticDataset`; sudden drift switches exactly at the
position (river's sigmoid with width 1 still mixes the neighbours of the position, and
overflows `math.exp` once the position exceeds about 177 * width); and recurring drift.

>>> a = [({"concept": "a"}, 0)] * 6
>>> b = [({"concept": "b"}, 1)] * 6
>>> "".join(x["concept"] for x, _ in concept_drift([a, b], "sudden", position=2))
'aabbbbbb'
>>> "".join(x["concept"] for x, _ in concept_drift([a, b], "recurring", position=2, period=2))
'aabbaabbaabb'

"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Hashable, Iterable, Iterator, Sequence

from streams.io.jsonl import JSONLines

__all__ = ["KINDS", "concept_drift", "domains", "label_flip", "synthetic"]

KINDS = ("sudden", "gradual", "recurring")

Example = tuple[dict, Hashable]


def concept_drift(
    concepts: Sequence[Iterable[Example]],
    kind: str = "sudden",
    position: int = 1000,
    width: int = 100,
    period: int | None = None,
    seed: int | None = None,
) -> Iterator[Example]:
    """Draw each example from one of the concepts, following a drift schedule.

    The stream ends when the concept it draws from runs out.

    Parameters
    ----------
    concepts
        The streams to switch between: two for sudden and gradual drift, two or more for
        recurring drift.
    kind
        `"sudden"`: examples 0 .. position-1 come from the first concept, the rest from the
        second. `"gradual"`: example t comes from the second concept with probability
        1 / (1 + exp(-4 (t + 1 - position) / width)), as in river's `ConceptDriftStream`.
        `"recurring"`: the first concept until `position`, then the concepts take turns
        (second, ..., last, first, second, ...) for `period` examples each.
    position
        Where the drift happens (0-based count of examples before it).
    width
        Width of the gradual transition.
    period
        Length of each turn of recurring drift; `position` by default.
    seed
        Seed for the draws of gradual drift.

    Examples
    --------

    >>> old, new = [({}, "a")] * 4, [({}, "b")] * 4
    >>> [y for _, y in concept_drift([old, new], position=2)]
    ['a', 'a', 'b', 'b', 'b', 'b']
    >>> [y for _, y in concept_drift([old, new], "recurring", position=2, period=1)][:6]
    ['a', 'a', 'b', 'a', 'b', 'a']

    """
    if kind not in KINDS:
        raise ValueError(f"unknown drift kind {kind!r}; expected one of {KINDS}")
    if len(concepts) < 2 or (kind != "recurring" and len(concepts) != 2):
        raise ValueError(f"{kind} drift needs two concepts, got {len(concepts)}")
    if position < 0 or width <= 0 or (period is not None and period <= 0):
        raise ValueError("position must be >= 0, width and period > 0")
    period = period or max(position, 1)
    rng = random.Random(seed)
    iterators = [iter(concept) for concept in concepts]
    for t in itertools.count():
        if kind == "sudden":
            which = int(t >= position)
        elif kind == "gradual":
            which = int(rng.random() <= _sigmoid(4.0 * (t + 1 - position) / width))
        else:
            which = 0 if t < position else ((t - position) // period + 1) % len(concepts)
        example = next(iterators[which], None)
        if example is None:
            return
        yield example


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z > -700.0 else 0.0


def label_flip(
    stream: Iterable[Example], position: int, classes: Sequence[Hashable]
) -> Iterator[Example]:
    """From example `position` on, the classes change meaning: `classes[i]` becomes `classes[i+1]`.

    With two classes this swaps them. The change applies to every label (learned and scored):
    it is drift, not noise.

    Parameters
    ----------
    stream
        The (x, y) pairs.
    position
        The first example whose label changes (0-based).
    classes
        The classes in the order they move along; a label not among them stays.

    Examples
    --------

    >>> list(label_flip([({}, "a"), ({}, "b"), ({}, "a"), ({}, "c")], 2, ["a", "b"]))
    [({}, 'a'), ({}, 'b'), ({}, 'b'), ({}, 'c')]

    """
    mapping = {c: classes[(i + 1) % len(classes)] for i, c in enumerate(classes)}
    for t, (x, y) in enumerate(stream):
        yield x, (mapping.get(y, y) if t >= position else y)


def synthetic(
    kind: str = "sudden",
    position: int = 5000,
    width: int = 1000,
    period: int | None = None,
    seed: int | None = None,
) -> Iterator[Example]:
    """An endless SEA stream (river's `synth.SEA`) drifting from variant 0 to variant 3.

    SEA (Street and Kim, 2001) labels three uniform features in [0, 10] by x0 + x1 <= theta;
    variant 0 has theta = 8 and variant 3 theta = 9.5, so the drift relabels about 13% of the
    space.

    Parameters
    ----------
    kind
        ``"sudden"``, ``"gradual"`` or ``"recurring"`` (see `concept_drift`).
    position
        Where the drift happens (0-based count of examples before it).
    width
        Width of the gradual transition.
    period
        Length of each turn of recurring drift; `position` by default.
    seed
        Seed of the SEA streams (the second one gets ``seed + 1``) and of the gradual draws.

    Examples
    --------

    >>> x, y = next(synthetic(seed=1))
    >>> sorted(x), y
    ([0, 1, 2], True)

    """
    seeds = (None, None) if seed is None else (seed, seed + 1)
    from river.datasets import synth  # river.datasets loads scikit-learn and pandas

    concepts = [synth.SEA(variant=0, seed=seeds[0]), synth.SEA(variant=3, seed=seeds[1])]
    return concept_drift(concepts, kind, position, width, period, seed)


def domains(
    path,
    names: Sequence[str] = ("books", "kitchen"),
    kind: str = "sudden",
    position: int | None = None,
    width: int = 200,
    period: int | None = None,
    seed: int | None = 0,
) -> Iterator[Example]:
    """Sentiment text drifting between domains of `mdsd_sorted_acl_text.jsonl.gz`.

    Each domain is read (records whose `domain` is the name), shuffled with `seed` (the file
    is sorted by label) and becomes one concept of `concept_drift`. By default the drift
    happens after the whole first domain.

    Parameters
    ----------
    path
        The shared corpus ``mdsd_sorted_acl_text.jsonl.gz`` (Blitzer et al.'s multi-domain
        sentiment data).
    names
        The domains, in the order of the drift: two for sudden and gradual drift, two or more
        for recurring drift.
    kind
        ``"sudden"``, ``"gradual"`` or ``"recurring"`` (see `concept_drift`).
    position
        Where the drift happens; by default after the whole first domain.
    width
        Width of the gradual transition.
    period
        Length of each turn of recurring drift; `position` by default.
    seed
        Seed of each domain's shuffle and of the gradual draws.

    Examples
    --------

    With the shared corpus beside the checkout (``river-cw evaluate --domains books,kitchen``
    does the same):

    ```python
    stream = domains("../shared/data/mdsd_sorted_acl_text.jsonl.gz", ["books", "kitchen"])
    ```

    """
    concepts = []
    for name in names:
        examples = list(JSONLines(path, where={"domain": name}))
        if not examples:
            raise ValueError(f"no records with domain {name!r} in {path}")
        random.Random(seed).shuffle(examples)
        concepts.append(examples)
    if position is None:
        position = len(concepts[0])
    return concept_drift(concepts, kind, position, width, period, seed)
