"""The full-covariance Gaussian engine: one joint Gaussian over every weight, its precision
kept as a Cholesky factor.

The papers' models with ``covariance="full"`` (Crammer, Dredze and Pereira, JMLR 2012): the
update form of `river_cw.gaussian` on the whole matrix, O(d^2) per example. numpy and
scipy.linalg in pure Python; it has no compiled engine.
"""

from __future__ import annotations

import math

import numpy as np

from .gaussian import _learn, _raise_bad_input, _total
from .validation import check_features

__all__ = ["FullGaussian"]


class FullGaussian:
    """One joint Gaussian over all ``(block, feature)`` weights, grown as features arrive.

    The precision is kept as its Cholesky factor, ``Sigma^-1 = R' R`` with R upper triangular.
    Every rule only adds to the precision (``gamma d d'``, gamma >= 0), a rank-one Cholesky
    update by Givens rotations that keeps every diagonal entry of R at least ``1 /
    sqrt(initial_variance)``: Sigma stays symmetric positive definite under any input, where
    the Woodbury downdate of Sigma itself loses definiteness to cancellation (features spanning
    1e-8..1e8). ``Sigma d`` costs two triangular solves, ``d' Sigma d = |R^-T d|^2 >= 0``.

    New weights enter with mean 0, the prior variance and no correlation, which leaves the
    distribution of every existing weight unchanged.
    """

    def __init__(self, initial_variance: float):
        self.initial_variance = initial_variance
        self.n_blocks = 1
        self.index: dict = {}  # (block, feature) -> row
        self.mean = np.zeros(0)
        self.chol = np.zeros((0, 0))  # R, upper triangular: the precision is R' R

    @property
    def cov(self) -> np.ndarray:
        """Sigma, the covariance matrix of the weights (rows as in `index`). Its diagonal is
        clipped at the prior's variance: the precision never drops below the prior's (updates
        add to it, forgetting relaxes it toward it), so a larger computed variance is the
        inverse's rounding (one ulp above, with a feature of 6e-4 beside one of 5e4)."""
        inv = _solve(self.chol, np.eye(len(self.index)))
        cov = inv @ inv.T
        np.fill_diagonal(cov, np.minimum(np.diag(cov), self.initial_variance))
        return cov

    @property
    def precision(self) -> np.ndarray:
        """Sigma^-1 = R' R."""
        return self.chol.T @ self.chol

    def set_precision(self, index: dict, mean: np.ndarray, precision: np.ndarray) -> None:
        """Replace the Gaussian by N(mean, precision^-1) over the weights of `index`."""
        self.index = dict(index)
        self.mean = np.asarray(mean, dtype=float)
        self.chol = np.linalg.cholesky(precision).T if len(index) else np.zeros((0, 0))

    def set_factor(self, index: dict, mean: np.ndarray, factor: np.ndarray) -> None:
        """Replace the Gaussian by N(mean, (F' F)^-1) over the weights of `index`, F = `factor`
        of full column rank: the precision's Cholesky factor is R of F's QR decomposition,
        without forming ``F' F`` (which would square F's condition number)."""
        chol = np.linalg.qr(factor, mode="r") if len(index) else np.zeros((0, 0))
        signs = np.where(np.diag(chol) < 0, -1.0, 1.0)
        self.index = dict(index)
        self.mean = np.asarray(mean, dtype=float)
        self.chol = signs[:, None] * chol  # a positive diagonal, as a Cholesky factor's

    def add_block(self) -> None:
        self.n_blocks += 1

    def lift(self) -> None:
        self.index = {(b + 1, f): i for (b, f), i in self.index.items()}
        self.n_blocks += 1

    def layout(self):
        return dict(self.index), self.n_blocks

    def block_views(self) -> tuple[list[dict], list[dict]]:
        """Per block, ``{feature: mean}`` and ``{feature: marginal variance}``."""
        means: list[dict] = [{} for _ in range(self.n_blocks)]
        variances: list[dict] = [{} for _ in range(self.n_blocks)]
        diagonal = np.diag(self.cov) if self.index else ()
        for (b, f), i in self.index.items():
            means[b][f] = float(self.mean[i])
            variances[b][f] = float(diagonal[i])
        return means, variances

    def negate(self) -> None:
        self.mean = -self.mean

    def reorder(self, order: list[int]) -> None:
        new_block = {k: b for b, k in enumerate(order)}
        self.index = {(new_block[b], f): i for (b, f), i in self.index.items()}

    def restore_layout(self, layout) -> None:
        self.index, self.n_blocks = layout

    def scores(self, x: dict) -> list[float]:
        values = self._values(x)
        mean, index = self.mean, self.index
        scores = [
            _total([mean[index[b, f]] * xf for f, xf in values.items() if (b, f) in index])
            for b in range(self.n_blocks)
        ]
        if not all(map(math.isfinite, scores)):
            _raise_bad_input(x)
        return scores

    def score_covariance(self, x: dict) -> np.ndarray:
        """The covariance matrix of the block scores ``(mu_b . x)_b`` under N(mu, Sigma)."""
        values = self._values(x)
        embed = np.zeros((self.n_blocks, len(self.index)))
        prior = np.zeros(self.n_blocks)
        for b in range(self.n_blocks):
            unseen = []
            for f, xf in values.items():
                i = self.index.get((b, f))
                if i is None:
                    unseen.append(self.initial_variance * xf * xf)
                else:
                    embed[b, i] = xf
            prior[b] = _total(unseen)
        z = _solve(self.chol, embed.T, trans="T")  # R^-T E'
        with np.errstate(over="ignore", invalid="ignore"):  # beyond float64: inf, as diagonal
            return z.T @ z + np.diag(prior)

    def margin(
        self, x: dict, pairs, keep: float = 1.0, rest: float = 0.0
    ) -> tuple[float, float, None, tuple]:
        """``m = mu . d`` and ``v = d' Sigma d`` with d over the known rows and the unseen
        weights (which count with the prior). (No per-coordinate terms: the exact schemes are
        diagonal.) Unseen weights get their rows in a canonical order of their keys, so the
        order of the features in `x` never changes a result.

        With ``keep < 1`` the precision is forgotten first along the coordinates of d's learned
        weights J: ``Sigma^-1 <- S Sigma^-1 S + rest E_J`` with ``S = diag(sqrt(keep))`` on J and
        1 elsewhere, E_J the identity on J (the diagonal engine's `forget`, coordinate-wise,
        when Sigma is diagonal); written once x is known to be valid."""
        values = self._values(x)
        chol = self.chol
        if keep != 1.0:
            index = self.index
            rows = {index[b, f] for b, _ in pairs for f in values if (b, f) in index}
            if rows:
                with np.errstate(all="ignore"):
                    forgotten = _forget_rows(chol, sorted(rows), keep, rest)
                if np.isfinite(forgotten).all():  # else float64 cannot express it: not forgotten
                    chol = forgotten
        d = np.zeros(len(self.index))
        prior_v, unseen = [], []
        for b, sign in pairs:
            for f, xf in values.items():
                i = self.index.get((b, f))
                if i is None:
                    unseen.append(((b, f), sign * xf))
                    prior_v.append(self.initial_variance * xf * xf)
                else:
                    d[i] += sign * xf
        unseen.sort(key=_row_order)
        z = _solve(chol, d, trans="T")  # R^-T d
        with np.errstate(over="ignore", invalid="ignore"):  # refused below when not finite
            v = float(z @ z) + _total(prior_v)
        if not math.isfinite(v):
            _raise_bad_input(x)
        self.chol = chol
        return float(self.mean @ d), v, None, (d, z, unseen)

    learn = _learn

    def update(self, entries: tuple, alpha: float, gamma: float, v: float, scheme=None) -> bool:
        """Apply one step (full covariance has no diagonal scheme: `scheme` is ignored):
        ``mu += alpha Sigma d`` and ``R' R += gamma d d'``, computed first, written only if every
        number is finite."""
        d, z, unseen = entries
        n, k = len(self.index), len(unseen)
        sigma_d = _solve(self.chol, z)  # R^-1 R^-T d
        chol, mean = self.chol, self.mean
        if k:
            new_d = np.array([value for _, value in unseen])
            d = np.concatenate([d, new_d])
            sigma_d = np.concatenate([sigma_d, self.initial_variance * new_d])
            chol = np.zeros((n + k, n + k))
            chol[:n, :n] = self.chol
            chol[range(n, n + k), range(n, n + k)] = 1.0 / math.sqrt(self.initial_variance)
            mean = np.concatenate([mean, np.zeros(k)])
        with np.errstate(all="ignore"):
            mean = mean + alpha * sigma_d
            chol = _cholesky_update(chol if k else chol.copy(), math.sqrt(gamma) * d)
        if not (np.isfinite(mean).all() and np.isfinite(chol).all()):
            return False
        self.mean, self.chol = mean, chol
        for key, _ in unseen:
            self.index[key] = len(self.index)
        return True

    @staticmethod
    def _values(x: dict) -> dict:
        """The non-zero values of `x` (floats); raises on a bad value."""
        check_features(x)
        return {f: xf for f, xf in x.items() if xf}


