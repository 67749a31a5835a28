"""Two covariance structures measured against the arrowhead in `benchmarks/dense.py` (issue 30)
and not adopted: prototypes over the library's pure-Python engines, binary models only.

- `BlockAROW`: full covariance over the features present in most examples (and the intercept),
  diagonal over the rest.
- `CentredAROW`: online centring that the Gaussian accounts for: the diagonal model over centred
  features, the intercept absorbing each move of a centre.
"""

from __future__ import annotations

import collections

import numpy as np

import river_cw
from river_cw import INTERCEPT
from river_cw._engines.diagonal import PythonDiagonalGaussian
from river_cw._engines.full import FullGaussian
from river_cw._engines.gaussian import APPLIED, NOTHING

__all__ = ["BlockAROW", "CentredAROW"]


class BlockGaussian:
    """Full covariance over the dense block, diagonal over the rest: the rule's update projected
    onto block-diagonal covariance by keeping each block of the new precision (the I-projection,
    as the diagonal "project" keeps the precision's diagonal), so both parts take the same
    ``(alpha, gamma)`` from the joint ``(m, v)``.

    The dense block holds the features present in at least half of the first `warm_up` examples
    (the intercept among them); until then every weight is diagonal, and the dense ones then
    enter the full block with their mean and variance. Costs O(|dense|^2) per example.
    """

    def __init__(self, initial_variance: float, warm_up: int = 100):
        self.initial_variance = initial_variance
        self.full = FullGaussian(initial_variance)
        self.diagonal = PythonDiagonalGaussian(initial_variance)
        self.warm_up = warm_up
        self.counts: collections.Counter = collections.Counter()
        self.n = 0
        self.dense: frozenset = frozenset()

    def _split(self, x: dict) -> tuple[dict, dict]:
        dense = self.dense
        return (
            {f: v for f, v in x.items() if f in dense},
            {f: v for f, v in x.items() if f not in dense},
        )

    def scores(self, x: dict) -> list[float]:
        dense, rest = self._split(x)
        return [s + t for s, t in zip(self.full.scores(dense), self.diagonal.scores(rest))]

    def score_covariance(self, x: dict) -> np.ndarray:
        dense, rest = self._split(x)
        return self.full.score_covariance(dense) + self.diagonal.score_covariance(rest)

    def learn_native(self, *args) -> int:
        return -1

    def learn(self, x, pairs, step, scheme, w, keep=1.0, rest=0.0) -> int:
        self._count(x)
        dense, other = self._split(x)
        m_full, v_full, _, full_entries = self.full.margin(dense, pairs)
        m_diagonal, v_diagonal, _, diagonal_entries = self.diagonal.margin(other, pairs)
        m, v = m_full + m_diagonal, v_full + v_diagonal
        if v <= 0.0 or (result := step(m, v, w)) is None:
            return NOTHING
        alpha, gamma = result
        if self.full.index or full_entries[1]:  # (z, unseen): a weight to learn
            self.full.update(full_entries, alpha, gamma, v)
        self.diagonal.update(diagonal_entries, alpha, gamma, v, scheme)
        return APPLIED

    def _count(self, x: dict) -> None:
        if self.n >= self.warm_up:
            return
        self.n += 1
        self.counts.update(f for f, v in x.items() if v)
        if self.n < self.warm_up:
            return
        dense = sorted((f for f, c in self.counts.items() if 2 * c >= self.warm_up), key=repr)
        block = self.diagonal.blocks[0]
        moved = [block.pop(f, [0.0, self.initial_variance]) for f in dense]
        self.diagonal.reset_bound()
        self.full.set_precision(
            {(0, f): i for i, f in enumerate(dense)},
            np.array([w[0] for w in moved]),
            np.diag([1.0 / w[1] for w in moved]),
        )
        self.dense = frozenset(dense)


class CentredGaussian(PythonDiagonalGaussian):
    """The diagonal Gaussian over the weights of centred features ``x_j - c_j``, with ``c_j`` the
    running mean of feature j over every example (0 where absent), so the score is ``b + sum_j
    w_j (x_j - c_j)``. When ``c_j`` moves by delta the same score function needs ``b <- b +
    delta w_j``: the intercept takes that sum's mean and variance, ``mu_b += delta mu_j`` and
    ``s_b += delta^2 s_j`` (its marginal; the diagonal drops the covariance the move creates).
    Every feature with a non-zero centre is in every centred example: O(d) per example."""

    def __init__(self, initial_variance: float):
        super().__init__(initial_variance)
        self.n = 0
        self.sums: dict = {}
        self.centre: dict = {}

    def _centred(self, x: dict) -> dict:
        out = {f: -c for f, c in self.centre.items()}
        for f, v in x.items():
            out[f] = v if f is INTERCEPT else v - self.centre.get(f, 0.0)
        return out

    def scores(self, x: dict) -> list[float]:
        return super().scores(self._centred(x))

    def score_covariance(self, x: dict) -> np.ndarray:
        return super().score_covariance(self._centred(x))

    def learn(self, x, pairs, step, scheme, w, keep=1.0, rest=0.0) -> int:
        self._move_centres(x)
        return super().learn(self._centred(x), pairs, step, scheme, w, keep, rest)

    def _move_centres(self, x: dict) -> None:
        self.n += 1
        for f, v in x.items():
            if f is not INTERCEPT:
                self.sums[f] = self.sums.get(f, 0.0) + v
        block = self.blocks[0]
        intercept = block.setdefault(INTERCEPT, [0.0, self.initial_variance])
        for f, total in self.sums.items():
            centre = total / self.n
            delta = centre - self.centre.get(f, 0.0)
            if delta and f in block:
                mean, variance = block[f]
                intercept[0] += delta * mean
                intercept[1] += delta * delta * variance
            self.centre[f] = centre
        self.reset_bound()


class BlockAROW(river_cw.AROW):
    """AROW (the paper's diagonal scheme, "project") on `BlockGaussian`."""

    def __init__(self):
        super().__init__(covariance="diagonal", diagonal="project")
        self._gaussian = BlockGaussian(self.initial_variance)


class CentredAROW(river_cw.AROW):
    """AROW (the paper's diagonal scheme, "project") on `CentredGaussian`."""

    def __init__(self):
        super().__init__(covariance="diagonal", diagonal="project")
        self._gaussian = CentredGaussian(self.initial_variance)
