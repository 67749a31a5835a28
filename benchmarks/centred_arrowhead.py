"""The arrowhead in centred coordinates (issue 41), a dense prototype: does learning on features
centred by their running means close the default model's gap on dense streams?

The arrowhead family (river_cw/_engines/arrowhead.py) keeps each weight's covariance with the
intercept and drops the covariances between weights. On features far from zero those are large (on
U[0, 1] features, E[x_i x_j] = 1/4 against E[x_i^2] = 1/3), so the family is a coarse approximation
there, where the full covariance, invariant to shifts of the features, is not. The prototype learns
AROW on ``[1, x - m]`` (m: the features' running means), projects each step onto the family (the
dense transcription the tests hold the engines to, `tests.support.reference`), and after each
example moves the centre: ``m += (x - m) / n``, and the Gaussian by the exact affine map that keeps
the margins (the intercept takes ``w . delta``), then projects onto the family again. Next to it:
the same prototype uncentred (which must be the library's model, a check of the prototype), the
library's ``AROW(forgetting=0, calibrate=False)`` and ``covariance="full"``. Two rules for the
centre: every feature's, and only the features an example has never lacked (what sparse input would
need: see `DenseArrowhead`); every model without forgetting or calibration (accuracy only:
calibration leaves predictions as they are).

Streams: benchmarks/drift.py's, the stationary dense ones (seed 1) and the drifting ones, binary, at
most 130 features (the prototype is dense numpy, O(d^3) a step). Prints a markdown table;
benchmarks/README.md ("Issue 41: the arrowhead on features far from zero") has the numbers and
what they mean.

With ``--part forgetting``, the question the prototype leaves: which forgetting a centred model
needs. The library's models and benchmarks/drift.py's forgetting controllers behind river's
``StandardScaler(with_std=False)`` (centring in front of the model, the centre not moved with it:
close to the prototype on these streams, whose means settle within a few dozen examples, and
wrong on a9a and Spambase, left out), on the drifting streams (8,000 examples; accuracy against
river's best there, from benchmarks/drift_tables.md, and log loss) and the stationary dense ones
(5,000, seed 1; accuracy against today's default ``AROW()``).

With ``--part sparse``, the lower control limits uncentred, where the "present" rule would leave
the model as it is (a9a, Spambase, the text corpora, 10,000 examples) and on Bananas.

With ``--part library``, what the library's centring gives (`river_cw.centring`, the "dense"
rule, its centre set once at the 200th example): every rule's default against the same with
``centre=False``, on the drifting streams of ``--part controller`` (river's models in the same
run), the stationary dense ones and the text corpora.

With ``--part plan``, the plan for the default's forgetting on top of the library's centring
(`Switching`): today's rule until the model centres, the log score read without r once it has;
a model that never centres keeps today's rule. On the drifting and the stationary dense streams,
beside the library's `AROW()`, which builds it (`river_cw.surprise`'s log score).

With ``--part log-score``, the log score per rule as the library builds it: every rule (CW and SOP
with ``forgetting="auto"``, which is not their default) centred, forgetting by its log score,
against the same model forgetting by its 0-1 surprise once centred (the library's default before
the log score: `counting_mistakes`). On the drifting streams of ``--part controller`` (river's
models in the same run) and the stationary dense ones (a9a and Spambase, which never centre,
left out).

With ``--part cost``, what the log score costs an example: callgrind's instructions
(benchmarks/callgrind.py) of ``predict_proba_one`` then ``learn_one`` on river's Hyperplane (8
features), 2,000 examples after 2,000 (the centred models centred by then), for `AROW()`, the
same counting its mistakes (`counting_mistakes`) and ``AROW(centre=False)``.

With ``--part batch``, what `learn_many` and `predict_proba_many` of a centred model cost: the
default `AROW()` and ``AROW(centre=False)`` on river's Hyperplane (8 features) in batches of
1,000 dicts after a first batch (the centred model centred by then), CPU microseconds a row, the
best of three.

With ``--part controller``, the answer measured without river's centring: `Calibrated` is the
prototype as a default model, the centre moved with it, the library's forgetting (the prototype
uncentred forgets as the library does, tested) and its calibrated probabilities with drift.py's
Newton temperature, its forgetting set by a drift.py controller: the library's surprise, its limit
lower, and the log score (`LogScore`). On the drifting streams with drift.py's seeds and two
others (8,000 examples, river's models in the same run), the stationary dense streams (5,000, seed
1, a9a and Spambase included: the "present" rule) and the text corpora (10,000, uncentred as that
rule leaves them). With ``--part rules``, the same log score on every rule's full covariance
(the covariance the centred arrowhead approximates), on the same streams.

    python benchmarks/centred_arrowhead.py [--limit 5000]
                                           [--part centring forgetting sparse controller rules
                                                   library plan log-score cost batch]
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
import time
from pathlib import Path

import numpy as np
from river import base, preprocessing

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import river_cw
from benchmarks import callgrind
from benchmarks.drift import (
    RIVER,
    LogScore,
    NewtonTemperature,
    Watched,
    adaptive,
    candidates,
    drifting_streams,
    phi_cdf,
    rate_of,
    run,
    stationary_streams,
    text_streams,
)
from tests.support.reference import arow

MAX_FEATURES = 130


def arrowhead(mu: np.ndarray, S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The Gaussian of the arrowhead family (one block, the intercept first) nearest N(mu, S)
    under the "drop" scheme: `tests.support.reference.arrowhead_projection`, the transcription
    the tests hold the engines to, in numpy's vector form (the same numbers, tested); it keeps mu,
    the intercept's variance S_00 and each weight's regression on it, ``k_j = S_j0 / S_00``, and
    the weight's variance given the intercept, ``S_jj - k_j^2 S_00``."""
    k = S[0] / S[0, 0]
    conditional = np.diag(S) - k * k * S[0, 0]
    conditional[0] = 0.0
    return mu, S[0, 0] * np.outer(k, k) + np.diag(conditional)


