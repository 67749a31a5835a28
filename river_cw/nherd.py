"""Normal herding, NHERD (Crammer and Lee 2010)."""

from __future__ import annotations

from ._engines.diagonal import HerdingShrink
from .gaussian_classifier import GaussianClassifier

__all__ = ["NHERD"]


class NHERD(GaussianClassifier):
    """Normal herding (NHERD): Gaussian herding of the weight vectors.

    Every weight vector of the Gaussian takes a passive-aggressive step (squared hinge, C), and
    the Gaussian is moved to the distribution of the moved vectors. When ``m < 1``:

        alpha = (1 - m) / (v + 1 / C),  Sigma^-1 <- Sigma^-1 + (2 C + C^2 v) x x'

    i.e. ``Sigma <- (I + C Sigma x x')^-1 Sigma (I + C x x' Sigma)^-1`` (Crammer and Lee 2010,
    section 4, the full-covariance update). The exact diagonal update runs that step on each coordinate alone:
    ``s_j <- s_j / (1 + C x_j^2 s_j)^2``.

    Parameters
    ----------
    C
        C, the aggressiveness of each vector's step.
    covariance
        ``"arrowhead"`` (the default: the diagonal and the intercept's covariance with each
        weight, at the diagonal's cost; see `river_cw._engines.arrowhead` and `GaussianClassifier`'s
        defaults), ``"diagonal"`` or ``"full"`` (the paper's algorithm, O(d^2) per example).
    diagonal
        ``"drop"`` (the default), ``"project"`` or ``"exact"`` (see above; ``"exact"`` with
        ``covariance="diagonal"``).
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
        give the intercept `initial_variance`, as every weight; None: `initial_variance` here
        too). Wide by default, a flat prior's stand-in: a boundary far from the origin then
        costs nothing, and where the features are centred does not change the predictions (see
        `river_cw._engines.arrowhead`).
    centre
        Learn dense features centred at their means (the default; `GaussianClassifier`,
        `river_cw.centring`); sparse input (text) is never centred.

    Notes
    -----
    A sample weight ``learn_one(x, y, w)`` weighs the example's loss, ``C -> w C`` (``w = 2`` is
    the step of ``NHERD(C=2 C)``).

    Examples
    --------

    >>> from river import datasets, evaluate, metrics
    >>> import river_cw

    >>> model = river_cw.NHERD(C=0.1)  # raw features: the arrowhead covariance, the default
    >>> evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy())
    Accuracy: 89.35%

    References
    ----------
    [^1]: Crammer, K. and Lee, D.D., 2010. Learning via Gaussian herding. NIPS 23.

    """

    def __init__(
        self,
        C: float = 1.0,
        covariance: str = "arrowhead",
        diagonal: str = "drop",
        initial_variance: float = 1.0,
        learn_intercept: bool = True,
        forgetting: float | str = "auto",
        calibrate: bool = True,
        initial_intercept_variance: float | None = 100.0,
        centre: bool = True,
    ):
        if not C > 0:
            raise ValueError(f"C must be positive, got {C!r}")
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

    def _step(self, m, v, w):
        if m >= 1.0:
            return None
        C = self.C * w  # exactly self.C when w == 1
        return (1.0 - m) / (v + 1.0 / C), 2.0 * C + C * C * v

    @property
    def _native_step(self):
        return "nherd", (self.C,)

    def _exact_step(self, m, v, u, w):
        step = self._step(m, v, w)
        if step is None:
            return None
        return step[0], step[1], HerdingShrink(self.C * w)

    @property
    def _native_exact_step(self):
        step = self._native_step_of_step()  # `_exact_step` takes this model's own `_step`
        return None if step is None else (step, ("herding", self.C))

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"covariance": "diagonal", "diagonal": "exact", "C": 0.1}
        yield {"covariance": "full"}
        yield {"covariance": "diagonal", "diagonal": "project", "forgetting": 0.0}
