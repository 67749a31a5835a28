"""The update every Gaussian engine shares: N(mu, Sigma) over the weights, one step of a rule.

Every rule of the family (CW, AROW, NHERD, SOP, SCW) updates along a difference vector
``d`` (``y x`` when binary, ``f(x, y) - f(x, y')`` when multi-class) in the same form::

    mu       <- mu + alpha Sigma d
    Sigma^-1 <- Sigma^-1 + gamma d d'        (full: Sigma <- Sigma - beta (Sigma d)(Sigma d)',
                                                    beta = gamma / (1 + gamma v), Woodbury)

with the margin mean ``m = mu . d`` and variance ``v = d' Sigma d``. A rule only maps
``(m, v)`` to ``(alpha, gamma)``; the sparse loops live in the engines, once, for every rule:
`river_cw._engines.diagonal` (independent weights), `river_cw._engines.arrowhead` (independent given the
intercept) and `river_cw._engines.full` (one joint Gaussian). This module holds what their Python
engines share: one update (`_learn`: margin, the rule's step, update, and its outcomes), the
forgetting of a variance (`forget`), exactly rounded sums (`_total`), the error that names a
bad feature (`_raise_bad_input`, also the compiled engines' hook), and what an engine of
independent blocks derives from its scores' variances (`IndependentBlocks`).

Weights come in blocks: one block while the model is binary, one per label once it is
multi-class (see `river_cw.base`). A difference vector is given as ``x`` and ``pairs``, a tuple
of ``(block, sign)``: ``((0, y),)`` or ``((y, +1), (y', -1))``.
"""

from __future__ import annotations

import math
from math import fsum

import numpy as np

from ..validation import check_features

__all__ = [
    "APPLIED",
    "NOTHING",
    "SKIPPED",
    "IndependentBlocks",
    "check_pairs",
    "forget",
    "scores_with_scale",
    "selected_blocks",
    "top_two",
]

NOTHING, APPLIED, SKIPPED = 0, 1, 2  # the outcomes of an engine's `learn` (`_learn`)


def _total(terms) -> float:
    """``math.fsum(terms)``, or ``inf`` where the exact sum is beyond float64."""
    try:
        return fsum(terms)
    except OverflowError:
        return math.inf


def _learn(self, x: dict, pairs, step, scheme, w: float, keep=1.0, rest=0.0) -> int:
    """One update along ``d``, the `learn` of every Python engine (the compiled ones mirror it):
    `margin`, the rule's `step`, `update`. Returns `NOTHING` (``v = 0``: no non-zero feature, or
    all their variance is spent; or the step is None), `APPLIED`, or `SKIPPED` (float64 cannot
    express the step: the step raised ZeroDivisionError or OverflowError, gave a non-finite
    number, or `update` refused it).

    ``step(m, v, w)`` gives None or ``(alpha, gamma)`` for the built-in `scheme` ("project" or
    "drop"); with ``scheme=None`` (an exact scheme) ``step(m, v, u, w)`` gives None or
    ``(alpha, gamma, scheme)``; w is the sample weight. `keep` and `rest` go to `margin` (the
    forgetting). Raises on a bad `x` before anything changes.
    """
    m, v, u, entries = self.margin(x, pairs, keep, rest)
    if v <= 0.0:
        return NOTHING
    try:
        result = step(m, v, u, w) if scheme is None else step(m, v, w)
    except (ZeroDivisionError, OverflowError):
        return SKIPPED
    if result is None:
        return NOTHING
    alpha, gamma, *exact = result
    # With v near 0 and a violated constraint, CW's step can overflow float64.
    if not (math.isfinite(alpha) and math.isfinite(gamma)):
        return SKIPPED
    applied = self.update(entries, alpha, gamma, v, exact[0] if scheme is None else scheme)
    return APPLIED if applied else SKIPPED


def _raise_bad_input(x: dict) -> None:
    """Name the offending feature, or report an overflow of finite values."""
    check_features(x)
    raise ValueError("feature values too large: the margin overflows float64")