class DenseArrowhead:
    """AROW on the arrowhead family, dense, with the library's defaults (r 1, the weights' prior
    variance 1, the intercept's 100, the "drop" scheme), in coordinates centred on the running
    means of the features: none (`centring` None), every feature ("all"), each feature while
    it has been in every example so far ("present": a feature an example lacks is moved back to
    zero once, and stays there; sparse input, text or one-hot, is then not centred at all, and
    the cost is a step on the example's own features), or every feature while every example has
    had every feature ("dense": the first example that lacks one moves every centre back to
    zero, for good; a block is then centred whole or not at all)."""

    def __init__(self, names: list, centring: str | None, r: float = 1.0):
        self.index = {name: i for i, name in enumerate(names)}
        self.mu = np.zeros(len(names) + 1)
        self.S = np.diag([100.0] + [1.0] * len(names))
        self.centre = np.zeros(len(names))
        self.centred = np.full(len(names), centring is not None)
        self.seen = 0
        self.rule, self.r = centring, r
        self.forgetting = 0.0  # the library's, before each update (`forget`)
        self.learned = np.zeros(len(names), dtype=bool)  # features an update has touched

    def features(self, x: dict) -> np.ndarray:
        z = np.zeros(len(self.index))
        for name, value in x.items():
            z[self.index[name]] = value
        return z

    def predict_one(self, x: dict) -> bool:
        return self.margin(x) > 0

    def coordinates(self, x: dict) -> np.ndarray:
        """``[1, x - m]``: the intercept's input and the centred features."""
        return np.concatenate(([1.0], self.features(x) - self.centre))

    def learn_one(self, x: dict, y: bool) -> None:
        xt = self.coordinates(x)
        if self.forgetting:
            self.forget(xt[1:])
        self.mu, self.S = arrowhead(*arow(self.mu, self.S, xt, 1 if y else -1, self.r))
        self.learned |= xt[1:] != 0
        if self.rule is not None:
            self.move_centre(x)

    def forget(self, z: np.ndarray) -> None:
        """The library's forgetting (river_cw/_engines/arrowhead.py, its module docstring), in
        the family's terms: the weights ``w_j = k_j b + e_j`` (b the intercept, of variance S,
        e_j of variance c_j), each feature `z` touches relaxed toward the prior, ``c_j <- c_j /
        (keep + rest c_j)``, ``k_j <- keep k_j / (keep + rest c_j)``, and S when z touches every
        feature learned, ``1/S <- keep/S + rest_b + rest sum_j k_j k_j'``; the means stay."""
        keep, rest, rest_b = 1.0 - self.forgetting, self.forgetting, self.forgetting / 100.0
        s = self.S[0, 0]
        k = self.S[0, 1:] / s
        c = np.diag(self.S)[1:] - k * k * s
        touched = (z != 0) & self.learned
        relax = keep + rest * c[touched]
        k_new, c_new = k.copy(), c.copy()
        c_new[touched] = c[touched] / relax
        k_new[touched] = keep * k[touched] / relax
        if np.all(touched | ~self.learned):
            s = s / (keep + s * (rest_b + rest * math.fsum(k[touched] * k_new[touched])))
        self.S = np.empty_like(self.S)
        self.S[0, 0] = s
        self.S[0, 1:] = self.S[1:, 0] = k_new * s
        self.S[1:, 1:] = np.outer(k_new, k_new) * s + np.diag(c_new)

    def move_centre(self, x: dict) -> None:
        """Each centred feature's centre to its running mean with `x` (under "present", one `x`
        lacks back to zero, for good; under "dense", every one once `x` lacks one), the Gaussian
        by the affine map that keeps every margin (the intercept takes ``w . delta``), then onto
        the family (which keeps the mean: the margins stay)."""
        z = self.features(x)
        self.seen += 1
        if self.rule in ("present", "dense"):
            lacking = [i for name, i in self.index.items() if name not in x]
            if self.rule == "present":
                self.centred[lacking] = False
            elif lacking:
                self.centred[:] = False
        target = np.where(self.centred, self.centre + (z - self.centre) / self.seen, 0.0)
        delta = target - self.centre
        if not delta.any():
            return
        self.centre = target
        self.shift_by(delta)

    def shift_by(self, delta: np.ndarray) -> None:
        """The Gaussian in coordinates whose origin moved by `delta`: the affine map that keeps
        every margin (the intercept takes ``w . delta``), then onto the family."""
        shift = np.eye(len(self.mu))
        shift[0, 1:] = delta
        self.mu, self.S = arrowhead(shift @ self.mu, shift @ self.S @ shift.T)

    def margin(self, x: dict) -> float:
        return float(self.mu @ self.coordinates(x))

    def margin_and_variance(self, x: dict) -> tuple[float, float]:
        xt = self.coordinates(x)
        return float(self.mu @ xt), float(xt @ self.S @ xt)


