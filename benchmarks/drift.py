"""Defaults that need no tuning (issue 41), the study: drift and calibration measured side by side.

Which adaptation to concept drift and which calibration of the probabilities the default Gaussian
models should take. Every candidate is prototyped here, outside `river_cw`, as a wrapper that
drives a model's public API (it sets `forgetting` before each update and reads the margin's mean
and variance from the model's `gaussian`); the chosen one then goes into the engines.

Tables (markdown, printed and written to ``benchmarks/drift_tables.md``, or ``--out``):

1. *Drifting streams*, raw features, 8,000 examples each (Sine 7,000): river's Hyperplane (8
   features, 3 drifting, ``mag_change`` 0.001, 0.01, 0.05), SEA and Agrawal with an abrupt and a
   gradual `ConceptDriftStream` switch at 4,000, Sine with its concept reversed at 3,000 and
   RandomRBFDrift. The abrupt switch has ``width=50``, not 1: river's ConceptDriftStream
   computes ``exp(-4 (t - position) / width)``, which overflows `math.exp` for ``width=1`` once
   ``t`` is some 180 examples before the position. Models: the uncalibrated
   ``AROW(calibrate=False)`` (the default when the study ran), AROW with fixed forgetting (0.001
   to 0.03), the grid of temperatures ``calibrate=True`` then took, today's default ``AROW()``
   (the study's outcome: the noise term and the Newton temperature), river's LogisticRegression,
   PAClassifier and Perceptron raw and behind StandardScaler, and the candidates. Accuracy and
   log loss are river's (`evaluate.progressive_val_score` with ``metrics.Accuracy() +
   metrics.LogLoss()``, ``CrossEntropy`` where multi-class: accuracy on the argmax of the
   probabilities).
2. *Stationary streams*: the stationary dense streams of benchmarks/dense.py (river's bundled
   datasets, Hyperplane without drift, SEA, Agrawal, Sine at seeds 1-3, the threshold streams,
   a9a, Spambase) and the text corpora (SMS, reviews, Enron, 20 Newsgroups' six groups, river's
   BagOfWords lowercase: what `TextClassifier` computes), for the uncalibrated AROW and the
   candidates; the requirement: within 0.3 points of the uncalibrated AROW.
3. *Every rule* (``rules``): CW, NHERD, SCW and SOP beside AROW, each as it is, with
   ``forgetting=0.01``, with the recommended calibration and as the recommended pair, on a few
   drifting and stationary streams.
4. *Cost* (``cost``): CPU time per example of ``predict_proba_one`` then ``learn_one`` (the
   progressive loop, no metric), against the uncalibrated AROW in the same run (the prototypes are
   Python wrappers: their cost is the wrappers', not what the engines would pay); forgetting's
   own cost inside a compiled loop (the diagonal engine's batch kernel with and without it);
   the Newton temperature's step in C (compiled with ``cc`` on the spot).

The candidates (benchmarks/README.md, "Drift and calibration defaults: the study", says which
wins and why): calibrations of the probabilities (an online temperature by AdaGrad steps or by
Newton steps, a noise term in the predictive variance); forgetting driven by the model's own
evidence of change (the excess of its mistakes over those it expects, with or without a
control limit; fast-vs-slow error rates; river's DDM, Page-Hinkley and ADWIN with a partial
reset); forgetting rates competing (one model per rate in a fixed-share mixture, or without
extra models from the one-step predictive variance of each rate); and a pair of models, one
never forgetting and one forgetting on its own evidence, in a fixed-share mixture. Every model a
prototype wraps, and every baseline but today's default, is built with ``calibrate=False``: the
calibrations compared are the study's own.

    python benchmarks/drift.py [--quick] [--out FILE] [--part drift stationary rules cost]
    python benchmarks/drift.py --figure docs/figures/drift.png

``--figure PATH`` writes, instead of the tables, the figure of docs/guide/choosing.md's "Drift"
and the README: the accuracy over the last 500 predictions (prequential) every 100 examples on
Hyperplane 0.01 (8,000 examples) and Sine reversed (7,000, reversed at 3,000), for today's
default AROW(), AROW(forgetting=0.01) and river's LogisticRegression and PAClassifier behind
StandardScaler; the curves go beside PATH (same name, ``.json``) and ``draw`` redraws the figure
from them (tests/project/test_docs_figures.py does, and computes their start again). Seconds.

``--quick``: three drifting streams of 3,000 examples (Sine 2,625), four stationary dense streams
of 2,000 and SMS, the recommended schemes only (a few seconds of CPU);
tests/evaluation/test_drift_study.py runs it and checks the ranges benchmarks/README.md states.
The full run takes about 4 minutes of CPU.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import math
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from river import base, evaluate, feature_extraction, linear_model, metrics, preprocessing
from river.datasets import synth

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import river_cw
from river_cw import INTERCEPT, calibration, probabilities
from river_cw.labels import predicted_labels

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
OUT = Path(__file__).resolve().parent / "drift_tables.md"
SQRT2 = math.sqrt(2.0)


# -- the margin of a Gaussian model, read from its public engine ------------------------------


def standardised(model, x: dict, noise: float = 0.0):
    """The standardised pairwise margins ``t[z][k]`` of x (`probabilities.pairwise`), each
    block score's variance plus `noise`, and the labels; None before two labels (or a bool's
    first: `river_cw.labels.predicted_labels`)."""
    classes = predicted_labels(model.classes_)
    if len(classes) < 2:
        return None
    xf = {k: float(v) for k, v in x.items()}
    if model.learn_intercept:
        xf[INTERCEPT] = 1.0
    gaussian = model.gaussian
    scores = gaussian.scores(xf)
    cov = gaussian.score_covariance(xf)
    if noise:
        cov = cov + noise * np.eye(len(cov))
    cov = cov.tolist()
    if len(scores) == 1:
        return probabilities.pairwise(scores, cov[0][0]), classes
    b, c = probabilities.top_two(scores)
    return probabilities.pairwise(scores, cov[b][b] + cov[c][c] - 2.0 * cov[b][c]), classes


def phi_cdf(t: float) -> float:
    return 0.5 * math.erfc(-t / SQRT2)


def log_phi(t: float) -> float:
    return probabilities.normal_log_cdf(t)


def proba_at(t, classes, a: float) -> dict:
    """The model's probabilities with temperature a (`probabilities.binary`/`multiclass`)."""
    if len(classes) == 2:
        p = phi_cdf(a * t[1][0])
        return {classes[0]: 1.0 - p, classes[1]: p}
    return probabilities.multiclass(t, a, classes)


# -- calibration: the grid `calibrate=True` took, and cheap alternatives to it ------------------


