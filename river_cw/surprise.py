"""The model's surprise and the forgetting it sets (``forgetting="auto"``): its control chart.

A Gaussian model's confidence only grows, so when the concept moves it stops learning; a fixed
forgetting rate follows drift but costs accuracy where nothing drifts, and which rate suits a
stream depends on how fast it moves. With ``forgetting="auto"`` the model forgets only when its
own mistakes exceed those its calibrated probabilities expect, by more than chance allows.

Each example, before the update, gives the model's calibrated probability of its label
(`river_cw.calibration`: ``Phi(a m / sqrt(v + r))``), so a *mistake* (the label's probability
at most that of another label) and the *expected* mistake ``q = 1 - max_k P(k)``. Two
exponentially weighted moving averages (EWMA) follow them, ``e`` and ``q_bar``, with weight
``max(LAMBDA, w / n)`` (n the examples seen, so that the first examples are averaged evenly).
A calibrated model that has not drifted makes the mistakes it expects: ``E[e - q_bar] = 0``,
and the EWMA's standard deviation is ``sd = sqrt(p (1 - p) LAMBDA / (2 - LAMBDA))``, p the
expected rate (clipped to [0.01, 0.5]). The rate of the next example's forgetting is the excess
beyond LIMIT standard deviations, ``f = clip(GAIN (e - q_bar - LIMIT sd), 0, HIGHEST)``, 0 for
the first WARM_UP examples. This is the control chart of ECDD (Ross, Adams, Tasoulis and Hand
2012, EWMA charts for concept drift detection), with the model's own calibrated expectation as
the in-control level rather than its past error rate: a model that is still learning expects
many mistakes and forgets nothing, and so does one whose labels are noisy, since its
calibration expects their mistakes too. The alternatives compared (fixed rates, detectors, rates competing, a pair
of models) are in benchmarks/README.md, "Drift and calibration defaults: the study"; the
measurements behind the constants, in its section on "the default's own forgetting".

The state is three floats, ``[n, e, q_bar]`` (`start`); `observe` steps it, `rate` reads the
next example's forgetting from it, and `mix` merges the states of models `river_cw.combine`
mixes.

The log score (a binary model whose features are centred, `river_cw.centring`). Once the model
centres, its margins' own probabilities are read with a temperature of their own, ``p =
Phi(a' s)``, ``s = m / sqrt(v)`` (no noise term), a' fitted by the calibration's Newton step
(`river_cw.calibration.newton_step`) from the model's first example on. The surprise is then the
log loss ``-log p`` (capped at LOG_SCORE_CAP nats, a label given less than 0.7%) against what
those probabilities expect of it: its mean is their entropy ``H = -p log p - (1 - p) log(1 - p)``
and its variance ``V = p log^2 p + (1 - p) log^2(1 - p) - H^2``, so that sequential probability
forecasts are tested by the score's excess over its mean in units of its standard deviation
(Seillier-Moiseiwitsch and Dawid 1993). EWMAs of the loss, H and V, weighted as above, set ``f =
clip(GAIN (L - H - LOG_SCORE_LIMIT sd), 0, HIGHEST)``, ``sd = sqrt(max(V, LOG_SCORE_FLOOR)
LAMBDA / (2 - LAMBDA))``, 0 for the first WARM_UP examples since the model centred. V vanishes
as the probabilities near 1/2 or 1, where a loss barely above the entropy would read as many
standard deviations: the floor is V of a label given 0.66, so that a model near chance (a curved
concept no line separates) does not chase its misfit. The limit is lower than the 0-1
surprise's: a concept that moves all the time (river's RandomRBFDrift) keeps the excess small
but steady, and the model must forget steadily to follow it. Where the 0-1 surprise counts
mistakes, the log score weighs them by the confidence they were made with: a model near chance
has little room between its loss and its entropy, and a confident model the concept has left
pays for each mistake in full; one flipped label moves the loss by at most ``LAMBDA`` times the
cap. On centred features the margins' probabilities have the right shape (only their scale is
off, which a' fits); on raw ones, and on sparse input, they do not, and the 0-1 surprise serves.
Measured against the 0-1 surprise on centred features, and both against river's models:
benchmarks/README.md, "The forgetting on the centred model" (the prototype), "the log score
in the library" (per rule) and "the log score's limit and floor" (the constants, by
benchmarks/log_score_limit.py).

Its state is six floats, ``[a', H', n, L, H, V]`` (`start_log_score`): the temperature, stepped
on every binary example of a model that may centre, and the averages, stepped once it has
(`observe_log_score`); `log_score_rate` reads the forgetting and `mix_log_score` merges states.

References: Ross, G. J., Adams, N. M., Tasoulis, D. K. and Hand, D. J., 2012. Exponentially
weighted moving average charts for detecting concept drift. Pattern Recognition Letters 33(2),
191-198. Seillier-Moiseiwitsch, F. and Dawid, A. P., 1993. On testing the validity of sequential
probability forecasts. Journal of the American Statistical Association 88(421), 355-359.
"""

