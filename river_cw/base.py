"""The label logic every classifier of the library shares.

Labels are discovered online, in any hashable type. While at most two are known the model is
binary, exactly as in the papers: one weight vector ``w`` and the score ``w . x``, with y = +1
for the *positive label* and y = -1 for the other. The positive label is the larger of the two
in the order of `river_cw.labels` (``True`` over ``False``, ``1`` over ``0``, ``"+1"`` over
``"-1"``, ``"spam"`` over ``"ham"``), whichever arrived first: ``classes_`` holds the two labels
in that order, ``[negative, positive]``. Until the second label arrives the first one is learned
as y = -1; if it turns out to be the positive one, the model is negated (`_negate`: the rules
are odd in ``(w, y)``, so this is, to the bit, the model that knew the order from the start).
When a third label arrives the model becomes multi-class with one weight block per label and the
feature map f(x, z) of Crammer, Dredze and Kulesza (2009): the score of z is ``w_z . x`` and an
update moves along the difference vector ``f(x, y) - f(x, y')`` against the best-scoring wrong
label y'. The binary vector becomes the positive label's block and the negative label gets an
empty block, so no prediction changes at that moment: ``score(positive) - score(negative) =
w . x`` as before. Labels after the first two keep their order of arrival in ``classes_``.

A subclass stores the weights and provides the hooks `_scores`, `_add_block`, `_lift`,
`_negate`, `_layout`/`_restore_layout` and `_update` (and `_learning_scores` where updates are
judged by other weights than predictions, as in voted RDA); this base turns labels into blocks
and signs.

Every public method converts the feature values to Python floats first
(`river_cw.validation.as_floats`). A call either succeeds or raises `TypeError`/`ValueError`
naming the feature or the label, and then the model is exactly as it was: `_update` validates
and computes before it writes, and a new label is registered only together with a successful
update (the block structure is restored if the update raises).

The intercept (``learn_intercept=True``) is a weight like any other, of a feature whose value is
always 1 and whose name is `INTERCEPT`, a reserved object no user feature can equal: it has a
mean and a variance in the Gaussian and every rule updates it as it updates the features, in
both engines and with the full covariance alike. The public views (`weights`, `variances`,
`covariances`) leave it out and show it as `intercept` and `intercept_variance`.
"""

from __future__ import annotations

import abc
import copy
import functools
import inspect
import math
import sys
from typing import ClassVar

import numpy as np
from river import base

from . import calibration
from .arrowhead import ArrowheadGaussian, PythonArrowheadGaussian
from .batch import Rows
from .engine import ENGINE
from .gaussian import SKIPPED, DiagonalGaussian, FullGaussian, PythonDiagonalGaussian
from .labels import order_key
from .validation import as_floats, check_label, check_weight, is_real

__all__ = ["INTERCEPT", "GaussianClassifier", "LinearClassifier", "normal_log_cdf"]


class _Intercept:
    """The type of `INTERCEPT`: one object, equal only to itself, pickled by reference."""

    __slots__ = ()

    def __repr__(self):
        return "river_cw.INTERCEPT"

    def __hash__(self):  # fixed, so that nothing depends on the process (PYTHONHASHSEED, id)
        return 0x1C7E5CE97

    def __reduce__(self):
        return "INTERCEPT"  # the module attribute: unpickles (and deep-copies) to the same object


INTERCEPT = _Intercept()
"""The feature name of the intercept: its value is always 1.0 (see `learn_intercept`)."""


