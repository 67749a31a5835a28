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
import os
from math import fsum

import numpy as np

from .validation import check_features

__all__ = ["ENGINE", "DiagonalGaussian", "FullGaussian", "HerdingShrink"]


def _raise_bad_input(x: dict) -> None:
    """Name the offending feature, or report an overflow of finite values."""
    check_features(x)
    raise ValueError("feature values too large: the margin overflows float64")


class DiagonalGaussian:
    """Independent weights: each block maps a feature to ``[mean, variance]``.

    Absent features have mean 0 and the prior variance; they are stored only once learned.
    Sums are exactly rounded (`math.fsum`), so the order of the features never changes a result.
    """

    def __init__(self, initial_variance: float):
        self.initial_variance = initial_variance
        self.blocks: list[dict] = [{}]

    def add_block(self) -> None:
        self.blocks.append({})

    def lift(self) -> None:
        self.blocks.insert(0, {})

    def scores(self, x: dict) -> list[float]:
        """``mu_b . x`` for every block b; raises on a bad `x` (every value is touched)."""
        scores = []
        for block in self.blocks:
            get = block.get
            terms = []
            unseen = 0.0
            try:
                for f, xf in x.items():
                    w = get(f)
                    if w is None:
                        unseen += xf  # touched so that bad values surface here too
                    else:
                        terms.append(w[0] * xf)
                score = fsum(terms)
                ok = math.isfinite(score + unseen)
            except TypeError:
                ok = False
            if not ok:
                _raise_bad_input(x)
            scores.append(score)
        return scores

    def score_covariance(self, x: dict) -> np.ndarray:
        """The covariance of the block scores: diagonal, ``x' Sigma_b x``, blocks are independent."""
        prior = self.initial_variance
        out = []
        for block in self.blocks:
            get = block.get
            terms = []
            for f, xf in x.items():
                w = get(f)
                terms.append((prior if w is None else w[1]) * xf * xf)
            out.append(fsum(terms))
        return np.diag(out)

    def margin(self, x: dict, pairs) -> tuple[float, float, list, list]:
        """One pass over d: ``m = mu . d``, ``v = d' Sigma d``, the terms ``u_j = s_j d_j^2`` of
        v, and d's entries for `update`. Raises on a bad `x` (every value is touched)."""
        prior = self.initial_variance
        m, u, entries = 0.0, [], []
        add_u = u.append
        try:
            for b, sign in pairs:
                get = self.blocks[b].get
                m_terms, seen, unseen = [], [], []
                add_m, add_seen = m_terms.append, seen.append
                for f, xf in x.items():
                    w = get(f)
                    x2 = xf * xf
                    if w is None:
                        if x2:  # a zero feature value teaches nothing: store nothing
                            add_u(prior * x2)
                            unseen.append((f, xf))
                    else:
                        add_m(w[0] * xf)
                        add_u(w[1] * x2)
                        add_seen((w, xf))
                m += sign * fsum(m_terms)
                entries.append((b, sign, seen, unseen))
            v = fsum(u)
            ok = math.isfinite(m) and math.isfinite(v)
        except TypeError:
            ok = False
        if not ok:
            _raise_bad_input(x)
        return m, v, u, entries

    def update(self, entries: list, alpha: float, gamma: float, v: float, scheme) -> None:
        """Apply one step; `scheme` is "project", "drop" or a function ``(s_j, d_j^2) -> s_j``.

        Variances stay in ``[0, s_j]``: a spent variance is 0, never negative or NaN.
        """
        prior = self.initial_variance
        beta = gamma / (1.0 + gamma * v)
        for b, sign, seen, unseen in entries:
            if unseen:
                block = self.blocks[b]
                seen.extend((block.setdefault(f, [0.0, prior]), xf) for f, xf in unseen)
            a = alpha * sign  # d_j = sign x_j and d_j^2 = x_j^2
            if scheme == "project":
                for w, xf in seen:
                    s = w[1]
                    w[0] += a * s * xf
                    w[1] = s / (1.0 + gamma * (xf * xf * s))
            elif scheme == "drop":
                for w, xf in seen:
                    s = w[1]
                    w[0] += a * s * xf
                    w[1] = s * max(0.0, 1.0 - beta * (xf * xf * s))
            else:
                for w, xf in seen:
                    s = w[1]
                    w[0] += a * s * xf
                    w[1] = scheme(s, xf * xf)

    def __reduce__(self):
        return _restore_diagonal, (self.initial_variance, self.blocks)


class HerdingShrink:
    """NHERD's exact diagonal variance step ``s_j <- s_j / (1 + C d_j^2 s_j)^2`` (Crammer and
    Lee 2010), as a scheme of `DiagonalGaussian.update`; the compiled engine runs it natively."""

    __slots__ = ("C",)

    def __init__(self, C: float):
        self.C = C

    def __call__(self, s: float, d2: float) -> float:
        q = 1.0 + self.C * d2 * s
        return s / (q * q)


def _restore_diagonal(initial_variance: float, blocks: list[dict]):
    """Unpickle a diagonal Gaussian into the active engine, whichever engine pickled it."""
    gaussian = DiagonalGaussian(initial_variance)
    gaussian.blocks = blocks
    return gaussian


PythonDiagonalGaussian = DiagonalGaussian
ENGINE = "python"
if not os.environ.get("RIVER_CW_PURE_PYTHON"):
    try:
        from ._diagonal import Diagonal as _CompiledDiagonal
    except ImportError:  # built without a compiler: the pure-Python engine serves
        pass
    else:
        ENGINE = "c"

        class DiagonalGaussian(_CompiledDiagonal):
            """The compiled engine (`river_cw._diagonal`): `PythonDiagonalGaussian`'s interface
            and numbers, bit for bit; ``blocks`` returns copies."""

            __slots__ = ()

            def score_covariance(self, x: dict) -> np.ndarray:
                return np.diag(self.score_variances(x))


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

    def update(self, entries: tuple, alpha: float, gamma: float, v: float) -> None:
        """Apply one step (full covariance has no diagonal scheme)."""
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
