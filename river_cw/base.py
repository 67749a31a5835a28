"""The label logic every classifier of the library shares.

Labels are discovered online, in any hashable type. While at most two are known the model is
binary, exactly as in the papers: one weight vector ``w``, the first label seen is y = -1 and the
second y = +1, and the score is ``w . x``. When a third label arrives the model becomes
multi-class with one weight block per label and the feature map f(x, z) of Crammer, Dredze and
Kulesza (2009): the score of z is ``w_z . x`` and an update moves along the difference vector
``f(x, y) - f(x, y')`` against the best-scoring wrong label y'. The binary vector becomes the
second label's block and the first label gets an empty block, so no prediction changes at that
moment: ``score(second) - score(first) = w . x`` as before.

A subclass stores the weights and provides the hooks `_scores`, `_add_block`, `_lift`,
`_layout`/`_restore_layout` and `_update` (and `_learning_scores` where updates are judged by
other weights than predictions, as in voted RDA); this base turns labels into blocks and signs.

Every public method converts the feature values to Python floats first
(`river_cw.validation.as_floats`). A call either succeeds or raises `TypeError`/`ValueError`
naming the feature or the label, and then the model is exactly as it was: `_update` validates
and computes before it writes, and a new label is registered only together with a successful
update (the block structure is restored if the update raises).
"""

from __future__ import annotations

import abc
import copy
import math

from river import base

from .gaussian import SKIPPED, DiagonalGaussian, FullGaussian
from .validation import as_floats, check_label

__all__ = ["GaussianClassifier", "LinearClassifier", "normal_log_cdf"]


class LinearClassifier(base.Classifier, abc.ABC):
    """Base for the linear classifiers: labels to weight blocks, binary or multi-class."""

    def __init__(self):
        self.classes_: list = []
        self._class_index: dict = {}

    @property
    def _multiclass(self):
        return True

    @property
    def is_binary(self) -> bool:
        """True while the model is a single weight vector (at most two labels known)."""
        return len(self.classes_) <= 2

    # -- hooks --------------------------------------------------------------------------------

    @abc.abstractmethod
    def _scores(self, x: dict) -> list[float]:
        """One score per block (``w_b . x``); raise on a bad `x` before touching the model."""

    def _learning_scores(self, x: dict) -> list[float]:
        """The scores an update is judged by; the prediction scores unless a model averages."""
        return self._scores(x)

    @abc.abstractmethod
    def _add_block(self) -> None:
        """Append an empty weight block (a new label of a multi-class model)."""

    @abc.abstractmethod
    def _lift(self) -> None:
        """Turn the binary vector into blocks ``[empty, w]`` (see the module docstring)."""

    def _layout(self):
        """A snapshot of the block structure; a subclass returns its containers, not weights.

        The default copies the whole state: always right, and taken only when a label is new.
        """
        return copy.deepcopy(vars(self))

    def _restore_layout(self, layout) -> None:
        """Undo `_lift`/`_add_block` calls made since `layout` was taken."""
        vars(self).update(layout)

    @abc.abstractmethod
    def _update(self, x: dict, pairs: tuple[tuple[int, int], ...]) -> None:
        """Learn from the difference vector ``sum(sign * f(x, block) for block, sign in pairs)``.

        The margin along it is ``y w . x`` when binary and ``w_y . x - w_y' . x`` when
        multi-class; it is computed here, in the same pass as the update's other sums. Raise on a
        bad `x` before anything changes.
        """

    # -- river API ----------------------------------------------------------------------------

    def learn_one(self, x: dict, y, **kwargs) -> None:
        check_label(y)
        x = as_floats(x)
        k = self._class_index.get(y)
        if self.is_binary and (k is not None or len(self.classes_) < 2):
            sign = 1 if (len(self.classes_) if k is None else k) == 1 else -1
            self._update(x, ((0, sign),))  # validates x before anything changes
            if k is None:
                self._register(y)
            return
        scores = self._learning_scores(x)  # validates x before anything changes
        if k is not None:
            self._update(x, ((k, 1), (self._best_wrong(scores, k), -1)))
            return
        layout = (list(self.classes_), dict(self._class_index), self._layout())
        try:
            k = self._register(y)
            scores = self._learning_scores(x)
            self._update(x, ((k, 1), (self._best_wrong(scores, k), -1)))
        except BaseException:
            self.classes_, self._class_index, structure = layout
            self._restore_layout(structure)
            raise

    def predict_one(self, x: dict, **kwargs):
        scores = self._scores(as_floats(x))  # validates x, even before any label is known
        if not self.classes_:
            return None
        if self.is_binary:
            return self.classes_[-1] if scores[0] > 0 else self.classes_[0]
        return self.classes_[max(range(len(scores)), key=scores.__getitem__)]

    @staticmethod
    def _best_wrong(scores: list[float], k: int) -> int:
        """The best-scoring block other than k (Crammer, Dredze and Kulesza 2009)."""
        return max((z for z in range(len(scores)) if z != k), key=scores.__getitem__)

    # -- internals ----------------------------------------------------------------------------

    def _register(self, y) -> int:
        """Add a new label; the model becomes multi-class at the third one."""
        self._class_index[y] = len(self.classes_)
        self.classes_.append(y)
        if len(self.classes_) == 3:
            self._lift()
            self._add_block()
        elif len(self.classes_) > 3:
            self._add_block()
        return len(self.classes_) - 1