class LinearClassifier(base.MiniBatchClassifier, abc.ABC):
    """Base for the linear classifiers: labels to weight blocks, binary or multi-class."""

    # Attributes added after the first release, with the value that reproduces older models
    # (`__setstate__` fills them in when an older pickle lacks them).
    _PICKLE_DEFAULTS: ClassVar[dict] = {"learn_intercept": False}

    def __init__(self, learn_intercept: bool = False):
        if not isinstance(learn_intercept, bool):
            raise ValueError(f"learn_intercept must be True or False, got {learn_intercept!r}")
        self.learn_intercept = learn_intercept
        self.classes_: list = []
        self._class_index: dict = {}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        for name, value in self._PICKLE_DEFAULTS.items():
            self.__dict__.setdefault(name, value)

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

    @abc.abstractmethod
    def _negate(self) -> None:
        """Turn the binary model into the one over ``-w``: every quantity odd in the labels'
        sign changes sign (the model of the same examples with y = -1 and +1 swapped)."""

    def _layout(self):
        """A snapshot of the block structure; a subclass returns its containers, not weights.

        The default copies the whole state: always right, and taken only when a label is new.
        """
        return copy.deepcopy(vars(self))

    def _restore_layout(self, layout) -> None:
        """Undo `_lift`/`_add_block` calls made since `layout` was taken."""
        vars(self).update(layout)

    @abc.abstractmethod
    def _update(self, x: dict, pairs: tuple[tuple[int, int], ...], w: float) -> None:
        """Learn from the difference vector ``sum(sign * f(x, block) for block, sign in pairs)``
        with sample weight ``w > 0`` (each subclass documents what the weight means).

        The margin along it is ``y w . x`` when binary and ``w_y . x - w_y' . x`` when
        multi-class; it is computed here, in the same pass as the update's other sums. Raise on a
        bad `x` before anything changes.
        """

    @abc.abstractmethod
    def _weight_blocks(self) -> list[dict]:
        """Per block, ``{feature: weight}`` of the weights predictions use (`INTERCEPT` included)."""

    # -- river API ----------------------------------------------------------------------------

    def _features(self, x: dict) -> dict:
        """`x` as the engines see it: Python floats, and the intercept's constant feature."""
        x = as_floats(x)
        return {**x, INTERCEPT: 1.0} if self.learn_intercept else x

    def learn_one(self, x: dict, y, w: float = 1.0) -> None:
        """Learn the example `x` with label `y`.

        Bad input (a non-numeric, NaN or infinite value, a missing label, a bad `w`) raises
        TypeError or ValueError naming it, and leaves the model exactly as it was.

        Parameters
        ----------
        x
            The features, ``{name: number}``; a missing feature is 0.
        y
            The label: any hashable value; a new one makes a binary model multi-class.
        w
            The sample weight, a finite number >= 0 (each rule's class docstring says what it
            means); ``w=0`` validates `x` and `y` and changes nothing, ``w=1`` is the
            unweighted rule to the bit.

        """
        check_label(y)
        w = check_weight(w)
        x = self._features(x)
        if w == 0.0:
            self._learning_scores(x)  # validates x
            return
        k = self._class_index.get(y)
        if self.is_binary and (k is not None or len(self.classes_) < 2):
            sign = 1 if (len(self.classes_) if k is None else k) == 1 else -1
            self._update(x, ((0, sign),), w)  # validates x before anything changes
            if k is None:
                self._register(y)
            return
        scores = self._learning_scores(x)  # validates x before anything changes
        if k is not None:
            self._update(x, ((k, 1), (self._best_wrong(scores, k), -1)), w)
            return
        layout = (list(self.classes_), dict(self._class_index), self._layout())
        try:
            k = self._register(y)
            scores = self._learning_scores(x)
            self._update(x, ((k, 1), (self._best_wrong(scores, k), -1)), w)
        except BaseException:
            self.classes_, self._class_index, structure = layout
            self._restore_layout(structure)
            raise

    def predict_one(self, x: dict):  # type: ignore[override]  # no **kwargs, as river's own models
        """The label of largest score, or None before any label: `positive_label` where
        ``w . x > 0`` while binary, else the label whose block scores most (the first in
        ``classes_`` on a tie).

        It is the label of largest `predict_proba_one`; among labels of equal probability (a tie,
        or a difference below float64's resolution), the one of larger score.

        Parameters
        ----------
        x
            The features, ``{name: number}``.
        """
        # A binary model's score in one call of a compiled engine (`_native_score`), the common
        # case; else the general path, which validates x (even before any label is known) and
        # names a bad feature.
        score = self._native_score(x, False)
        if score is None:
            scores = self._scores(self._features(x))
            if not self.is_binary:
                return self.classes_[max(range(len(scores)), key=scores.__getitem__)]
            score = scores[0]  # one block until the third label
        classes = self.classes_
        return (classes[-1] if score > 0 else classes[0]) if classes else None

    # -- public state -------------------------------------------------------------------------

    def _by_label(self, blocks: list):
        """One block as it is while binary; ``{label: block}`` once multi-class."""
        if self.is_binary:
            return blocks[0]
        return dict(zip(self.classes_, blocks))

    @property
    def positive_label(self):
        """The label that positive weights favour while the model is binary: the larger of its
        two labels in the order of `river_cw.labels` (``True`` over ``False``, ``1`` over ``0``,
        ``"+1"`` over ``"-1"``, ``"spam"`` over ``"ham"``), whichever arrived first; ``classes_``
        is ``[negative, positive]``. None until two labels are known, and once multi-class
        (then every label has weights of its own).

        >>> import river_cw
        >>> model = river_cw.AROW()
        >>> model.learn_one({"free": 1.0}, "spam")
        >>> model.learn_one({"meeting": 1.0}, "ham")
        >>> model.positive_label, model.weights["free"] > 0 > model.weights["meeting"]
        ('spam', True)

        """
        return self.classes_[1] if len(self.classes_) == 2 else None

    @property
    def weights(self) -> dict:
        """The weights predictions use: ``{feature: weight}`` while binary (the score of
        `positive_label`; the other label's is its negation), ``{label: {feature: weight}}``
        once multi-class (one weight vector per label, in the order of ``classes_``). Features
        never learned have weight 0 and are absent; the intercept is `intercept`. A copy."""
        return self._by_label(_without_intercept(self._weight_blocks()))

    @property
    def intercept(self):
        """The intercept: a float while binary, ``{label: intercept}`` once multi-class (laid
        out as `weights`); 0.0 until learned, and always without `learn_intercept`."""
        return self._by_label([block.get(INTERCEPT, 0.0) for block in self._weight_blocks()])

    # -- mini-batches (river.base.MiniBatchClassifier) ----------------------------------------

    def learn_many(self, X, y, w=1.0, *, features=None) -> None:
        """Learn the rows of `X` with the labels `y`, in order: exactly the `learn_one` loop over
        the rows, to the last bit (weights, predictions, `n_skipped_updates`).

        A bad row raises the error `learn_one` raises, prefixed with the row's name (its index
        in the DataFrame, else its position); the rows before it have been learned, as in the
        loop, and the model is as that loop leaves it.

        Parameters
        ----------
        X
            A pandas DataFrame (row i: its non-missing entries), a sequence of dicts, or a
            `scipy.sparse` CSR matrix (see `river_cw.batch`).
        y
            One label per row (a Series, a list, an array).
        w
            The sample weight: a number, or a sequence or Series of one per row.
        features
            With a sparse `X`, the feature of each column (a vocabulary: column j is the feature
            ``features[j]``); without it, column j is the int j (hashed ids).

        Examples
        --------

        >>> import river_cw
        >>> from scipy import sparse
        >>> model = river_cw.AROW()
        >>> model.learn_many([{"good": 1}, {"bad": 1}, {"good": 2}], ["pos", "neg", "pos"])
        >>> model.predict_many([{"good": 1}, {"bad": 2}])
        ['pos', 'neg']
        >>> X = sparse.csr_array([[1.0, 0.0], [0.0, 1.0]])
        >>> model.learn_many(X, ["pos", "neg"], features=["good", "bad"])
        >>> model.predict_many(X, features=["good", "bad"])
        ['pos', 'neg']
        >>> model.learn_many([{"good": 1}, {"bad": "x"}], ["pos", "neg"])
        Traceback (most recent call last):
        ...
        TypeError: row 1: feature 'bad' has a non-numeric value: 'x' (str)

        """
        rows = Rows.of(X, features)
        labels = _column(y, len(rows), "y")
        self._learn_rows(rows, labels, _weights(w, len(rows)))

    def _learn_rows(self, rows: Rows, labels: list, weights: list) -> None:
        """The mini-batch loop: `learn_one` row after row (a model may run it compiled)."""
        rows.check_names()
        for i in range(len(rows)):
            self._learn_row(rows, i, labels[i], weights[i])

    def _learn_row(self, rows: Rows, i: int, y, w) -> None:
        try:
            self.learn_one(rows.row(i), y, w)
        except (TypeError, ValueError) as error:
            raise type(error)(f"row {rows.index[i]!r}: {error}") from error

    def predict_many(self, X, *, features=None):
        """`predict_one` of every row of `X`: a Series on the index of a DataFrame, else a list.

        Parameters
        ----------
        X
            A pandas DataFrame, a sequence of dicts, or a `scipy.sparse` CSR matrix (see
            `learn_many`).
        features
            With a sparse `X`, the feature of each column (see `learn_many`).
        """
        rows = Rows.of(X, features)
        predictions = self._predict_rows(rows)
        if not rows.frame:
            return predictions
        import pandas as pd

        return pd.Series(predictions, index=rows.index, dtype=object)

    def predict_proba_many(self, X, *, features=None):
        """`predict_proba_one` of every row of `X`: for a DataFrame, a DataFrame on its index
        with one column per class (in the order of ``classes_``, the order the labels were first
        seen); else a list of the dicts.

        Parameters
        ----------
        X
            A pandas DataFrame, a sequence of dicts, or a `scipy.sparse` CSR matrix (see
            `learn_many`).
        features
            With a sparse `X`, the feature of each column (see `learn_many`).
        """
        rows = Rows.of(X, features)
        probas = self._predict_proba_rows(rows)
        if not rows.frame:
            return probas
        import pandas as pd

        return pd.DataFrame(probas, index=rows.index, columns=list(self.classes_), dtype=float)

    def _native_score(self, x: dict, variance: bool):
        """A compiled engine's score of x for a binary model in one call, ``m`` or ``(m, v)``
        with its variance, or None where the general path must serve (always here; see
        `GaussianClassifier`)."""
        return None

    def _predict_rows(self, rows: Rows) -> list:
        """`predict_one` of every row (a model may run the loop compiled)."""
        return [self.predict_one(x) for x in rows.all()]

    def _predict_proba_rows(self, rows: Rows) -> list[dict]:
        """`predict_proba_one` of every row (a model may run the loop compiled)."""
        return [self.predict_proba_one(x) for x in rows.all()]

    @staticmethod
    def _best_wrong(scores: list[float], k: int) -> int:
        """The best-scoring block other than k (Crammer, Dredze and Kulesza 2009)."""
        return max((z for z in range(len(scores)) if z != k), key=scores.__getitem__)

    # -- internals ----------------------------------------------------------------------------

    def _register(self, y) -> int:
        """Add a new label, just learned as y = +1 when it is the second; the model becomes
        multi-class at the third one. The second label takes its place in the labels' order
        (`positive_label`): when it is the smaller one, the model is negated."""
        self._class_index[y] = len(self.classes_)
        self.classes_.append(y)
        if len(self.classes_) == 2 and order_key(y) < order_key(self.classes_[0]):
            self._negate()
            self.classes_.reverse()
            self._class_index.update({c: i for i, c in enumerate(self.classes_)})
        elif len(self.classes_) == 3:
            self._lift()
            self._add_block()
        elif len(self.classes_) > 3:
            self._add_block()
        return self._class_index[y]