class Calibrated(base.Classifier):
    """The prototype as a default model: the library's calibrated probabilities, ``Phi(a m /
    sqrt(v + noise))`` (the library's `noise` is its r, 1; drift.py's controllers read theirs
    with 0), a the `NewtonTemperature` of drift.py, and forgetting set before each update by a
    drift.py `controller` (None: `forgetting`, fixed). The controller reads the probabilities
    with the noise term `read` (None: `noise`), a temperature of their own where it differs.
    Binary, labels False and True."""

    def __init__(
        self, names, centring="present", controller=None, forgetting=0.0, noise=1.0, read=None
    ):
        self.names, self.centring, self.noise = names, centring, noise
        self.read = noise if read is None else read
        self.controller, self.forgetting = controller, forgetting
        self.model = DenseArrowhead(names, centring)
        self.model.forgetting = forgetting
        self.temperature = NewtonTemperature()
        self.read_temperature = self.temperature if self.read == noise else NewtonTemperature()
        self.labels: set = set()

    def _standardised(self, x: dict, noise: float) -> float:
        m, v = self.model.margin_and_variance(x)
        return m / math.sqrt(v + noise)

    @staticmethod
    def _proba(t: float, temperature) -> dict:
        p = phi_cdf(temperature.a * t)
        return {False: 1.0 - p, True: p}

    def predict_proba_one(self, x: dict) -> dict:
        if len(self.labels) < 2:
            return {}
        return self._proba(self._standardised(x, self.noise), self.temperature)

    def predict_one(self, x: dict):
        if len(self.labels) < 2:
            return next(iter(self.labels), None)
        return self.model.margin(x) > 0

    def learn_one(self, x: dict, y: bool) -> None:
        if len(self.labels) == 2:
            t = self._standardised(x, self.noise)
            read = t if self.read == self.noise else self._standardised(x, self.read)
            if self.controller is not None:
                proba = self._proba(read, self.read_temperature)
                self.model.forgetting = rate_of(self.controller, proba, y)
            self.temperature.learn({1: {0: t}}, [False, True], y)
            if self.read_temperature is not self.temperature:
                self.read_temperature.learn({1: {0: read}}, [False, True], y)
        self.labels.add(y)
        self.model.learn_one(x, y)