from __future__ import annotations

import math
from array import array

from . import calibration
from .probabilities import normal_cdf

__all__ = [
    "AUTO",
    "GAIN",
    "HIGHEST",
    "LAMBDA",
    "LIMIT",
    "LOG_SCORE_CAP",
    "LOG_SCORE_FLOOR",
    "LOG_SCORE_LIMIT",
    "WARM_UP",
    "log_score_rate",
    "mix",
    "mix_log_score",
    "observe",
    "observe_binary",
    "observe_log_score",
    "rate",
    "start",
    "start_log_score",
]

AUTO = "auto"
"""The `forgetting` that lets the model set its own rate."""
LAMBDA = 0.01  # the EWMAs' weight: about the last hundred examples
LIMIT = 2.0  # the control limit, in the EWMA's standard deviations
GAIN = 2.0  # forgetting per unit of excess mistake rate
HIGHEST = 0.05  # the highest rate of forgetting
WARM_UP = 50  # examples before any forgetting
LOG_SCORE_LIMIT = 1.5  # the log score's control limit, in its EWMA's standard deviations
LOG_SCORE_FLOOR = 0.1  # the least variance of the log score the limit reads: a label given 0.66
LOG_SCORE_CAP = 5.0  # the largest log loss an example counts, in nats


def start() -> array:
    """The state before any example: ``[n, e, q_bar]``, all 0."""
    return array("d", (0.0, 0.0, 0.0))


def observe(state, mistake: bool, expected: float, w: float) -> None:
    """Step `state` = ``[n, e, q_bar]`` in place on an example: whether the model's calibrated
    probabilities got its label wrong (`mistake`) and the mistake they expected (`expected`,
    1 minus the largest probability), counted with sample weight `w` (``w == 1``: one example,
    to the bit). An expectation that is not a finite number changes nothing.

    >>> state = start()
    >>> observe(state, True, 0.25, 1.0)
    >>> list(state)
    [1.0, 1.0, 0.25]

    """
    if not math.isfinite(expected):
        return
    _average(state, 0, (float(mistake), expected), w)


def _average(state, at: int, values: tuple, w: float) -> None:
    """Step the EWMAs ``state[at + 1:]`` toward `values` with sample weight `w`, their count
    ``state[at]`` (n) with them: weight ``max(LAMBDA, w / n)``, LAMBDA counted w times."""
    n = state[at] + w
    weight = max(LAMBDA if w == 1.0 else 1.0 - (1.0 - LAMBDA) ** w, w / n)
    state[at] = n
    for i, value in enumerate(values, at + 1):
        state[i] += weight * (value - state[i])


def observe_binary(state, p: float, w: float) -> None:
    """`observe` for a binary model's example whose label has the calibrated probability `p`
    (``Phi(z)``, z its standardised margin ``a m / sqrt(v + r)``): a mistake where it is at
    most 1/2, the expected mistake the smaller of p and ``1 - p``. The compiled engines
    transcribe it with the erfc the Newton step reads (`rcw_surprise_observe`).

    >>> state = start()
    >>> observe_binary(state, 0.5, 1.0)
    >>> list(state)
    [1.0, 1.0, 0.5]

    """
    observe(state, p <= 0.5, min(p, 1.0 - p), w)


def rate(state) -> float:
    """The forgetting of the next example (see the module's docstring), in [0, HIGHEST].

    A model whose mistakes run far beyond what it expects forgets at the highest rate:

    >>> rate(array("d", (1000.0, 0.4, 0.05)))
    0.05
    >>> rate(array("d", (1000.0, 0.05, 0.05)))
    0.0

    """
    n, e, q = state
    if n < WARM_UP:
        return 0.0
    p = min(max(q, 0.01), 0.5)
    sd = math.sqrt(p * (1.0 - p) * LAMBDA / (2.0 - LAMBDA))
    return min(max(GAIN * (e - q - LIMIT * sd), 0.0), HIGHEST)


