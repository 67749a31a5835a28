"""Online temperature scaling: one home for the calibration of probabilities.

A model whose scores fix a label's rank but not how sure it is (voted RDA's hinge scores, a
Gaussian classifier's standardised margins under noise) gets its probabilities from the scores
times a temperature ``a``. ``a`` is fitted online: before each update the model scores the
example and adds its log loss under every candidate temperature (a log grid, 4 per octave,
2^-32 .. 2^16) to running sums; the temperature with the least cumulative log loss on these
progressive predictions wins (Guo, Pleiss, Sun and Weinberger 2017, temperature scaling, fitted
on the stream instead of a held-out set). A grid rather than gradient steps: no learning rate,
and the choice is the exact minimiser of the progressive log loss among the candidates.
"""

from __future__ import annotations

import numpy as np

__all__ = ["TEMPERATURES", "best", "probit_losses", "softmax_losses", "start"]

TEMPERATURES = 2.0 ** np.arange(-32.0, 16.25, 0.25)


def start(prefer: float | None = None) -> np.ndarray:
    """Running sums before any example: zeros, so that ties go to the smallest temperature, or,
    with `prefer` (a power of 2 on the grid), a tie-breaker of 1e-12 per octave away from it."""
    if prefer is None:
        return np.zeros(len(TEMPERATURES))
    return 1e-12 * np.abs(np.log2(TEMPERATURES) - np.log2(prefer))


def best(losses: np.ndarray) -> float:
    """The temperature of least cumulative loss (ties: the first, i.e. the smallest)."""
    return float(TEMPERATURES[np.argmin(losses)])


def softmax_losses(z: np.ndarray, label, out: np.ndarray | None = None) -> np.ndarray:
    """Log loss of ``softmax(a z)`` at `label`, for every temperature a of the grid.

    For rows of scores ``z`` (n, k) and an array of n labels: one row of losses per row, the
    same numbers as row by row (each row is laid out as a single one: a ``(temperatures, k)``
    block, summed along its labels). Where a temperature times a score overflows, the loss is
    not finite (inf or nan). `out`, an (n, temperatures) float array, receives the losses."""
    z = np.asarray(z, dtype=float)
    rows = z.reshape(-1, z.shape[-1])
    n, m = len(rows), len(TEMPERATURES)
    labels = np.broadcast_to(label, n)
    losses = np.empty((n, m)) if out is None else out
    with np.errstate(all="ignore"):
        if rows.shape[1] == 2:  # two labels: the same numbers, column by column, in place
            _binary_losses(rows, labels, losses)
        else:
            za = (TEMPERATURES[None, :, None] * rows[:, None, :]).reshape(n * m, -1)
            top = za.max(axis=1)
            log_total = np.log(np.exp(za - top[:, None]).sum(axis=1))
            picked = za[np.arange(n * m), np.repeat(labels, m)]
            losses[...] = (top + log_total - picked).reshape(n, m)
    return losses if out is not None else losses.reshape(z.shape[:-1] + (m,))


def _binary_losses(rows: np.ndarray, labels: np.ndarray, losses: np.ndarray) -> None:
    """`softmax_losses` of two logits per row into `losses`, computed in place: two scratch
    arrays the size of the result (a calibration batch's temporaries otherwise take more time
    in the allocator, and its page faults, than in the arithmetic)."""
    za1 = np.multiply(rows[:, 1, None], TEMPERATURES)
    if not (rows[:, 0].any() or np.signbit(rows[:, 0]).any()):
        # a binary model's logits (0, s): a z_0 = +0 for every a, so that the max, the gap
        # |za_1 - 0| and the pick below are these numbers, bit for bit
        za0 = 0.0
        np.maximum(0.0, za1, out=losses)
        gap = np.abs(za1)
    else:
        za0 = np.multiply(rows[:, 0, None], TEMPERATURES)
        np.maximum(za0, za1, out=losses)
        gap = np.subtract(za1, za0)
        np.abs(gap, out=gap)
    # top + log(exp(za_0 - top) + exp(za_1 - top)) - picked, where one exponent is exp(0) = 1
    # and the other exp(-|za_1 - za_0|) (where top is infinite both differ, and so does the
    # loss: not finite either way). From a gap of 40 on, exp(-gap) < 2^-57: the sum rounds to 1,
    # whose log is +0.
    log_total = np.negative(gap, out=gap)
    np.exp(log_total, out=log_total)
    log_total += 1.0
    np.log(log_total, out=log_total)
    losses += log_total
    picked = za1  # za_0 where the label is 0
    np.copyto(picked, za0, where=labels[:, None] == 0)
    losses -= picked


def probit_losses(t: np.ndarray, label: int) -> np.ndarray:
    """Log loss at `label` of the Gaussian margins' probabilities (`river_cw.probabilities`)
    with the standardised margins scaled by a, for every temperature a of the grid.

    `t` is the matrix of standardised pairwise margins ``t[z, k]`` (its diagonal unused): binary
    ``[[0, -t], [t, 0]]``, where ``P(z) ~ prod_{k != z} Phi(a t[z, k])``."""
    from scipy.special import log_ndtr  # scipy.special only where a model calibrates

    k = len(t)
    off = ~np.eye(k, dtype=bool)
    with np.errstate(all="ignore"):
        logp = np.where(off, log_ndtr(TEMPERATURES[:, None, None] * t), 0.0).sum(axis=2)
        if k == 2:  # Phi(a t) and Phi(-a t) already sum to 1
            return -logp[:, label]
        top = logp.max(axis=1)
        return top + np.log(np.exp(logp - top[:, None]).sum(axis=1)) - logp[:, label]
