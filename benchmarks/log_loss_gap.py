"""What was left of the default's log loss against river's LogisticRegression (issue 41).

With a model that has met one bool label answering both, the default `AROW()`'s log loss was at
or below river's LogisticRegression's (the better of raw and scaled) on all nine drifting
streams of benchmarks/drift.py and above it on four of its stationary ones. Each part measures
one way to the rest, on drift.py's drifting streams and a selection of its stationary ones
(river's `progressive_val_score`, `Accuracy() + LogLoss()`), on `AROW()` as it was then
(`before_flips`: without the share of flipped labels, `river_cw.flips`, which ``link`` led to):

- ``one-label``: a model that has met one bool label, certain of it (the library before
  `river_cw.labels.predicted_labels`) against binary over both bools (the library since);
- ``link``: the probabilities of the positive label p that `AROW()` gives in one progressive
  pass, read as ``z = Phi^-1(p)``, and a link on top of them: the best fixed ``eps + (1 - 2 eps)
  Phi(c z)`` over the pass (in hindsight: a bound, not a method), and the same link fitted
  online (a prototype: before each example's label is seen, p' from the current ``(c, eps)``,
  ``eps = sigmoid(b) / 2``; then one Gauss-Newton step of ``(c, b)`` on ``-log p'(label)``, its
  curvature the sum of the gradients' outer products), beside river LR's log loss in the same run;
  and the best eps alone in hindsight (c = 1: the calibration as it is, flips added on top), and
  eps alone fitted by online EM from a few priors (`online_flip_share`).
  The link is the probit with flipped labels of outlier-robust Gaussian process classification
  (Kim and Ghahramani 2008): a label flipped with probability eps costs at most ``-log eps``;
- ``decay``: the Newton temperature's curvature forgetting, ``H <- (1 - d) H + w h`` (a patch
  of `river_cw.calibration`'s step, so the pure-Python engine; it also moves the log score's
  temperature), d in 0 (the library then), 0.001, 0.003, 0.01;
- ``floor``: a floor under the log score's variance V in its control limit (a patch of
  `river_cw.surprise.log_score_rate`, pure Python), 0 (the library then), 0.05, 0.1, 0.2.

    python benchmarks/log_loss_gap.py [--part one-label link decay floor] [--quick]

``decay`` and ``floor`` run in a child process with ``RIVER_CW_PURE_PYTHON=1``, on the log
score's control limit as it was (`STUDIED_LIMIT`, no floor); ``one-label`` and ``link`` on the
compiled library as it is. The outcome is in
benchmarks/README.md, "Issue 41: a model that knows one bool label" and what follows it.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
from river import linear_model, preprocessing
from scipy.special import ndtr, ndtri

import river_cw
import river_cw.labels
from benchmarks.drift import drifting_streams, score, stationary_streams
from river_cw import calibration, engine, surprise

STATIONARY = ("Bananas", "Phishing", "Hyperplane s1", "Hyperplane s2", "SEA s1", "Agrawal s1")
STATIONARY += ("Sine s1", "a9a", "Spambase", "3 x U[5, 6]")
PURE_PYTHON_PARTS = ("decay", "floor")


def before_flips():
    """`AROW()` without the share of flipped labels this study led to (`river_cw.flips`): the
    library as the study measured it."""
    model = river_cw.AROW()
    model._flips = None
    return model


def streams(quick: bool) -> dict[str, list]:
    if quick:
        drifting = drifting_streams(1500, ["Hyperplane 0.01", "SEA abrupt"])
        return drifting | {"Phishing": stationary_streams(1000, [1], 1000)["Phishing"]}
    found = stationary_streams(10000, [1, 2], 5000)
    return drifting_streams(8000) | {name: found[name] for name in STATIONARY}


def table(head: list[str], rows: dict[str, list[str]]) -> None:
    print("| stream | " + " | ".join(head) + " |")
    print("|---|" + "---:|" * len(head))
    for name, cells in rows.items():
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


def cell(factory, examples: list) -> str:
    accuracy, loss, _ = score(factory, examples)
    return f"{accuracy:.4f} / {loss:.4f}"


# -- one-label ----------------------------------------------------------------------------------


def certain(classes: list) -> list:
    """The library's labels to predict before `predicted_labels`: the labels learned."""
    return classes


def with_labels_to_predict(rule, examples: list) -> str:
    """`cell` of `AROW()` with `rule` in place of `river_cw.labels.predicted_labels` wherever
    the library reads it."""
    from river_cw import _one_call, base, gaussian_classifier, rda

    modules = (base, gaussian_classifier, rda, _one_call)
    saved = [module.predicted_labels for module in modules]
    try:
        for module in modules:
            module.predicted_labels = rule
        return cell(before_flips, examples)
    finally:
        for module, kept in zip(modules, saved):
            module.predicted_labels = kept