class Temperature:
    """An online temperature ``a = exp(b)`` of the standardised margins, ``Phi(a t)``, moved by
    one gradient step of the log loss per example (before the model learns it): the gradient
    in b clipped to [-1, 1] (a confident mistake's is unbounded) and scaled AdaGrad's way,
    ``eta / sqrt(G)``. Two floats of state (b and G); no grid. The probabilities rank the labels
    as the temperature-1 ones do, so predictions do not change."""

    def __init__(self, eta: float = 0.2, clip: float = 1.0):
        self.eta, self.clip = eta, clip
        self.b = 0.0
        self.g2 = 1e-8

    @property
    def a(self) -> float:
        return math.exp(self.b)

    def learn(self, t, classes, y) -> None:
        a = self.a
        if len(classes) == 2:
            s = t[1][0] if y == classes[1] else -t[1][0]  # the label's standardised margin
            z = a * s
            # d(-log Phi(z))/dz = -phi(z)/Phi(z), the inverse Mills ratio, stable far in the tail
            mills = math.exp(-0.5 * z * z - log_phi(z)) / math.sqrt(2 * math.pi)
            grad = -mills * s * a  # d loss / d b
        else:
            h = 1e-3
            grad = (
                self._loss(t, classes, y, a * math.exp(h))
                - self._loss(t, classes, y, a * math.exp(-h))
            ) / (2 * h)
        if not math.isfinite(grad):
            return
        grad = min(self.clip, max(-self.clip, grad))
        self.g2 += grad * grad
        self.b -= self.eta * grad / math.sqrt(self.g2)

    @staticmethod
    def _loss(t, classes, y, a):
        p = probabilities.multiclass(t, a, classes)[y]
        return -math.log(max(p, 1e-300))


class NewtonTemperature:
    """An online temperature ``a`` of the standardised margins, ``Phi(a t)``, moved by one
    Newton step of the log loss per example (before the model learns it): ``a <- a - g / H``,
    g the step's gradient in a and H the running sum of the second derivatives (``-log Phi``
    is convex in a: ``s^2 lambda(z) (z + lambda(z))``, lambda the inverse Mills ratio, s the
    label's standardised margin, z = a s), from ``H = 1``. The online Newton step in one
    dimension, i.e. recursive least squares on the log loss: no step size, the scale of the
    margins does not matter (raw Agrawal's reach 1e3). Two floats of state (a, H); multi-class
    by the same step on the exact derivatives of the pairwise formula, here numerically."""

    def __init__(self, decay: float = 1.0, low: float = 1e-6, high: float = 1e3):
        self.decay, self.low, self.high = decay, low, high
        self.a = 1.0
        self.h = 1.0

    def learn(self, t, classes, y) -> None:
        a = self.a
        if len(classes) == 2:
            s = t[1][0] if y == classes[1] else -t[1][0]
            if not math.isfinite(s):
                return
            z = a * s
            lam = math.exp(-0.5 * z * z - log_phi(z)) / math.sqrt(2 * math.pi)
            g, h = -s * lam, s * s * lam * (z + lam)
        else:
            e = 1e-4 * a
            lo, mid, hi = (Temperature._loss(t, classes, y, b) for b in (a - e, a, a + e))
            g, h = (hi - lo) / (2 * e), max((hi - 2 * mid + lo) / (e * e), 0.0)
        if not (math.isfinite(g) and math.isfinite(h)):
            return
        self.h = self.decay * self.h + h
        self.a = min(self.high, max(self.low, a - g / self.h))


class GridTemperature:
    """The calibration ``calibrate=True`` took when the study ran: before each update, the
    example's log loss under every temperature a of `river_cw.calibration.TEMPERATURES` (a log
    grid, 4 per octave, 2^-32 .. 2^16) added to running sums; a is the temperature of least sum
    (`calibration.best`, ties going to 1: `calibration.start(prefer=1.0)`). The exact minimiser
    among 193 candidates, for 193 log-CDFs per pairwise margin and example; a sum that a loss
    would take beyond float64 is not updated."""

    def __init__(self):
        self.losses = calibration.start(prefer=1.0)

    @property
    def a(self) -> float:
        return calibration.best(self.losses)

    def learn(self, t, classes, y) -> None:
        from scipy.special import log_ndtr

        t, label = np.array(t), list(classes).index(y)
        off = ~np.eye(len(t), dtype=bool)
        with np.errstate(all="ignore"):
            grid = calibration.TEMPERATURES[:, None, None] * t
            logp = np.where(off, log_ndtr(grid), 0.0).sum(axis=2)
            if len(t) == 2:  # Phi(a t) and Phi(-a t) already sum to 1
                losses = -logp[:, label]
            else:
                top = logp.max(axis=1)
                losses = top + np.log(np.exp(logp - top[:, None]).sum(axis=1)) - logp[:, label]
            total = self.losses + losses
        if np.isfinite(total).all():
            self.losses = total


# -- forgetting controllers ---------------------------------------------------------------------
# Each has ``rate(mistake, p_true, p_best, loss, proba)``: before an update, whether the label
# was a mistake, its probability, the largest probability, its log loss and the probabilities
# themselves ({label: p}); it returns the forgetting of the update (`rate_of` reads them).


def rate_of(controller, proba: dict, y) -> float:
    """The forgetting `controller` sets before the model learns label `y`, to which it gave the
    probabilities `proba`."""
    best = max(proba, key=proba.get)
    p_true = proba[y]
    return controller.rate(best != y, p_true, proba[best], -math.log(max(p_true, 1e-15)), proba)


class Surprise:
    """Forgetting from the excess of mistakes over the mistakes the model expects of itself:
    EMAs (rate `lam`) of the 0-1 loss and of ``1 - p_best``; ``f = clip(c * excess, 0, fmax)``
    (the issue's prototype). ``p_best`` is the model's own probability or the calibrated one, as
    the `Adaptive` wrapper's `expect` says."""

    def __init__(self, c: float = 0.3, lam: float = 0.01, fmax: float = 0.05):
        self.c, self.lam, self.fmax = c, lam, fmax
        self.err = self.expected = 0.0

    def rate(self, mistake, p_true, p_best, loss, proba):
        self.err += self.lam * (mistake - self.err)
        self.expected += self.lam * ((1.0 - p_best) - self.expected)
        return min(self.fmax, max(0.0, self.c * (self.err - self.expected)))


class Watched:
    """The surprise with a control limit: forgetting only where the mistakes exceed what the
    (calibrated) model expects of itself by more than chance allows. EMAs (rate `lam`) of the
    0-1 loss e and of the expected one q = ``1 - p_best``; under no change E[e - q] = 0 with the
    EWMA's standard deviation ``sqrt(q (1 - q) lam / (2 - lam))`` (ECDD's control limit, Ross,
    Adams, Tasoulis and Hand 2012); ``f = clip(c (e - q - k sd), 0, fmax)``."""

    def __init__(self, c=1.0, k=2.0, lam=0.01, fmax=0.05, warm=50):
        self.c, self.k, self.lam, self.fmax, self.warm = c, k, lam, fmax, warm
        self.err = self.expected = 0.0
        self.n = 0

    def rate(self, mistake, p_true, p_best, loss, proba):
        self.n += 1
        step = max(self.lam, 1.0 / self.n)
        self.err += step * (mistake - self.err)
        q = 1.0 - p_best
        self.expected += step * (q - self.expected)
        if self.n < self.warm:
            return 0.0
        e0 = min(max(self.expected, 0.01), 0.5)
        sd = math.sqrt(e0 * (1 - e0) * self.lam / (2 - self.lam))
        return min(self.fmax, max(0.0, self.c * (self.err - self.expected - self.k * sd)))