def start_log_score() -> array:
    """The log score before any example: ``[a', H', n, L, H, V]``, the temperature's start
    ``[1, 1]`` (the calibration's) and no example averaged."""
    return array("d", (1.0, 1.0, 0.0, 0.0, 0.0, 0.0))


def observe_log_score(state, s: float, w: float, scored: bool) -> None:
    """Step the log score `state` = ``[a', H', n, L, H, V]`` in place on a binary example whose
    label has the margin standardised without noise `s` (``m / sqrt(v)``), counted with sample
    weight `w`: where `scored` (the model is centred), first the averages on the label's
    probability ``p = Phi(a' s)``, then a' by the Newton step. The compiled engines transcribe
    it (`rcw_log_score_observe`).

    >>> state = start_log_score()
    >>> observe_log_score(state, 0.0, 1.0, True)  # p = 1/2: a loss of log 2, as expected
    >>> [round(value, 6) for value in state]
    [1.0, 1.0, 1.0, 0.693147, 0.693147, 0.0]

    """
    if scored:
        p = normal_cdf(state[0] * s)
        if math.isfinite(p):
            q = 1.0 - p
            log_p = math.log(p) if p > 0.0 else -math.inf
            log_q = math.log(q) if q > 0.0 else 0.0
            entropy = -(p * log_p if p > 0.0 else 0.0) - q * log_q
            spread = (p * log_p * log_p if p > 0.0 else 0.0) + q * log_q * log_q
            loss = min(-log_p, LOG_SCORE_CAP)
            _average(state, 2, (loss, entropy, max(spread - entropy * entropy, 0.0)), w)
    calibration.newton_step(state, s, w)


def log_score_rate(state) -> float:
    """The forgetting of the next example that the log score `state` sets (see the module's
    docstring), in [0, HIGHEST].

    >>> log_score_rate(array("d", (1.0, 1.0, 1000.0, 0.9, 0.3, 0.1)))
    0.05
    >>> log_score_rate(array("d", (1.0, 1.0, 1000.0, 0.3, 0.3, 0.1)))
    0.0

    """
    n, loss, entropy, variance = state[2:]
    if n < WARM_UP:
        return 0.0
    sd = math.sqrt(max(variance, LOG_SCORE_FLOOR) * LAMBDA / (2.0 - LAMBDA))
    return min(max(GAIN * (loss - entropy - LOG_SCORE_LIMIT * sd), 0.0), HIGHEST)


def mix(members: list, base=None):
    """The state of a mix of models (`river_cw.combine`), from the members' states and their
    common start's (`base`; None: models trained from the start): n by the delta rule, each
    member's examples since the base counted once, ``n = n0 + sum_i (n_i - n0)``, and each
    average as the mean of the members', weighted by those examples (the base's weighted by
    n0). Members that saw nothing since the base leave its state; a single member that did
    gives its own. None where the members do not set their forgetting.

    >>> list(mix([array("d", (100.0, 0.2, 0.1)), array("d", (300.0, 0.4, 0.1))]))
    [400.0, 0.35, 0.1]

    """
    if any(member is None for member in members):
        return None
    return mixed_averages(members, start() if base is None else base)


def mix_log_score(members: list, base=None):
    """`mix` for the log score: its temperature as the calibration mixes one
    (`river_cw.calibration.mix`), its averages as `mix` does. None where a member keeps none.

    >>> list(mix_log_score([array("d", (0.5, 3.0, 100.0, 0.2, 0.1, 0.0)),
    ...                     array("d", (0.5, 3.0, 300.0, 0.4, 0.1, 0.0))]))
    [0.4, 5.0, 400.0, 0.35, 0.1, 0.0]

    """
    if any(member is None for member in members):
        return None
    origin = start_log_score() if base is None else base
    temperature = calibration.mix([member[:2] for member in members], origin[:2])
    averages = mixed_averages([member[2:] for member in members], origin[2:])
    return array("d", (*temperature, *averages))


def mixed_averages(members: list, origin):
    """`mix`'s rule for states ``[n, averages...]`` that started from `origin` (also
    `river_cw.flips.mix`'s)."""
    changed = [member for member in members if list(member) != list(origin)]
    if len(changed) <= 1:
        return array("d", changed[0] if changed else origin)
    n0 = origin[0]
    gains = [member[0] - n0 for member in changed]
    n = n0 + math.fsum(gains)
    if not n > 0:
        return array("d", origin)
    averages = [
        math.fsum([n0 * origin[i], *(g * member[i] for g, member in zip(gains, changed))]) / n
        for i in range(1, len(origin))
    ]
    return array("d", (n, *averages))
