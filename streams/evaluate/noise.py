"""Label noise for simulations: flip the label a model learns from, never the one it is scored on.

The evaluation runner calls the noise once per example and gives the flipped label to every
model's `learn_one`, while the metrics see the clean label (as in the AROW and NHERD papers).

Examples
--------

>>> noise = LabelNoise(0.3, classes=["ham", "spam"], seed=1)
>>> [noise(y) for y in ["ham"] * 10]
['spam', 'ham', 'ham', 'ham', 'spam', 'ham', 'ham', 'ham', 'spam', 'ham']
>>> noise.n_flipped, noise.n_seen
(3, 10)

"""

from __future__ import annotations

import random
import typing
from collections.abc import Hashable, Mapping, Sequence

__all__ = ["LabelNoise"]


class LabelNoise:
    """Flip a label with probability p to one of the other classes, chosen uniformly.

    Every call draws two uniform numbers, one to decide the flip and one to choose the new
    class, whatever happens. So with the same seed and stream, the examples flipped at a low
    rate are a subset of those flipped at a higher rate: comparisons across noise levels
    differ only by the noise added. (A noise whose rates are all 0 flips nothing and draws
    nothing.)

    Parameters
    ----------
    p
        The flip probability, or a mapping class -> probability for class-conditional noise
        (classes left out are never flipped).
    classes
        All the classes of the stream. When omitted, a label flips among the classes seen so
        far, so early examples flip less often than p; give the classes for exact rates.
    seed
        Seed of the random generator.

    Examples
    --------

    Class-conditional noise: half the spam is learned as ham, the ham never flips.

    >>> noise = LabelNoise({"spam": 0.5}, classes=["ham", "spam"], seed=2)
    >>> [noise(y) for y in ["spam"] * 6 + ["ham"] * 2]
    ['spam', 'ham', 'spam', 'spam', 'spam', 'spam', 'ham', 'ham']
    >>> noise.rate("ham")
    0.0

    """

    def __init__(
        self,
        p: float | Mapping[Hashable, float],
        classes: Sequence[Hashable] | None = None,
        seed: int | None = None,
    ):
        rates = p.values() if isinstance(p, Mapping) else [p]
        for rate in rates:
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"noise probabilities must be in [0, 1], got {rate!r}")
        self.p = dict(p) if isinstance(p, Mapping) else float(p)
        self.classes = list(dict.fromkeys(classes)) if classes is not None else None
        self.seed = seed
        self._known = list(self.classes or [])
        self._rng = random.Random(seed)
        self.n_seen = 0
        self.n_flipped = 0
        self._silent = not any(rates)  # nothing can flip: the draws would change nothing

    def __repr__(self) -> str:
        return f"LabelNoise({self.name})"

    @property
    def name(self) -> str:
        """The noise rate as a short label: '10%', or 'spam 30%, ham 5%'."""
        if isinstance(self.p, dict):
            return ", ".join(f"{label} {rate * 100:g}%" for label, rate in self.p.items())
        return f"{self.p * 100:g}%"

    def rate(self, y: Hashable) -> float:
        """The probability that label `y` is flipped.

        Parameters
        ----------
        y
            A clean label.
        """
        return self.p.get(y, 0.0) if isinstance(self.p, dict) else self.p

    def __call__(self, y: Hashable) -> typing.Any:
        """Return the label to learn from: `y`, or another class with probability `rate(y)`."""
        if y not in self._known:
            if self.classes is not None:
                raise ValueError(f"label {y!r} is not one of the classes {self.classes}")
            self._known.append(y)
        if self._silent:
            self.n_seen += 1
            return y
        flip, choice = self._rng.random(), self._rng.random()
        self.n_seen += 1
        others = [c for c in self._known if c != y]
        if flip >= self.rate(y) or not others:
            return y
        self.n_flipped += 1
        return others[int(choice * len(others))]
