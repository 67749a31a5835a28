"""The probabilities of a Gaussian classifier's labels, from the Gaussian margins of its scores.

Binary: ``P(positive label) = Phi(m / sqrt(v))`` with ``m = mu . x`` and ``v = x' Sigma x``, the
probability under N(mu, Sigma) that the score is positive (the probability CW's constraint
``Pr[y w . x >= 0] >= eta`` bounds; Dredze, Crammer and Pereira 2008). Multi-class: the pairwise
margins ``m_zk = mu . (f(x, z) - f(x, k))`` are Gaussian too, and ``P(z) ~ prod_{k != z}
Phi(m_zk / s)``, normalised: the score of z beats every other score, the comparisons taken as
independent, all on one scale s, the standard deviation of the margin between the two
best-scoring labels (the margin the decision rests on). For two labels it is the binary
formula; the decisive pair's factor is the probability, under the model, that the best
label's score beats the runner-up's. Every pair is measured on the same scale, so the
probabilities rank the labels as their mean scores do: `most_probable`, which every model's
`predict_one` is, says why in one place.
Before any label is seen the distribution is empty; with one label it is certain, unless that
label is a bool (`river_cw.labels.predicted_labels`).

Calibrated (``calibrate=True``, the default), a temperature ``a`` scales every standardised
margin and the margin's variance takes a noise term r, the rule's `margin_noise`:
``Phi(a m / sqrt(v + r))``. The temperature is fitted online (`river_cw.calibration`); the noise
term keeps the probabilities finite where the variances collapse (a margin measured with
variance near 0 is no certainty about the label: labels are noisy). A binary model's
probability also allows a share eps of flipped labels, ``eps + (1 - 2 eps) Phi(...)``
(`river_cw.flips`). Uncalibrated, ``a = 1``, ``r = 0`` and ``eps = 0``: the papers'
probabilities.
"""

from __future__ import annotations

import math

from ._engines.gaussian import top_two
from .flips import probability as flips_probability

__all__ = [
    "binary",
    "most_probable",
    "multiclass",
    "normal_log_cdf",
    "normalised",
    "pairwise",
    "sum_of_logs",
    "top_two",
]


def most_probable(classes: list, scores):
    """The label of largest probability given the blocks' `scores`: every model's `predict_one`
    and `predict_many`, on the general and the compiled paths alike. None before any label.

    It is the label of largest score, because every probability model of the library ranks the
    labels as their scores do:

    - binary Gaussian (one block, ``scores = [m]``): ``P(positive label) = Phi(a m / sqrt(v))``
      is increasing in m and crosses 1/2 at m = 0, so the positive label (the last of
      ``classes``) where ``m > 0``, else the negative one;
    - multi-class Gaussian (`multiclass`): every pairwise margin is standardised on one scale s,
      so the log-probability of z, a sum of ``log Phi(a (m_z - m_k) / s)`` increasing in m_z, is
      largest for the largest score, whatever the temperature a;
    - voted RDA (`river_cw.VotedRDA.predict_proba_one`): a softmax of its scores at a positive
      temperature, or the voters' shares, which are its vote scores, both increasing in the
      score.

    So the papers' rule, the best mean score (the decision the multi-class update trains: its
    step is taken against the best-scoring wrong label), is the label of largest probability,
    and a temperature (`river_cw.calibration`) never changes a prediction. Among labels of equal
    probability (a tie, or a difference below float64's resolution) it is the one of larger
    score; among equal scores the first in ``classes`` (the negative label while binary).
    Standardising each pair by its own variance would rank a label whose score is uncertain
    lower than its mean score does, and predicting that ranking's best would give up the papers'
    rule and let the temperature change predictions; measured on river's ImageSegments, USPS
    and 20 Newsgroups it scores about the same log loss and 0.1 to 1.4 points more accuracy
    (benchmarks/README.md, "Multi-class probabilities").

    >>> most_probable(["ham", "spam"], [0.3]), most_probable(["ham", "spam"], [0.0])
    ('spam', 'ham')
    >>> most_probable(["a", "b", "c"], [0.5, 2.0, 2.0]), most_probable([], [0.0])
    ('b', None)

    """
    if len(scores) == 1:  # binary: one block, the positive label's score
        return (classes[-1] if scores[0] > 0 else classes[0]) if classes else None
    return classes[max(range(len(scores)), key=scores.__getitem__)]