class CentredOnce(DenseArrowhead):
    """The library's centring (`river_cw.centring`): learned as it is for the first `WARM_UP`
    examples, their features' running means kept while every one has every feature, then the
    Gaussian moved to coordinates centred at those means, for good."""

    WARM_UP = 200

    def __init__(self, names: list):
        super().__init__(names, "dense")
        self.means = np.zeros(len(names))

    def move_centre(self, x: dict) -> None:
        if self.seen >= self.WARM_UP:
            return
        self.seen += 1
        if any(name not in x for name in self.index):
            self.centred[:] = False
        self.means += (self.features(x) - self.means) / self.seen
        if self.seen == self.WARM_UP and self.centred.all():
            self.centre = self.means.copy()
            self.shift_by(self.centre)


class Switching(Calibrated):
    """The plan for the default's forgetting: the library's centring (`CentredOnce`), today's
    rule reading the library's probabilities until the model centres, and once centred the log
    score reading ``Phi(a' m / sqrt(v))`` with a temperature of its own. A model that never
    centres (sparse input, one-hot) keeps today's rule."""

    def __init__(self, names: list):
        super().__init__(names, "dense", Watched(c=2.0, k=2.0))
        self.model = CentredOnce(names)
        self.log_score, self.read_temperature = LogScore(), NewtonTemperature()

    def learn_one(self, x: dict, y: bool) -> None:
        if len(self.labels) == 2:
            t, t0 = self._standardised(x, self.noise), self._standardised(x, 0.0)
            if self.model.centre.any():
                proba = self._proba(t0, self.read_temperature)
                self.model.forgetting = rate_of(self.log_score, proba, y)
            else:
                proba = self._proba(t, self.temperature)
                self.model.forgetting = rate_of(self.controller, proba, y)
            self.temperature.learn({1: {0: t}}, [False, True], y)
            self.read_temperature.learn({1: {0: t0}}, [False, True], y)
        self.labels.add(y)
        self.model.learn_one(x, y)


def planned(names: list) -> dict:
    """--part plan's models: today's rule uncentred (the library's `AROW()` before centring),
    `Switching`, and the library's `AROW()`, which builds it."""
    return {
        "today's rule": lambda: Calibrated(names, None, Watched(c=2.0, k=2.0)),
        "centred once, log score once centred": lambda: Switching(names),
        "`AROW()` (built)": river_cw.AROW,
    }


def accuracy(model, examples: list) -> float:
    right = 0
    for x, y in examples:
        right += model.predict_one(x) == y
        model.learn_one(x, y)
    return right / len(examples)


def rows(streams: dict) -> None:
    for name, examples in streams.items():
        labels = sorted({y for _, y in examples}, key=str)
        names = sorted({k for x, _ in examples for k in x}, key=str)
        if len(labels) != 2 or len(names) > MAX_FEATURES:
            continue
        binary = [(x, y == labels[-1]) for x, y in examples]
        library = accuracy(river_cw.AROW(forgetting=0, calibrate=False, centre=False), binary)
        uncentred = accuracy(DenseArrowhead(names, None), binary)
        centred = [accuracy(DenseArrowhead(names, rule), binary) for rule in ("all", "present")]
        full = accuracy(river_cw.AROW(covariance="full", forgetting=0, calibrate=False), binary)
        cells = [f"{a:.4f} ({100 * (a - uncentred):+.2f})" for a in (*centred, full)]
        line = f"| {name} | {library:.4f} | {uncentred:.4f} | " + " | ".join(cells) + " |"
        print(line, flush=True)


