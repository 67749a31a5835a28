"""Voted regularized dual averaging (Xu, Gao, Xiao and Regan 2014)."""

from __future__ import annotations

import heapq
import math
from array import array

import numpy as np

from . import calibration, engine
from .base import INTERCEPT, LinearClassifier
from .validation import check_features, is_real

__all__ = ["VotedRDA"]


def _raise_bad_input(x: dict) -> None:
    """Name the offending feature, or report an overflow of finite values."""
    check_features(x)
    raise ValueError("feature values too large: the score overflows float64")


# river_cw._rda, the compiled engine with the same numbers (see `_compiled_engine`), or None
_compiled = engine.rda
if _compiled is not None:
    _compiled.connect(raise_bad_input=_raise_bad_input)


def _softmax(z: np.ndarray, temperature: float) -> np.ndarray:
    """``softmax(temperature z)``, shifted before scaling: scores near the float64 limit give
    0 and 1, not an overflow."""
    with np.errstate(over="ignore"):
        e = np.exp(temperature * (z - z.max()))
    return e / e.sum()


# The state of the Python engine, in the order a pickle holds it; the compiled engine exports and
# loads these attributes, so pickles do not know which engine wrote them.
_STATE = (
    "_blocks",
    "_cuts",
    "_live_cuts",
    "_k",
    "_c",
    "_t",
    "_inv",
    "_sqr",
    "_pushed",
    "_counts",
    "_history",
)


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
        self._start(self._compiled_engine())
        self.n_skipped_updates = 0  # updates float64 could not express (nothing was written)
        self._calibration = np.zeros(len(calibration.TEMPERATURES))  # hinge: each one's log loss

    # -- the engines ----------------------------------------------------------------------------

    def _compiled_engine(self):
        """A new compiled engine (`river_cw._rda`) where it serves this model: built, and the
        prediction is not the vote (whose voters the Python engine keeps); else None."""
        plain = _plain(self.l1) and _plain(self.eta)
        if _compiled is None or self.prediction == "vote" or not plain:
            return None
        return _compiled.Engine(
            float(self.l1),
            float(self.eta),
            self.loss == "log",
            self.conservative,
            self.prediction == "last",
        )

    def _start(self, engine) -> None:
        """An empty state: the compiled `engine`'s, or (None) the Python engine's attributes.

        The compiled engine keeps what the attributes below keep, in C (the same numbers), and
        queues the calibration's examples: `_calibration` is current after
        `_flush_calibration`. The Python engine is the readable reference."""
        self._engine = engine
        if engine is not None:
            return
        # One dict per block, feature -> record [s, first, closed, inv0, sqr0, inv1, sqr1]:
        # s the sum of the feature's subgradients, unchanged since update `first`; closed the sum
        # of c_j w_j over the predictors j < first; (inv0, sqr0) the prefix sums below at
        # first - 1; (inv1, sqr1) those at the last j with w_j != 0, once it is past (else None).
        self._blocks: list[dict] = [{}]
        # The records still to be cut, as a heap of (last non-zero j, n, first, record).
        self._cuts: list = []
        self._live_cuts = 0  # the heap's size after its last clean-up
        self._k = 0  # index of the current predictor w_k (w_0 = 0)
        self._c = 0  # examples counted for w_k so far
        self._t = 0  # examples seen
        self._inv = 0.0  # sum of c_j / sqrt(j) over the retired predictors 1 <= j < k
        self._sqr = 0.0  # sum of c_j * sqrt(j) over the same
        self._pushed = 0  # tie-breaker of the heap
        # vote only: c_j of the retired predictors 1 <= j < k, and one dict per block,
        # feature -> (updates, values), the history of s.
        self._counts = array("q")
        self._history: list[dict] = [{}]

    def _flush_calibration(self) -> None:
        """Add the compiled engine's queued calibration examples to `_calibration`: their log
        losses in one batch, summed in their order (the numbers of `_calibrate`, one by one)."""
        if self._engine is None:
            return
        data, width = self._engine.take_calibration()
        if not data:
            return
        rows = np.frombuffer(data).reshape(-1, width)
        # the running sums, then the batch's losses: summed along the slow axis, numpy adds the
        # rows one after the other, as `_calibrate` adds them
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
        """The Python engine's attributes, whichever engine holds the state."""
        self._flush_calibration()
        state = {k: v for k, v in vars(self).items() if k != "_engine" and k not in _STATE}
        if self._engine is None:
            engine = vars(self)
        else:
            engine = self._engine.export()
            engine["_counts"], engine["_history"] = array("q"), [{} for _ in engine["_blocks"]]
        return {**state, **{name: engine[name] for name in _STATE}}

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        self._engine = self._compiled_engine()
        if self._engine is not None:
            self._engine.load({name: vars(self).pop(name) for name in _STATE})

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
        # float weight > 0, x read as `as_floats` reads it); any other case, and any x it would
        # refuse (to name the bad feature), goes the general way.
        engine = self._engine
        if engine is not None:
            intercept = INTERCEPT if self.learn_intercept else None
            outcome = engine.learn_one(x, y, w, self._class_index, intercept)
            if outcome >= 0:
                if outcome == 1:
                    self._flush_calibration()
                elif outcome == 2:
                    self.n_skipped_updates += 1
                return
        LinearClassifier.learn_one(self, x, y, w)

    learn_one.__doc__ = LinearClassifier.learn_one.__doc__

    # -- closed forms: each returns a function of a record, with the model's counters bound -----

    def _newest(self):
        """rec -> ``w_k^(j) = -(sqrt(k) / eta) shrink(s / k, l1)`` for the current k."""
        threshold = self.l1 * self._k
        scale = self.eta * math.sqrt(self._k or 1)

        def newest(rec: list) -> float:
            s = rec[0]
            return -(s - math.copysign(threshold, s)) / scale if abs(s) > threshold else 0.0

        return newest

    def _totals(self, divisor: float = 1.0):
        """rec -> ``sum_j c_j w_j^(f)`` over all predictors so far (c_k the count so far),
        divided by `divisor` term by term (the average of a total beyond float64).

        While s^(f) = s, from update ``first`` on, ``w_j^(f) = -(s / sqrt(j) - l1 sign(s)
        sqrt(j)) / eta`` for ``j < |s| / l1`` and 0 after, so the sum over this open segment is a
        difference of the prefix sums of ``c_j / sqrt(j)`` and ``c_j sqrt(j)``: from the
        record's snapshot at ``first - 1`` to now, or to the snapshot at the last non-zero j."""
        r = math.sqrt(self._k or 1)
        inv_k, sqr_k = self._inv + self._c / r, self._sqr + self._c * r
        l1, eta = self.l1, self.eta

        def total(rec: list) -> float:
            s, _, closed, inv0, sqr0, inv1, sqr1 = rec
            if inv1 is None:
                inv1, sqr1 = inv_k, sqr_k
            share = math.copysign(l1, s) * ((sqr1 - sqr0) / divisor)  # x / 1.0 is x, exactly
            return closed / divisor - (s * ((inv1 - inv0) / divisor) - share) / eta

        return total

    def _weight(self) -> tuple:
        """(rec -> weight up to a divisor, the divisor) of the predictor used for prediction."""
        if self.prediction == "last":
            return self._newest(), 1
        return self._totals(), self._t or 1

    # -- scores ---------------------------------------------------------------------------------

    def _dot(self, x: dict, weight, divisor=1) -> list[float]:
        """``w_b . x / divisor`` for every block, w given per record; validates x (fast path, then
        check_features)."""
        try:  # fsum is correctly rounded: the score does not depend on the order of the features
            scores = [
                math.fsum([v * (weight(r) if (r := block.get(f)) else 0.0) for f, v in x.items()])
                / divisor
                for block in self._blocks
            ]
            finite = math.isfinite(math.fsum(scores))
        except (TypeError, ValueError, OverflowError):  # fsum: "-inf + inf", intermediate overflow
            finite = False
        if not finite:
            _raise_bad_input(x)
        return scores

    def _learning_scores(self, x: dict) -> list[float]:
        if self._engine is not None:
            return self._engine.scores(x, False)
        return self._dot(x, self._newest())

    def _scores(self, x: dict) -> list[float]:
        if self._engine is not None:
            return self._engine.scores(x, True)
        if self.prediction == "vote":
            return self._votes(x)
        return self._dot(x, *self._weight())

    def _voter_scores(self, x: dict) -> np.ndarray:
        """Scores of every predictor w_1..w_k, one row per block; validates x."""
        try:
            finite = math.isfinite(math.fsum([v * 0.0 for v in x.values()]))
        except TypeError:
            finite = False
        if not finite:
            check_features(x)
        k, l1 = self._k, self.l1
        ks = np.arange(1, k + 1)
        rows = np.zeros((len(self._history), k))
        for row, history in zip(rows, self._history):
            found = [(v, h) for f, v in x.items() if (h := history.get(f)) is not None]
            if not found:
                continue
            # The histories of all the features, one after the other: feature i's updates are
            # shifted by i (k + 1), so one search finds s^(f) at every (feature, predictor).
            lengths = [len(h[0]) for _, h in found]
            shifts = np.arange(len(found)) * (k + 1)
            at = np.concatenate([np.array(h[0]) for _, h in found]) + np.repeat(shifts, lengths)
            values = np.concatenate([np.array(h[1]) for _, h in found])
            starts = np.cumsum([0] + lengths[:-1])
            idx = np.searchsorted(at, shifts[:, None] + ks, side="right") - 1
            s = np.where(idx >= starts[:, None], values[np.maximum(idx, 0)], 0.0)
            with np.errstate(over="ignore", invalid="ignore"):  # overflows are reported below
                w = -(s - np.copysign(l1 * ks, s)) / (self.eta * np.sqrt(ks))
                terms = np.array([v for v, _ in found], dtype=float)[:, None] * np.where(
                    np.abs(s) > l1 * ks, w, 0.0
                )
                # summed in sorted order, so that the order of the features does not matter
                row[:] = np.sort(terms, axis=0).sum(axis=0)
        if not np.isfinite(rows).all():
            _raise_bad_input(x)
        return rows

    def _votes(self, x: dict) -> list[float]:
        """Binary: the normalized vote margin in [-1, 1]; multi-class: each label's vote share."""
        rows = self._voter_scores(x)
        counts = np.append(np.array(self._counts, dtype=float), self._c)[: self._k]
        total = counts.sum()
        if total == 0:
            return [0.0] * len(rows)
        if len(rows) == 1:
            return [float(counts @ np.sign(rows[0])) / total]
        winners = rows.argmax(axis=0)
        return [float(counts[winners == b].sum()) / total for b in range(len(rows))]

    # -- hooks ----------------------------------------------------------------------------------

    def _add_block(self) -> None:
        if self._engine is not None:
            self._flush_calibration()  # its rows have the logits of the old blocks
            return self._engine.add_block()
        self._blocks.append({})
        self._history.append({})

    def _lift(self) -> None:
        if self._engine is not None:
            self._flush_calibration()
            return self._engine.lift()
        self._blocks.insert(0, {})
        self._history.insert(0, {})

    def _negate(self) -> None:
        """The model of ``-y``: every sum of subgradients ``s`` and every closed sum of weights is
        odd in the labels' sign (the counts and the cuts, which see ``|s|``, are not)."""
        self._flush_calibration()
        engine = self._engine
        state = vars(self) if engine is None else engine.export()
        for block in state["_blocks"]:
            for rec in block.values():
                rec[0], rec[2] = -rec[0], -rec[2]
        if engine is None:
            for history in self._history:
                for _, values in history.values():
                    for i, value in enumerate(values):
                        values[i] = -value
            return
        self._engine = self._compiled_engine()  # the compiled state, negated, in a new engine
        self._engine.load(state)

    def _layout(self):
        if self._engine is not None:
            return self._engine.layout()
        return list(self._blocks), list(self._history)

    def _restore_layout(self, layout) -> None:
        if self._engine is not None:
            self._flush_calibration()
            return self._engine.restore_layout(layout)
        self._blocks, self._history = layout

    def _logits(self, scores: list[float]) -> np.ndarray:
        return np.array([0.0, scores[0]] if self.is_binary else scores)

    def _calibrate(self, x: dict, label: int, w: float) -> None:
        """Add this example's log loss (times w), under every candidate temperature, to the
        running sums.

        x was validated by the learning scores; the averaged ones may still overflow, and then
        the example is not used for calibration."""
        try:
            z = self._logits(self._scores(x))
        except ValueError:
            return
        losses = calibration.softmax_losses(z, label)
        if np.isfinite(losses).all():  # scores near the float64 limit: skip, for every candidate
            self._calibration += losses if w == 1.0 else w * losses

    def _update(self, x: dict, pairs: tuple[tuple[int, int], ...], w: float) -> None:
        if self._engine is not None:  # the code below, in C
            calibrate = self.loss == "hinge" and len(self.classes_) > 1
            outcome = self._engine.update(x, pairs, w, calibrate)
            if outcome == 1:
                self._flush_calibration()
            elif outcome == 2:
                self.n_skipped_updates += 1
            return
        scores = self._learning_scores(x)  # validates x before anything changes
        terms = [sign * scores[b] for b, sign in pairs]
        try:
            margin = math.fsum(terms)
        except OverflowError:  # two finite scores whose difference is beyond float64
            margin = sum(terms)
        plan = None
        if not self.conservative or margin <= 0:
            if self.loss == "hinge":
                step = 1.0 if margin < 1 else 0.0
            elif margin < 0:  # -d/dm log(1 + exp(-m)) = sigmoid(-m)
                step = 1.0 / (1.0 + math.exp(margin))
            else:
                step = math.exp(-margin) / (1.0 + math.exp(-margin))
            plan = self._plan(x, pairs, step if w == 1.0 else w * step)
            if plan is None:
                self.n_skipped_updates += 1
                return
        if self.loss == "hinge" and self.prediction != "vote" and len(self.classes_) > 1:
            label = pairs[0][0] if not self.is_binary else int(pairs[0][1] == 1)
            self._calibrate(x, label, w)
        if plan is not None:
            self._step(plan)
        self._c += 1
        self._t += 1

    def _plan(self, x: dict, pairs: tuple[tuple[int, int], ...], step: float) -> list | None:
        """The subgradient entries ``(block, feature, -step * sign * x_f)`` of an update, or
        None when a sum it would store is beyond float64 (then nothing is written)."""
        if step == 0.0:
            return []
        total = self._totals()  # before retiring w_k it already gives the sums up to k
        plan = []
        for b, sign in pairs:
            block = self._blocks[b]
            for f, v in x.items():
                if v == 0:
                    continue
                g = -step * sign * v
                rec = block.get(f)
                if rec is None:
                    finite = math.isfinite(g)
                else:
                    finite = math.isfinite(rec[0] + g) and math.isfinite(total(rec))
                if not finite:
                    return None
                plan.append((b, f, g))
        return plan

    def _step(self, plan: list) -> None:
        """Retire w_k, add the planned subgradient entries, start w_{k+1}."""
        k, vote = self._k, self.prediction == "vote"
        if k > 0:
            r = math.sqrt(k)
            self._inv += self._c / r
            self._sqr += self._c * r
            if vote:
                self._counts.append(self._c)
        cuts = self._cuts
        while cuts and cuts[0][0] <= k:  # w_k was the last non-zero predictor of these records
            _, _, first, rec = heapq.heappop(cuts)
            if rec[1] == first:  # still the same segment
                rec[5], rec[6] = self._inv, self._sqr
        self._k, self._c = k + 1, 0
        if not plan:
            return
        total = self._totals()  # c_{k+1} = 0: the sums up to k
        for b, f, g in plan:
            block = self._blocks[b]
            rec = block.get(f)
            if rec is None:
                rec = block[f] = [g, k + 1, 0.0, self._inv, self._sqr, None, None]
            else:
                rec[:] = [rec[0] + g, k + 1, total(rec), self._inv, self._sqr, None, None]
            self._schedule_cut(rec)
            if vote:
                hist = self._history[b].setdefault(f, (array("q"), array("d")))
                hist[0].append(k + 1)
                hist[1].append(rec[0])

    def _schedule_cut(self, rec: list) -> None:
        """Find when the weights of a newly opened segment reach zero: j >= |s| / l1."""
        bound = abs(rec[0]) / self.l1 if self.l1 > 0 else math.inf
        if bound == math.inf:
            return
        last = math.ceil(bound) - 1
        if last < rec[1]:  # zero from the start: the segment adds nothing
            rec[5], rec[6] = rec[3], rec[4]
            return
        self._pushed += 1
        heapq.heappush(self._cuts, (last, self._pushed, rec[1], rec))
        if len(self._cuts) > 2 * self._live_cuts + 1024:  # drop the entries of closed segments
            self._cuts = [e for e in self._cuts if e[3][1] == e[2]]
            heapq.heapify(self._cuts)
            self._live_cuts = len(self._cuts)

    # -- river API ------------------------------------------------------------------------------

    def predict_proba_one(self, x: dict) -> dict:  # type: ignore[override]  # no **kwargs, as river's own models
        """``{label: probability}``: a softmax of the scores at the temperature (the share of
        the voters' votes with ``prediction="vote"``); empty before any label.

        Parameters
        ----------
        x
            The features, ``{name: number}``.
        """
        scores = self._scores(self._features(x))  # validates x
        if len(self.classes_) < 2:
            return {c: 1.0 for c in self.classes_}
        if self.prediction == "vote":
            if self.is_binary:
                p = (1.0 + scores[0]) / 2.0
                return {self.classes_[0]: 1.0 - p, self.classes_[1]: p}
            if sum(scores) == 0:
                return {c: 1.0 / len(self.classes_) for c in self.classes_}
            return dict(zip(self.classes_, scores))
        probs = _softmax(self._logits(scores), self.temperature)
        return dict(zip(self.classes_, probs.tolist()))

    # -- inspection -----------------------------------------------------------------------------

    @property
    def temperature(self) -> float:
        if self.loss == "log":
            return 1.0
        self._flush_calibration()
        return calibration.best(self._calibration)

    @property
    def n_updates(self) -> int:
        return self._k if self._engine is None else self._engine.k

    def _weight_blocks(self) -> list[dict]:
        if self._engine is not None:
            return self._engine.weight_blocks()
        if self.prediction == "last":
            weight = self._newest()
        else:
            total, divisor = self._totals(), self._t or 1
            averaged = self._totals(divisor)

            def weight(rec: list) -> float:
                w = total(rec)  # the average of a total beyond float64 may not be
                return w / divisor if math.isfinite(w) else averaged(rec)

        return [{f: w for f, r in b.items() if (w := weight(r))} for b in self._blocks]

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
