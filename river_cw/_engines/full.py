"""The full-covariance Gaussian engine: one joint Gaussian over every weight, its precision
kept as a Cholesky factor.

The papers' models with ``covariance="full"`` (Crammer, Dredze and Pereira, JMLR 2012): the
update form of `river_cw._engines.gaussian` on the whole matrix, O(d^2) per example: two triangular
solves and a rank-one update of the factor (Gill, Golub, Murray and Saunders 1974, method C1),
which reuses the first solve.

`PythonFullGaussian` is the readable reference; `FullGaussian` is the engine that serves: where
`river_cw._engines._full` is built, the same class with its kernels compiled (the solves, the rank-one
update, and the common case of ``learn_one`` and ``predict_one`` in one call), the same numbers
bit for bit. The kernels are written as sequences of element-wise operations in one order (each
rounded once, as IEEE 754 rounds them), never as a library's dot product or triangular solve,
whose order of summation is its own; the sums that are not (``mu . d``, ``|z|^2``) are exactly
rounded. A pickle names neither engine: it unpickles into the engine that serves.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import engine
from ..validation import check_features
from .gaussian import _learn, _raise_bad_input, _total, scores_with_scale

__all__ = ["FACTOR_BOUND", "FullGaussian", "PythonFullGaussian"]

FACTOR_BOUND = 1e150
"""The largest entry of the precision's factor R an update writes: the precision R'R sums their
products, and the views invert it; a step that would go beyond is refused, as one float64
cannot express (river_cw/_engines/_full.c's RCW_FACTOR_BOUND)."""


class PythonFullGaussian:
    """One joint Gaussian over all ``(block, feature)`` weights, grown as features arrive.

    Each weight has a row: ``rows[b][feature]``, in the order the weights arrived. The precision
    is kept as its Cholesky factor, ``Sigma^-1 = R' R`` with R upper triangular (`chol`, C
    order). Every rule only adds to the precision (``gamma d d'``, gamma >= 0), a rank-one
    Cholesky update (`_rank_one`) that keeps every diagonal entry of R at least ``1 /
    sqrt(initial_variance)``: Sigma stays symmetric positive definite under any input, where the
    Woodbury downdate of Sigma itself loses definiteness to cancellation (features spanning
    1e-8..1e8). ``Sigma d`` costs two triangular solves, ``d' Sigma d = |R^-T d|^2 >= 0``.

    New weights enter with mean 0, the prior variance and no correlation, which leaves the
    distribution of every existing weight unchanged.
    """

    def __init__(self, initial_variance: float):
        self.initial_variance = initial_variance
        self.rows: list[dict] = [{}]  # per block, feature -> its row
        self.mean = np.zeros(0)
        self.chol = np.zeros((0, 0))  # R, upper triangular: the precision is R' R

    def __reduce__(self):
        return _restore_full, (self.initial_variance, self.rows, self.mean, self.chol)

    def __setstate__(self, state: dict) -> None:
        """A pickle of this class itself (before `__reduce__` named none): ``index``, ``(block,
        feature) -> row``, and ``n_blocks`` held the rows then."""
        rows: list[dict] = [{} for _ in range(state.pop("n_blocks"))]
        for (b, f), i in state.pop("index").items():
            rows[b][f] = i
        self.__dict__.update(state, rows=rows)

    @property
    def n_blocks(self) -> int:
        return len(self.rows)

    @n_blocks.setter
    def n_blocks(self, n: int) -> None:
        """Trailing empty blocks added (or dropped): the blocks of a Gaussian about to be set
        (`set_precision`, `set_factor`)."""
        if any(self.rows[n:]):
            raise ValueError("only empty blocks can be dropped")
        self.rows = self.rows[:n] + [{} for _ in range(n - len(self.rows))]

    @property
    def index(self) -> dict:
        """``(block, feature) -> row`` of every weight, in the order of the rows."""
        keys: list[Any] = [None] * len(self.mean)
        for b, block in enumerate(self.rows):
            for f, i in block.items():
                keys[i] = (b, f)
        return {key: i for i, key in enumerate(keys)}

    @property
    def cov(self) -> np.ndarray:
        """Sigma, the covariance matrix of the weights (rows as in `index`). Its diagonal is
        clipped at the prior's variance: the precision never drops below the prior's (updates
        add to it, forgetting relaxes it toward it), so a larger computed variance is the
        inverse's rounding (one ulp above, with a feature of 6e-4 beside one of 5e4)."""
        inv = _solve(self.chol, np.eye(len(self.mean)))
        cov = inv @ inv.T
        np.fill_diagonal(cov, np.minimum(np.diag(cov), self.initial_variance))
        return cov

    @property
    def precision(self) -> np.ndarray:
        """Sigma^-1 = R' R."""
        return self.chol.T @ self.chol

    def set_precision(self, index: dict, mean: np.ndarray, precision: np.ndarray) -> None:
        """Replace the Gaussian by N(mean, precision^-1) over the weights of `index`."""
        chol = np.linalg.cholesky(precision).T if len(index) else np.zeros((0, 0))
        self._set(index, mean, chol)

    def set_factor(self, index: dict, mean: np.ndarray, factor: np.ndarray) -> None:
        """Replace the Gaussian by N(mean, (F' F)^-1) over the weights of `index`, F = `factor`
        of full column rank: the precision's Cholesky factor is R of F's QR decomposition,
        without forming ``F' F`` (which would square F's condition number)."""
        chol = np.linalg.qr(factor, mode="r") if len(index) else np.zeros((0, 0))
        signs = np.where(np.diag(chol) < 0, -1.0, 1.0)
        self._set(index, mean, signs[:, None] * chol)  # a positive diagonal, as a factor's

    def _set(self, index: dict, mean: np.ndarray, chol: np.ndarray) -> None:
        rows: list[dict] = [{} for _ in self.rows]
        for (b, f), i in index.items():
            rows[b][f] = i
        self.rows = rows
        self.mean = np.array(mean, dtype=float)
        self.chol = np.ascontiguousarray(chol, dtype=float)

    def add_block(self) -> None:
        self.rows.append({})

    def lift(self) -> None:
        self.rows.insert(0, {})

    def layout(self):
        return [dict(block) for block in self.rows]

    def block_views(self) -> tuple[list[dict], list[dict]]:
        """Per block, ``{feature: mean}`` and ``{feature: marginal variance}``."""
        diagonal = np.diag(self.cov) if len(self.mean) else ()
        means = [{f: float(self.mean[i]) for f, i in block.items()} for block in self.rows]
        variances = [{f: float(diagonal[i]) for f, i in block.items()} for block in self.rows]
        return means, variances

    def negate(self) -> None:
        self.mean = -self.mean

    def reorder(self, order: list[int]) -> None:
        self.rows = [self.rows[b] for b in order]

    def restore_layout(self, layout) -> None:
        self.rows = layout

    def scores(self, x: dict) -> list[float]:
        values = self._values(x)
        mean = self.mean
        scores = [
            _total([mean[block[f]] * xf for f, xf in values.items() if f in block])
            for block in self.rows
        ]
        if not all(map(math.isfinite, scores)):
            _raise_bad_input(x)
        return scores

    def score_covariance(self, x: dict) -> np.ndarray:
        """The covariance matrix of the block scores ``(mu_b . x)_b`` under N(mu, Sigma)."""
        values = self._values(x)
        embed = np.zeros((self.n_blocks, len(self.mean)))
        prior = np.zeros(self.n_blocks)
        for b, block in enumerate(self.rows):
            unseen = []
            for f, xf in values.items():
                i = block.get(f)
                if i is None:
                    unseen.append(self.initial_variance * xf * xf)
                else:
                    embed[b, i] = xf
            prior[b] = _total(unseen)
        z = _solve(self.chol, embed.T, trans="T")  # R^-T E'
        with np.errstate(over="ignore", invalid="ignore"):  # beyond float64: inf, as diagonal
            return z.T @ z + np.diag(prior)

    scores_with_scale = scores_with_scale

    def margin_variance(self, x: dict, b: int, c: int) -> float:
        """The variance of ``score_b - score_c`` (b and c distinct blocks), from the scores'
        covariance: ``C_bb + C_cc - 2 C_bc`` (`river_cw.probabilities.pairwise`)."""
        cov = self.score_covariance(x).tolist()  # Python floats: an overflow is inf, silently
        return cov[b][b] + cov[c][c] - 2.0 * cov[b][c]

    def margin(
        self, x: dict, pairs, keep: float = 1.0, rest: float = 0.0
    ) -> tuple[float, float, None, tuple]:
        """``m = mu . d`` and ``v = d' Sigma d`` with d over the known rows and the unseen
        weights (which count with the prior), each exactly rounded. (No per-coordinate terms:
        the exact schemes are diagonal.) Unseen weights get their rows in a canonical order of
        their keys, so the order of the features in `x` never changes a result.

        With ``keep < 1`` the precision is forgotten first along the coordinates of d's learned
        weights J: ``Sigma^-1 <- S Sigma^-1 S + rest E_J`` with ``S = diag(sqrt(keep))`` on J and
        1 elsewhere, E_J the identity on J (the diagonal engine's `forget`, coordinate-wise,
        when Sigma is diagonal); written once x is known to be valid."""
        values = self._values(x)
        chol = self.chol
        if keep != 1.0:
            learned = {self.rows[b][f] for b, _ in pairs for f in values if f in self.rows[b]}
            if learned:
                with np.errstate(all="ignore"):
                    forgotten = self._forget_rows(chol, sorted(learned), keep, rest)
                if np.isfinite(forgotten).all():  # else float64 cannot express it: not forgotten
                    chol = forgotten
        d = np.zeros(len(self.mean))
        known, prior_v, unseen = [], [], []
        for b, sign in pairs:
            block = self.rows[b]
            for f, xf in values.items():
                i = block.get(f)
                if i is None:
                    unseen.append(((b, f), sign * xf))
                    prior_v.append(self.initial_variance * xf * xf)
                else:
                    d[i] += sign * xf
                    known.append(i)
        unseen.sort(key=_row_order)
        z = self._forward(chol, d)  # R^-T d
        with np.errstate(over="ignore", invalid="ignore"):  # refused below when not finite
            v = _total([*(z * z).tolist(), *prior_v])
            products = (self.mean[known] * d[known]).tolist()
        m = _total(products) if all(map(math.isfinite, products)) else math.inf
        if not (math.isfinite(v) and math.isfinite(m)):
            _raise_bad_input(x)
        self.chol = chol
        return m, v, None, (z, unseen)

    learn = _learn

    def learn_native(self, x, y, w, class_index, lean) -> int:
        """The compiled engine's one-call `learn` with the rule's step in C; this engine has
        none: -1, the general path (`GaussianClassifier.learn_one`) serves."""
        return -1

    def update(self, entries: tuple, alpha: float, gamma: float, v: float, scheme=None) -> bool:
        """Apply one step (full covariance has no diagonal scheme: `scheme` is ignored):
        ``mu += alpha Sigma d`` and ``R' R += gamma d d'``, computed first, written only if every
        number is finite and R within `FACTOR_BOUND`. The update takes ``R^-T sqrt(gamma) d`` as
        ``sqrt(gamma) z``: the margin's forward solve serves it too."""
        z, unseen = entries
        n, k = len(self.mean), len(unseen)
        sigma_d = self._backward(self.chol, z)  # R^-1 R^-T d
        chol, mean = self.chol.copy(), self.mean
        if k:  # the new weights' rows: the prior's diagonal, no correlation
            new_d = np.array([value for _, value in unseen])
            root = 1.0 / math.sqrt(self.initial_variance)
            z = np.concatenate([z, new_d / root])  # the forward solve on their rows
            sigma_d = np.concatenate([sigma_d, self.initial_variance * new_d])
            chol = np.zeros((n + k, n + k))
            chol[:n, :n] = self.chol
            chol[range(n, n + k), range(n, n + k)] = root
            mean = np.concatenate([mean, np.zeros(k)])
        with np.errstate(all="ignore"):
            mean = mean + alpha * sigma_d
            self._rank_one(chol, math.sqrt(gamma) * z)  # R^-T (sqrt(gamma) d)
        if not (np.isfinite(mean).all() and (np.abs(chol) <= FACTOR_BOUND).all()):
            return False
        self.mean, self.chol = mean, chol
        for i, ((b, f), _) in enumerate(unseen):
            self.rows[b][f] = n + i
        return True

    def _forget_rows(self, chol: np.ndarray, rows: list[int], keep: float, rest: float):
        """A new R with ``R' R <- S R' R S + rest E_rows`` (see `margin`): columns of `rows`
        scaled by ``sqrt(keep)``, then one rank-one update ``rest e_j e_j'`` per row j. Each
        diagonal entry of those rows stays at least ``1 / sqrt(initial_variance)``."""
        chol = chol.copy()
        chol[:, rows] *= math.sqrt(keep)
        for j in rows:
            e = np.zeros(len(chol))
            e[j] = math.sqrt(rest)
            self._rank_one(chol, self._forward(chol, e))
        return chol

    @staticmethod
    def _forward(chol: np.ndarray, d: np.ndarray) -> np.ndarray:
        """``R^-T d``: R' z = d solved row after row of R (column-oriented forward
        substitution, multiplying by `_reciprocals`), from d's first non-zero entry (z is 0
        before it)."""
        t, z, inverse = d.copy(), np.zeros(len(d)), _reciprocals(chol)
        for k in range(_first_nonzero(d), len(d)):
            z[k] = t[k] * inverse[k]
            t[k + 1 :] -= z[k] * chol[k, k + 1 :]
        return z

    @staticmethod
    def _backward(chol: np.ndarray, z: np.ndarray) -> np.ndarray:
        """``R^-1 z``: R s = z solved column after column of R, from the last (back
        substitution, multiplying by `_reciprocals`)."""
        t, s, inverse = z.copy(), np.zeros(len(z)), _reciprocals(chol)
        for k in range(len(z) - 1, -1, -1):
            s[k] = t[k] * inverse[k]
            t[:k] -= s[k] * chol[:k, k]
        return s

    @staticmethod
    def _rank_one(chol: np.ndarray, p: np.ndarray) -> None:
        """R with ``R' R + w w'`` in place of ``R' R``, in place, R upper triangular, given ``p =
        R^-T w`` (the forward solve that the margin has made already).

        The new factor is ``M R``, M the upper triangular factor of ``I + p p'``, applied without
        forming it (Gill, Golub, Murray and Saunders, Methods for modifying matrix
        factorizations, Math. Comp. 28, 1974, method C1, in R's form): with ``t_k = 1 + p_1^2 +
        ... + p_k^2``, row k becomes ``a_k R_k + b_k u_k``, ``a_k = sqrt(t_k / t_(k-1))``, ``b_k
        = p_k / (t_(k-1) a_k)`` and ``u_k`` the sum of ``p_i R_i`` over the rows below it. The
        scalars come first (an O(d) recurrence, the only sequential part); the rows then go
        from the last up, each entry a few independent operations. ``u_k`` is 0 in column k, so
        each diagonal entry becomes ``a_k R_kk >= R_kk`` (``t_k >= t_(k-1)``): R stays
        non-singular, the precision positive definite."""
        n, start = len(p), _first_nonzero(p)
        a, b, t = np.ones(n), np.zeros(n), 1.0
        for k in range(start, n):
            p_k = float(p[k])
            t_k = t + p_k * p_k
            a[k] = math.sqrt(t_k / t)
            b[k] = p_k / (t * a[k])
            t = t_k
        u = np.zeros(n)
        for k in range(n - 1, start - 1, -1):
            row = chol[k, k:].copy()
            chol[k, k:] = a[k] * row + b[k] * u[k:]
            u[k:] = u[k:] + p[k] * row

    @staticmethod
    def _values(x: dict) -> dict:
        """The non-zero values of `x` (floats); raises on a bad value."""
        check_features(x)
        return {f: xf for f, xf in x.items() if xf}


def _restore_full(initial_variance: float, rows: list[dict], mean, chol):
    """Unpickle a full Gaussian into the active engine, whichever engine pickled it."""
    gaussian = FullGaussian(initial_variance)
    gaussian.rows, gaussian.mean = rows, np.array(mean, dtype=float)
    gaussian.chol = np.ascontiguousarray(chol, dtype=float)
    return gaussian


def _first_nonzero(v: np.ndarray) -> int:
    nonzero = np.flatnonzero(v)
    return int(nonzero[0]) if len(nonzero) else len(v)


def _reciprocals(chol: np.ndarray) -> np.ndarray:
    """``1 / R_kk`` for every k: the solves multiply by them, so that no division stands in the
    chain from one row's unknown to the next (R_kk lies within [1 / sqrt(initial_variance),
    FACTOR_BOUND]: each reciprocal is a normal float64)."""
    return 1.0 / np.diag(chol)


def _row_order(entry) -> tuple:
    """Sort key of a new weight ``((block, feature), value)``: block, then the feature's type
    and repr (a total order on any mix of hashable keys)."""
    (block, feature), _ = entry
    return block, type(feature).__name__, repr(feature)


def _solve(chol: np.ndarray, b: np.ndarray, trans: str = "N") -> np.ndarray:
    """``R^-1 b`` (or ``R^-T b``) for the upper triangular R by LAPACK, for the views (`cov`,
    `score_covariance`), which no compiled path computes; empty when there are no weights. (R
    is finite by construction and b holds validated feature values: scipy's own check of both,
    a third of the cost of a small solve, is skipped.)"""
    if not len(chol):
        return np.zeros(b.shape)
    from scipy.linalg import solve_triangular  # scipy.linalg only where the full covariance is

    return solve_triangular(chol, b, trans=trans, check_finite=False)


# The full engine that serves: the compiled kernels where river_cw._engines._full is built, else the
# Python engine. Its type is the Python engine's: the compiled one has its interface and numbers.
FullGaussian: type[PythonFullGaussian] = PythonFullGaussian
if engine.full is not None:
    _full: Any = engine.full  # a compiled module: nothing a type checker reads

    class CompiledFullGaussian(PythonFullGaussian):
        """`PythonFullGaussian` with its kernels compiled (`river_cw._engines._full`): the solves, the
        rank-one update, and learn_one's and predict_one's common cases in one call
        (``learn_native``, ``score_native``), the same numbers bit for bit. The one call
        updates the factor into a spare matrix of the same shape and swaps the two, so that a
        refused step leaves the factor as it was: a `chol` taken earlier is the engine's own and
        changes as it learns (copy it to keep it)."""

        _spare = None  # the matrix the next one-call update writes into, then `chol`

        # learn_native(x, y, w, class_index, lean): `learn` of a binary model with a known label
        # and the rule's step in C: 0 (learned, or nothing to learn), 2 (skipped) or -1 (the
        # general path's case: a new feature, a value other than a float, an int or a bool, a
        # bad value, another model, label or weight; nothing changed). score_native(x,
        # intercept, variance): a binary model's score of x with `intercept` appended
        # (`scores`), or None where the general path serves (a variance, a value to judge,
        # several blocks). Both C functions bound as methods: no Python frame between.
        learn_native = _full.learn_native_method
        score_native = _full.score_native_method

        def score_rows(self, rows, intercept, proba):
            """None: the rows go one by one (`score_native`)."""
            return None

        @staticmethod
        def _forward(chol: np.ndarray, d: np.ndarray) -> np.ndarray:
            z = np.zeros(len(d))
            _full.forward(chol, d.copy(), z)
            return z

        @staticmethod
        def _backward(chol: np.ndarray, z: np.ndarray) -> np.ndarray:
            s = np.zeros(len(z))
            _full.backward(chol, z.copy(), s)
            return s

        _rank_one = staticmethod(_full.rank_one)

    FullGaussian = CompiledFullGaussian