# river's best accuracy on each drifting stream (LogisticRegression, PAClassifier, Perceptron,
# raw and scaled): benchmarks/drift_tables.md
RIVER_BEST = {
    "Hyperplane 0.001": 0.937,
    "Hyperplane 0.01": 0.889,
    "Hyperplane 0.05": 0.874,
    "SEA abrupt": 0.973,
    "SEA gradual": 0.969,
    "Agrawal abrupt": 0.620,
    "Agrawal gradual": 0.619,
    "Sine reversed": 0.958,
    "RandomRBFDrift": 0.711,
}


def centring(make):
    """`make`'s model behind river's centring (the centre not moved with the model)."""
    return lambda: preprocessing.StandardScaler(with_std=False) | make()


LIMITS = (1.0, 1.5)  # control limits tried below the library's 2


def limited(k: float):
    """drift.py's prototype of the library's forgetting (`Watched`, gain 2) with limit `k`."""
    return adaptive(lambda: Watched(c=2.0, k=k), NewtonTemperature)


def sparse_rows() -> None:
    """The lower limits where centring leaves the model as it is (sparse input: no feature in
    every example), and on Bananas, uncentred: accuracy (points against today's `AROW()`) / log
    loss."""
    dense = stationary_streams(10000, [1], 5000)
    streams = {k: dense[k] for k in ("Bananas", "a9a", "Spambase")}
    streams |= text_streams(10000, ["SMS", "reviews", "Enron"])
    models = {"`AROW()`": river_cw.AROW, **{f"limit at {k} sd": limited(k) for k in LIMITS}}
    print("| stream | " + " | ".join(models) + " |")
    print("|---|" + "---:|" * len(models))
    for name, row in run(streams, models).items():
        reference = row["`AROW()`"][0]
        cells = [
            f"{a:.4f} ({100 * (a - reference):+.2f}) / {loss:.3f}" for a, loss, _ in row.values()
        ]
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


def forgetting_rows(streams: dict) -> None:
    controllers = candidates()
    models = {
        "`AROW()`": river_cw.AROW,
        "centred `AROW()`": centring(river_cw.AROW),
        "centred, surprise, no limit, gain 1": centring(controllers["surprise +N c=1"]),
        "centred, surprise, no limit, raw probabilities": centring(controllers["surprise raw +N"]),
        "centred, one-step rates": centring(controllers["one-step rates +N"]),
        # the library's rule as drift.py prototypes it (gain 2, a control limit of two standard
        # deviations), its limit lower
        **{f"centred, limit at {k} sd": centring(limited(k)) for k in LIMITS},
        "centred, `forgetting=0.01`": centring(
            lambda: river_cw.AROW(forgetting=0.01, centre=False)
        ),
    }
    print("| stream | " + " | ".join(models) + " |")
    print("|---|" + "---:|" * len(models))
    for name, row in run(streams, models).items():
        reference = RIVER_BEST.get(name, row["`AROW()`"][0])
        cells = [
            f"{a:.3f} ({100 * (a - reference):+.1f}) / {loss:.3f}" for a, loss, _ in row.values()
        ]
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


def full_log_score(rule):
    """`rule`'s full covariance with the log score, read without r (drift.py's `Adaptive`)."""
    return adaptive(LogScore, NewtonTemperature, rule=functools.partial(rule, covariance="full"))


SEEDS = (None, 7, 13)  # the drifting streams' seeds for --part controller: drift.py's, then two


def controlled(names: list) -> dict:
    """--part controller's models for a stream with these features: `Calibrated` prototypes,
    "centred" under the "present" rule; "without r" reads ``Phi(a m / sqrt(v))``, as drift.py's
    controllers do, where the library reads ``Phi(a m / sqrt(v + r))``; and the library's full
    covariance, as it is and with the log score (drift.py's `Adaptive`)."""
    return {
        "today's rule": lambda: Calibrated(names, None, Watched(c=2.0, k=2.0)),
        "centred": lambda: Calibrated(names, "present", Watched(c=2.0, k=2.0)),
        "centred, without r": lambda: Calibrated(
            names, "present", Watched(c=2.0, k=2.0), noise=0.0
        ),
        "centred, limit at 1 sd, without r": lambda: Calibrated(
            names, "present", Watched(c=2.0, k=1.0), noise=0.0
        ),
        "centred, log score": lambda: Calibrated(names, "present", LogScore()),
        "centred, log score, without r": lambda: Calibrated(
            names, "present", LogScore(), noise=0.0
        ),
        "centred, log score read without r, scored with r": lambda: Calibrated(
            names, "present", LogScore(), read=0.0
        ),
        'the same, centred under "dense"': lambda: Calibrated(names, "dense", LogScore(), read=0.0),
        "centred, `forgetting=0.01`, without r": lambda: Calibrated(
            names, "present", None, 0.01, noise=0.0
        ),
        # the covariance the centred arrowhead approximates, invariant to shifts of the features
        '`covariance="full"`': lambda: river_cw.AROW(covariance="full"),
        '`covariance="full"`, log score, without r': full_log_score(river_cw.AROW),
    }