class LogScore:
    """Forgetting from the log score against what the model expects of its own log score: the
    surprise of `Watched` with the log loss in place of the 0-1 loss. Under the model's
    probabilities p, the log loss of the next label has mean the entropy ``H = -sum_k p_k log
    p_k`` and variance ``sum_k p_k (log p_k)^2 - H^2``; Seillier-Moiseiwitsch and Dawid (1993)
    test sequential probability forecasts by the score's excess over that mean in units of that
    variance. Here EWMAs (rate `lam`, the first examples averaged evenly) of the log loss L, of
    H and of the variance V, and ``f = clip(c (L - H - k sd), 0, fmax)``, ``sd = sqrt(V lam /
    (2 - lam))``. Where the 0-1 surprise counts mistakes, this one weighs them by the confidence
    they were made with: a model near chance (Bananas) has little room between its log loss and
    its entropy, and its mistakes cost little; a confident model that the concept has left pays
    for each mistake in full. Each log loss is capped at `cap` nats (a label given less than
    0.7%), so that one label, a flipped one say, moves L by at most ``lam cap``: drift shows as
    many mistakes, noise as a few very confident ones.

    Seillier-Moiseiwitsch, F. and Dawid, A. P., 1993. On testing the validity of sequential
    probability forecasts. Journal of the American Statistical Association 88(421), 355-359."""

    def __init__(self, c=2.0, k=2.5, lam=0.01, fmax=0.05, warm=50, cap=5.0):
        self.c, self.k, self.lam, self.fmax, self.warm, self.cap = c, k, lam, fmax, warm, cap
        self.loss = self.entropy = self.variance = 0.0
        self.n = 0

    def rate(self, mistake, p_true, p_best, loss, proba):
        logs = [(p, math.log(p)) for p in proba.values() if p > 0.0]
        entropy = -math.fsum(p * lp for p, lp in logs)
        variance = max(math.fsum(p * lp * lp for p, lp in logs) - entropy * entropy, 0.0)
        self.n += 1
        step = max(self.lam, 1.0 / self.n)
        self.loss += step * (min(loss, self.cap) - self.loss)
        self.entropy += step * (entropy - self.entropy)
        self.variance += step * (variance - self.variance)
        if self.n < self.warm:
            return 0.0
        sd = math.sqrt(self.variance * self.lam / (2 - self.lam))
        excess = self.loss - self.entropy - self.k * sd
        return min(self.fmax, max(0.0, self.c * excess))


class FastSlow:
    """The error rate's recent level against its long-run level, ECDD's test (Ross, Adams,
    Tasoulis and Hand 2012; DDM's idea, Gama et al. 2004): an EWMA of the 0-1 loss with rate
    `fast` against the mean since the last alarm, ``p0``; the EWMA's standard deviation under
    "no change" is ``sqrt(p0 (1 - p0) fast / (2 - fast))``. Forgetting grows with the excess in
    those standard deviations: 0 below `z0`, `fmax` from `z1` on, linear between. Needs no
    calibration: the model is compared with its own past, not with its confidence. After an
    alarm (the excess beyond `z1`) the long-run mean starts again."""

    def __init__(self, fast=0.05, z0=2.0, z1=4.0, fmax=0.05, slow=0.001, warm=30):
        self.fast, self.slow, self.warm = fast, slow, warm
        self.z0, self.z1, self.fmax = z0, z1, fmax
        self.ewma = 0.0
        self.mean = 0.0
        self.n = 0

    def rate(self, mistake, p_true, p_best, loss, proba):
        self.n += 1
        self.ewma += self.fast * (mistake - self.ewma)
        # the long-run mean: exact mean for the first 1/slow examples, then an EMA
        self.mean += max(1.0 / self.n, self.slow) * (mistake - self.mean)
        if self.n < self.warm:
            return 0.0
        p0 = min(max(self.mean, 1.0 / self.n), 0.5)
        sd = math.sqrt(p0 * (1 - p0) * self.fast / (2 - self.fast))
        z = (self.ewma - self.mean) / sd
        if z >= self.z1:  # an alarm: the old level no longer describes the stream
            self.n = 1 / self.fast
            self.mean = self.ewma
        return self.fmax * min(1.0, max(0.0, (z - self.z0) / (self.z1 - self.z0)))


class Detector:
    """A drift detector of river (`drift.binary.DDM`, `drift.PageHinkley`, `drift.ADWIN`) on the
    0-1 loss (or the log loss with ``on="loss"``); on a detection the variances are inflated:
    forgetting `burst` for the next `hold` examples (``hold=1``: a one-shot partial reset of the
    weights the example touches), else `base`."""

    def __init__(self, make, on="mistake", burst=0.5, hold=1, base_rate=0.0):
        self.detector = make()
        self.on, self.burst, self.hold, self.base = on, burst, hold, base_rate
        self.left = 0
        self.alarms = 0

    def rate(self, mistake, p_true, p_best, loss, proba):
        self.detector.update(float(mistake) if self.on == "mistake" else min(loss, 10.0))
        if self.detector.drift_detected:
            self.left = self.hold
            self.alarms += 1
        if self.left > 0:
            self.left -= 1
            return self.burst
        return self.base


# -- the wrapper ------------------------------------------------------------------------------


