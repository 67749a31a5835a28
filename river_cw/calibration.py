"""Online temperature scaling: one home for the calibration of probabilities.

A model whose scores fix a label's rank but not how sure it is gets its probabilities from the
scores times a temperature ``a > 0``, fitted online on the progressive log loss: before each
update the model scores the example, and ``a`` moves toward the value that would have predicted
the examples so far best (Guo, Pleiss, Sun and Weinberger 2017, temperature scaling, fitted on
the stream instead of a held-out set). A temperature never changes which label is most probable.

The Gaussian classifiers (``calibrate=True``, their default) take one Newton step per example
(`newton_step`, `newton_step_multiclass`). Their probability of the label is
``Phi(a s)`` with s the label's standardised margin (`river_cw.probabilities`); the loss
``-log Phi(a s)`` is convex in a, with gradient ``g = -s lambda`` and curvature
``h = s^2 lambda (z + lambda)``, where ``z = a s`` and ``lambda = phi(z) / Phi(z)`` (the inverse
Mills ratio). The step is the online Newton step in one dimension (recursive least squares on the
log loss): ``H <- H + h``, ``a <- a - g / H`` from ``a = H = 1``, the new a clipped to
``[1e-6, 1e3]``, a step float64 cannot express skipped. It has no step size, the scale of the
margins does not matter, and two floats hold its state, ``(a, H)``. It follows the exact minimiser
of the cumulative loss closely (benchmarks/README.md, "Drift and calibration defaults").

Voted RDA calibrates its hinge scores on a grid (`softmax_losses`): before each update it adds
the example's log loss under every candidate temperature (a log grid, 4 per octave, 2^-32 ..
2^16) to running sums, and the temperature of least cumulative loss wins (`best`): no learning
rate, and the choice is the exact minimiser among the candidates.
"""

from __future__ import annotations

import math
from array import array

import numpy as np

from . import surprise
from .probabilities import normal_log_cdf, normalised, pairwise, sum_of_logs

__all__ = [
    "TEMPERATURES",
    "best",
    "inverse_mills",
    "mix",
    "multiclass_step",
    "newton_step",
    "newton_step_multiclass",
    "softmax_losses",
    "start",
]

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


# -- the Newton temperature of the Gaussian classifiers -------------------------------------

LOWEST, HIGHEST = 1e-6, 1e3  # the range of the Newton temperature
_SQRT2 = math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def inverse_mills(z: float) -> float:
    """``lambda(z) = phi(z) / Phi(z)``, the derivative of ``log Phi(z)``, for the standard normal:
    from ``erfc`` where Phi does not underflow, else the asymptotic series
    ``-z / (1 - 1/z^2 + 3/z^4)`` (z <= -30, relative error below 1e-8). The compiled engines
    transcribe it operation for operation (river_cw/_engines/_calibration.h).

    >>> inverse_mills(0.0) == math.sqrt(2.0 / math.pi)
    True
    >>> round(inverse_mills(-40.0), 6), inverse_mills(40.0)
    (40.024969, 0.0)

    """
    if z > -30.0:
        return _SQRT_2_OVER_PI * math.exp(-0.5 * z * z) / math.erfc(-z / _SQRT2)
    r = 1.0 / (z * z)
    return -z / (1.0 - r + 3.0 * r * r)


def newton_step(state, s: float, w: float) -> None:
    """One Newton step of the temperature ``state = [a, H]`` (a mutable pair, updated in place)
    on the loss ``-log Phi(a s)`` of an example whose label has the standardised margin `s`,
    with sample weight `w` (the loss counted w times; ``w == 1`` to the bit). A step that is not
    finite changes nothing. The compiled engines take the same step, bit for bit
    (`rcw_newton_step`).

    >>> state = [1.0, 1.0]
    >>> newton_step(state, -2.0, 1.0)  # a confident mistake: the temperature drops
    >>> state[0] < 1.0 < state[1]
    True

    """
    z = state[0] * s
    lam = inverse_mills(z)
    _take_step(state, -s * lam, s * s * lam * (z + lam), w)