def compared_rows(streams: dict, models_for, against_river: bool, reference) -> None:
    """One row a stream: accuracy (points against river's best on the stream, or against
    ``reference(row, model)``) / log loss of each model of ``models_for(examples)``; with
    `against_river`, river's best accuracy / LR's best log loss (raw or scaled) first, and the
    count of streams each model is within a point of river's best on, and at or below LR's log
    loss."""
    names = list(models_for([]))
    print("| stream | " + ("river: best / LR's log loss | " if against_river else ""), end="")
    print(" | ".join(names) + " |")
    print("|---|" + "---:|" * (len(names) + against_river))
    within, below = dict.fromkeys(names, 0), dict.fromkeys(names, 0)
    for name, examples in streams.items():
        row = run({name: examples}, models_for(examples) | (RIVER if against_river else {}))[name]
        if against_river:
            best = max(row[m][0] for m in RIVER)
            logistic = min(row[m][1] for m in RIVER if m.startswith("river LR"))
        cells = []
        for m in names:
            accuracy, loss, _ = row[m]
            against = best if against_river else reference(row, m)
            cells.append(f"{accuracy:.3f} ({100 * (accuracy - against):+.1f}) / {loss:.3f}")
            if against_river:
                within[m] += accuracy >= best - 0.01
                below[m] += loss <= logistic
        head = f"{best:.3f} / {logistic:.3f} | " if against_river else ""
        print(f"| {name} | {head}" + " | ".join(cells) + " |", flush=True)
    if against_river:
        n = len(streams)
        for what, counts in (
            ("within a point of river's best", within),
            ("log loss at or below LR's", below),
        ):
            print(f"| {what} | | " + " | ".join(f"{counts[m]} of {n}" for m in names) + " |")


def controller_rows(streams: dict, against_river: bool) -> None:
    """`compared_rows` of the `controlled` models (against "today's rule" where not against
    river)."""

    def models_for(examples):
        return controlled(sorted({k for x, _ in examples for k in x}, key=str))

    compared_rows(streams, models_for, against_river, lambda row, m: row["today's rule"][0])


def text_rows(limit: int) -> None:
    """The text corpora, uncentred as the "present" rule leaves them: the library's `AROW()`,
    and drift.py's prototype of its rule and of the log score (`Adaptive`, probabilities read
    without r): accuracy (points against `AROW()`) / log loss."""
    models = {
        "`AROW()`": river_cw.AROW,
        "today's rule": limited(2.0),
        "log score": adaptive(LogScore, NewtonTemperature),
    }
    print("| stream | " + " | ".join(models) + " |")
    print("|---|" + "---:|" * len(models))
    for name, row in run(text_streams(limit), models).items():
        reference = row["`AROW()`"][0]
        cells = [
            f"{a:.4f} ({100 * (a - reference):+.2f}) / {loss:.3f}" for a, loss, _ in row.values()
        ]
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


RULES = ("AROW", "CW", "NHERD", "SCW", "SOP")


