"""Soft confidence-weighted learning, SCW-I and SCW-II (Wang, Zhao and Hoi 2012)."""

from __future__ import annotations

import math
import statistics

from .cw import cw_stdev_alpha, cw_stdev_gamma
from .gaussian_classifier import GaussianClassifier

__all__ = ["SCW"]


class SCW(GaussianClassifier):
    """Soft confidence-weighted learning (SCW-I and SCW-II).

    CW's stdev constraint ``m >= phi sqrt(v)`` turned into a loss,
    ``max(0, phi sqrt(v) - m)``, so that noisy examples cannot force arbitrarily large steps.
    When the loss is positive, SCW-I takes CW-stdev's step clipped at C,
    ``alpha = min(C, alpha_CW)``; SCW-II solves the squared-loss problem,

        alpha = max(0, (-(2 m n + phi^2 m v) + sqrt(phi^2 (phi^2 m^2 v^2 + 4 n v (n + v phi^2))))
                / (2 (n^2 + n v phi^2))),   n = v + 1 / (2 C);

    both then shrink the covariance as CW-stdev does, ``gamma = alpha phi / sqrt(v+)``
    (Wang, Zhao and Hoi 2012, Propositions 1 and 2).

    Parameters
    ----------
    C
        C, the aggressiveness (the cap of SCW-I, the loss weight of SCW-II).
    confidence
        eta, in (0.5, 1); phi = Phi^-1(eta).
    variant
        ``"I"`` or ``"II"``.
    covariance
        ``"arrowhead"`` (the default: the diagonal and the intercept's covariance with each
        weight, at the diagonal's cost; see `river_cw._engines.arrowhead` and `GaussianClassifier`'s
        defaults), ``"diagonal"`` or ``"full"`` (the paper's algorithm, O(d^2) per example).
    diagonal
        ``"project"`` or ``"drop"``.
    initial_variance
        a, the prior variance of every weight: Sigma_0 = a I.
    learn_intercept
        Learn an intercept, a weight of the constant feature 1 in the Gaussian (see `intercept`).
    forgetting
        ``"auto"`` (the default): the model sets its own rate of forgetting from its mistakes
        beyond those its calibrated probabilities expect (once its features are centred, from
        its log loss beyond the entropy they expect), 0 while it is not surprised, up to 0.05
        (`river_cw.surprise`). A number f in [0, 1) forgets at that rate, directional and
        stabilised (Kulhavy and Karny 1984, Kulhavy and Zarrop 1993; `GaussianClassifier`); 0 never
        forgets (the papers' models).
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
    A sample weight ``learn_one(x, y, w)`` weighs the example's loss, ``C -> w C`` (``w = 2`` is
    the step of ``SCW(C=2 C)``).

    Examples
    --------

    On text, through `river_cw.text.TextClassifier` (river's bag of words counted in C):

    >>> import river_cw
    >>> from river_cw.text import TextClassifier

    >>> model = TextClassifier(river_cw.SCW(), on="text")
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
    [^1]: Wang, J., Zhao, P. and Hoi, S.C.H., 2012. Exact soft confidence-weighted learning.
    ICML.

    """

    _diagonal_schemes = ("project", "drop")

    def __init__(
        self,
        C: float = 1.0,
        confidence: float = 0.9,
        variant: str = "I",
        covariance: str = "arrowhead",
        diagonal: str = "project",
        initial_variance: float = 1.0,
        learn_intercept: bool = True,
        forgetting: float | str = "auto",
        calibrate: bool = True,
        initial_intercept_variance: float | None = None,
        centre: bool = True,
    ):
        if not C > 0:
            raise ValueError(f"C must be positive, got {C!r}")
        if not 0.5 < confidence < 1.0:
            raise ValueError(f"confidence must be in (0.5, 1), got {confidence!r}")
        if variant not in ("I", "II"):
            raise ValueError(f"variant must be 'I' or 'II', got {variant!r}")
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
        self.C = C
        self.confidence = confidence
        self.variant = variant
        self._phi = statistics.NormalDist().inv_cdf(confidence)

    def _step(self, m, v, w):
        phi = self._phi
        if m >= phi * math.sqrt(v):  # no loss
            return None
        C = self.C * w  # exactly self.C when w == 1
        if self.variant == "I":
            alpha = min(C, cw_stdev_alpha(m, v, phi))
        else:
            n = v + 1.0 / (2.0 * C)
            root = phi * math.sqrt(phi * phi * m * m * v * v + 4.0 * n * v * (n + v * phi * phi))
            alpha = max(
                0.0,
                (-(2.0 * m * n + phi * phi * m * v) + root) / (2.0 * (n * n + n * v * phi * phi)),
            )
        return (alpha, cw_stdev_gamma(alpha, v, phi)) if alpha > 0.0 else None

    @property
    def _native_step(self):
        return "scw1" if self.variant == "I" else "scw2", (self._phi, self.C)

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"variant": "II", "diagonal": "drop"}
        yield {"variant": "II", "covariance": "full"}
        yield {"variant": "II", "covariance": "diagonal"}