def one_label(data: dict) -> None:
    rows = {
        name: [
            with_labels_to_predict(certain, examples),
            with_labels_to_predict(river_cw.labels.predicted_labels, examples),
        ]
        for name, examples in data.items()
    }
    table(["certain of one label", "both bools"], rows)


# -- link ---------------------------------------------------------------------------------------


def progressive_z(examples: list) -> tuple[np.ndarray, np.ndarray]:
    """``z = Phi^-1(p)`` of `AROW()`'s probability of True before each example (from the second
    label on), and the labels."""
    model, zs, ys = before_flips(), [], []
    for x, y in examples:
        proba = model.predict_proba_one(x)
        if len(proba) == 2:
            zs.append(ndtri(min(max(proba[True], 1e-300), 1.0 - 1e-16)))
            ys.append(bool(y))
        model.learn_one(x, y)
    return np.array(zs), np.array(ys)


def log_loss(p: np.ndarray, y: np.ndarray) -> float:
    p = np.clip(p, 1e-15, 1.0 - 1e-15)
    return float(-np.mean(np.where(y, np.log(p), np.log1p(-p))))


def best_fixed_link(z: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """The log loss of the best ``eps + (1 - 2 eps) Phi(c z)`` on a grid, in hindsight."""
    return min(
        (log_loss(eps + (1.0 - 2.0 * eps) * ndtr(c * z), y), eps, c)
        for eps in (0.0, 0.005, 0.01, 0.02, 0.03, 0.05)
        for c in (0.8, 1.0, 1.2, 1.4, 1.7, 2.0, 2.5, 3.0)
    )


def best_flip_share(z: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """The log loss of the best ``eps + (1 - 2 eps) Phi(z)`` on a grid, in hindsight: the
    flipped labels' share alone, on the calibrated margins as they are."""
    shares = (0.0, 0.001, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05)
    return min((log_loss(eps + (1.0 - 2.0 * eps) * ndtr(z), y), eps) for eps in shares)


def online_link(z: np.ndarray, y: np.ndarray, b0: float = -6.0) -> tuple[float, float, float]:
    """The log loss of ``eps + (1 - 2 eps) Phi(c z)`` fitted online (see the module's
    docstring), from ``c = 1`` and ``eps = sigmoid(b0) / 2``; and the final c and eps."""
    theta, curvature, total = np.array([1.0, b0]), np.eye(2), 0.0
    for z_t, y_t in zip(z, y):
        z_label = z_t if y_t else -z_t
        c, b = theta
        eps = 0.5 / (1.0 + math.exp(-b))
        u = c * z_label
        phi, cdf = math.exp(-0.5 * u * u) / math.sqrt(2.0 * math.pi), float(ndtr(u))
        p = eps + (1.0 - 2.0 * eps) * cdf
        total -= math.log(max(p, 1e-15))
        gradient = (
            -np.array(
                [(1.0 - 2.0 * eps) * phi * z_label, (1.0 - 2.0 * cdf) * eps * (1.0 - 2.0 * eps)]
            )
            / p
        )
        curvature += np.outer(gradient, gradient)
        theta = theta - np.linalg.solve(curvature, gradient)
        theta = np.array([min(max(theta[0], 0.05), 20.0), min(max(theta[1], -12.0), 0.0)])
    return total / len(z), float(theta[0]), 0.5 / (1.0 + math.exp(-theta[1]))


def online_flip_share(z: np.ndarray, y: np.ndarray, share: float, count: float) -> float:
    """The log loss of ``eps + (1 - 2 eps) Phi(z)`` with eps fitted by online EM: each example
    scored first, then eps moves to the running mean of the examples' posterior probabilities
    of a flip, ``r = eps Phi(-z_y) / p``, from a prior `share` counted as `count` examples (the
    mixture weight's online EM, Cappe and Moulines 2009)."""
    eps, n, total = share, count, 0.0
    for z_t, y_t in zip(z, y):
        right = float(ndtr(z_t if y_t else -z_t))
        p = eps + (1.0 - 2.0 * eps) * right
        total -= math.log(max(p, 1e-15))
        n += 1.0
        eps += (eps * (1.0 - right) / p - eps) / n
    return total / len(z)


PRIORS = ((0.01, 10.0), (0.01, 100.0), (0.003, 100.0), (0.001, 100.0))


def river_logistic(examples: list) -> float:
    """River LR's log loss, the better of raw and behind a StandardScaler."""
    return min(
        score(make, examples)[1]
        for make in (
            linear_model.LogisticRegression,
            lambda: preprocessing.StandardScaler() | linear_model.LogisticRegression(),
        )
    )


def link(data: dict) -> None:
    rows = {}
    for name, examples in data.items():
        z, y = progressive_z(examples)
        best, eps, c = best_fixed_link(z, y)
        alone, share = best_flip_share(z, y)
        online, c_end, eps_end = online_link(z, y)
        em = [f"{online_flip_share(z, y, *prior):.4f}" for prior in PRIORS]
        rows[name] = [
            f"{log_loss(ndtr(z), y):.4f}",
            f"{alone:.4f} ({share})",
            f"{best:.4f} ({eps}, {c})",
            f"{online:.4f} ({eps_end:.4f}, {c_end:.2f})",
            *em,
            f"{river_logistic(examples):.4f}",
        ]
    head = ["`AROW()` then", "best eps alone (eps)", "best fixed link (eps, c)"]
    head += ["link fitted online (last eps, c)"]
    head += [f"eps by online EM from {share}, {count:.0f} examples" for share, count in PRIORS]
    table(head + ["river LR, raw or scaled"], rows)


# -- decay and floor (pure Python) --------------------------------------------------------------


def decaying_step(d: float):
    """`calibration._take_step` with a curvature that forgets at rate d."""

    def take_step(state, g: float, h: float, w: float) -> None:
        if w != 1.0:
            g, h = w * g, w * h
        curvature = (1.0 - d) * state[1] + h
        a = state[0] - g / curvature
        if not (math.isfinite(a) and math.isfinite(curvature)):
            return
        state[0] = min(max(a, calibration.LOWEST), calibration.HIGHEST)
        state[1] = curvature

    return take_step


STUDIED_LIMIT = 2.5  # the log score's control limit in the library when this study ran


def floored_rate(floor: float, limit: float = surprise.LOG_SCORE_LIMIT):
    """`surprise.log_score_rate` with V at least `floor` in its control `limit` (this study ran
    at STUDIED_LIMIT and no floor; the library took a floor and a limit of 1.5 after it:
    benchmarks/log_score_limit.py)."""

    def log_score_rate(state) -> float:
        n, loss, entropy, variance = state[2:]
        if n < surprise.WARM_UP:
            return 0.0
        sd = math.sqrt(max(variance, floor) * surprise.LAMBDA / (2.0 - surprise.LAMBDA))
        excess = loss - entropy - limit * sd
        return min(max(surprise.GAIN * excess, 0.0), surprise.HIGHEST)

    return log_score_rate


def patched(data: dict, module, name: str, variants: dict) -> None:
    """Each of `variants` in place of ``module.name``, on the log score's rate as it was when the
    study ran (its limit STUDIED_LIMIT, no floor)."""
    kept, kept_rate, rows = getattr(module, name), surprise.log_score_rate, {}
    try:
        surprise.log_score_rate = floored_rate(0.0, STUDIED_LIMIT)
        for stream, examples in data.items():
            rows[stream] = []
            for replacement in variants.values():
                setattr(module, name, replacement)
                rows[stream].append(cell(before_flips, examples))
    finally:
        setattr(module, name, kept)
        surprise.log_score_rate = kept_rate
    table(list(variants), rows)


def decay(data: dict) -> None:
    rates = (0.0, 0.001, 0.003, 0.01)
    patched(data, calibration, "_take_step", {f"d = {d}": decaying_step(d) for d in rates})


def floor(data: dict) -> None:
    floors = (0.0, 0.05, 0.1, 0.2)
    variants = {f"V at least {f}": floored_rate(f, STUDIED_LIMIT) for f in floors}
    patched(data, surprise, "log_score_rate", variants)


PARTS = {"one-label": one_label, "link": link, "decay": decay, "floor": floor}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", nargs="+", choices=list(PARTS), default=list(PARTS))
    parser.add_argument("--quick", action="store_true", help="three streams of 1,000-1,500")
    args = parser.parse_args(argv)
    if engine.ENGINE == "c" and any(part in PURE_PYTHON_PARTS for part in args.part):
        here = [p for p in args.part if p not in PURE_PYTHON_PARTS]
        child = [p for p in args.part if p in PURE_PYTHON_PARTS]
        command = [sys.executable, __file__, "--part", *child] + (["--quick"] if args.quick else [])
        if here:
            main(["--part", *here] + (["--quick"] if args.quick else []))
        subprocess.run(command, check=True, env={**os.environ, engine.SWITCH: "1"})
        return
    data = streams(args.quick)
    for part in args.part:
        measured = "log loss" if part == "link" else "accuracy / log loss"
        print(f"\n### {part} ({engine.ENGINE} engine): {measured}\n", flush=True)
        PARTS[part](data)


if __name__ == "__main__":
    main()
