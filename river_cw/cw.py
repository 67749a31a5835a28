"""Confidence-weighted learning (Dredze, Crammer and Pereira 2008; Crammer, Dredze, Pereira 2012)."""

from __future__ import annotations

import math
import statistics
from math import fsum

from . import engine
from .gaussian_classifier import GaussianClassifier

_compiled = engine.diagonal  # the same solvers on the compiled engine's terms, or None

__all__ = ["CW"]

_MAX_ITER = 200


def cw_var_alpha(m: float, v: float, phi: float) -> float:
    """Step of the variance version, JMLR 2012 Lemma 1 (the root of its eq. 11 quadratic).

    ``(-b + sqrt(b^2 + c)) / (4 phi v)`` with ``b = 1 + 2 phi m`` and ``c = 8 phi (phi v - m)``,
    rationalised to ``c / (b + sqrt(b^2 + c))`` when ``b > 0`` to avoid cancellation.
    """
    b, c = 1.0 + 2.0 * phi * m, 8.0 * phi * (phi * v - m)
    if c <= 0.0:
        return 0.0
    root = math.sqrt(b * b + c)
    return (c / (b + root) if b > 0.0 else root - b) / (4.0 * phi * v)


def cw_stdev_alpha(m: float, v: float, phi: float) -> float:
    """Step of the standard-deviation version, NIPS 2008 / JMLR 2012 eq. (31).

    ``max(0, (-m psi + sqrt(m^2 phi^4 / 4 + v phi^2 zeta)) / (v zeta))``, ``psi = 1 + phi^2/2``,
    ``zeta = 1 + phi^2``; for ``m > 0`` rationalised to
    ``(phi^2 v - m^2) / (v (m psi + sqrt(...)))`` to avoid cancellation.
    """
    psi, zeta = 1.0 + phi * phi / 2.0, 1.0 + phi * phi
    root = math.sqrt(m * m * phi**4 / 4.0 + v * phi * phi * zeta)
    if m > 0.0:
        return max(0.0, (phi * phi * v - m * m) / (v * (m * psi + root)))
    return (root - m * psi) / (v * zeta)


def cw_stdev_gamma(alpha: float, v: float, phi: float) -> float:
    """Precision increase of the stdev version, ``alpha phi / sqrt(v+)`` (JMLR 2012 eq. 27).

    ``sqrt(v+) = (-alpha v phi + sqrt(alpha^2 v^2 phi^2 + 4 v)) / 2`` is the margin's standard
    deviation after the step, so ``beta = gamma / (1 + gamma v) = alpha phi / (sqrt(v+) + v alpha
    phi)``, eq. (27). The paper's algorithm box prints ``sqrt(v+ + v alpha phi)``, a typo.
    Computed as ``alpha phi (avp + sqrt(avp^2 + 4 v)) / (2 v)``, ``avp = alpha v phi``, which is
    the same quantity without the cancellation.
    """
    avp = alpha * v * phi
    return alpha * phi * (avp + math.sqrt(avp * avp + 4.0 * v)) / (2.0 * v)


def weighted_step(alpha: float, gamma: float, v: float, w: float) -> tuple[float, float]:
    """The step ``(alpha, gamma)`` of a Gaussian update with its factor raised to the power w.

    In natural parameters the shared update adds ``gamma d d'`` to the precision and
    ``(alpha + gamma (m + alpha v)) d`` to precision times mean: the product with a Gaussian
    factor of the margin (the update of assumed density filtering). Raising the factor to the
    power w (a tempered likelihood; ``w = 2`` counts the factor twice) adds w times both, which
    in the shared form is ``gamma_w = w gamma`` and ``alpha_w = w alpha (1 + gamma v) /
    (1 + w gamma v)``. The precision only grows (``w gamma >= 0``), so Sigma stays positive
    definite; ``w == 1`` returns the step itself, to the bit.
    """
    if w == 1.0:
        return alpha, gamma
    return w * alpha * (1.0 + gamma * v) / (1.0 + w * gamma * v), w * gamma


def _solve_increasing(f, lo: float, hi: float) -> float:
    """Root of an increasing ``f -> (value, slope)`` (both exactly rounded sums, so the order of
    the features never changes the root) with ``f(lo) < 0 <= f(hi)``.

    Safeguarded Newton: a Newton step when it stays inside the bracket (its ends included, so
    that a step which rounds back to x ends the search), a bisection otherwise; at most
    `_MAX_ITER` evaluations, so it always ends, whatever the input.
    """
    x = hi
    for _ in range(_MAX_ITER):
        value, slope = f(x)
        if value >= 0.0:
            if value == 0.0:
                return x
            hi = x
        else:
            lo = x
        step = x - value / slope if slope > 0.0 else math.nan
        if not lo <= step <= hi:
            step = 0.5 * (lo + hi)
        if abs(step - x) <= 1e-15 * abs(step) or hi - lo <= 1e-15 * hi:
            return max(step, x)
        x = step
    return hi  # the feasible side: the constraint holds at hi


