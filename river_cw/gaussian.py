"""The engine shared by every Gaussian classifier: N(mu, Sigma) over the weights.

Every rule of the family (CW, AROW, NHERD, SOP, SCW) updates along a difference vector
``d`` (``y x`` when binary, ``f(x, y) - f(x, y')`` when multi-class) in the same form::

    mu       <- mu + alpha Sigma d
    Sigma^-1 <- Sigma^-1 + gamma d d'        (full: Sigma <- Sigma - beta (Sigma d)(Sigma d)',
                                                    beta = gamma / (1 + gamma v), Woodbury)

with the margin mean ``m = mu . d`` and variance ``v = d' Sigma d``. A rule only maps
``(m, v)`` to ``(alpha, gamma)``; the sparse loops live here, once, for every rule.

Weights come in blocks: one block while the model is binary, one per label once it is
multi-class (see `river_cw.base`). A difference vector is given as ``x`` and ``pairs``, a tuple
of ``(block, sign)``: ``((0, y),)`` or ``((y, +1), (y', -1))``.

The diagonal engine offers the three diagonal schemes of Crammer, Dredze and Pereira (JMLR 2012,
section 6): ``project`` (their "KL": ``1/s_j <- 1/s_j + gamma d_j^2``), ``drop`` (their "L2":
``s_j <- s_j - beta (s_j d_j)^2``), and, for the "exact" variants, any per-coordinate function
``s_j <- shrink(s_j, d_j^2)`` a rule supplies.
"""

from __future__ import annotations

import math
from itertools import repeat
from math import fsum
from operator import add, mul, sub, truediv

import numpy as np

from .validation import check_features

__all__ = ["DiagonalGaussian", "FullGaussian"]


def _raise_bad_input(x: dict) -> None:
    """Name the offending feature, or report an overflow of finite values."""
    check_features(x)
    raise ValueError("feature values too large: the margin overflows float64")


class DiagonalGaussian:
    """Independent weights: per block, a dict of means and a dict of variances.

    Absent features have mean 0 and the prior variance. The per-feature work runs in C: `map`
    over the dicts' `get`, `math.fsum` for the sums, `dict.update` for the writes. The sums are
    exactly rounded, so the order of the features never changes a result.
    """

    def __init__(self, initial_variance: float):
        self.initial_variance = initial_variance
        self.means: list[dict] = [{}]
        self.variances: list[dict] = [{}]

    def add_block(self) -> None:
        self.means.append({})
        self.variances.append({})

    def lift(self) -> None:
        self.means.insert(0, {})
        self.variances.insert(0, {})

    def scores(self, x: dict) -> list[float]:
        """``mu_b . x`` for every block b; raises on a bad `x` (every value is touched)."""
        values = x.values()
        out = []
        for mean in self.means:
            try:
                score = fsum(map(mul, map(mean.get, x, repeat(0.0)), values))
            except (TypeError, ValueError, OverflowError):
                score = math.nan
            if not math.isfinite(score):
                _raise_bad_input(x)
            out.append(score)
        return out

    def score_covariance(self, x: dict) -> np.ndarray:
        """The covariance of the block scores: diagonal, ``x' Sigma_b x``, blocks are independent."""
        squares = list(map(mul, x.values(), x.values()))
        prior = repeat(self.initial_variance)
        return np.diag([fsum(map(mul, map(var.get, x, prior), squares)) for var in self.variances])

    def margin(self, x: dict, pairs) -> tuple[float, float, list, tuple]:
        """``m = mu . d``, ``v = d' Sigma d``, the terms ``u_j = s_j d_j^2`` of v, and what
        `update` needs. Raises on a bad `x` (every value is touched)."""
        keys, values = list(x), list(x.values())
        m, u, parts = 0.0, [], []
        try:
            squares = list(map(mul, values, values))
            for b, sign in pairs:
                mus = list(map(self.means[b].get, keys, repeat(0.0)))
                variances = list(map(self.variances[b].get, keys, repeat(self.initial_variance)))
                terms = list(map(mul, variances, squares))
                m += sign * fsum(map(mul, mus, values))
                u += terms
                parts.append((b, sign, mus, variances, terms))
            v = fsum(u)
            ok = math.isfinite(m) and math.isfinite(v)
        except (TypeError, ValueError, OverflowError):
            ok = False
        if not ok:
            _raise_bad_input(x)
        return m, v, u, (keys, values, squares, parts)

    def update(self, entries: tuple, alpha: float, gamma: float, v: float, scheme) -> None:
        """Apply one step; `scheme` is "project", "drop" or a function ``(s_j, d_j^2) -> s_j``.

        With ``u_j = s_j x_j^2``: project ``s_j / (1 + gamma u_j)``, drop
        ``s_j max(0, 1 - beta u_j)``; a spent variance is 0, never negative or NaN.
        """
        keys, values, squares, parts = entries
        beta = gamma / (1.0 + gamma * v)
        for b, sign, mus, variances, terms in parts:
            # (alpha s_j) x_j, in that order: alpha is huge exactly when s_j is tiny
            steps = map(mul, map(mul, repeat(alpha * sign), variances), values)
            self.means[b].update(zip(keys, map(add, mus, steps)))
            if scheme == "project":
                new = map(truediv, variances, map(add, repeat(1.0), map(mul, repeat(gamma), terms)))
            elif scheme == "drop":
                shrink = map(sub, repeat(1.0), map(mul, repeat(beta), terms))
                new = map(mul, variances, map(max, repeat(0.0), shrink))
            else:
                new = map(scheme, variances, squares)
            self.variances[b].update(zip(keys, new))