def rule_rows(drifting: dict, stationary: dict) -> None:
    """Per rule, its full covariance as it is and with the log score read without r (the
    constants chosen on AROW): on how many drifting streams each is within a point of river's
    best, and its largest loss where nothing drifts against the full covariance as it is."""
    models = dict(RIVER)
    for name in RULES:
        rule = getattr(river_cw, name)
        models[f"{name} full"] = lambda rule=rule: rule(covariance="full")
        models[f"{name} log score"] = full_log_score(rule)
    found = run(drifting | stationary, models)
    print(
        "| rule | within a point: as it is | with the log score | largest loss where nothing drifts |"
    )
    print("|---|---:|---:|---:|")
    for name in RULES:
        within = dict.fromkeys(("full", "log score"), 0)
        for stream in drifting:
            best = max(found[stream][m][0] for m in RIVER)
            for kind in within:
                within[kind] += found[stream][f"{name} {kind}"][0] >= best - 0.01
        losses = {
            stream: found[stream][f"{name} log score"][0] - found[stream][f"{name} full"][0]
            for stream in stationary
        }
        worst = min(losses, key=losses.get)
        n = len(drifting)
        print(
            f"| {name} | {within['full']} of {n} | {within['log score']} of {n} "
            f"| {100 * losses[worst]:+.2f} ({worst}) |",
            flush=True,
        )


def library_rows(streams: dict, against_river: bool, rules=("AROW",)) -> None:
    """The library's centring (`river_cw.centring`): `compared_rows` of each rule's default
    and the same with ``centre=False`` (against which each is measured where not against
    river)."""
    models = {}
    for name in rules:
        rule = getattr(river_cw, name)
        models[f"`{name}()`"] = rule
        models[f"`{name}(centre=False)`"] = functools.partial(rule, centre=False)

    def uncentred(row, m):
        return row[m if m.endswith("(centre=False)`") else m[:-3] + "(centre=False)`"][0]

    compared_rows(streams, lambda examples: models, against_river, uncentred)


def plan_rows(streams: dict, against_river: bool) -> None:
    """`compared_rows` of the `planned` models (against "today's rule" where not against
    river)."""

    def models_for(examples):
        return planned(sorted({k for x, _ in examples for k in x}, key=str))

    compared_rows(streams, models_for, against_river, lambda row, m: row["today's rule"][0])


def counting_mistakes(rule, **options):
    """`rule(**options)` whose forgetting, once centred, is still set by its 0-1 surprise: the
    model without its log score (a model restored from a state written before the log score
    is the same)."""

    def make():
        model = rule(**options)
        model._log_score = None
        return model

    return make


def log_score_rows(streams: dict, against_river: bool) -> None:
    """`compared_rows` of every rule with its log score and counting its mistakes once centred
    (`counting_mistakes`; against which each is measured where not against river); CW and SOP
    with ``forgetting="auto"``."""
    models = {}
    for name in RULES:
        rule = getattr(river_cw, name)
        options = {} if name in ("AROW", "NHERD", "SCW") else {"forgetting": "auto"}
        shown = f"{name}({', '.join(f'{k}={v!r}' for k, v in options.items())})"
        models[f"`{shown}`"] = functools.partial(rule, **options)
        models[f"`{shown}` counting mistakes"] = counting_mistakes(rule, **options)

    def mistakes(row, m):
        return row[m if m.endswith(" counting mistakes") else m + " counting mistakes"][0]

    compared_rows(streams, lambda examples: models, against_river, mistakes)


def hyperplane(n: int) -> list:
    """River's Hyperplane (8 features, 3 drifting, `mag_change` 0.01), its first `n` examples."""
    from river.datasets import synth

    stream = synth.Hyperplane(seed=42, n_features=8, n_drift_features=3, mag_change=0.01)
    return list(stream.take(n))


COSTED = {
    "`AROW()`": river_cw.AROW,
    "`AROW()` counting mistakes": counting_mistakes(river_cw.AROW),
    "`AROW(centre=False)`": functools.partial(river_cw.AROW, centre=False),
}
COST_EXAMPLES = 2000  # warming up, then counted


def cost_child(names: list) -> None:
    """`--part cost`'s child, under callgrind: each model warmed up, then counted between two
    markers (`time.process_time`)."""
    examples = hyperplane(2 * COST_EXAMPLES)
    callgrind.start_counting()
    for name in names:
        model = COSTED[name]()
        for x, y in examples[:COST_EXAMPLES]:
            model.predict_proba_one(x)
            model.learn_one(x, y)
        time.process_time()  # marker: counting starts
        for x, y in examples[COST_EXAMPLES:]:
            model.predict_proba_one(x)
            model.learn_one(x, y)
        time.process_time()  # marker: counting stops