def exact_var_alpha(m: float, v: float, phi: float, u: list[float]) -> float:
    """Multiplier of the exact diagonal variance update (JMLR 2012 section 6.2, eq. 33).

    With ``u_j = Sigma_jj d_j^2`` the constraint after the step reads
    ``f(alpha) = m + alpha v - phi sum_j u_j / (1 + 2 alpha phi u_j) = 0``;
    f is increasing, ``f(0) = m - phi v`` and ``f((phi v - m) / v) >= 0`` bracket the root.
    """
    if _compiled is not None and isinstance(u, _compiled.Terms):
        return _compiled.exact_var_alpha(m, v, phi, u)
    if m >= phi * v:
        return 0.0

    def f(alpha):
        value, slope = [m, alpha * v], [v]
        for uj in u:
            q = 1.0 + 2.0 * alpha * phi * uj
            value.append(-phi * uj / q)
            slope.append(2.0 * phi * phi * uj * uj / (q * q))
        return fsum(value), fsum(slope)

    return _solve_increasing(f, 0.0, (phi * v - m) / v)


def exact_stdev_step(m: float, v: float, phi: float, u: list[float]) -> tuple[float, float]:
    """``(alpha, s)`` of the exact diagonal stdev update (JMLR 2012 section 6.2, eq. 34).

    ``s = (m + alpha v) / phi`` is the margin's standard deviation after the step, and the
    constraint ``s^2 = sum_j u_j s / (s + alpha phi u_j)`` reads ``g(s) = 0`` with
    ``g(s) = s - sum_j u_j / (s + alpha(s) phi u_j)``, ``alpha(s) = (phi s - m) / v``.
    Solving for s rather than alpha keeps ``m + alpha v`` out of the arithmetic, which cancels
    badly when the variance has collapsed; g is increasing on ``s > max(0, m / phi)`` and
    non-negative at ``s = sqrt(v)``. Returns ``(0, 0)`` when the constraint already holds.
    """
    if _compiled is not None and isinstance(u, _compiled.Terms):
        return _compiled.exact_stdev_step(m, v, phi, u)
    if m >= phi * math.sqrt(v):
        return 0.0, 0.0

    def g(s):
        alpha = (phi * s - m) / v
        value, slope = [s], [1.0]
        for uj in u:
            q = s + alpha * phi * uj
            value.append(-uj / q)
            slope.append(uj * (1.0 + phi * phi * uj / v) / (q * q))
        return fsum(value), fsum(slope)

    s = _solve_increasing(g, max(0.0, m / phi), math.sqrt(v))
    return (phi * s - m) / v, s