def normal_log_cdf(t: float) -> float:
    """``log Phi(t)`` for the standard normal, accurate far into the lower tail.

    >>> round(math.exp(normal_log_cdf(0.0)), 12)
    0.5
    >>> normal_log_cdf(-40.0) < -800
    True

    """
    if t > -30.0:
        return math.log(0.5 * math.erfc(-t / math.sqrt(2.0)))
    # asymptotic (Mills ratio) expansion: Phi(t) ~ phi(t) / -t * (1 - 1/t^2 + 3/t^4)
    r = 1.0 / (t * t)  # 0 when t * t overflows to inf
    return -0.5 * t * t - math.log(-t) - 0.5 * math.log(2.0 * math.pi) + math.log1p(-r + 3.0 * r * r)


def _standardised(m: float, v: float) -> float:
    """``m / sqrt(v)``, with the limits ``+-inf`` (or 0) when the variance vanishes."""
    if v > 0.0:
        return m / math.sqrt(v)
    return math.copysign(math.inf, m) if m else 0.0


class GaussianClassifier(LinearClassifier):
    """A Gaussian N(mu, Sigma) over the weights, updated by a rule ``(m, v) -> (alpha, gamma)``.

    Subclasses implement `_step` (see `river_cw.gaussian` for the shared update form) and may
    offer the ``"exact"`` diagonal scheme by overriding `_exact_step`.

    Probabilities follow from the Gaussian margin. Binary: ``P(second label) = Phi(m / sqrt(v))``
    with ``m = mu . x`` and ``v = x' Sigma x``. Multi-class: the pairwise margins
    ``m_zk = mu . (f(x, z) - f(x, k))`` are Gaussian too, with variance ``v_zk``, and
    ``P(z) ~ prod_{k != z} Phi(m_zk / sqrt(v_zk))``, normalised: the score of z beats every other
    score with those probabilities, taken as independent. It is cheap (one covariance of the K
    scores), a proper distribution, and for two labels exactly the binary formula. `predict_one`
    keeps the papers' rule, the best mean score; where margins differ much in variance the most
    probable label can differ from it.
    Before any label is seen the distribution is empty; with one label it is certain.
    """

    _diagonal_schemes: tuple[str, ...] = ("project", "drop", "exact")

    def __init__(self, covariance: str, diagonal: str, initial_variance: float):
        super().__init__()
        if covariance not in ("diagonal", "full"):
            raise ValueError(f"covariance must be 'diagonal' or 'full', got {covariance!r}")
        if diagonal not in self._diagonal_schemes:
            raise ValueError(
                f"diagonal must be one of {self._diagonal_schemes} for {type(self).__name__}, "
                f"got {diagonal!r}"
            )
        if not initial_variance > 0:
            raise ValueError(f"initial_variance must be positive, got {initial_variance!r}")
        self.covariance = covariance
        self.diagonal = diagonal
        self.initial_variance = initial_variance
        engine = DiagonalGaussian if covariance == "diagonal" else FullGaussian
        self._gaussian = engine(initial_variance)
        self.n_skipped_updates = 0  # steps float64 could not express (see `_update`)

    @abc.abstractmethod
    def _step(self, m: float, v: float) -> tuple[float, float] | None:
        """``(alpha, gamma)`` for margin mean `m` and variance `v > 0`, or None for no update."""

    def _exact_step(self, m: float, v: float, u: list[float]):
        """``(alpha, gamma, scheme)`` of the exact diagonal update, given the terms
        ``u_j = Sigma_jj d_j^2`` of v (see `DiagonalGaussian`)."""
        raise NotImplementedError

    # -- hooks of LinearClassifier ------------------------------------------------------------

    def _scores(self, x):
        return self._gaussian.scores(x)

    def _add_block(self):
        self._gaussian.add_block()

    def _lift(self):
        self._gaussian.lift()

    def _layout(self):
        return self._gaussian.layout()

    def _restore_layout(self, layout):
        self._gaussian.restore_layout(layout)

    def _update(self, x, pairs):
        """One step of the rule in the engine (`DiagonalGaussian.learn`); a step float64 cannot
        express is counted in `n_skipped_updates` and changes nothing."""
        if self.covariance == "diagonal" and self.diagonal == "exact":
            step, scheme = self._exact_step, None
        else:
            step, scheme = self._step, self.diagonal  # full covariance has no diagonal scheme
        self.n_skipped_updates += self._gaussian.learn(x, pairs, step, scheme) == SKIPPED

    # -- public state -------------------------------------------------------------------------

    def _by_label(self, blocks: list[dict]) -> dict:
        """One block as it is while binary; ``{label: block}`` once multi-class."""
        if self.is_binary:
            return blocks[0]
        return dict(zip(self.classes_, blocks))

    @property
    def weights(self) -> dict:
        """The means of the learned weights: ``{feature: mean}`` while binary (the score of the
        second label seen; the first is its negation), ``{label: {feature: mean}}`` once
        multi-class. Features never learned have mean 0 and are absent. A copy."""
        return self._by_label(self._gaussian.block_views()[0])

    @property
    def variances(self) -> dict:
        """The (marginal) variances of the learned weights, laid out as `weights`; features
        never learned have variance `initial_variance`. A copy."""
        return self._by_label(self._gaussian.block_views()[1])

    # -- probabilities ------------------------------------------------------------------------

    def predict_proba_one(self, x: dict, **kwargs) -> dict:
        classes = self.classes_
        x = as_floats(x)
        scores = self._scores(x)  # validates x, even before two labels are known
        if len(classes) < 2:
            return {c: 1.0 for c in classes}
        cov = self._gaussian.score_covariance(x)
        if self.is_binary:
            p = 0.5 * math.erfc(-_standardised(scores[0], cov[0, 0]) / math.sqrt(2.0))
            return {classes[0]: 1.0 - p, classes[1]: p}
        cov = cov.tolist()  # Python floats: an overflow is inf, silently, as in the binary case
        logp = [
            sum(
                normal_log_cdf(_standardised(s_z - s_k, cov[z][z] + cov[k][k] - 2.0 * cov[z][k]))
                for k, s_k in enumerate(scores)
                if k != z
            )
            for z, s_z in enumerate(scores)
        ]
        top = max(logp)
        weights = [math.exp(lp - top) for lp in logp]
        total = sum(weights)
        return {c: w / total for c, w in zip(classes, weights)}