def newton_step_multiclass(
    state, t: list[list[float]], label: int, w: float, observed=None
) -> None:
    """`newton_step` for three labels or more: the loss ``-log P(label)`` of the pairwise
    probabilities ``P(z) ~ prod_{k != z} Phi(a t_zk)`` (`river_cw.probabilities.multiclass`),
    from the standardised pairwise margins `t`. With ``l_z = sum_k log Phi(a t_zk)``, its
    derivatives ``d_z`` and ``e_z`` in a and P the probabilities: ``g = -d_label + E_P[d]`` and
    ``h = -e_label + E_P[e] + Var_P[d]``, the curvature taken as 0 where it is negative (the loss
    need not be convex in a once there are more than two labels).

    With `observed` (a model's surprise, ``forgetting="auto"``), steps it first on the same
    probabilities, as `river_cw.probabilities.multiclass` gives them (`river_cw.surprise.observe`:
    a mistake where the label's is at most another's). Each pair's ``Phi(a t_zk)`` is read once,
    from one erfc, for the three. The compiled engines take the same steps, bit for bit
    (`rcw_newton_step_multiclass`)."""
    a = state[0]
    logs, logp, d, e = [], [], [], []
    for z, row in enumerate(t):
        terms = []
        lz = dz = ez = 0.0
        for k, t_zk in enumerate(row):
            if k == z:
                continue
            u = a * t_zk
            if u > -30.0:  # normal_log_cdf and inverse_mills, on their common erfc
                tail = math.erfc(-u / _SQRT2)
                log_phi = math.log(0.5 * tail)
                lam = _SQRT_2_OVER_PI * math.exp(-0.5 * u * u) / tail
            else:
                log_phi, lam = normal_log_cdf(u), inverse_mills(u)
            terms.append(log_phi)
            lz += log_phi
            dz += t_zk * lam
            ez -= t_zk * t_zk * lam * (u + lam)
        logs.append(terms)
        logp.append(lz)
        d.append(dz)
        e.append(ez)
    if observed is not None:
        shares = normalised([sum_of_logs(terms) for terms in logs], range(len(t)))
        top = max(shares.values())
        others = max(q for k, q in shares.items() if k != label)
        surprise.observe(observed, shares[label] <= others, 1.0 - top, w)
    if not math.isfinite(max(logp)):
        return
    p = list(normalised(logp, range(len(t))).values())
    mean_d = 0.0  # sums added in order, as the compiled engines add them
    for pz, dz in zip(p, d):
        mean_d += pz * dz
    expected_e = variance_d = 0.0
    for pz, dz, ez in zip(p, d, e):
        expected_e += pz * ez
        variance_d += pz * (dz - mean_d) * (dz - mean_d)  # no ** : it raises
    g = -d[label] + mean_d
    h = -e[label] + expected_e
    h += variance_d
    _take_step(state, g, max(h, 0.0), w)


def multiclass_step(
    state, scores: list[float], v: float, label: int, w: float, observed=None
) -> None:
    """The calibration's step on an example of a model of three labels or more, from its block
    scores before the update and v, the variance of the margin between the two best-scoring
    labels plus the noise term: `newton_step_multiclass` on their standardised pairwise margins
    (`river_cw.probabilities.pairwise`). The compiled engines take it in one call, bit for bit
    (river_cw._engines._diagonal's ``multiclass_step``)."""
    newton_step_multiclass(state, pairwise(scores, v), label, w, observed)


def _take_step(state, g: float, h: float, w: float) -> None:
    """The Newton step of `state` = [a, H] with the loss's gradient g and curvature h in a,
    counted w times: ``H <- H + w h``, ``a <- a - w g / H``, a clipped to [LOWEST, HIGHEST];
    nothing where the step is not finite."""
    if w != 1.0:
        g, h = w * g, w * h
    H = state[1] + h
    a = state[0] - g / H
    if not (math.isfinite(a) and math.isfinite(H)):
        return
    state[0] = min(max(a, LOWEST), HIGHEST)
    state[1] = H


def mix(members: list, base=None):
    """The Newton temperature ``[a, H]`` of a mix of models (`river_cw.combine`), from the
    members' temperatures and their common start's (`base`; None: models trained from the
    start ``[1, 1]``): H is the curvature the members' examples added, as a precision, and
    ``a H`` as a precision-weighted mean, so the delta rule of the Gaussians applies, each
    member's change counted once, ``H = H0 + sum_i (H_i - H0)`` and ``a H = a0 H0 + sum_i
    (a_i H_i - a0 H0)``. The curvature never falls below a member's, a is clipped to the range
    of the Newton temperature, and, as for the weights, members that changed nothing leave the
    base's temperature and a single member that changed gives its own. None where the members
    do not calibrate.

    Two shards, each of which drew a from 1 to 0.5, draw it further together:

    >>> list(mix([array("d", (0.5, 3.0)), array("d", (0.5, 3.0))]))
    [0.4, 5.0]

    """
    if any(member is None for member in members):
        return None
    start = array("d", (1.0, 1.0)) if base is None else base
    changed = [member for member in members if list(member) != list(start)]
    if len(changed) <= 1:
        return array("d", changed[0] if changed else start)
    a0, H0 = start
    H = H0 + math.fsum(member[1] - H0 for member in changed)
    weighted = a0 * H0 + math.fsum(member[0] * member[1] - a0 * H0 for member in changed)
    H = max(H, *(member[1] for member in changed))
    a = weighted / H
    if not math.isfinite(a):  # beyond float64: the members' mean
        a = math.fsum(member[0] for member in changed) / len(changed)
    return array("d", (min(max(a, LOWEST), HIGHEST), H))