def _forget_rows(chol: np.ndarray, rows: list[int], keep: float, rest: float) -> np.ndarray:
    """A new R with ``R' R <- S R' R S + rest E_rows`` (see `FullGaussian.margin`): columns of
    `rows` scaled by ``sqrt(keep)``, then one rank-one update ``rest e_j e_j'`` per row j. Each
    diagonal entry of those rows stays at least ``1 / sqrt(initial_variance)``."""
    chol = chol.copy()
    chol[:, rows] *= math.sqrt(keep)
    e = np.zeros(len(chol))
    for j in rows:
        e[j] = math.sqrt(rest)
        chol = _cholesky_update(chol, e)
        e[j] = 0.0
    return chol


def _row_order(entry) -> tuple:
    """Sort key of a new weight ``((block, feature), value)``: block, then the feature's type
    and repr (a total order on any mix of hashable keys)."""
    (block, feature), _ = entry
    return block, type(feature).__name__, repr(feature)


def _solve(chol: np.ndarray, b: np.ndarray, trans: str = "N") -> np.ndarray:
    """``R^-1 b`` (or ``R^-T b``) for the upper triangular R; empty when there are no weights.
    (R is finite by construction and b holds validated feature values: scipy's own check of
    both, a third of the cost of a small solve, is skipped.)"""
    if not len(chol):
        return np.zeros(b.shape)
    from scipy.linalg import solve_triangular  # scipy.linalg only where the full covariance is

    return solve_triangular(chol, b, trans=trans, check_finite=False)


def _cholesky_update(chol: np.ndarray, w: np.ndarray) -> np.ndarray:
    """R with ``R' R + w w'`` in place of ``R' R``, R upper triangular (Givens rotations).

    Each diagonal entry becomes ``hypot(R_kk, w_k) >= R_kk``, so R stays non-singular. The
    rotation has ``c, s = R_kk / r, w_k / r`` (both at most 1) and reads the row before it is
    rotated: the form with ``1 / c`` cancels catastrophically when ``w_k >> R_kk``."""
    nonzero = np.flatnonzero(w)
    w = w.copy()
    for k in range(int(nonzero[0]) if len(nonzero) else len(w), len(w)):
        r_kk, w_k = chol[k, k], w[k]
        if w_k == 0.0:
            continue
        r = math.hypot(r_kk, w_k)
        c, s = r_kk / r, w_k / r
        chol[k, k] = r
        row = chol[k, k + 1 :].copy()
        chol[k, k + 1 :] = c * row + s * w[k + 1 :]
        w[k + 1 :] = c * w[k + 1 :] - s * row
    return chol
