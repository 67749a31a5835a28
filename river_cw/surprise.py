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

References: Ross, G. J., Adams, N. M., Tasoulis, D. K. and Hand, D. J., 2012. Exponentially
weighted moving average charts for detecting concept drift. Pattern Recognition Letters 33(2),
191-198.
"""

from __future__ import annotations

import math
from array import array

__all__ = [
    "AUTO",
    "GAIN",
    "HIGHEST",
    "LAMBDA",
    "LIMIT",
    "WARM_UP",
    "mix",
    "observe",
    "observe_binary",
    "rate",
    "start",
]

AUTO = "auto"
"""The `forgetting` that lets the model set its own rate."""
LAMBDA = 0.01  # the EWMAs' weight: about the last hundred examples
LIMIT = 2.0  # the control limit, in the EWMA's standard deviations
GAIN = 2.0  # forgetting per unit of excess mistake rate
HIGHEST = 0.05  # the highest rate of forgetting
WARM_UP = 50  # examples before any forgetting
_SQRT2 = math.sqrt(2.0)


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
    n = state[0] + w
    weight = max(LAMBDA if w == 1.0 else 1.0 - (1.0 - LAMBDA) ** w, w / n)
    state[0] = n
    state[1] += weight * (float(mistake) - state[1])
    state[2] += weight * (expected - state[2])


def observe_binary(state, z: float, w: float) -> None:
    """`observe` for a binary model's example whose label has the calibrated standardised margin
    `z` (``a m / sqrt(v + r)``): its probability ``Phi(z)``, a mistake where it is at most 1/2,
    the expected mistake the smaller of ``Phi(z)`` and ``1 - Phi(z)``. The compiled engines
    transcribe it with the erfc the Newton step reads (`rcw_surprise_observe`).

    >>> state = start()
    >>> observe_binary(state, 0.0, 1.0)
    >>> list(state)
    [1.0, 1.0, 0.5]

    """
    p = 0.5 * math.erfc(-z / _SQRT2)
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
    origin = start() if base is None else base
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
        for i in (1, 2)
    ]
    return array("d", (n, *averages))
