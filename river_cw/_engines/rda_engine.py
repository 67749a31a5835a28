"""Voted RDA's engine in Python: the readable reference of the compiled `river_cw._engines._rda.Engine`.

`river_cw.rda.VotedRDA` keeps its state in an engine, this one or the compiled one, which have
the same methods and give the same numbers to the bit (tests/engines/test_rda_compiled_vs_python.py); the compiled
engine serves where it is built, except the vote, whose voters only this one keeps. The model
validates, registers labels and calibrates the temperature; the engine holds the weights and
the counters, scores, and steps (Xu, Gao, Xiao and Regan 2014, Algorithm 1; the closed forms
are in `VotedRDA`'s docstring).

The state (`export`/`load`, the attributes `STATE` names, which is also what a pickle holds):
one dict per block, feature -> record ``[s, first, closed, inv0, sqr0, inv1, sqr1]``: ``s`` the
sum of the feature's subgradients, unchanged since update ``first``; ``closed`` the sum of
``c_j w_j`` over the predictors ``j < first``; ``(inv0, sqr0)`` the prefix sums of
``c_j / sqrt(j)`` and ``c_j sqrt(j)`` at ``first - 1``; ``(inv1, sqr1)`` those at the last ``j``
with ``w_j != 0``, once it is past (else None). A heap of pending cuts says when each open
segment reaches zero. For the vote, the counts ``c_j`` of the retired predictors and, per block,
each feature's history of ``s``.
"""

from __future__ import annotations

import heapq
import math
from array import array

import numpy as np

from ..validation import check_features

__all__ = ["STATE", "PythonRDA", "logits", "raise_bad_input"]

QUEUE_ROWS = (
    256  # calibration rows before the model is asked to add them up, as river_cw._engines._rda
)

# The engine's state, in the order a pickle holds it; the compiled engine exports and loads
# these attributes, so pickles do not know which engine wrote them.
STATE = (
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


def raise_bad_input(x: dict) -> None:
    """Name the offending feature, or report an overflow of finite values."""
    check_features(x)
    raise ValueError("feature values too large: the score overflows float64")


def logits(scores: list[float]) -> list[float]:
    """The logits of the labels: ``[0, f]`` for a binary model's score f, else the scores."""
    return [0.0, scores[0]] if len(scores) == 1 else scores


class PythonRDA:
    """The state and steps of voted RDA; see the module docstring.

    Parameters
    ----------
    l1
        The l1 regularization strength.
    eta
        ``beta_k = eta sqrt(k)``.
    log
        The logistic loss (else the hinge loss).
    conservative
        Update on mistakes only.
    prediction
        ``"average"``, ``"vote"`` or ``"last"``: which scores `scores(x, True)` gives.
    """

    def __init__(self, l1: float, eta: float, log: bool, conservative: bool, prediction: str):
        self.l1 = l1
        self.eta = eta
        self.log = log
        self.conservative = conservative
        self.prediction = prediction
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
        self._queued = array("d")  # calibration rows (label, w, logits...), see `update`

    # -- state ----------------------------------------------------------------------------------

    def export(self) -> dict:
        """The state's attributes (`STATE`), not copied."""
        return {name: getattr(self, name) for name in STATE}

    def load(self, state: dict) -> None:
        """Take the state's attributes (`STATE`), not copied."""
        for name in STATE:
            setattr(self, name, state[name])

    @property
    def k(self) -> int:
        """The number of updates."""
        return self._k

    @property
    def n_cuts(self) -> int:
        return len(self._cuts)

    @property
    def live_cuts(self) -> int:
        return self._live_cuts

    def add_block(self) -> None:
        self._blocks.append({})
        self._history.append({})

    def lift(self) -> None:
        self._blocks.insert(0, {})
        self._history.insert(0, {})

    def layout(self):
        return list(self._blocks), list(self._history)

    def restore_layout(self, layout) -> None:
        self._blocks, self._history = layout

    # -- closed forms: each returns a function of a record, with the counters bound -------------

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

    def weight_blocks(self) -> list[dict]:
        """Per block, ``{feature: weight}`` of the non-zero weights predictions use."""
        if self.prediction == "last":
            weight = self._newest()
        else:
            total, divisor = self._totals(), self._t or 1
            averaged = self._totals(divisor)

            def weight(rec: list) -> float:
                w = total(rec)  # the average of a total beyond float64 may not be
                return w / divisor if math.isfinite(w) else averaged(rec)

        return [{f: w for f, r in b.items() if (w := weight(r))} for b in self._blocks]

    # -- scores ---------------------------------------------------------------------------------

    def scores(self, x: dict, averaged: bool) -> list[float]:
        """One score per block: the newest predictor's (those an update is judged by), or, when
        `averaged`, the prediction's (see `prediction`); validates x."""
        if not averaged:
            return self._dot(x, self._newest())
        if self.prediction == "vote":
            return self._votes(x)
        return self._dot(x, *self._weight())

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
            raise_bad_input(x)
        return scores

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
            raise_bad_input(x)
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

    # -- learning -------------------------------------------------------------------------------

    def learn_one(self, x: dict, y, w: float, class_index: dict, intercept) -> int:
        """-1: this engine has no one-call path (the compiled engine's shortcut for a binary
        model's known label); the model goes the general way, to `update`."""
        return -1

    def update(self, x: dict, pairs: tuple[tuple[int, int], ...], w: float, calibrate: bool) -> int:
        """Learn from the difference vector of `pairs` with sample weight `w`: 0 when done,
        1 when the calibration queue is full (take it with `take_calibration`), 2 when a sum the
        update would store is beyond float64 (then nothing changed).

        With `calibrate`, the example's averaged logits, before the update, are queued with its
        label and weight (unless they overflow)."""
        scores = self.scores(x, False)  # validates x before anything changes
        terms = [sign * scores[b] for b, sign in pairs]
        try:
            margin = math.fsum(terms)
        except OverflowError:  # two finite scores whose difference is beyond float64
            margin = sum(terms)
        plan = None
        if not self.conservative or margin <= 0:
            if not self.log:
                step = 1.0 if margin < 1 else 0.0
            elif margin < 0:  # -d/dm log(1 + exp(-m)) = sigmoid(-m)
                step = 1.0 / (1.0 + math.exp(margin))
            else:
                step = math.exp(-margin) / (1.0 + math.exp(-margin))
            plan = self._plan(x, pairs, step if w == 1.0 else w * step)
            if plan is None:
                return 2
        if calibrate:
            self._queue(x, pairs, w)
        if plan is not None:
            self._step(plan)
        self._c += 1
        self._t += 1
        return 1 if len(self._queued) >= QUEUE_ROWS * self._width() else 0

    def _width(self) -> int:
        """The length of a calibration row: label, w and the logits."""
        return 2 + (2 if len(self._blocks) == 1 else len(self._blocks))

    def _queue(self, x: dict, pairs: tuple[tuple[int, int], ...], w: float) -> None:
        """Queue the calibration row (label, w, logits...) of the example, unless its averaged
        scores overflow (then it is not used for calibration). The model takes the queue before
        the blocks change."""
        try:
            z = logits(self.scores(x, True))
        except ValueError:
            return
        label = int(pairs[0][1] == 1) if len(self._blocks) == 1 else pairs[0][0]
        self._queued.extend([label, w, *z])

    def take_calibration(self) -> tuple[bytes, int]:
        """(the queued calibration rows as bytes of doubles, the row width); empties the queue."""
        data, self._queued = self._queued.tobytes(), array("d")
        return data, self._width()

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
