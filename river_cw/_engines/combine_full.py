"""Mixing full-covariance Gaussians (`river_cw._engines.full`): the rules of `river_cw.combine` on the
whole matrices.

The members' Gaussians meet on the union of their weights, a weight a member never learned at
the prior. "KL" (Crammer, Dredze and Pereira, JMLR 2012, section 7.10) adds the precision
matrices and the precision-weighted means; from a base, the delta rule subtracts the base's
n - 1 times. Every full-covariance step adds ``gamma d d'`` to the precision, so without
forgetting each member's change is positive semi-definite and the delta rule is at least as
certain as every member (``P - P_i = sum_(l != i) (P_l - P0)``); a member that forgot holds
less, and the base's weight becomes ``-lambda (n - 1)`` with the largest lambda in [0, 1] that
keeps ``P >= P_i`` for every member (found by bisection; at 0, ``P = sum_i P_i``, it holds), the
arrowhead's and diagonal's fallback on the whole matrix (`river_cw._engines.combine_arrowhead`).

"L2" averages the means and the covariance matrices; from a base, the mean is the base's plus
the members' changes of the mean, and the covariance changes add in the log domain of the
matrices (log-Euclidean: ``log Sigma = log Sigma0 + sum_i (log Sigma_i - log Sigma0)``, the
diagonal's ``s = s0 prod_i (s_i / s0)`` for a matrix; always symmetric positive definite),
computed on the precisions' factors so that an ill-conditioned member (CW's) mixes too.
"""

from __future__ import annotations

import copy

import numpy as np

from .full import FullGaussian, PythonFullGaussian

__all__ = ["mix"]


BISECTIONS = 60  # halvings of the base's discount


def mix(gaussians: list, method: str, base, forgets: bool = False) -> PythonFullGaussian:
    """The members' `gaussians` mixed by `method` (``"kl"`` or ``"l2"``), from `base` (a full
    Gaussian they all started from) or, with None, as models of disjoint shards (`forgets`:
    whether the models forget, which the rules here need not know)."""
    if base is not None:  # a member that changed nothing adds nothing
        changed = [g for g in gaussians if not _same(g, base)]
        if len(changed) <= 1:  # the base, or the one member that changed, exactly
            return copy.deepcopy(changed[0] if changed else base)
    prior = gaussians[0].initial_variance
    merged = FullGaussian(prior)
    merged.n_blocks = gaussians[0].n_blocks
    every = gaussians if base is None else [base, *gaussians]
    keys = list(dict.fromkeys(key for g in every for key in g.index))
    index = {key: i for i, key in enumerate(keys)}
    n = len(keys)

    def mean_of(g):  # on the merged index, unseen weights at the prior's mean, 0
        mean = np.zeros(n)
        mean[np.array([index[key] for key in g.index], dtype=int)] = g.mean
        return mean

    if base is not None and method == "l2":  # on the precisions' factors: none is formed
        mean0 = mean_of(base)
        mean = mean0 + sum(mean_of(g) - mean0 for g in gaussians)
        logs = [_log_precision(_factor(g, index, prior)) for g in (base, *gaussians)]
        log = logs[0] + sum(other - logs[0] for other in logs[1:])  # log Sigma = -log P
        merged.set_factor(index, mean, _exp_factor(log))
        return merged

    def embedded(g):  # on the merged index, unseen weights at the prior
        rows = np.array([index[key] for key in g.index], dtype=int)
        precision = np.eye(n) / prior
        precision[np.ix_(rows, rows)] = g.precision
        return mean_of(g), precision

    parts = [embedded(g) for g in gaussians]
    means = [mean for mean, _ in parts]
    precisions = [precision for _, precision in parts]
    if base is not None:
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

    floor = max(np.linalg.eigvalsh(p)[0] for p in precisions)  # P >= P_i bounds P's least

    def certain(precision) -> bool:
        # P >= P_i, to a tolerance scaled to the largest entry, and, on the scale of the least
        # precision, what it implies, P's least eigenvalue at least each member's: the first
        # alone passes a direction of small precision that lost it all (raw features' precisions
        # span ten orders of magnitude), where a Cholesky factor fails
        if np.linalg.eigvalsh(precision)[0] < floor * (1.0 - 1e-9):
            return False
        tolerance = 1e-9 * np.abs(precision).max()
        return all(np.linalg.eigvalsh(precision - p)[0] >= -tolerance for p in precisions)

    if k == 0 or not len(precision0) or certain(at(1.0)[0]):
        return at(1.0)
    low, high = 0.0, 1.0
    for _ in range(BISECTIONS):
        middle = (low + high) / 2.0
        low, high = (middle, high) if certain(at(middle)[0]) else (low, middle)
    return at(low)


def _same(gaussian: PythonFullGaussian, other: PythonFullGaussian) -> bool:
    """Whether two full Gaussians hold the same weights and numbers, to the bit."""
    return (
        gaussian.index == other.index
        and gaussian.n_blocks == other.n_blocks
        and np.array_equal(gaussian.mean, other.mean)
        and np.array_equal(gaussian.chol, other.chol)
    )


def _factor(gaussian: PythonFullGaussian, index: dict, prior: float) -> np.ndarray:
    """F with ``F' F`` the precision of `gaussian` on the merged `index`, the weights it never
    learned at the prior: its Cholesky factor's columns moved to their rows of `index`."""
    rows = [index[key] for key in gaussian.index]
    unseen = sorted(set(range(len(index))) - set(rows))
    factor = np.zeros((len(rows) + len(unseen), len(index)))
    factor[: len(rows), rows] = gaussian.chol
    factor[len(rows) + np.arange(len(unseen)), unseen] = 1.0 / np.sqrt(prior)
    return factor


def _log_precision(factor: np.ndarray) -> np.ndarray:
    """The matrix logarithm of ``F' F`` from the singular values of F: forming ``F' F`` would
    square its condition number (CW's precisions reach 1e18), and eigenvalues of the product
    would come out negative."""
    _, values, vectors = np.linalg.svd(factor, full_matrices=False)
    return (vectors.T * (2.0 * np.log(values))) @ vectors


CERTAINTY = np.log(np.finfo(float).max) / 2.0
"""The largest log-eigenvalue of an l2 mix's precision (1.3e154): where the product of the
members' shrinking variances would underflow (the diagonal's point mass), a matrix cannot hold an
infinite precision; at this one its factor and ``F' F`` stay within float64."""


def _exp_factor(log: np.ndarray) -> np.ndarray:
    """A factor F of the matrix exponential, ``F' F = exp(log)`` for a symmetric `log` (its
    eigenvalues at most `CERTAINTY`)."""
    values, vectors = np.linalg.eigh((log + log.T) / 2.0)
    return np.exp(np.minimum(values, CERTAINTY) / 2.0)[:, None] * vectors.T