def _without_intercept(blocks: list[dict]) -> list[dict]:
    return [{f: v for f, v in block.items() if f is not INTERCEPT} for block in blocks]


def _is_number(w) -> bool:
    return isinstance(w, (int, float)) or not hasattr(w, "__len__")


def _weights(w, n: int) -> list:
    """One sample weight per row: a number for every row (as `check_weight` reads it, so the
    compiled loop sees floats), or a sequence of them."""
    if not _is_number(w):
        return _column(w, n, "w")
    try:
        w = check_weight(w)
    except (TypeError, ValueError):
        pass  # the first row's learn_one raises it, named
    return [w] * n


def _column(values, n: int, name: str) -> list:
    """A Series or sequence as a list of Python values, checked to have one per row."""
    values = values.tolist() if hasattr(values, "tolist") else list(values)
    if len(values) != n:
        raise ValueError(f"{name} has {len(values)} entries for {n} rows of X")
    return values


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
    return (
        -0.5 * t * t - math.log(-t) - 0.5 * math.log(2.0 * math.pi) + math.log1p(-r + 3.0 * r * r)
    )


def _sum_of_logs(terms: list[float]) -> float:
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


# N(mu, Sigma) as a model holds it (the compiled diagonal engine has the Python one's interface)
Gaussian = PythonDiagonalGaussian | PythonArrowheadGaussian | FullGaussian