def cost_rows() -> None:
    """`--part cost`: instructions an example of each of `COSTED` (see above)."""
    names = list(COSTED)
    parts = callgrind.counts([__file__, "--cost-child", *names], {})
    # part 1 runs up to the first marker; then one part per pass, one between passes
    counted = {name: parts[1 + 2 * i] / COST_EXAMPLES for i, name in enumerate(names)}
    reference = counted["`AROW()` counting mistakes"]
    print("| model | instructions an example | against counting mistakes |\n|---|---:|---:|")
    for name, count in counted.items():
        print(f"| {name} | {count:,.0f} | {count / reference:.3f}x |", flush=True)


def batch_rows(batches: int = 20, size: int = 1000, repeat: int = 3) -> None:
    """`--part batch`: CPU microseconds a row of `learn_many` and `predict_proba_many`, centred
    and not (see above)."""
    examples = hyperplane((batches + 1) * size)
    cut = [examples[a : a + size] for a in range(0, len(examples), size)]
    cut = [([x for x, _ in rows], [y for _, y in rows]) for rows in cut]
    models = {
        "`AROW()`": river_cw.AROW,
        "`AROW(centre=False)`": functools.partial(river_cw.AROW, centre=False),
    }
    print("| model | `learn_many`, us a row | `predict_proba_many`, us a row |\n|---|---:|---:|")
    for name, make in models.items():
        learning = predicting = math.inf
        for _ in range(repeat):
            model = make()
            model.learn_many(*cut[0])
            start = time.process_time()
            for rows in cut[1:]:
                model.learn_many(*rows)
            learning = min(learning, time.process_time() - start)
            start = time.process_time()
            for rows, _ in cut[1:]:
                model.predict_proba_many(rows)
            predicting = min(predicting, time.process_time() - start)
        per_row = [f"{1e6 * t / (batches * size):.2f}" for t in (learning, predicting)]
        print(f"| {name} | " + " | ".join(per_row) + " |", flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=5000, help="examples per stream")
    parser.add_argument(
        "--part",
        nargs="+",
        choices=[
            "centring",
            "forgetting",
            "sparse",
            "controller",
            "rules",
            "library",
            "plan",
            "log-score",
            "cost",
            "batch",
        ],
        default=["centring"],
    )
    parser.add_argument("--cost-child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cost_child:
        cost_child(args.cost_child)
        return
    if "cost" in args.part:
        cost_rows()
    if "centring" in args.part:
        print(
            "| stream | library arrowhead | prototype | centred: every feature (points) "
            "| centred: those in every example | full (points) |"
        )
        print("|---|---:|---:|---:|---:|---:|")
        rows(stationary_streams(args.limit, [1], args.limit))
        rows(drifting_streams(args.limit))
    if "forgetting" in args.part:
        forgetting_rows(drifting_streams(8000))
        dense = stationary_streams(args.limit, [1], args.limit)
        forgetting_rows({k: v for k, v in dense.items() if k not in ("a9a", "Spambase")})
    if "sparse" in args.part:
        sparse_rows()
    if any(part in args.part for part in ("controller", "rules", "library", "plan", "log-score")):
        drifting = {}
        for seed in SEEDS:
            found = drifting_streams(8000, seed=seed)
            drifting |= {
                name + ("" if seed is None else f" s{seed}"): v for name, v in found.items()
            }
        stationary = stationary_streams(args.limit, [1], args.limit)
    if "controller" in args.part:
        controller_rows(drifting, against_river=True)
        controller_rows(stationary, against_river=False)
        text_rows(10000)
    if "rules" in args.part:
        rule_rows(drifting, stationary)
    if "plan" in args.part:
        plan_rows(drifting, True)
        plan_rows(stationary, False)
    if "batch" in args.part:
        batch_rows()
    if "log-score" in args.part:
        log_score_rows(drifting, True)
        log_score_rows({k: v for k, v in stationary.items() if k not in ("a9a", "Spambase")}, False)
    if "library" in args.part:
        library_rows(drifting, True, RULES)
        library_rows(stationary, False, RULES)
        library_rows(text_streams(10000), False)


if __name__ == "__main__":
    main()