class Adaptive(base.Classifier):
    """A Gaussian model whose `forgetting` a controller sets before each update, and whose
    probabilities are ``Phi(a m / sqrt(v + noise))``: `noise` a noise term of the predictive
    distribution (0: the model's own), a a `Temperature` (None: 1). The controller reads these
    probabilities (``expect="calibrated"``) or the model's own (``"raw"``). With `flips`, a
    binary model's probabilities take the library's share of flipped labels on top
    (`river_cw.flips`, added after the study: its state stepped on the label's probability before
    the temperature's step), as ``calibrate=True`` does."""

    def __init__(
        self, model, controller=None, noise=0.0, temperature=None, expect="calibrated", flips=False
    ):
        self.model = model
        self.controller = controller
        self.noise = noise
        self.temperature = temperature
        self.expect = expect
        self.flips = river_cw.flips.start() if flips else None
        self._last = None  # (x, margins) of the last prediction: the progressive loop's

    def _margins(self, x):
        last = self._last
        if last is not None and last[0] is x:
            return last[1]
        out = standardised(self.model, x, self.noise)
        self._last = (x, out)
        return out

    @property
    def _a(self) -> float:
        return 1.0 if self.temperature is None else self.temperature.a

    def predict_proba_one(self, x):
        out = self._margins(x)
        if out is None:
            return self.model.predict_proba_one(x)
        proba = proba_at(*out, self._a)
        if self.flips is None or len(proba) != 2:
            return proba
        negative, positive = out[1]
        p = river_cw.flips.probability(self.flips, proba[positive])
        return {negative: 1.0 - p, positive: p}

    def predict_one(self, x):
        return self.model.predict_one(x)

    def learn_one(self, x, y):
        out = self._margins(x)
        self._last = None
        if out is not None and y in out[1] and len(self.model.classes_) > 1:  # two labels met
            t, classes = out
            if self.controller is not None:
                if self.expect == "raw":
                    proba = proba_at(*standardised(self.model, x), 1.0)
                else:
                    proba = proba_at(t, classes, self._a)
                f = rate_of(self.controller, proba, y)
                if f != self.model.forgetting:
                    self.model.forgetting = f
            if self.flips is not None and len(classes) == 2:
                right = phi_cdf(self._a * (t[1][0] if y == classes[1] else t[0][1]))
                river_cw.flips.observe(self.flips, right, 1.0)
            if self.temperature is not None:
                self.temperature.learn(t, classes, y)
        self.model.learn_one(x, y)


# -- forgetting rates competing ---------------------------------------------------------------

RATES = (0.0, 0.001, 0.003, 0.01, 0.03)


class Competing(base.Classifier):
    """Models side by side (K times the cost): by default one per forgetting rate of `rates`,
    each with its `NewtonTemperature` (a log loss that rewards being less overconfident rather
    than more accurate would otherwise pick the most forgetful); or the given `members`. The
    probabilities are the fixed-share mixture of theirs (Herbster and Warmuth 1998, tracking the
    best expert): Bayesian weights on each member's predictive likelihood, a share `share` of
    the mass spread evenly each example so that a member can regain the lead after a drift."""

    def __init__(self, make=river_cw.AROW, rates=RATES, share=0.001, members=None):
        if members is None:
            members = [
                Adaptive(
                    make(forgetting=f, calibrate=False, centre=False),
                    temperature=NewtonTemperature(),
                )
                for f in rates
            ]
        self.models = members
        self.share = share
        self.log_w = [0.0] * len(members)
        self._probas = None

    def predict_proba_one(self, x):
        probas = [m.predict_proba_one(x) for m in self.models]
        self._probas = (x, probas)
        top = max(self.log_w)
        w = [math.exp(lw - top) for lw in self.log_w]
        total = sum(w)
        out: dict = {}
        for wk, p in zip(w, probas):
            for c, q in p.items():
                out[c] = out.get(c, 0.0) + wk / total * q
        return out

    def predict_one(self, x):
        p = self.predict_proba_one(x)
        return max(p, key=p.get) if p else None

    def learn_one(self, x, y):
        if self._probas is None or self._probas[0] is not x:
            self.predict_proba_one(x)
        probas = self._probas[1]
        if all(probas):
            log_w = [lw + math.log(max(p.get(y, 0.0), 1e-15)) for lw, p in zip(self.log_w, probas)]
            top = max(log_w)
            w = [math.exp(lw - top) for lw in log_w]
            total = sum(w)
            k = len(w)
            self.log_w = [math.log((1 - self.share) * wk / total + self.share / k) for wk in w]
        for m in self.models:
            m.learn_one(x, y)


class OneStep:
    """Rates competing without extra models (the issue's cheap variant): before each update, the
    predictive likelihood of the label under the margin ``N(m, v_k)`` that one step of
    forgetting at each rate f_k would give from the shared state (``Phi(y m / sqrt(v_k))``;
    the means do not move when forgetting), discounted sums (`decay`); the rate of the best sum
    is the one the update forgets with. Measured on a copy of the engine (its `learn` with a step
    that records ``(m, v)`` and takes none); in an engine it is one more sum per rate."""

    def __init__(self, rates=RATES, decay=0.99):
        self.rates, self.decay = rates, decay
        self.scores = [0.0] * len(rates)
        self.a = 1.0  # the wrapper's temperature: the likelihoods of calibrated margins
        self.model = None
        self.x = None
        self.y = None

    def margins(self, model, x, y):
        import copy

        xf = {k: float(v) for k, v in x.items()}
        if model.learn_intercept:
            xf[INTERCEPT] = 1.0
        sign = 1 if y == model.classes_[-1] else -1
        out = []
        for f in self.rates:
            seen = []
            engine = copy.deepcopy(model.gaussian)
            keep = 1.0 - f
            engine.learn(
                xf,
                ((0, sign),),
                lambda m, v, w: seen.append((m, v)),
                model.diagonal,
                1.0,
                keep,
                (1.0 - keep) / model.initial_variance,
            )
            out.append(seen[0])
        return out

    def rate(self, mistake, p_true, p_best, loss, proba):
        margins = self.margins(self.model, self.x, self.y)
        for k, (m, v) in enumerate(margins):
            ll = log_phi(self.a * m / math.sqrt(v)) if v > 0 else (0.0 if m > 0 else -30.0)
            self.scores[k] = self.decay * self.scores[k] + ll
        return self.rates[max(range(len(self.rates)), key=self.scores.__getitem__)]


class OneStepAdaptive(Adaptive):
    """`Adaptive` with `OneStep` (binary models only): the controller needs x and y."""

    def learn_one(self, x, y):
        if len(self.model.classes_) == 2 and y in self.model.classes_:
            control = self.controller
            control.model, control.x, control.y, control.a = self.model, x, y, self._a
            super().learn_one(x, y)
        else:
            self._last = None
            self.model.learn_one(x, y)


# -- streams ----------------------------------------------------------------------------------


def _take(source, n: int) -> list:
    return [(x, bool(y)) for x, y in itertools.islice(source, n)]


def _switch(first, second, position: int, width: int, seed: int = 3):
    return synth.ConceptDriftStream(first, second, position=position, width=width, seed=seed)


