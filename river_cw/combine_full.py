"""Mixing full-covariance Gaussians (`river_cw.full`): the rules of `river_cw.combine` on the
whole matrices.

The members' Gaussians meet on the union of their weights, a weight a member never learned at
the prior. "KL" (Crammer, Dredze and Pereira, JMLR 2012, section 7.10) adds the precision
matrices and the precision-weighted means; from a base, the delta rule subtracts the base's
n - 1 times. Every full-covariance step adds ``gamma d d'`` to the precision, so without
forgetting each member's change is positive semi-definite and the delta rule is at least as
certain as every member (``P - P_i = sum_(l != i) (P_l - P0)``); a member that forgot holds
less, and the base's weight becomes ``-lambda (n - 1)`` with the largest lambda in [0, 1] that
keeps ``P >= P_i`` for every member (found by bisection; at 0, ``P = sum_i P_i``, it holds), the
arrowhead's and diagonal's fallback on the whole matrix (`river_cw.combine_arrowhead`).

"L2" averages the means and the covariance matrices; from a base, the mean is the base's plus
the members' changes of the mean, and the covariance changes add in the log domain of the
matrices (log-Euclidean: ``log Sigma = log Sigma0 + sum_i (log Sigma_i - log Sigma0)``, the
diagonal's ``s = s0 prod_i (s_i / s0)`` for a matrix; always symmetric positive definite).
"""

from __future__ import annotations

import numpy as np

from .full import FullGaussian

__all__ = ["mix"]


BISECTIONS = 60  # halvings of the base's discount


def mix(gaussians: list, method: str, base, forgets: bool = False) -> FullGaussian:
    """The members' `gaussians` mixed by `method` (``"kl"`` or ``"l2"``), from `base` (a full
    Gaussian they all started from) or, with None, as models of disjoint shards (`forgets`:
    whether the models forget, which the rules here need not know)."""
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
    if base is not None and method == "l2":
        mean0, precision0 = embedded(base)
        mean = mean0 + sum(mu - mean0 for mu in means)
        log0 = _log_spd(np.linalg.inv(precision0))
        log = log0 + sum(_log_spd(np.linalg.inv(p)) - log0 for p in precisions)
        precision = _exp_spd(-log)  # the inverse of exp(log)
    elif base is not None:
        mean0, precision0 = embedded(base)
        precision, weighted = _discounted(precisions, means, precision0, mean0)
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


def _discounted(precisions: list, means: list, precision0, mean0):
    """The delta rule's precision and precision-weighted mean, the base's weight ``-lambda (n -
    1)`` with the largest lambda in [0, 1] keeping the mix at least as certain as every member
    (see the module docstring)."""
    k = len(precisions) - 1
    total = sum(precisions)
    weighted = sum(p @ mu for p, mu in zip(precisions, means))

    def at(lam):
        return total - lam * k * precision0, weighted - lam * k * (precision0 @ mean0)

    def certain(precision) -> bool:
        tolerance = 1e-9 * np.abs(precision).max()
        return all(np.linalg.eigvalsh(precision - p)[0] >= -tolerance for p in precisions)

    if k == 0 or not len(precision0) or certain(at(1.0)[0]):
        return at(1.0)
    low, high = 0.0, 1.0
    for _ in range(BISECTIONS):
        middle = (low + high) / 2.0
        low, high = (middle, high) if certain(at(middle)[0]) else (low, middle)
    return at(low)


def _log_spd(matrix: np.ndarray) -> np.ndarray:
    """The matrix logarithm of a symmetric positive definite matrix."""
    values, vectors = np.linalg.eigh((matrix + matrix.T) / 2.0)
    return (vectors * np.log(values)) @ vectors.T


def _exp_spd(matrix: np.ndarray) -> np.ndarray:
    """The matrix exponential of a symmetric matrix."""
    values, vectors = np.linalg.eigh((matrix + matrix.T) / 2.0)
    return (vectors * np.exp(values)) @ vectors.T