class FullGaussian:
    """One joint Gaussian over all ``(block, feature)`` weights, grown as features arrive.

    New weights enter with mean 0, the prior variance and no correlation, which leaves the
    distribution of every existing weight unchanged.
    """

    def __init__(self, initial_variance: float):
        self.initial_variance = initial_variance
        self.n_blocks = 1
        self.index: dict = {}  # (block, feature) -> row
        self.mean = np.zeros(0)
        self.cov = np.zeros((0, 0))

    def add_block(self) -> None:
        self.n_blocks += 1

    def lift(self) -> None:
        self.index = {(b + 1, f): i for (b, f), i in self.index.items()}
        self.n_blocks += 1

    def scores(self, x: dict) -> list[float]:
        values = self._values(x)
        mean, index = self.mean, self.index
        return [
            float(sum(mean[index[b, f]] * xf for f, xf in values.items() if (b, f) in index))
            for b in range(self.n_blocks)
        ]

    def score_covariance(self, x: dict) -> np.ndarray:
        """The covariance matrix of the block scores ``(mu_b . x)_b`` under N(mu, Sigma)."""
        values = self._values(x)
        embed = np.zeros((self.n_blocks, len(self.index)))
        prior = np.zeros(self.n_blocks)
        for b in range(self.n_blocks):
            for f, xf in values.items():
                i = self.index.get((b, f))
                if i is None:
                    prior[b] += self.initial_variance * xf * xf
                else:
                    embed[b, i] = xf
        return embed @ self.cov @ embed.T + np.diag(prior)

    def margin(self, x: dict, pairs) -> tuple[float, float, None, tuple]:
        """``m = mu . d`` and ``v = d' Sigma d`` with d's rows and values; unseen rows count with
        the prior. (No per-coordinate terms: the exact schemes are diagonal.)"""
        values = self._values(x)
        rows, d, prior_v = [], [], 0.0
        unseen = []
        for b, sign in pairs:
            for f, xf in values.items():
                i = self.index.get((b, f))
                if i is None:
                    unseen.append(((b, f), sign * xf))
                    prior_v += self.initial_variance * xf * xf
                else:
                    rows.append(i)
                    d.append(sign * xf)
        rows, d = np.array(rows, dtype=int), np.array(d)
        sigma_d = self.cov[:, rows] @ d
        v = float(d @ sigma_d[rows]) + prior_v
        if not math.isfinite(v):
            _raise_bad_input(x)
        return float(self.mean[rows] @ d), v, None, (rows, d, sigma_d, unseen)

    def update(self, entries: tuple, alpha: float, gamma: float, v: float, scheme=None) -> None:
        """Apply one step; `scheme` is for the diagonal engine only and must be None here."""
        rows, d, sigma_d, unseen = entries
        if unseen:
            start = len(self.index)
            self._grow([key for key, _ in unseen])
            rows = np.concatenate([rows, np.arange(start, start + len(unseen))])
            d = np.concatenate([d, [value for _, value in unseen]])
            sigma_d = np.concatenate([sigma_d, self.initial_variance * d[-len(unseen) :]])
        beta = gamma / (1.0 + gamma * v)
        self.mean += alpha * sigma_d
        self.cov -= beta * np.outer(sigma_d, sigma_d)

    def _grow(self, keys: list) -> None:
        n, k = len(self.index), len(keys)
        cov = np.zeros((n + k, n + k))
        cov[:n, :n] = self.cov
        cov[range(n, n + k), range(n, n + k)] = self.initial_variance
        self.cov = cov
        self.mean = np.concatenate([self.mean, np.zeros(k)])
        for key in keys:
            self.index[key] = len(self.index)

    @staticmethod
    def _values(x: dict) -> dict:
        """The non-zero values of `x` as floats; raises on a bad value."""
        check_features(x)
        return {f: float(xf) for f, xf in x.items() if xf}