_ENGINES: dict[str, tuple[type[Gaussian], ...]] = {
    "diagonal": (DiagonalGaussian, PythonDiagonalGaussian),
    "arrowhead": (ArrowheadGaussian, PythonArrowheadGaussian),
    "full": (FullGaussian,),
}
"""The engines of each `covariance`: the one a new model holds first, then any it may hold."""

_STALE = object()  # a lean-path spec to be built anew (see GaussianClassifier.__setattr__)


@functools.cache
def _hyperparameters(cls) -> frozenset:
    """The names of a model class's hyperparameters (its ``__init__``'s parameters)."""
    return frozenset(inspect.signature(cls.__init__).parameters) - {"self"}


class GaussianClassifier(LinearClassifier):
    """A Gaussian N(mu, Sigma) over the weights, updated by a rule ``(m, v) -> (alpha, gamma)``.

    Subclasses implement `_step` (see `river_cw.gaussian` for the shared update form) and may
    offer the ``"exact"`` diagonal scheme by overriding `_exact_step`.

    Probabilities follow from the Gaussian margin. Binary: ``P(positive label) = Phi(m /
    sqrt(v))`` with ``m = mu . x`` and ``v = x' Sigma x``. Multi-class: the pairwise margins
    ``m_zk = mu . (f(x, z) - f(x, k))`` are Gaussian too, and ``P(z) ~ prod_{k != z} Phi(m_zk /
    s)``, normalised: the score of z beats every other score, the comparisons taken as
    independent, all on one scale s, the standard deviation of the margin between the two
    best-scoring labels (the margin the decision rests on). For two labels it is the binary
    formula; the decisive pair's factor is the probability, under the model, that the best
    label's score beats the runner-up's; and since every pair is measured on the same scale,
    the probabilities rank the labels exactly as their mean scores do. So `predict_one`, the
    papers' rule (the best mean score, the decision the multi-class update trains: its step is
    taken against the best-scoring wrong label), is the label of largest probability, for every
    temperature (see calibration). Standardising each pair by its own variance would rank a label
    whose score is uncertain lower than its mean score does, and predicting that ranking's best
    would give up the papers' rule and let the temperature change predictions; measured on
    river's ImageSegments, USPS and 20 Newsgroups it scores about the same log loss and 0.1 to
    1.4 points more accuracy (benchmarks/README.md, "Multi-class probabilities").
    Before any label is seen the distribution is empty; with one label it is certain.

    Forgetting (``forgetting = f > 0``; off by default, the papers' models never forget). Every
    rule only adds precision, so after concept drift the variances stay small and the model
    barely moves (CW's reach 1e-193 on SEA). With forgetting, each example first relaxes the
    precision of the weights it touches toward the prior's, ``1/s_j <- (1 - f)/s_j + f/a``
    (``a`` = `initial_variance`), before its margin is computed; the means stay. This is
    directional forgetting (Kulhavy and Karny 1984; Kulhavy 1987): information is discounted
    only in the directions the data excite, here the coordinates of x, so the cost is that of
    the example (no pass over all features, which suits sparse text) and the variance of a
    weight never seen again does not wind up. Relaxing toward the prior rather than toward
    zero precision is the stabilised forgetting of Kulhavy and Zarrop (1993): a variance never
    exceeds ``a``. A weight touched k times in a row with no update regains variance as
    ``1/s_j -> 1/a`` geometrically, ``(1 - f)^k``; between updates the precision settles near
    ``gamma x_j^2 / f`` instead of growing without bound. With a sample weight w the example
    forgets w times: ``(1 - f)^w``. With ``covariance="full"``, ``Sigma^-1 <- S Sigma^-1 S +
    (f/a) E`` with ``S = diag(sqrt(1 - f))`` on the touched coordinates and E the identity there;
    with ``covariance="arrowhead"``, coordinate-wise in its latent coordinates (the intercept and
    each feature given it; see `river_cw.arrowhead`), each toward its prior.
    The forgetting of a valid example is kept even when its step is not taken.

    The defaults (issue 30). Every rule's default covariance is ``"arrowhead"``
    (`river_cw.arrowhead`): the diagonal plus the intercept's covariance with each weight, at the
    diagonal's cost per feature, so that raw, uncentred dense features are learned as well as by
    river's linear models and text as well as by the papers' diagonal models. AROW and NHERD
    default to ``diagonal="drop"`` and an intercept prior variance of 100 (a flat prior's
    stand-in); CW, SCW and SOP to ``"project"``, with which they keep their text results. The
    measurements behind them: benchmarks/README.md, "Dense data". The papers' models are
    ``covariance="full"``, or ``covariance="diagonal"`` with the paper's scheme, and
    ``learn_intercept=False``.

    Calibration (``calibrate=True``; off by default). Under label noise or a collapsed variance
    the margins' probabilities are overconfident (CW on a9a: log loss 10). A temperature a then
    scales every standardised margin, ``Phi(a m / sqrt(v))``, fitted online on the progressive
    log loss (`river_cw.calibration`, as voted RDA calibrates its hinge scores); it starts at 1
    and never changes `predict_one`.

    References: Kulhavy, R. and Karny, M., 1984. Tracking of slowly varying parameters by
    directional forgetting. IFAC Proceedings 17(2); Kulhavy, R. and Zarrop, M. B., 1993. On a
    general concept of forgetting. International Journal of Control 58(4), 905-924.
    """

    _diagonal_schemes: tuple[str, ...] = ("project", "drop", "exact")
    _PICKLE_DEFAULTS: ClassVar[dict] = {
        **LinearClassifier._PICKLE_DEFAULTS,
        "forgetting": 0.0,
        "calibrate": False,
        "_calibration": None,
        "initial_intercept_variance": None,
    }

    def __init__(
        self,
        covariance: str,
        diagonal: str,
        initial_variance: float,
        learn_intercept: bool,
        forgetting: float = 0.0,
        calibrate: bool = False,
        initial_intercept_variance: float | None = None,
    ):
        super().__init__(learn_intercept)
        if not isinstance(calibrate, bool):
            raise ValueError(f"calibrate must be True or False, got {calibrate!r}")
        self.calibrate = calibrate
        self._calibration = calibration.start(prefer=1.0) if calibrate else None
        if not is_real(forgetting) or not (0.0 <= forgetting < 1.0):
            raise ValueError(f"forgetting must be in [0, 1), got {forgetting!r}")
        self.forgetting = forgetting
        if covariance not in _ENGINES:
            raise ValueError(f"covariance must be one of {tuple(_ENGINES)}, got {covariance!r}")
        if diagonal not in self._diagonal_schemes:
            raise ValueError(
                f"diagonal must be one of {self._diagonal_schemes} for {type(self).__name__}, "
                f"got {diagonal!r}"
            )
        if covariance == "arrowhead" and diagonal == "exact":
            raise ValueError(
                "the exact schemes are diagonal: covariance='arrowhead' (the default) takes "
                "diagonal='project' or 'drop'; diagonal='exact' needs covariance='diagonal'"
            )
        if not initial_variance > 0:
            raise ValueError(f"initial_variance must be positive, got {initial_variance!r}")
        if initial_intercept_variance is not None and (
            not is_real(initial_intercept_variance) or not 0 < initial_intercept_variance < math.inf
        ):
            raise ValueError(
                "initial_intercept_variance must be positive and finite (or None), got "
                f"{initial_intercept_variance!r}"
            )
        self.covariance = covariance
        self.diagonal = diagonal
        self.initial_variance = initial_variance
        self.initial_intercept_variance = initial_intercept_variance
        self._gaussian: Gaussian
        if covariance == "arrowhead":
            self._gaussian = ArrowheadGaussian(
                initial_variance, INTERCEPT, initial_intercept_variance
            )
        elif covariance == "full":
            self._gaussian = FullGaussian(initial_variance)
        else:
            self._gaussian = DiagonalGaussian(initial_variance)
        self.n_skipped_updates = 0  # steps float64 could not express (see `_update`)

    @property
    def _native_step(self) -> tuple[str, tuple] | None:
        """The rule's `_step` in C, ``(name, params)`` (see river_cw/_steps.h), or None: the
        compiled engine's lean `learn_one` then serves the common case in one call."""
        return None

    @property
    def _native_exact_step(self) -> tuple | None:
        """The rule's `_exact_step` in C for the lean `learn_one`, ``(step, scheme)``: a native
        step ``(name, params)`` (river_cw/_exact.h's `find_exact_step`, or a `_native_step` of
        river_cw/_steps.h) and the scheme its update takes, ``"project"`` or ``("herding", C)``
        (shrinking with C times the sample weight); or None."""
        return None

    def _native_step_of_step(self) -> tuple[str, tuple] | None:
        """`_native_step` where it is this model's `_step` in C: None for a subclass that
        overrides `_step` but not `_native_step` (its own step must run)."""
        return self._native_of("_step", "_native_step")

    def _native_of(self, method: str, native: str):
        """The attribute `native` where it is this model's `method` in C: None when a subclass
        overrides `method` but not `native`."""
        owners = [
            next(c for c in type(self).__mro__ if name in vars(c)) for name in (method, native)
        ]
        return getattr(self, native) if owners[0] is owners[1] else None

    @abc.abstractmethod
    def _step(self, m: float, v: float, w: float) -> tuple[float, float] | None:
        """``(alpha, gamma)`` for margin mean `m`, variance `v > 0` and sample weight ``w > 0``
        (``w == 1`` must give the paper's step bit for bit), or None for no update."""

    def _exact_step(self, m: float, v: float, u: list[float], w: float):
        """``(alpha, gamma, scheme)`` of the exact diagonal update, given the terms
        ``u_j = Sigma_jj d_j^2`` of v (see `DiagonalGaussian`)."""
        raise NotImplementedError

    if ENGINE == "c":

        def learn_one(self, x: dict, y, w: float = 1.0) -> None:
            """Learn the example `x` with label `y`.

            Bad input (a non-numeric, NaN or infinite value, a missing label, a bad `w`) raises
            TypeError or ValueError naming it, and leaves the model exactly as it was.

            Parameters
            ----------
            x
                The features, ``{name: number}``; a missing feature is 0.
            y
                The label: any hashable value; a new one makes a binary model multi-class.
            w
                The sample weight, a finite number >= 0 (each rule's class docstring says what it
                means); ``w=0`` validates `x` and `y` and changes nothing, ``w=1`` is the
                unweighted rule to the bit.

            """
            # The common case in one call of the compiled engine (`learn_native`: a binary
            # model, a known label, a float weight > 0; x read as `as_floats` reads it, margin,
            # the rule's C step, update): the general path's numbers. Any other case, and any x
            # it does not take as it is (to name a bad feature), goes the general way.
            lean = self._lean
            if lean is _STALE:
                lean = self._lean = self._lean_spec()
            if lean is not None:  # only a diagonal engine has a lean spec (`_lean_spec`)
                outcome = self._gaussian.learn_native(x, y, w, self._class_index, lean)  # type: ignore[union-attr]
                if not outcome:  # learned (or nothing to learn)
                    return
                if outcome == SKIPPED:
                    self.n_skipped_updates += 1
                    return
            LinearClassifier.learn_one(self, x, y, w)

        learn_one.__doc__ = LinearClassifier.learn_one.__doc__

    def _native_scores(self, rows: Rows, proba: bool) -> list | None:
        """The score of every row (`_native_score`'s ``m``), or with `proba` its probabilities
        (`_binary_proba`'s), in one call of the compiled engine's batch kernel
        (`score_rows`, river_cw/_batch.h: dict rows as `score_native` reads them, CSR rows
        straight from the arrays, their names checked as `Rows.check_names` checks them), None
        for a row the general path must serve; None where the engine has no kernel or the model
        is not binary."""
        kernel = getattr(self._gaussian, "score_rows", None)
        if kernel is None or not self.is_binary:
            return None
        batch = rows.dicts if rows.csr is None else rows.csr
        # math.erfc itself, so that the probabilities are _binary_proba's to the bit
        spec = (*self.classes_, self.temperature, math.erfc) if proba else None
        return kernel(batch, INTERCEPT if self.learn_intercept else None, spec)

    def _predict_rows(self, rows: Rows) -> list:
        scores = self._native_scores(rows, False)
        classes = self.classes_
        if scores is None or not classes:
            return super()._predict_rows(rows)
        first, last = classes[0], classes[-1]
        return [
            (last if score > 0 else first) if score is not None else self.predict_one(rows.row(i))
            for i, score in enumerate(scores)
        ]

    def _predict_proba_rows(self, rows: Rows) -> list[dict]:
        if len(self.classes_) != 2 or (probas := self._native_scores(rows, True)) is None:
            return super()._predict_proba_rows(rows)
        return [
            proba if proba is not None else self.predict_proba_one(rows.row(i))
            for i, proba in enumerate(probas)
        ]

    def _native_score(self, x: dict, variance: bool):
        """The compiled diagonal engine's score of a binary model, ``m`` or ``(m, v)`` with its
        variance (`score_native`: x a dict of floats, ints and bools), or None where the
        general path must serve."""
        native = getattr(self._gaussian, "score_native", None)
        if native is None:
            return None
        return native(x, INTERCEPT if self.learn_intercept else None, variance)

    _lean = _STALE  # `_lean_spec`, built by the first learn_one after a hyperparameter is set

    def _lean_spec(self):
        """``(step, scheme, intercept)`` of the compiled engine's lean path, or None where the
        model needs the general one (full covariance, calibration, forgetting, no native step
        of its own `_step`, or of its own `_exact_step` for the exact scheme)."""
        if self.covariance == "full" or self.calibrate or self.forgetting:
            return None
        if self.diagonal == "exact":
            native = self._native_of("_exact_step", "_native_exact_step")
            if native is None:
                return None
            step, scheme = native
        else:
            step, scheme = self._native_step_of_step(), self.diagonal
        if step is None:
            return None
        return step, scheme, INTERCEPT if self.learn_intercept else None

    def __setattr__(self, name: str, value) -> None:
        object.__setattr__(self, name, value)
        if name in _hyperparameters(type(self)):  # the lean path's spec reads them
            object.__setattr__(self, "_lean", _STALE)

    def __getstate__(self) -> dict:
        state = dict(vars(self))
        state.pop("_lean", None)  # derived from the hyperparameters
        return state

    # -- hooks of LinearClassifier ------------------------------------------------------------

    def _scores(self, x):
        return self._gaussian.scores(x)

    def _add_block(self):
        self._gaussian.add_block()

    def _lift(self):
        self._gaussian.lift()

    def _negate(self):
        self._gaussian.negate()

    def _layout(self):
        return self._gaussian.layout()

    def _restore_layout(self, layout):
        self._gaussian.restore_layout(layout)

    def _update(self, x, pairs, w):
        """One step of the rule in the engine (`DiagonalGaussian.learn`): margin (after the
        forgetting), the rule's step with sample weight w, update; a step float64 cannot express
        is counted in `n_skipped_updates` and changes nothing."""
        losses = None
        if self.calibrate and len(self.classes_) > 1:  # the progressive log loss, before learning
            label = pairs[0][0] if not self.is_binary else int(pairs[0][1] == 1)
            t = self._pairwise(x, self._scores(x))
            losses = calibration.probit_losses(np.array(t), label)
        keep, rest = 1.0, 0.0
        if self.forgetting:
            keep = 1.0 - self.forgetting if w == 1.0 else (1.0 - self.forgetting) ** w
            keep = max(keep, sys.float_info.min)  # a huge w forgets all but a trace
            rest = (1.0 - keep) / self.initial_variance
        step, scheme = self._rule()
        outcome = self._gaussian.learn(x, pairs, step, scheme, w, keep, rest)  # validates x
        if losses is not None:  # x is valid: record the losses, unless one is beyond float64
            with np.errstate(over="ignore", invalid="ignore"):
                total = self._calibration + (losses if w == 1.0 else w * losses)
            if np.isfinite(total).all():
                self._calibration = total
        if outcome == SKIPPED:
            self.n_skipped_updates += 1

    def _rule(self):
        """The rule's step and its scheme as the engines' `learn` takes them: ``(_exact_step,
        None)`` for an exact diagonal scheme, else ``(_step, diagonal)`` (full covariance has no
        diagonal scheme and ignores it)."""
        if self.covariance == "diagonal" and self.diagonal == "exact":
            return self._exact_step, None
        return self._step, self.diagonal

    def _learn_rows(self, rows, labels, weights):
        """The mini-batch loop in the compiled engine (`river_cw/_batch.h`) where it has one
        (diagonal covariance, no calibration): the kernel learns row after row as `learn_one`
        would and stops at a row it leaves to `learn_one` (a new label, a weight of 0, a value
        other than a float, a bool or an int within float64, a bad row), which then runs here."""
        kernel = getattr(self._gaussian, "learn_rows", None)
        if kernel is None or self.calibrate:
            return super()._learn_rows(rows, labels, weights)
        step, scheme = self._rule()
        native = None if scheme is None else self._native_step_of_step()
        intercept = INTERCEPT if self.learn_intercept else None
        batch = rows.dicts if rows.csr is None else rows.csr
        lean = self._lean
        if lean is _STALE:
            lean = self._lean = self._lean_spec()
        i, n = 0, len(rows)
        while i < n:
            stats = [i, 0]
            try:
                kernel(
                    batch,
                    labels,
                    self._class_index,
                    weights,
                    i,
                    step,
                    scheme,
                    float(self.forgetting),
                    intercept,
                    stats,
                    native,
                    lean,
                )
            except (TypeError, ValueError) as error:  # raised by the rule's step
                raise type(error)(f"row {rows.index[stats[0]]!r}: {error}") from error
            finally:
                self.n_skipped_updates += stats[1]
            i = stats[0]
            if i < n:
                self._learn_row(rows, i, labels[i], weights[i])
                i += 1

    def _weight_blocks(self):
        return self._gaussian.block_views()[0]

    # -- public state -------------------------------------------------------------------------

    @property
    def gaussian(self):
        """The engine holding N(mu, Sigma) (`river_cw.gaussian`'s `DiagonalGaussian` or
        `FullGaussian`), for reading: the model changes through `learn_one` and `set_gaussian`."""
        return self._gaussian

    def set_gaussian(self, gaussian, classes: list) -> None:
        """Hold `gaussian` as N(mu, Sigma); the model goes on learning from there.

        `river_cw.combine` builds merged models with it. Raises ValueError, changing nothing,
        when `gaussian`, its blocks or the labels' order don't fit.

        Parameters
        ----------
        gaussian
            An engine of the model's `covariance` (`river_cw.gaussian`'s `DiagonalGaussian` or
            `PythonDiagonalGaussian`, or `FullGaussian`); it is held, not copied.
        classes
            The labels of its weight blocks, in the order of `classes_`: one block for at most
            two labels, as ``[negative, positive]`` (see `positive_label`), else one per label.
        """
        engines = _ENGINES[self.covariance]
        if not isinstance(gaussian, engines):
            raise ValueError(
                f"{'an' if self.covariance == 'arrowhead' else 'a'} {self.covariance} model holds a {' or '.join(e.__name__ for e in engines)}, "
                f"got {type(gaussian).__name__}"
            )
        classes = list(classes)
        if len(set(classes)) != len(classes):
            raise ValueError(f"the labels must be distinct, got {classes!r}")
        if len(classes) == 2 and order_key(classes[1]) < order_key(classes[0]):
            raise ValueError(
                f"two labels go as [negative, positive], {classes[::-1]!r}, got {classes!r}"
            )
        blocks = len(gaussian.block_views()[0])
        if blocks != (1 if len(classes) <= 2 else len(classes)):
            raise ValueError(f"{blocks} weight block(s) cannot carry the labels {classes!r}")
        self._gaussian = gaussian
        self.classes_, self._class_index = classes, {c: i for i, c in enumerate(classes)}

    @property
    def variances(self) -> dict:
        """The (marginal) variances of the learned weights, laid out as `weights`; features
        never learned have variance `initial_variance`. A copy."""
        return self._by_label(_without_intercept(self._gaussian.block_views()[1]))

    @property
    def intercept_variance(self):
        """The variance of `intercept`, laid out as it: its prior until it is learned
        (`initial_intercept_variance` with the arrowhead covariance where given, else
        `initial_variance`), 0.0 without `learn_intercept` (the intercept is then fixed at 0)."""
        prior = 0.0
        if self.learn_intercept:
            prior = self.initial_variance
            if self.covariance == "arrowhead" and self.initial_intercept_variance is not None:
                prior = self.initial_intercept_variance
        blocks = self._gaussian.block_views()[1]
        return self._by_label([block.get(INTERCEPT, prior) for block in blocks])

    @property
    def covariances(self) -> dict:
        """The covariance matrix of the learned weights as ``{(f, g): Sigma_fg}``, a copy.

        Binary: keyed by pairs of feature names; multi-class: by pairs of ``(label, feature)``.
        ``covariance="full"`` gives every pair of learned weights (both orders; features of
        different labels correlate once a multi-class update has touched both); ``"arrowhead"``
        too (two weights of a label correlate through its intercept; labels are independent);
        ``"diagonal"`` only the pairs ``(f, f)``, whose value is `variances`' (every other
        covariance is 0). The intercept's row is named `INTERCEPT`. Features never learned are
        absent: independent of everything, variance `initial_variance`.
        (The constructor's `covariance` names the kind of matrix; this is the matrix.)
        """
        gaussian = self._gaussian
        if isinstance(gaussian, (ArrowheadGaussian, PythonArrowheadGaussian, FullGaussian)):
            keys = [self._public_key(b, f) for b, f in gaussian.index]
            rows = gaussian.cov.tolist() if keys else []
            return {(k, g): value for k, row in zip(keys, rows) for g, value in zip(keys, row)}
        return {
            (self._public_key(b, f),) * 2: s
            for b, block in enumerate(gaussian.block_views()[1])
            for f, s in block.items()
        }

    def _public_key(self, block: int, feature):
        """The name of a weight in the public views: its feature, or ``(label, feature)``."""
        return feature if self.is_binary else (self.classes_[block], feature)

    # -- probabilities ------------------------------------------------------------------------
    # -- probabilities ------------------------------------------------------------------------

    @property
    def temperature(self) -> float:
        """a, the temperature of the probabilities: 1 unless `calibrate` (see above)."""
        if not self.calibrate or self._calibration is None:
            return 1.0
        return calibration.best(self._calibration)

    def _binary_proba(self, m: float, v: float) -> dict:
        """The probabilities of a binary model's two labels, its score's mean m and variance v:
        ``P(positive label) = Phi(a m / sqrt(v))``, a the temperature."""
        classes = self.classes_
        p = 0.5 * math.erfc(-(self.temperature * _standardised(m, v)) / math.sqrt(2.0))
        return {classes[0]: 1.0 - p, classes[1]: p}

    def _pairwise(self, x: dict, scores: list[float]) -> list[list[float]]:
        """The standardised pairwise margins ``t[z][k] = m_zk / s`` of x, given its scores (two
        labels or more; the diagonal is 0), s the standard deviation of the margin between the
        two best-scoring labels (see the class docstring): one scale for every pair, so each
        row's terms grow with its label's score."""
        cov = self._gaussian.score_covariance(x)
        if self.is_binary:
            t = _standardised(scores[0], cov[0, 0])
            return [[0.0, -t], [t, 0.0]]
        cov = cov.tolist()  # Python floats: an overflow is inf, silently, as in the binary case
        best = max(range(len(scores)), key=scores.__getitem__)
        second = max((k for k in range(len(scores)) if k != best), key=scores.__getitem__)
        v = cov[best][best] + cov[second][second] - 2.0 * cov[best][second]
        return [
            [_standardised(s_z - s_k, v) if k != z else 0.0 for k, s_k in enumerate(scores)]
            for z, s_z in enumerate(scores)
        ]

    def predict_proba_one(self, x: dict) -> dict:  # type: ignore[override]  # no **kwargs, as river's own models
        """``{label: probability}`` from the Gaussian margins (see the class docstring); empty
        before any label, certain with one.

        Parameters
        ----------
        x
            The features, ``{name: number}``.
        """
        native = self._native_score(x, True)  # as predict_one, with the score's variance
        if native is None:
            return self._general_predict_proba_one(x)
        if len(self.classes_) < 2:
            return {c: 1.0 for c in self.classes_}
        return self._binary_proba(*native)

    def _general_predict_proba_one(self, x: dict) -> dict:
        classes = self.classes_
        x = self._features(x)
        scores = self._scores(x)  # validates x, even before two labels are known
        if len(classes) < 2:
            return {c: 1.0 for c in classes}
        if self.is_binary:
            return self._binary_proba(scores[0], self._gaussian.score_covariance(x)[0, 0])
        t, a = self._pairwise(x, scores), self.temperature
        logp = [  # exactly rounded sums: a larger score never gets a smaller log-probability
            _sum_of_logs([normal_log_cdf(a * t_zk) for k, t_zk in enumerate(row) if k != z])
            for z, row in enumerate(t)
        ]
        top = max(logp)
        weights = [math.exp(lp - top) for lp in logp]
        total = sum(weights)
        return {c: w / total for c, w in zip(classes, weights)}