def drifting_streams(n: int, names=None, seed: int | None = None) -> dict[str, list]:
    """name -> examples (materialised: every model sees the same ones). `seed` None: the
    study's seeds (Hyperplane's 42; each switch from a concept seeded 1 to one seeded 2, the
    switch itself 3; RandomRBFDrift's model 1, its sample 2); s: every one from s (Hyperplane s;
    s, s + 1 and s + 2 for a switch; s and s + 1 for RandomRBFDrift)."""
    a, b, c = (1, 2, 3) if seed is None else (seed, seed + 1, seed + 2)
    plane = 42 if seed is None else seed
    sources: dict[str, Callable] = {
        **{
            f"Hyperplane {change:g}": lambda change=change: synth.Hyperplane(
                seed=plane, n_features=8, n_drift_features=3, mag_change=change
            )
            for change in (0.001, 0.01, 0.05)
        },
        "SEA abrupt": lambda: _switch(
            synth.SEA(variant=0, seed=a), synth.SEA(variant=3, seed=b), n // 2, 50, c
        ),
        "SEA gradual": lambda: _switch(
            synth.SEA(variant=0, seed=a), synth.SEA(variant=3, seed=b), n // 2, 1000, c
        ),
        "Agrawal abrupt": lambda: _switch(
            synth.Agrawal(classification_function=0, seed=a),
            synth.Agrawal(classification_function=2, seed=b),
            n // 2,
            50,
            c,
        ),
        "Agrawal gradual": lambda: _switch(
            synth.Agrawal(classification_function=0, seed=a),
            synth.Agrawal(classification_function=2, seed=b),
            n // 2,
            1000,
            c,
        ),
        "Sine reversed": lambda: _switch(
            synth.Sine(classification_function=0, seed=a),
            synth.Sine(classification_function=1, seed=b),
            n * 3 // 8,
            50,
            c,
        ),
        "RandomRBFDrift": lambda: synth.RandomRBFDrift(
            seed_model=a,
            seed_sample=b,
            n_classes=2,
            n_features=10,
            n_centroids=50,
            change_speed=0.001,
            n_drift_centroids=50,
        ),
    }
    lengths = {"Sine reversed": n * 7 // 8}
    return {
        name: _take(make(), lengths.get(name, n))
        for name, make in sources.items()
        if names is None or name in names
    }


def stationary_streams(limit: int, seeds: list[int], threshold_n: int) -> dict[str, list]:
    """benchmarks/dense.py's dense streams without its drifting ones (Hyperplane with
    ``mag_change=0.001``, SEA with a sudden drift: the drifting table has both kinds) and its
    noisy Phishing (there the model learns flipped labels, a wrapper's job)."""
    from benchmarks.dense import NOISY_PHISHING, dense_streams

    out = dense_streams(limit, seeds, threshold_n)
    drop = {NOISY_PHISHING, "SEA sudden drift at 5,000"}
    return {k: v for k, v in out.items() if k not in drop and not k.startswith("Hyperplane drift")}


TEXT = {
    "SMS": "sms_spam_collection",
    "Enron": "enron_spam_lbjava_subset",
    "reviews": "mdsd_sorted_acl_text",
    "20 Newsgroups": "20news_bydate_6groups",
}


def text_streams(limit: int, names=None) -> dict[str, list]:
    """The text corpora, shuffled with seed 1, through river's ``BagOfWords(lowercase=True)``
    once (the counts `TextClassifier` computes; its tests hold it to that pipeline); two labels
    as booleans (the second in sorted order True), 20 Newsgroups' six groups as they are."""
    words = feature_extraction.BagOfWords(lowercase=True)
    out = {}
    for name, file in TEXT.items():
        path = DATA / f"{file}.jsonl.gz"
        if not path.exists() or (names is not None and name not in names):
            continue
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            rows = [json.loads(line) for line in fh]
        random.Random(1).shuffle(rows)
        labels = sorted({row["label"] for row in rows})
        two = len(labels) == 2
        out[name] = [
            (words.transform_one(r["text"]), r["label"] == labels[1] if two else r["label"])
            for r in rows[:limit]
        ]
    return out


# -- models -----------------------------------------------------------------------------------

RIVER: dict[str, Callable] = {
    "river LR": linear_model.LogisticRegression,
    "river PA": linear_model.PAClassifier,
    "river Perceptron": linear_model.Perceptron,
}
RIVER |= {
    f"{name} sc": (lambda cls=cls: preprocessing.StandardScaler() | cls())
    for name, cls in list(RIVER.items())
}
DEFAULT = "AROW(calibrate=False)"  # the default when the study ran: the papers' probabilities
FORGETTING = "AROW(forgetting=0.01, calibrate=False)"
CALIBRATED = "AROW(forgetting=0, centre=False)"  # the study's calibration, and no forgetting
SHIPPED = "AROW(centre=False)"  # the study's outcome: that calibration, the surprise's forgetting
CENTRED = "AROW()"  # today's default: the same on centred features (`river_cw.centring`)
NEVER = "AROW(forgetting=0)"  # today's model that never forgets (centred)
GRID = "grid (calibrate=True then)"
STILL_BASELINES = (DEFAULT, FORGETTING, GRID, CALIBRATED, SHIPPED, NEVER, CENTRED)
CHOSEN = "pair, noise term"  # what the design note recommends (benchmarks/README.md)
NEWTON = "Newton temperature (N)"
NEWTON_NOISE = "N on the noise term"  # the calibration the design note recommends


def river_logistic(multi: bool) -> Callable:
    """river's LogisticRegression; for more than two labels its multinomial form,
    SoftmaxRegression (LogisticRegression is binary)."""
    return linear_model.SoftmaxRegression if multi else linear_model.LogisticRegression


def baselines() -> dict[str, Callable]:
    out: dict[str, Callable] = {DEFAULT: lambda: river_cw.AROW(calibrate=False, centre=False)}
    for f in (0.001, 0.003, 0.01, 0.03):
        out[f"AROW(forgetting={f:g}, calibrate=False)"] = lambda f=f: river_cw.AROW(
            forgetting=f, calibrate=False, centre=False
        )
    out[GRID] = adaptive(None, GridTemperature)
    out[CALIBRATED] = lambda: river_cw.AROW(forgetting=0.0, centre=False)
    out[SHIPPED] = lambda: river_cw.AROW(centre=False)
    out[NEVER] = lambda: river_cw.AROW(forgetting=0.0)
    out[CENTRED] = river_cw.AROW
    return out


def adaptive(controller=None, temperature=None, rule=river_cw.AROW, **options) -> Callable:
    """``rule(calibrate=False)`` in an `Adaptive` wrapper: `controller` and `temperature` are
    classes (or None)."""
    return lambda: Adaptive(
        rule(calibrate=False, centre=False),
        controller and controller(),
        temperature=temperature and temperature(),
        **options,
    )


def pair(rule=river_cw.AROW, noise: float = 0.0) -> Competing:
    """Two members in a fixed-share mixture, each with its `NewtonTemperature` (on the margins
    with a `noise` term): ``rule(calibrate=False)``, which never forgets, and another driven by
    `Surprise` on its own (raw) probabilities."""
    return Competing(
        members=[
            Adaptive(
                rule(calibrate=False, centre=False), temperature=NewtonTemperature(), noise=noise
            ),
            Adaptive(
                rule(calibrate=False, centre=False),
                Surprise(),
                temperature=NewtonTemperature(),
                noise=noise,
                expect="raw",
            ),
        ]
    )


def calibrators() -> dict[str, Callable]:
    """Probabilities alone (no forgetting): the cheap calibrations against the grid."""
    return {
        "SGD temperature": adaptive(None, Temperature),
        "noise term": adaptive(None, None, noise=1.0),
        NEWTON: adaptive(None, NewtonTemperature),
        NEWTON_NOISE: adaptive(None, NewtonTemperature, noise=1.0, flips=True),
    }


def candidates() -> dict[str, Callable]:
    """The adaptive schemes around ``AROW()``; ``+N``: probabilities (and what the scheme reads,
    unless "raw") through the `NewtonTemperature`."""
    from river import drift as detectors

    n = NewtonTemperature
    return {
        "surprise (raw)": adaptive(Surprise, expect="raw"),
        "surprise raw +N": adaptive(Surprise, n, expect="raw"),
        "surprise +N": adaptive(Surprise, n),
        "surprise +N c=1": adaptive(lambda: Surprise(c=1.0), n),
        "watched +N": adaptive(lambda: Watched(c=3.0), n),
        "fast-slow +N": adaptive(FastSlow, n),
        "DDM reset +N": adaptive(lambda: Detector(detectors.binary.DDM, burst=0.99), n),
        "PH(loss) reset +N": adaptive(
            lambda: Detector(detectors.PageHinkley, on="loss", burst=0.99), n
        ),
        "ADWIN reset +N": adaptive(lambda: Detector(detectors.ADWIN, burst=0.99), n),
        "one-step rates +N": lambda: OneStepAdaptive(
            river_cw.AROW(calibrate=False, centre=False), OneStep(), temperature=NewtonTemperature()
        ),
        "competing rates (5 models)": Competing,
        "pair: none + surprise": pair,
        CHOSEN: lambda: pair(noise=1.0),
    }


def rule_models() -> dict[str, Callable]:
    """Per Gaussian rule: its default, fixed forgetting, the Newton temperature alone (on the
    margins, and on the noise term's margins: the recommended calibration) and the recommended
    pair."""
    out: dict[str, Callable] = {}
    for rule in (river_cw.AROW, river_cw.CW, river_cw.NHERD, river_cw.SCW, river_cw.SOP):
        name = rule.__name__
        out[f"{name}(calibrate=False)"] = lambda rule=rule: rule(calibrate=False, centre=False)
        out[f"{name} forgetting=0.01"] = lambda rule=rule: rule(
            forgetting=0.01, calibrate=False, centre=False
        )
        out[f"{name} +N"] = adaptive(None, NewtonTemperature, rule=rule)
        out[f"{name} +N noise"] = adaptive(None, NewtonTemperature, rule=rule, noise=1.0)
        out[f"{name} pair"] = lambda rule=rule: pair(rule, noise=1.0)
    return out


# -- running ----------------------------------------------------------------------------------


def score(factory: Callable, examples: list) -> tuple[float, float, float]:
    """Accuracy, log loss (river's progressive validation) and CPU seconds."""
    model = factory()
    multi = len({y for _, y in examples}) > 2
    loss = metrics.CrossEntropy() if multi else metrics.LogLoss()
    start = time.process_time()
    accuracy, log_loss = evaluate.progressive_val_score(examples, model, metrics.Accuracy() + loss)
    return accuracy.get(), log_loss.get(), time.process_time() - start


def run(streams: dict[str, list], models: dict[str, Callable]) -> dict:
    """``{stream: {model: (accuracy, log loss, cpu)}}``, a stream's models in one run."""
    results = {}
    for name, examples in streams.items():
        start = time.process_time()
        results[name] = {m: score(f, examples) for m, f in models.items()}
        print(f"  {name}: {time.process_time() - start:.0f} s", file=sys.stderr, flush=True)
    return results


def per_example_cost(models: dict[str, Callable], examples: list, repeat: int = 3) -> dict:
    """CPU microseconds per example of ``predict_proba_one`` then ``learn_one`` (the best of
    `repeat` runs, the models interleaved round by round)."""
    best = dict.fromkeys(models, math.inf)
    for _ in range(repeat):
        for name, make in models.items():
            model = make()
            start = time.process_time()
            for x, y in examples:
                model.predict_proba_one(x)
                model.learn_one(x, y)
            best[name] = min(best[name], time.process_time() - start)
    return {name: 1e6 * t / len(examples) for name, t in best.items()}


def kernel_forgetting_cost(examples: list, repeat: int = 5) -> tuple[float, float]:
    """Forgetting inside a compiled loop: the diagonal engine's batch kernel (`learn_many`,
    river_cw/_batch.h) over `examples`, without and with forgetting, CPU microseconds per
    example (best of `repeat`)."""
    xs, ys = [x for x, _ in examples], [y for _, y in examples]
    out = []
    for f in (0.0, 0.01):
        best = math.inf
        for _ in range(repeat):
            model = river_cw.AROW(
                covariance="diagonal", forgetting=f, calibrate=False, centre=False
            )
            start = time.process_time()
            model.learn_many(xs, ys)
            best = min(best, time.process_time() - start)
        out.append(1e6 * best / len(examples))
    return out[0], out[1]


NEWTON_STEP_C = r"""
#include <math.h>
#include <stdio.h>
#include <time.h>
/* One NewtonTemperature step per standardised margin s (the label's): the work the default would
   add to learn_one in the engine, with the temperature's use in predict_proba_one. */
int main(void) {
    enum { N = 4000000 };
    static double s[N];
    unsigned long long r = 88172645463325252ULL;
    for (int i = 0; i < N; i++) {  /* margins of a model that is right 85% of the time */
        r ^= r << 13; r ^= r >> 7; r ^= r << 17;
        double u = (double)(r >> 11) / 9007199254740992.0;
        s[i] = (u < 0.15 ? -1.0 : 1.0) * (0.1 + 6.0 * u);
    }
    double a = 1.0, h = 1.0, p = 0.0;
    clock_t start = clock();
    for (int i = 0; i < N; i++) {
        double z = a * s[i];
        p += 0.5 * erfc(-z / sqrt(2.0));                   /* the calibrated probability */
        double lam = exp(-0.5 * z * z) / (sqrt(2.0 * M_PI) * 0.5 * erfc(-z / sqrt(2.0)));
        double g = -s[i] * lam, hh = s[i] * s[i] * lam * (z + lam);
        if (isfinite(g) && isfinite(hh)) {
            h += hh;
            a = fmin(1e3, fmax(1e-6, a - g / h));
        }
    }
    double ns = 1e9 * (double)(clock() - start) / CLOCKS_PER_SEC / N;
    printf("%.2f %.6f %.6f\n", ns, a, p / N);
    return 0;
}
"""


def newton_step_ns() -> float | None:
    """CPU nanoseconds of one `NewtonTemperature` step and one calibrated probability in C
    (``cc -O2``, `NEWTON_STEP_C`), or None without a C compiler."""
    import shutil
    import subprocess
    import tempfile

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        source, program = Path(tmp) / "step.c", Path(tmp) / "step"
        source.write_text(NEWTON_STEP_C)
        subprocess.run([cc, "-O2", "-o", str(program), str(source), "-lm"], check=True)
        out = subprocess.run([str(program)], check=True, capture_output=True, text=True)
    return float(out.stdout.split()[0])


# -- tables -----------------------------------------------------------------------------------


def _table(results: dict, models: list[str], cell: Callable, title: str) -> list[str]:
    """Rows: streams; columns: `models`; `cell(row, model)` a string (empty where the model did
    not run on the stream)."""
    lines = [f"\n#### {title}\n", "| stream | " + " | ".join(models) + " |"]
    lines.append("|---|" + "---:|" * len(models))
    for stream, row in results.items():
        cells = [cell(row, m) if m in row else "" for m in models]
        lines.append(f"| {stream} | " + " | ".join(cells) + " |")
    return lines


def best_river(row: dict) -> float:
    return max(row[r][0] for r in RIVER if r in row)


def best_logistic(row: dict) -> float:
    return min(row[r][1] for r in ("river LR", "river LR sc") if r in row)


def drift_tables(results: dict, ours: list[str]) -> list[str]:
    river = [r for r in RIVER if r in next(iter(results.values()))]
    lines = _table(
        results,
        river + ours,
        lambda row, m: (
            f"{row[m][0]:.3f}"
            if m in RIVER
            else f"{row[m][0]:.3f} ({100 * (row[m][0] - best_river(row)):+.1f})"
        ),
        "Drifting streams: prequential accuracy (ours: points against the best of river's six)",
    )
    lines += _table(
        results,
        river + ours,
        lambda row, m: f"{row[m][1]:.3f}",
        "Drifting streams: log loss (river's LogLoss)",
    )
    lines += [
        "",
        "Summary, drifting streams (accuracy against the best of river's six; log loss "
        "against river's LogisticRegression, the better of raw and scaled):",
        "",
    ]
    for m in ours:
        gaps = {s: 100 * (row[m][0] - best_river(row)) for s, row in results.items()}
        behind = {s: g for s, g in gaps.items() if g < -1.0}
        worse = [s for s, row in results.items() if row[m][1] > best_logistic(row)]
        lines.append(
            f"- {m}: mean {sum(gaps.values()) / len(gaps):+.1f}, behind by more than 1 point on "
            f"{len(behind)} of {len(gaps)}"
            + (": " + ", ".join(f"{s} {g:+.1f}" for s, g in behind.items()) if behind else "")
            + f"; log loss above LR's on {len(worse)}"
            + (f" ({', '.join(worse)})" if worse else "")
        )
    return lines


def stationary_tables(results: dict, ours: list[str], logistic: list[str]) -> list[str]:
    lines = _table(
        results,
        ours,
        lambda row, m: (
            f"{row[m][0]:.4f}"
            if m == DEFAULT
            else f"{row[m][0]:.4f} ({100 * (row[m][0] - row[DEFAULT][0]):+.1f})"
        ),
        "Stationary streams: accuracy (points against the uncalibrated AROW)",
    )
    lines += _table(
        results,
        logistic + ours,
        lambda row, m: f"{row[m][1]:.3f}",
        "Stationary streams: log loss (river's LogLoss; CrossEntropy on 20 Newsgroups)",
    )
    lines += [
        "",
        "Summary, stationary streams (accuracy against the uncalibrated AROW; log loss against "
        "river's LogisticRegression, the better of raw and scaled where both ran):",
        "",
    ]
    for m in ours:
        ran = {s: row for s, row in results.items() if m in row}
        gaps = {s: 100 * (row[m][0] - row[DEFAULT][0]) for s, row in ran.items()}
        behind = {s: g for s, g in gaps.items() if g < -0.3}
        worse = [
            s for s, row in ran.items() if row[m][1] > min(row[r][1] for r in logistic if r in row)
        ]
        lines.append(
            f"- {m}: worst {min(gaps.values()):+.2f}, behind by more than 0.3 on {len(behind)} of "
            f"{len(gaps)}"
            + (": " + ", ".join(f"{s} {g:+.1f}" for s, g in behind.items()) if behind else "")
            + f"; log loss above LR's on {len(worse)}"
            + (f" ({', '.join(worse)})" if worse else "")
        )
    return lines


def rule_tables(results: dict) -> list[str]:
    models = list(next(iter(results.values())))
    lines = _table(results, models, lambda row, m: f"{row[m][0]:.3f}", "Every rule: accuracy")
    return lines + _table(
        results, models, lambda row, m: f"{row[m][1]:.3f}", "Every rule: log loss"
    )


def cost_tables(costs: dict, kernel: dict) -> list[str]:
    names = list(next(iter(costs.values())))
    lines = [
        "\n#### Cost: CPU microseconds per example, predict_proba_one then learn_one "
        "(x the uncalibrated AROW)\n",
        "| model | " + " | ".join(costs) + " |",
        "|---|" + "---:|" * len(costs),
    ]
    for name in names:
        cells = [f"{c[name]:.1f} ({c[name] / c[DEFAULT]:.1f}x)" for c in costs.values()]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [
        "\nForgetting inside a compiled loop (the diagonal engine's learn_many, us per example):",
        "",
    ]
    for stream, (off, on) in kernel.items():
        lines.append(
            f"- {stream}: forgetting 0 {off:.2f}, forgetting 0.01 {on:.2f} ({on / off:.2f}x)"
        )
    return lines


# -- the figure: accuracy over time -----------------------------------------------------------

FIGURE_STREAMS = {"Hyperplane 0.01": None, "Sine reversed": 3000}  # name -> the reversal's example
FIGURE_MODELS: dict[str, Callable] = {
    "AROW() (the default)": river_cw.AROW,
    "AROW(forgetting=0) (no adaptation)": lambda: river_cw.AROW(forgetting=0.0),
    "river LogisticRegression (scaled)": RIVER["river LR sc"],
    "river PAClassifier (scaled)": RIVER["river PA sc"],
}
WINDOW = 500
EVERY = 100


def windowed_accuracy(model, examples: list, window: int = WINDOW, every: int = EVERY) -> list:
    """Prequential accuracy (predict, then learn; river's ``predict_one``, as its
    `metrics.Accuracy` scores) over the last `window` predictions (fewer at the start), after
    every `every`-th example, rounded to 4 digits."""
    hits: list[bool] = []
    out = []
    for i, (x, y) in enumerate(examples, 1):
        hits.append(model.predict_one(x) == y)
        model.learn_one(x, y)
        if i % every == 0:
            last = hits[-window:]
            out.append(round(sum(last) / len(last), 4))
    return out


def figure_numbers(n: int = 8000) -> dict:
    """The figure's numbers: per stream of `FIGURE_STREAMS` (`drifting_streams` with `n`) and
    model of `FIGURE_MODELS`, the `windowed_accuracy` curve."""
    streams = drifting_streams(n, set(FIGURE_STREAMS))
    return {
        "window": WINDOW,
        "every": EVERY,
        "n": n,
        "streams": {
            name: {
                "examples": len(streams[name]),
                "drift_at": at,
                "models": {
                    model: windowed_accuracy(make(), streams[name])
                    for model, make in FIGURE_MODELS.items()
                },
            }
            for name, at in FIGURE_STREAMS.items()
        },
    }


def draw(numbers: dict, out: Path) -> None:
    """Windowed accuracy against the example number, one panel per stream, a dotted vertical
    line where the concept is reversed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    every, window = numbers["every"], numbers["window"]
    streams = numbers["streams"]
    fig, axes = plt.subplots(1, len(streams), figsize=(11, 4.6), dpi=100, sharey=True)
    styles = ("-", "-", "--", ":")
    titles = {
        "Hyperplane 0.01": "river's Hyperplane, 3 of 8 features drifting (mag_change 0.01)",
        "Sine reversed": "river's Sine, the concept reversed at 3,000",
    }
    for ax, (name, run) in zip(axes, streams.items()):
        for k, (model, curve) in enumerate(run["models"].items()):
            steps = [every * (i + 1) for i in range(len(curve))]
            ax.plot(steps, curve, color=f"C{k}", ls=styles[k], lw=1.6, label=model)
        if run["drift_at"] is not None:
            ax.axvline(run["drift_at"], color="0.3", ls=":", lw=1.2)
            ax.annotate(
                "reversal",
                (run["drift_at"], 0.5),
                xytext=(-6, 0),
                textcoords="offset points",
                ha="right",
                fontsize=9,
                color="0.3",
            )
        ax.set_title(titles.get(name, name), fontsize=10)
        ax.set_xlim(0, run["examples"])
        ax.set_xlabel("example")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylim(0, 1.02)
    axes[0].set_ylabel(f"accuracy over the last {window} predictions")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=9)
    fig.suptitle("Accuracy over time on drifting streams, prequential (predict, then learn)")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(out)
    plt.close(fig)


# -- main -------------------------------------------------------------------------------------


def main(argv=None) -> dict:
    """Run the study; write and print its tables; return ``{"drift": ..., "stationary": ...}``
    (`run`'s results) and ``"cost"`` (`per_example_cost`'s, by stream)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few short streams, seconds")
    parser.add_argument("--out", type=Path, default=None, help=f"default: {OUT}")
    parser.add_argument(
        "--part",
        nargs="+",
        default=["drift", "stationary", "rules", "cost"],
        choices=["drift", "stationary", "rules", "cost"],
    )
    parser.add_argument(
        "--figure",
        type=Path,
        metavar="PATH",
        help="write, instead of the tables, the accuracy-over-time figure to PATH (PNG) and its "
        "numbers beside it (.json)",
    )
    args = parser.parse_args(argv)
    if args.figure is not None:
        numbers = figure_numbers()
        args.figure.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(numbers, indent=1) + "\n"
        args.figure.with_suffix(".json").write_text(text, encoding="utf-8")
        draw(numbers, args.figure)
        return numbers
    quick = args.quick
    n = 3000 if quick else 8000
    limit = 2000 if quick else 10000
    start = time.process_time()
    found: dict = {}
    lines = [
        f"engine: {river_cw.ENGINE}; progressive validation (river), one pass; "
        f"{'--quick' if quick else 'full run'}",
    ]
    base = baselines()
    if quick:
        base = {k: base[k] for k in STILL_BASELINES}
        cands = {k: candidates()[k] for k in ("surprise (raw)", CHOSEN)}
        cals = {k: calibrators()[k] for k in (NEWTON, NEWTON_NOISE)}
    else:
        cands, cals = candidates(), calibrators()
    ours = {**base, **cals, **cands}
    if "drift" in args.part:
        names = {"Hyperplane 0.01", "SEA abrupt", "Sine reversed"} if quick else None
        streams = drifting_streams(n, names)
        found["drift"] = run(streams, {**RIVER, **ours})
        lines += drift_tables(found["drift"], list(ours))
    if "stationary" in args.part:
        dense = stationary_streams(limit, [1] if quick else [1, 2, 3], limit if quick else 5000)
        if quick:
            dense = {k: dense[k] for k in ("Phishing", "SEA s1", "Agrawal s1", "a9a") if k in dense}
        logistic = {"river LR": RIVER["river LR"], "river LR sc": RIVER["river LR sc"]}
        # of the fixed rates, the one that does best on the drifting streams
        still = {k: v for k, v in ours.items() if k not in base or k in STILL_BASELINES}
        results = run(dense, {**logistic, **still})
        text = text_streams(limit, {"SMS"} if quick else None)
        for name, examples in text.items():
            multi = not isinstance(examples[0][1], bool)
            models = {"river LR": river_logistic(multi), **still}
            # one-step copies the engine per rate and example: a prototype's cost, too much
            # for a vocabulary of thousands of words (and it reads a binary margin)
            models = {k: v for k, v in models.items() if "one-step" not in k}
            results |= run({name: examples}, models)
        found["stationary"] = results
        lines += stationary_tables(results, list(still), list(logistic))
    if "rules" in args.part:
        drifting = drifting_streams(n, {"Hyperplane 0.01", "SEA abrupt", "Sine reversed"})
        dense = stationary_streams(limit, [1], limit if quick else 5000)
        still = {k: dense[k] for k in ("Phishing", "Agrawal s1", "a9a") if k in dense}
        text = text_streams(limit, {"SMS"})
        found["rules"] = run({**drifting, **still, **text}, rule_models())
        lines += rule_tables(found["rules"])
    if "cost" in args.part:
        timed = {
            **{k: base[k] for k in STILL_BASELINES},
            "river LR": linear_model.LogisticRegression,
            **cals,
            **cands,
        }
        if quick:
            timed = {k: timed[k] for k in (DEFAULT, FORGETTING, SHIPPED, CHOSEN)}
        size = 1000 if quick else 3000
        dense = drifting_streams(size, {"Hyperplane 0.01"})["Hyperplane 0.01"]
        sms = text_streams(size, {"SMS"}).get("SMS")
        costs = {"Hyperplane (8 features)": per_example_cost(timed, dense, 1 if quick else 3)}
        kernel = {"Hyperplane": kernel_forgetting_cost(dense)}
        if sms is not None:
            sms_timed = {k: v for k, v in timed.items() if "one-step" not in k}
            costs["SMS (bag of words)"] = per_example_cost(sms_timed, sms, 1 if quick else 3)
            costs["Hyperplane (8 features)"] = {
                k: v for k, v in costs["Hyperplane (8 features)"].items() if k in sms_timed
            }
            kernel["SMS"] = kernel_forgetting_cost(sms)
        found["cost"] = costs
        lines += cost_tables(costs, kernel)
        step = newton_step_ns()
        if step is not None:
            lines.append(
                f"- the Newton temperature's step and probability in C (cc -O2): {step:.0f} ns "
                "per example"
            )
    lines.append(f"\n{time.process_time() - start:.0f} s CPU")
    out = args.out or OUT
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return found


if __name__ == "__main__":
    main()
