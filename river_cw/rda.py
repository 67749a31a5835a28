"""Voted regularized dual averaging (Xu, Gao, Xiao and Regan 2014).

`VotedRDA` is the river classifier: it validates, registers labels, gives probabilities and
calibrates their temperature. Its weights and steps are kept by an engine with the same numbers
either way: the compiled `river_cw._engines._rda` where it is built, or `river_cw._engines.rda_engine.PythonRDA`,
the readable reference (and the only one that keeps the voters of ``prediction="vote"``).
"""

from __future__ import annotations

import math
from array import array

import numpy as np

from . import calibration, engine
from ._engines.rda_engine import STATE, PythonRDA, logits, raise_bad_input
from .base import INTERCEPT, LinearClassifier
from .labels import predicted_labels
from .validation import is_real

__all__ = ["VotedRDA"]

# river_cw._engines._rda, the compiled engine with the same numbers (see `_new_engine`), or None
_compiled = engine.rda
if _compiled is not None:
    _compiled.connect(raise_bad_input=raise_bad_input)


def _softmax(z: np.ndarray, temperature: float) -> np.ndarray:
    """``softmax(temperature z)``, shifted before scaling: scores near the float64 limit give
    0 and 1, not an overflow."""
    with np.errstate(over="ignore"):
        e = np.exp(temperature * (z - z.max()))
    return e / e.sum()


def _plain(number) -> bool:
    """A hyperparameter the compiled engine reads exactly: a float, or an int a float holds."""
    return type(number) is float or (type(number) is int and number <= 2**53)