class CW(GaussianClassifier):
    """Confidence-weighted linear classifier.

    Keeps a Gaussian N(mu, Sigma) over the weights and, after each example, moves to the closest
    Gaussian (in KL divergence) that classifies it correctly with probability `confidence`:
    ``Pr[y w . x >= 0] >= eta`` (Dredze, Crammer and Pereira 2008; Crammer, Dredze and Pereira
    2012). With ``phi = Phi^-1(eta)``, ``m`` the margin mean and ``v`` its variance, the
    constraint is ``m >= phi sqrt(v)`` (``variant="stdev"``, the exact convex form of the JMLR
    paper) or its linearisation ``m >= phi v`` (``variant="var"``).

    Parameters
    ----------
    confidence
        eta, the required probability of a correct prediction, in (0.5, 1).
    variant
        ``"stdev"`` (JMLR 2012 eq. 31, the convex constraint) or ``"var"`` (Lemma 1).
    covariance
        ``"arrowhead"`` (the default: the diagonal and the intercept's covariance with each
        weight, at the diagonal's cost; see `river_cw._engines.arrowhead` and `GaussianClassifier`'s
        defaults), ``"diagonal"`` or ``"full"`` (the paper's algorithm, O(d^2) per example).
    diagonal
        How a diagonal Sigma is updated (JMLR 2012 section 6): ``"project"`` (the paper's KL),
        ``"drop"`` (L2) or ``"exact"`` (the exact diagonal solution, eq. 33/34).
    initial_variance
        a, the prior variance of every weight: Sigma_0 = a I.
    learn_intercept
        Learn an intercept, a weight of the constant feature 1 in the Gaussian (see `intercept`).
    forgetting
        f in [0, 1): before each update, the precision of every weight the example touches is
        relaxed toward the prior's, ``1/s_j <- (1 - f)/s_j + f/a``, so that the model keeps
        learning after a drift (0.01 to 0.05 do well there); 0 never forgets (the papers' models).
        Directional, stabilised forgetting (Kulhavy and Karny 1984, Kulhavy and Zarrop 1993).
        ``"auto"``: the model sets f itself, example by example, from its mistakes beyond those
        its calibrated probabilities expect, once its features are centred from its log loss
        (0 while it is not surprised, up to 0.05; `river_cw.surprise`; without calibration it
        never forgets).
    calibrate
        Calibrated probabilities (the default): ``Phi(a m / sqrt(v + r))``, the margin's
        variance plus a noise term r = 1 and a temperature a fitted online by one Newton
        step per example on the progressive log loss (`river_cw.calibration`). False gives the
        paper's ``Phi(m / sqrt(v))``, overconfident once the variances shrink. `predict_one`
        is the same either way.
    initial_intercept_variance
        The intercept's prior variance with ``covariance="arrowhead"`` (the other covariances
        give the intercept `initial_variance`, as every weight; None, the default: here too).
        Wide (100) on uncentred features, whose boundary lies far from the origin (see
        `river_cw._engines.arrowhead`).
    centre
        Learn dense features centred at their means (the default; `GaussianClassifier`,
        `river_cw.centring`); sparse input (text) is never centred.

    Notes
    -----
    CW has a constraint and no loss, so a sample weight cannot scale a loss. ``learn_one(x, y,
    w)`` raises the Gaussian factor of CW's update to the power w (`weighted_step`): the
    precision gains ``w gamma d d'``, the natural mean w times CW's change, and an integer w
    counts the update's factor w times, as AROW's ``r / w`` and SOP's counting do. The weighted
    model no longer meets the constraint with equality (w < 1 relaxes it, w > 1 overshoots);
    the covariance stays positive definite for every w.

    CW forces every example to be classified with the required confidence, so on noisy,
    non-separable data its variance collapses quickly (AROW and SCW were designed against
    that); it shines on sparse, high-dimensional text.

    Examples
    --------

    On text, through `river_cw.text.TextClassifier` (river's bag of words counted in C):

    >>> import river_cw
    >>> from river_cw.text import TextClassifier

    >>> model = TextClassifier(river_cw.CW(), on="text")
    >>> for text, label in [
    ...     ("WINNER!! claim your free prize now", "spam"),
    ...     ("see you at lunch?", "ham"),
    ...     ("free entry: text WIN to claim", "spam"),
    ...     ("running late, see you soon", "ham"),
    ... ]:
    ...     model.learn_one({"text": text}, label)
    >>> model.predict_one({"text": "claim your free prize"})
    'spam'
    >>> model.predict_proba_one({"text": "see you at lunch"})["ham"] > 0.5
    True

    References
    ----------
    [^1]: Dredze, M., Crammer, K. and Pereira, F., 2008. Confidence-weighted linear classification.
    ICML.
    [^2]: Crammer, K., Dredze, M. and Pereira, F., 2008. Exact convex confidence-weighted
    learning. NIPS.
    [^3]: Crammer, K., Dredze, M. and Pereira, F., 2012. Confidence-weighted linear
    classification for text categorization. JMLR 13, 1891-1926.

    """

    def __init__(
        self,
        confidence: float = 0.9,
        variant: str = "stdev",
        covariance: str = "arrowhead",
        diagonal: str = "project",
        initial_variance: float = 1.0,
        learn_intercept: bool = True,
        forgetting: float | str = 0.0,
        calibrate: bool = True,
        initial_intercept_variance: float | None = None,
        centre: bool = True,
    ):
        if not 0.5 < confidence < 1.0:
            raise ValueError(f"confidence must be in (0.5, 1), got {confidence!r}")
        if variant not in ("stdev", "var"):
            raise ValueError(f"variant must be 'stdev' or 'var', got {variant!r}")
        super().__init__(
            covariance,
            diagonal,
            initial_variance,
            learn_intercept,
            forgetting,
            calibrate,
            initial_intercept_variance,
            centre,
        )
        self.confidence = confidence
        self.variant = variant
        self._phi = statistics.NormalDist().inv_cdf(confidence)

    def _step(self, m, v, w):
        phi = self._phi
        if self.variant == "var":
            alpha = cw_var_alpha(m, v, phi)
            gamma = 2.0 * alpha * phi
        else:
            alpha = cw_stdev_alpha(m, v, phi)
            gamma = cw_stdev_gamma(alpha, v, phi) if alpha > 0.0 else 0.0
        return weighted_step(alpha, gamma, v, w) if alpha > 0.0 else None

    @property
    def _native_step(self):
        return "cw_" + self.variant, (self._phi,)

    def _exact_step(self, m, v, u, w):
        phi = self._phi
        if self.variant == "var":
            alpha = exact_var_alpha(m, v, phi, u)
            gamma = 2.0 * alpha * phi
        else:
            alpha, s = exact_stdev_step(m, v, phi, u)
            gamma = alpha * phi / s if alpha > 0.0 else 0.0
        return (*weighted_step(alpha, gamma, v, w), "project") if alpha > 0.0 else None

    @property
    def _native_exact_step(self):
        return ("cw_" + self.variant + "_exact", (self._phi,)), "project"

    @classmethod
    def _unit_test_params(cls):
        yield {}
        for variant in ("stdev", "var"):
            yield {"variant": variant, "covariance": "diagonal", "diagonal": "exact"}
            yield {"variant": variant, "covariance": "full"}
        yield {"diagonal": "drop", "initial_intercept_variance": 10.0}