def forget(s: float, keep: float, rest: float) -> float:
    """A variance after forgetting: the precision relaxed toward the prior's, ``1/s <- keep/s +
    rest`` with ``rest = (1 - keep) / a``, written ``s / (keep + rest s)`` (no division by a
    variance that underflowed to 0). Stays in ``[s, a]`` for ``s <= a``: no wind-up."""
    return s / (keep + rest * s)


def check_pairs(pairs, n_blocks: int) -> None:
    """Raise IndexError for a pair's block beyond `n_blocks` (a negative one counts from the end,
    as a list index), ValueError for a block two pairs name: the engines read and write each
    pair's block as the only one of its label (the compiled engines refuse alike, rcw_pairs)."""
    blocks: list[int] = []
    for b, _ in pairs:
        if not -n_blocks <= b < n_blocks:
            raise IndexError("list index out of range")
        if b % n_blocks in blocks:
            raise ValueError(
                f"the pairs name block {b % n_blocks} twice: a difference vector spans the blocks "
                "of distinct labels"
            )
        blocks.append(b % n_blocks)


def selected_blocks(blocks, n_blocks: int) -> list[int]:
    """The blocks `score_variances(x, blocks)` reads: every one of the `n_blocks` (None), or those
    a tuple or list of ints in ``[0, n_blocks)`` names, in its order; TypeError or IndexError
    otherwise (the compiled engines' select_blocks refuses alike)."""
    if blocks is None:
        return list(range(n_blocks))
    if not isinstance(blocks, (tuple, list)):
        raise TypeError("blocks is a tuple or list of block indices")
    for b in blocks:
        if not isinstance(b, int):
            raise TypeError("a block index is an int")
        if not 0 <= b < n_blocks:
            raise IndexError("block index out of range")
    return list(blocks)


def top_two(scores: list[float]) -> tuple[int, int]:
    """The blocks of the best and second-best of two scores or more (finite), each the first of
    its score, as ``max(range(K), key=scores.__getitem__)`` takes it: the pair whose margin's
    variance is the scale of a model's pairwise margins (`river_cw.probabilities.pairwise`).

    >>> top_two([0.5, 2.0, 2.0, 1.0])
    (1, 2)
    """
    best = scores.index(max(scores))  # max keeps the first of its equals, and index finds it
    rest = scores[:best] + scores[best + 1 :]
    second = rest.index(max(rest))
    return best, second + (second >= best)


def scores_with_scale(self, x: dict) -> tuple[list[float], float]:
    """``(scores, v)``, every block's score of x (`scores`, which validates x) and v, the
    variance of the margin between the two best-scoring blocks (`margin_variance` of
    `river_cw.probabilities.top_two`), or of the one block's score: the scale of a model's
    pairwise margins (`river_cw.probabilities.pairwise`). Every engine's, the arrowhead's
    compiled in one pass."""
    scores = self.scores(x)
    if len(scores) == 1:
        return scores, float(self.score_covariance(x)[0, 0])
    return scores, self.margin_variance(x, *top_two(scores))


class IndependentBlocks:
    """What an engine whose blocks are independent (the diagonal's, the arrowhead's: the scores'
    covariance is diagonal) derives from its ``score_variances(x, blocks=None)``, the variance of
    each block's score (x already validated by `scores`)."""

    __slots__ = ()

    def score_covariance(self, x: dict) -> np.ndarray:
        """The covariance of the block scores: diagonal, blocks are independent."""
        return np.diag(self.score_variances(x))  # type: ignore[attr-defined]

    def margin_variance(self, x: dict, b: int, c: int) -> float:
        """The variance of ``score_b - score_c`` (b and c distinct blocks): the two scores'
        variances, added, and no other block read (`river_cw.probabilities.pairwise`)."""
        v_b, v_c = self.score_variances(x, (b, c))  # type: ignore[attr-defined]
        return v_b + v_c

    scores_with_scale = scores_with_scale