class VotedRDA(LinearClassifier):
    """Voted regularized dual averaging (voted RDA) with l1 regularization.

    The RDA update of Xiao (2010) applied only to the examples the current predictor gets wrong,
    like the voted perceptron. Let ``k`` count the updates and ``s_k`` sum the subgradients
    ``g_1, ..., g_k`` of the loss at the predictors that made them (Algorithm 1). With
    ``h(w) = ||w||^2 / 2`` and ``beta_k = eta sqrt(k)`` the step

        w_{k+1} = argmin_w { <s_k / k, w> + l1 ||w||_1 + (beta_k / (2k)) ||w||^2 }

    has the closed form ``w_{k+1} = -(sqrt(k) / eta) shrink(s_k / k, l1)`` coordinate-wise, with
    ``shrink(a, l1) = sign(a) max(|a| - l1, 0)``: a weight is exactly zero unless the average
    subgradient of its feature exceeds ``l1`` in magnitude, which is where the sparsity comes from.

    Predictor ``w_k`` survives ``c_k`` examples, counted as in the voted perceptron (the example
    that triggers an update counts for the new predictor). The prediction uses one of:

    * ``"average"``: the ``c``-weighted average ``sum_k c_k w_k / sum_k c_k`` (the averaged
      prediction of Algorithm 2). Kept lazily per feature: while ``s^(j)`` is unchanged,
      ``w_k^(j) = -(s^(j) / sqrt(k) - l1 sign(s^(j)) sqrt(k)) / eta`` up to the index
      ``|s^(j)| / l1`` where it reaches zero, so prefix sums over ``k`` of ``c_k / sqrt(k)`` and
      ``c_k sqrt(k)``, snapshot per feature where its segment starts and where it reaches zero
      (a heap of pending cuts), settle a coordinate in O(1). An update costs O(number of
      features of x), amortized, whatever the dimension; memory is O(d). The support of the
      average is the union of the supports of all predictors, so it is much denser than the
      newest one (books sentiment, ``l1=0.01``: 19,838 against 673 non-zero weights).
    * ``"vote"``: the exact majority vote ``sign(sum_k c_k sign(w_k . x))`` of Algorithm 2 (for
      several classes, each predictor votes for its best-scoring label with weight ``c_k``). It
      keeps every predictor, stored as the history of each ``s^(j)``: memory grows by one entry
      per feature per update (the non-zeros of all mistaken examples), and a prediction costs
      O(k * number of features of x).
    * ``"last"``: the newest predictor ``w_k``, the sparse choice.

    Multi-class models (three or more labels) keep one block per label and update along the
    difference vector against the best-scoring wrong label (see `river_cw.base`); ``l1`` applies
    to every block.

    Probabilities. ``vote``: the ``c``-weighted share of the votes (binary: ``(1 + v) / 2`` for the
    positive label, ``v`` the normalized vote margin). Otherwise the scores ``f`` pass through a
    logistic link: ``P(positive) = sigmoid(a f)`` for two labels, ``softmax(a f)`` over the
    blocks for more. Either way the probabilities rank the labels as their scores do, so
    `predict_one` (the best score) is the label of largest probability. With the log loss ``a = 1``: the model is trained as a logistic regression. The
    hinge loss fixes only the sign of the score, not its scale, so ``a`` is a temperature fitted
    online (`river_cw.calibration`): before each update the model scores the example, and ``a``
    is the value, on a log grid from 2^-32 to 2^16, with the least cumulative log loss on these
    progressive predictions. Until the stream shows otherwise the grid's smallest value wins the
    tie, so a fresh model is (nearly) uniform.

    Parameters
    ----------
    l1
        lambda, the l1 regularization strength (``0`` gives a dual-averaging perceptron).
    eta
        gamma of the paper: ``beta_k = eta sqrt(k)``. With the hinge loss and ``conservative``
        the weights only scale with ``1 / eta`` and predictions do not depend on it.
    loss
        ``"hinge"`` (subgradient ``-y x`` below margin 1) or ``"log"`` (logistic loss).
    prediction
        ``"average"``, ``"vote"`` or ``"last"``, see above.
    conservative
        Update on mistakes only (``y w_k . x <= 0``), the voted RDA. ``False`` is plain RDA: every
        example is a step (``k`` counts examples) with the loss subgradient at ``w_k``.
    learn_intercept
        Learn an intercept, the weight of a constant feature 1 (see `intercept`); like every
        weight it is l1-regularised.

    Attributes
    ----------
    n_updates
        k, the number of updates (mistakes when ``conservative``).
    weights
        The averaged weights (``average``, and for ``vote`` the ``c``-weighted average of the
        voters, whose support is the union of theirs) or the newest ones (``last``), as
        ``{feature: weight}`` when binary and ``{label: {feature: weight}}`` otherwise.
    n_nonzero
        The number of non-zero entries of `weights`.
    temperature
        a, the temperature of the probabilities (see above): 1 with the log loss, calibrated
        with the hinge loss; the vote does not use it.

    Notes
    -----
    A sample weight ``learn_one(x, y, w)`` weighs the example's loss: its subgradient is
    multiplied by w (with the conservative hinge loss: the update of the example ``w x``), and so is
    its log loss in the calibration of the temperature. The counts ``c_k`` count examples.

    Examples
    --------

    Two informative features among a thousand noisy ones:

    >>> import random
    >>> from river import evaluate, metrics
    >>> import river_cw

    >>> def stream(n, seed=42):
    ...     rng = random.Random(seed)
    ...     for _ in range(n):
    ...         x = {f"noise{i}": rng.gauss(0, 1) for i in rng.sample(range(1000), 20)}
    ...         x["a"], x["b"] = rng.gauss(0, 1), rng.gauss(0, 1)
    ...         yield x, x["a"] + 0.5 * x["b"] > 0

    >>> for l1 in (0.0, 0.2):
    ...     model = river_cw.VotedRDA(l1=l1)
    ...     metric = evaluate.progressive_val_score(stream(3000), model, metrics.Accuracy())
    ...     print(f"l1={l1}: {metric}, {model.n_nonzero} non-zero weights")
    l1=0.0: Accuracy: 93.46%, 985 non-zero weights
    l1=0.2: Accuracy: 98.10%, 68 non-zero weights

    References
    ----------
    [^1]: Xu, T., Gao, J., Xiao, L. and Regan, A., 2014. Online classification using a voted RDA
    method. AAAI 28, 2170-2176 (arXiv:1310.5007).
    [^2]: Xiao, L., 2010. Dual averaging methods for regularized stochastic learning and online
    optimization. JMLR 11, 2543-2596.
    [^3]: Freund, Y. and Schapire, R. E., 1999. Large margin classification using the perceptron
    algorithm. Machine Learning 37(3), 277-296.

    """

    def __init__(
        self,
        l1: float = 0.0,
        eta: float = 1.0,
        loss: str = "hinge",
        prediction: str = "average",
        conservative: bool = True,
        learn_intercept: bool = True,
    ):
        if not is_real(l1) or not 0 <= l1 < math.inf:
            raise ValueError(f"l1 must be a finite number >= 0, got {l1!r}")
        if not is_real(eta) or not 0 < eta < math.inf:
            raise ValueError(f"eta must be a finite number > 0, got {eta!r}")
        if loss not in ("hinge", "log"):
            raise ValueError(f"loss must be 'hinge' or 'log', got {loss!r}")
        if prediction not in ("average", "vote", "last"):
            raise ValueError(f"prediction must be 'average', 'vote' or 'last', got {prediction!r}")
        if not isinstance(conservative, bool):
            raise ValueError(f"conservative must be True or False, got {conservative!r}")
        super().__init__(learn_intercept)
        self.l1 = l1
        self.eta = eta
        self.loss = loss
        self.prediction = prediction
        self.conservative = conservative
        self._engine = self._new_engine()
        self.n_skipped_updates = 0  # updates float64 could not express (nothing was written)
        self._calibration = np.zeros(len(calibration.TEMPERATURES))  # hinge: each one's log loss

    # -- the engines ----------------------------------------------------------------------------

    def _new_engine(self, compiled: bool = True):
        """A new, empty engine: the compiled one (`river_cw._engines._rda`) where it serves this model
        (built, asked for, and the prediction is not the vote, whose voters only the Python
        engine keeps), else the Python one (`river_cw._engines.rda_engine`)."""
        plain = _plain(self.l1) and _plain(self.eta)
        if not compiled or _compiled is None or self.prediction == "vote" or not plain:
            return PythonRDA(
                self.l1, self.eta, self.loss == "log", self.conservative, self.prediction
            )
        return _compiled.Engine(
            float(self.l1),
            float(self.eta),
            self.loss == "log",
            self.conservative,
            self.prediction == "last",
        )

    def _flush_calibration(self) -> None:
        """Add the engine's queued calibration examples (the hinge loss's temperature) to
        `_calibration`: their log losses in one batch, summed in their order (the same numbers
        as one by one)."""
        data, width = self._engine.take_calibration()
        if not data:
            return
        rows = np.frombuffer(data).reshape(-1, width)
        # the running sums, then the batch's losses: summed along the slow axis, numpy adds the
        # rows one after the other
        sums = np.empty((len(rows) + 1, len(self._calibration)))
        sums[0] = self._calibration
        losses = calibration.softmax_losses(rows[:, 2:], rows[:, 0].astype(np.intp), sums[1:])
        kept = np.isfinite(losses).all(axis=1)  # scores near the float64 limit: skipped
        if not kept.all():
            sums = sums[np.concatenate(([True], kept))]
        weights = rows[kept, 1:2]
        if not (weights == 1.0).all():
            sums[1:] *= weights  # times w
        self._calibration = np.add.reduce(sums, axis=0)

    def __getstate__(self) -> dict:
        """The Python engine's attributes (`river_cw._engines.rda_engine.STATE`), whichever engine holds
        the state."""
        self._flush_calibration()
        state = {k: v for k, v in vars(self).items() if k != "_engine"}
        engine = self._engine.export()
        if not isinstance(self._engine, PythonRDA):  # the compiled engine keeps no voters
            engine["_counts"], engine["_history"] = array("q"), [{} for _ in engine["_blocks"]]
        return {**state, **{name: engine[name] for name in STATE}}

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        self._engine = self._new_engine()
        self._engine.load({name: vars(self).pop(name) for name in STATE})

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
            The sample weight, a finite number >= 0 (see the class's Notes); ``w=0``
            validates `x` and `y` and changes nothing.
        """
        # The common case in one call of the compiled engine (a binary model, a known label, a
        # float weight > 0, x read as `as_floats` reads it); any other case, any x it would
        # refuse (to name the bad feature), and the Python engine go the general way (-1).
        intercept = INTERCEPT if self.learn_intercept else None
        outcome = self._engine.learn_one(x, y, w, self._class_index, intercept)
        if outcome < 0:
            LinearClassifier.learn_one(self, x, y, w)
        else:
            self._outcome(outcome)

    learn_one.__doc__ = LinearClassifier.learn_one.__doc__

    def _outcome(self, outcome: int) -> None:
        """Act on what the engine says of an update: 1, calibration rows to take; 2, skipped."""
        if outcome == 1:
            self._flush_calibration()
        elif outcome == 2:
            self.n_skipped_updates += 1

    # -- scores ---------------------------------------------------------------------------------

    def _learning_scores(self, x: dict) -> list[float]:
        return self._engine.scores(x, False)

    def _scores(self, x: dict) -> list[float]:
        return self._engine.scores(x, True)

    # -- hooks ----------------------------------------------------------------------------------

    def _add_block(self) -> None:
        self._flush_calibration()  # its rows have the logits of the old blocks
        self._engine.add_block()

    def _lift(self) -> None:
        self._flush_calibration()
        self._engine.lift()

    def _negate(self) -> None:
        """The model of ``-y``: every sum of subgradients ``s`` and every closed sum of weights is
        odd in the labels' sign (the counts and the cuts, which see ``|s|``, are not)."""
        self._flush_calibration()
        state = self._engine.export()
        for block in state["_blocks"]:
            for rec in block.values():
                rec[0], rec[2] = -rec[0], -rec[2]
        for history in state.get("_history", ()):
            for _, values in history.values():
                for i, value in enumerate(values):
                    values[i] = -value
        # the negated state in a new engine of the same kind
        self._engine = self._new_engine(compiled=not isinstance(self._engine, PythonRDA))
        self._engine.load(state)

    def _layout(self):
        return self._engine.layout()

    def _restore_layout(self, layout) -> None:
        self._flush_calibration()
        self._engine.restore_layout(layout)

    def _update(
        self, x: dict, pairs: tuple[tuple[int, int], ...], w: float, scores: list | None
    ) -> None:
        calibrate = self.loss == "hinge" and self.prediction != "vote" and len(self.classes_) > 1
        self._outcome(self._engine.update(x, pairs, w, calibrate))

    # -- river API ------------------------------------------------------------------------------

    def predict_proba_one(self, x: dict) -> dict:  # type: ignore[override]  # no **kwargs, as river's own models
        """``{label: probability}``: a softmax of the scores at the temperature (the share of
        the voters' votes with ``prediction="vote"``); empty before any label; certain of one
        label, unless it is a bool: then binary over both (`river_cw.labels.predicted_labels`).

        Parameters
        ----------
        x
            The features, ``{name: number}``.
        """
        scores = self._scores(self._features(x))  # validates x
        classes = predicted_labels(self.classes_)
        if len(classes) < 2:
            return {c: 1.0 for c in classes}
        if self.prediction == "vote":
            if self.is_binary:
                p = (1.0 + scores[0]) / 2.0
                return {classes[0]: 1.0 - p, classes[1]: p}
            if sum(scores) == 0:
                return {c: 1.0 / len(classes) for c in classes}
            return dict(zip(classes, scores))
        probs = _softmax(np.array(logits(scores)), self.temperature)
        return dict(zip(classes, probs.tolist()))

    # -- inspection -----------------------------------------------------------------------------

    @property
    def temperature(self) -> float:
        if self.loss == "log":
            return 1.0
        self._flush_calibration()
        return calibration.best(self._calibration)

    @property
    def n_updates(self) -> int:
        return self._engine.k

    def _weight_blocks(self) -> list[dict]:
        return self._engine.weight_blocks()

    @property
    def n_nonzero(self) -> int:
        w = self.weights
        return len(w) if self.is_binary else sum(len(block) for block in w.values())

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"l1": 0.01, "loss": "log", "prediction": "vote"}
        yield {"l1": 0.01, "prediction": "last", "conservative": False}
        yield {"l1": 0.001, "eta": 0.5, "loss": "log", "conservative": False}
