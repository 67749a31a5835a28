"""Adaptive regularization of weight vectors (Crammer, Kulesza and Dredze 2009)."""

from __future__ import annotations

from .gaussian_classifier import GaussianClassifier

__all__ = ["AROW"]


class AROW(GaussianClassifier):
    """Adaptive regularization of weight vectors (AROW).

    Keeps a Gaussian N(mu, Sigma) over the weights and trades the squared hinge loss of the
    mean against the KL divergence from the current Gaussian, with regularization ``1 / (2 r)``.
    When the margin mean is below one (``m < 1``), with ``v`` the margin variance:

        alpha = (1 - m) / (v + r),  Sigma^-1 <- Sigma^-1 + x x' / r

    (Crammer, Kulesza and Dredze 2009, section 3; beta = 1 / (v + r)). Unlike CW it never
    forces an example to be classified correctly, which makes it robust to label noise.

    Parameters
    ----------
    r
        r, the regularization trade-off (larger r: smaller, more cautious steps).
    covariance
        ``"arrowhead"`` (the default: the diagonal and the intercept's covariance with each
        weight, at the diagonal's cost; see `river_cw._engines.arrowhead` and `GaussianClassifier`'s
        defaults), ``"diagonal"`` or ``"full"`` (the paper's algorithm, O(d^2) per example).
    diagonal
        How a diagonal variance is updated: ``"drop"`` (the default, ``s_j -= beta (s_j
        x_j)^2``) or ``"project"`` (``1/s_j += x_j^2 / r``, the paper's choice). The exact
        diagonal update of AROW equals ``"project"``.
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
    A sample weight ``learn_one(x, y, w)`` weighs the example's loss: its regularization is
    ``r / w`` (``w = 2`` is the step of ``AROW(r=r/2)``). In natural parameters AROW adds
    ``x x' / r`` to the precision and ``y x / r`` to precision times mean, a Gaussian
    likelihood factor; ``r / w`` raises that factor to the power w.

    Examples
    --------

    >>> from river import datasets, evaluate, metrics
    >>> import river_cw

    Raw, uncentred features need no scaler (the arrowhead covariance, the default):

    >>> model = river_cw.AROW(r=1.0)
    >>> evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy())
    Accuracy: 89.59%

    References
    ----------
    [^1]: Crammer, K., Kulesza, A. and Dredze, M., 2009. Adaptive regularization of weight
    vectors. NIPS 22.

    """

    _diagonal_schemes = ("project", "drop")

    def __init__(
        self,
        r: float = 1.0,
        covariance: str = "arrowhead",
        diagonal: str = "drop",
        initial_variance: float = 1.0,
        learn_intercept: bool = True,
        forgetting: float | str = "auto",
        calibrate: bool = True,
        initial_intercept_variance: float | None = 100.0,
        centre: bool = True,
    ):
        if not r > 0:
            raise ValueError(f"r must be positive, got {r!r}")
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
        self.r = r

    def _step(self, m, v, w):
        if m >= 1.0:
            return None
        r = self.r / w  # exactly self.r when w == 1
        return (1.0 - m) / (v + r), 1.0 / r

    @property
    def _native_step(self):
        return "arow", (self.r,)

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"covariance": "diagonal", "diagonal": "project"}
        yield {"covariance": "full", "r": 0.5}
        yield {"diagonal": "project", "initial_intercept_variance": 10.0}
        yield {"forgetting": 0.0}