_SQRT2 = math.sqrt(2.0)


def binary(m: float, v: float, temperature: float, classes: list, flips=None) -> dict:
    """The probabilities of a binary model's two labels, ``classes = [negative, positive]``,
    given its score's mean m and variance v: ``P(positive label) = Phi(a m / sqrt(v))``, a the
    temperature, with the share of flipped labels of `flips` (`river_cw.flips`: ``eps + (1 - 2
    eps) Phi(...)``; None: none)."""
    p = flips_probability(flips, normal_cdf(temperature * _standardised(m, v)))
    return {classes[0]: 1.0 - p, classes[1]: p}


def normal_cdf(z: float) -> float:
    """Phi(z), the standard normal's distribution function, ``0.5 erfc(-z / sqrt(2))``: every
    probability of a margin in the library (the compiled engines take the same erfc).

    >>> normal_cdf(0.0)
    0.5

    """
    return 0.5 * math.erfc(-z / _SQRT2)


def pairwise(scores: list[float], v: float) -> list[list[float]]:
    """The standardised pairwise margins ``t[z][k] = m_zk / s`` of the block scores `scores`
    (one block while binary: two labels, ``[negative, positive]``; the diagonal is 0), one scale
    for every pair, so each row's terms grow with its label's score: ``s^2 = v``, the variance
    of the margin between the two best-scoring labels (`top_two`; while binary, of the score)
    plus the noise term."""
    if len(scores) == 1:
        t = _standardised(scores[0], v)
        return [[0.0, -t], [t, 0.0]]
    return [
        [_standardised(s_z - s_k, v) if k != z else 0.0 for k, s_k in enumerate(scores)]
        for z, s_z in enumerate(scores)
    ]


def multiclass(t: list[list[float]], temperature: float, classes: list) -> dict:
    """``{label: probability}`` of three labels or more, ``P(z) ~ prod_{k != z} Phi(a t_zk)``
    normalised, from their standardised pairwise margins `t` (`pairwise`), a the temperature."""
    logp = [  # exactly rounded sums: a larger score never gets a smaller log-probability
        sum_of_logs([normal_log_cdf(temperature * t_zk) for k, t_zk in enumerate(row) if k != z])
        for z, row in enumerate(t)
    ]
    return normalised(logp, classes)


def normalised(logp: list[float], classes) -> dict:
    """``{label: probability}`` from the labels' log-probabilities up to a constant (`logp`, in
    the order of `classes`): ``exp(logp - max)`` over its sum, added in order (`multiclass`; the
    compiled engines transcribe it, river_cw/_engines/_calibration.h)."""
    top = max(logp)
    weights = [math.exp(lp - top) for lp in logp]
    total = 0.0
    for w in weights:
        total += w
    return {c: w / total for c, w in zip(classes, weights)}


def normal_log_cdf(t: float) -> float:
    """``log Phi(t)`` for the standard normal, accurate far into the lower tail.

    >>> round(math.exp(normal_log_cdf(0.0)), 12)
    0.5
    >>> normal_log_cdf(-40.0) < -800
    True

    """
    if t > -30.0:
        return math.log(normal_cdf(t))
    # asymptotic (Mills ratio) expansion: Phi(t) ~ phi(t) / -t * (1 - 1/t^2 + 3/t^4)
    r = 1.0 / (t * t)  # 0 when t * t overflows to inf
    return (
        -0.5 * t * t - math.log(-t) - 0.5 * math.log(2.0 * math.pi) + math.log1p(-r + 3.0 * r * r)
    )


def sum_of_logs(terms: list[float]) -> float:
    """``math.fsum`` of log-probabilities (all <= 0), or ``-inf`` where it is beyond float64."""
    try:
        return math.fsum(terms)
    except OverflowError:
        return -math.inf


def _standardised(m: float, v: float) -> float:
    """``m / sqrt(v)``, with the limits ``+-inf`` (or 0) when the variance vanishes."""
    if v > 0.0:
        return m / math.sqrt(v)
    return math.copysign(math.inf, m) if m else 0.0
