"""Synthetic streams of the papers' experiments, shared by the tests and the benchmarks."""

from __future__ import annotations

import random
from collections.abc import Iterator

import numpy as np

__all__ = ["rotated_gaussian", "threshold_stream", "uniform_threshold"]


def rotated_gaussian(seed: int, n: int = 1000) -> list[tuple[dict, bool]]:
    """The separable problem of exact convex CW (Crammer, Dredze and Pereira, NIPS 2008, section 5).

    `n` points in R^20: the first two coordinates are a 45-degree rotated Gaussian, labelled by
    a separator along its long axis; the other 18 are independent N(0, 2) noise. (The axis
    scales 1 and 10 are ours; the paper does not print them.) Diagonal covariance cannot see the
    rotation, full covariance can.

    Parameters
    ----------
    seed
        The seed of numpy's generator.
    n
        The number of points.

    Examples
    --------

    >>> stream = rotated_gaussian(0, n=3)
    >>> len(stream), len(stream[0][0])
    (3, 20)

    """
    rng = np.random.default_rng(seed)
    short, long_ = rng.normal(0, 1, n), rng.normal(0, 10, n)
    c = np.sqrt(0.5)
    X = np.column_stack(
        [c * (short + long_), c * (long_ - short), rng.normal(0, np.sqrt(2), (n, 18))]
    )
    return [({j: float(v) for j, v in enumerate(row)}, bool(s > 0)) for row, s in zip(X, short)]


def threshold_stream(n: int, seed: int = 0) -> Iterator[tuple[dict, bool]]:
    """One standard normal feature labelled ``x > 0.5``: a threshold off the origin.

    Through the origin the best rule is ``x > 0``, wrong on the 19.1% of x in (0, 0.5]: a model
    needs an intercept.

    Parameters
    ----------
    n
        The number of examples.
    seed
        The seed of the draws.

    Examples
    --------

    >>> [y for _, y in threshold_stream(4)]
    [True, False, False, False]

    """
    rng = random.Random(seed)
    for _ in range(n):
        x = rng.gauss(0.0, 1.0)
        yield {"x": x}, x > 0.5


def uniform_threshold(
    n: int, features: int = 1, low: float = 0.0, seed: int = 0
) -> list[tuple[dict, bool]]:
    """`features` features uniform on [low, low + 1], labelled ``mean > low + 0.5``.

    With ``low = 5`` the boundary lies far from the origin and the features are uncentred.

    Parameters
    ----------
    n
        The number of examples.
    features
        The number of features (``"x"`` alone, else ``"x0"``, ``"x1"``, ...).
    low
        The lower end of every feature's range.
    seed
        The seed of the draws.

    Examples
    --------

    >>> [y for _, y in uniform_threshold(4, features=3, low=5.0)]
    [True, False, True, True]

    """
    rng = random.Random(seed)
    names = ["x"] if features == 1 else [f"x{j}" for j in range(features)]
    out = []
    for _ in range(n):
        x = {name: rng.uniform(low, low + 1.0) for name in names}
        out.append((x, sum(x.values()) / features > low + 0.5))
    return out
