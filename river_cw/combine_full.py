"""Mixing full-covariance Gaussians (`river_cw.full`): the rules of `river_cw.combine` on the
whole matrices.

The members' Gaussians meet on the union of their weights, a weight a member never learned at
the prior. "KL" (Crammer, Dredze and Pereira, JMLR 2012, section 7.10) adds the precision
matrices and the precision-weighted means; from a base, the delta rule subtracts the base's
n - 1 times. "L2" averages the means and the covariance matrices, without a base only (its
log-domain analogue has no counterpart for a covariance, which may be negative).
"""

from __future__ import annotations

import numpy as np

from .full import FullGaussian

__all__ = ["mix"]


def mix(gaussians: list, method: str, base) -> FullGaussian:
    """The members' `gaussians` mixed by `method` (``"kl"`` or ``"l2"``; ``"kl"`` only from a
    base), from `base` (a full Gaussian they all started from) or, with None, as models of
    disjoint shards. `ValueError` where the mixed precision is not positive definite."""
    prior = gaussians[0].initial_variance
    merged = FullGaussian(prior)
    merged.n_blocks = gaussians[0].n_blocks
    every = gaussians if base is None else [base, *gaussians]
    keys = list(dict.fromkeys(key for g in every for key in g.index))
    index = {key: i for i, key in enumerate(keys)}
    n = len(keys)

    def embedded(g):  # on the merged index, unseen weights at the prior
        rows = np.array([index[key] for key in g.index], dtype=int)
        mean, precision = np.zeros(n), np.eye(n) / prior
        mean[rows] = g.mean
        precision[np.ix_(rows, rows)] = g.precision
        return mean, precision

    parts = [embedded(g) for g in gaussians]
    means = [mean for mean, _ in parts]
    precisions = [precision for _, precision in parts]
    if base is not None:
        mean0, precision0 = embedded(base)
        k = len(gaussians) - 1
        precision = sum(precisions) - k * precision0
        weighted = sum(p @ mu for p, mu in zip(precisions, means)) - k * (precision0 @ mean0)
        mean = np.linalg.solve(precision, weighted)
    elif method == "kl":
        precision = sum(precisions)
        mean = np.linalg.solve(precision, sum(p @ mu for p, mu in zip(precisions, means)))
    else:
        mean = sum(means) / len(means)
        cov = sum(np.linalg.inv(p) for p in precisions) / len(precisions)
        precision = np.linalg.inv(cov)
    try:
        merged.set_precision(index, mean, (precision + precision.T) / 2.0)
    except np.linalg.LinAlgError:
        raise ValueError(
            "the mixed precision is not positive definite: the members did not start from the base"
        ) from None
    return merged
