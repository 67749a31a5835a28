"""The second-order perceptron (Cesa-Bianchi, Conconi and Gentile 2005)."""

from __future__ import annotations

from .gaussian_classifier import GaussianClassifier

__all__ = ["SOP"]


class SOP(GaussianClassifier):
    """Second-order perceptron (SOP), the baseline of the CW, AROW and NHERD papers.

    The paper keeps ``b = sum of y x`` and ``A = a I + sum of x x'`` over the mistakes and
    predicts the sign of ``x . (A + x x')^-1 b``, the current x included. With ``Sigma = A^-1``
    and ``mu = Sigma b`` that sign is the sign of ``mu . x``, and adding a mistake to b and A is
    the shared Gaussian step with ``alpha = (1 - m) / (1 + v)`` and ``gamma = 1``
    (Sherman-Morrison): SOP is mistake-driven AROW with ``r = 1`` and prior variance ``1 / a``.
    With ``covariance="full"`` this is exactly the paper's algorithm; the diagonal versions keep
    only the diagonal of A.

    Parameters
    ----------
    a
        a, the regularization of the correlation matrix A = a I + ...
    covariance
        ``"arrowhead"`` (the default: the diagonal and the intercept's covariance with each
        weight, at the diagonal's cost; see `river_cw._engines.arrowhead` and `GaussianClassifier`'s
        defaults), ``"diagonal"`` or ``"full"`` (the paper's algorithm, O(d^2) per example).
    diagonal
        ``"project"`` (``A_jj += x_j^2``) or ``"drop"``.
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
        Calibrated probabilities (the default): ``Phi(a m / sqrt(v))`` with a temperature a
        fitted online by one Newton step per example on the progressive log loss
        (`river_cw.calibration`); no noise term (``margin_noise`` is 0: SOP's margins are on
        the scale of its mistakes' sums, not of a step aiming at margin 1). False gives
        ``a = 1``, overconfident once the variances shrink. `predict_one` is the same either
        way.
    initial_intercept_variance
        The intercept's prior variance with ``covariance="arrowhead"`` (default: ``1 / a``, as
        every weight's). Wide (100) on uncentred features, whose boundary lies far from the
        origin (see `river_cw._engines.arrowhead`).
    centre
        Learn dense features centred at their means (the default; `GaussianClassifier`,
        `river_cw.centring`); sparse input (text) is never centred.

    Notes
    -----
    A sample weight ``learn_one(x, y, w)`` counts a mistaken example w times in the sums:
    ``b += w y x`` and ``A += w x x'``, i.e. ``alpha = w (1 - m) / (1 + w v)``, ``gamma = w``.

    Examples
    --------

    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> import river_cw

    >>> model = preprocessing.StandardScaler() | river_cw.SOP(a=1.0)
    >>> evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy())
    Accuracy: 86.23%

    References
    ----------
    [^1]: Cesa-Bianchi, N., Conconi, A. and Gentile, C., 2005. A second-order perceptron
    algorithm. SIAM Journal on Computing 34(3), 640-668.

    """

    _diagonal_schemes = ("project", "drop")
    _MARGIN_NOISE = 0.0  # its margins are sums over its mistakes, on no fixed scale

    def __init__(
        self,
        a: float = 1.0,
        covariance: str = "arrowhead",
        diagonal: str = "project",
        learn_intercept: bool = True,
        forgetting: float | str = 0.0,
        calibrate: bool = True,
        initial_intercept_variance: float | None = None,
        centre: bool = True,
    ):
        if not a > 0:
            raise ValueError(f"a must be positive, got {a!r}")
        super().__init__(
            covariance,
            diagonal,
            1.0 / a,
            learn_intercept,
            forgetting,
            calibrate,
            initial_intercept_variance,
            centre,
        )
        self.a = a

    def _step(self, m, v, w):
        if m > 0.0:  # updates on mistakes only (a zero margin counts as one)
            return None
        return w * (1.0 - m) / (1.0 + w * v), w  # the paper's step, to the bit, when w == 1

    @property
    def _native_step(self):
        return "sop", ()

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"covariance": "full", "a": 0.5}
        yield {"covariance": "diagonal", "diagonal": "drop", "a": 0.5}
        yield {"forgetting": "auto"}
