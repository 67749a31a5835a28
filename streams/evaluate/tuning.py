"""Hyper-parameter tuning on a prefix of the stream, as the CW papers did on one randomized run.

Every candidate of a small grid learns the prefix side by side, and the best one by the
chosen metric, accuracy by default (first in grid order on ties), is kept. The prefix is
scored against the labels the models learn from (noisy, if there is noise): a tuner only has
those.

>>> candidates("AROW()")
['AROW(r=0.01)', 'AROW(r=0.1)', 'AROW(r=1.0)', 'AROW(r=10.0)', 'AROW(r=100.0)']
>>> candidates("preprocessing.StandardScaler() | NHERD(C=0.5)")  # given parameters stay
['preprocessing.StandardScaler() | NHERD(C=0.5)']

"""

from __future__ import annotations

import ast
import copy
import itertools
import math
import typing
from collections.abc import Callable, Hashable, Sequence

from river import base, metrics

from streams.evaluate.noise import LabelNoise
from streams.evaluate.progressive import evaluate
from streams.evaluate.results import Evaluation

__all__ = ["GRIDS", "candidates", "tune"]

# class name -> parameter -> values; only the parameters a spec leaves unset are tuned
GRIDS: dict[str, dict[str, list]] = {
    "AROW": {"r": [0.01, 0.1, 1.0, 10.0, 100.0]},
    "CW": {"confidence": [0.6, 0.7, 0.8, 0.9, 0.95]},
    "NHERD": {"C": [0.001, 0.01, 0.1, 1.0]},
    "SCW": {"C": [0.01, 0.1, 1.0], "confidence": [0.7, 0.9]},
    "SOP": {"a": [0.1, 1.0, 10.0]},
    "PAClassifier": {"C": [0.001, 0.01, 0.1, 1.0]},
    "LogisticRegression": {"l2": [0.0, 1e-4, 1e-2]},
}


def candidates(spec: str) -> list[str]:
    """The specs to try for `spec`: its last step with every grid combination filled in."""
    tree = ast.parse(spec.strip(), mode="eval")
    node = tree.body
    while isinstance(node, ast.BinOp):
        node = node.right
    if not isinstance(node, ast.Call):
        return [spec]
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    given = {keyword.arg for keyword in node.keywords}
    grid = {k: v for k, v in GRIDS.get(name, {}).items() if k not in given}
    if node.args or not grid:  # positional arguments: cannot tell which are set
        return [spec]
    out = []
    for values in itertools.product(*grid.values()):
        node.keywords = [
            *[k for k in node.keywords if k.arg in given],
            *[ast.keyword(arg=k, value=ast.Constant(v)) for k, v in zip(grid, values)],
        ]
        out.append(ast.unparse(copy.deepcopy(tree)))
    return out


def tune(
    specs: Sequence[str],
    prefix: Sequence[tuple[dict, Hashable]],
    build: Callable[[str], base.Classifier],
    noise: LabelNoise | None = None,
    metric: metrics.base.ClassificationMetric | None = None,
) -> tuple[dict[str, str], Evaluation]:
    """Pick a spec for each of `specs` on `prefix`; return {spec: chosen spec} and the trial.

    `build` turns a spec into a fresh model (e.g. adding a bag of words for text). `noise`
    flips the prefix labels once, and the same noisy labels are learned and scored. `metric`
    (a river metric, accuracy by default) picks the best; a candidate it cannot score (a log
    loss without probabilities) comes last.
    """
    if not prefix:
        raise ValueError("cannot tune on an empty prefix")
    if noise is not None:
        prefix = [(x, noise(y)) for x, y in prefix]
    trials = {spec: candidates(spec) for spec in specs}
    models = {c: build(c) for c in dict.fromkeys(itertools.chain(*trials.values()))}
    trial = evaluate(models, prefix, every=max(len(prefix), 1), metric=metric)
    sign = 1.0 if trial.bigger_is_better else -1.0
    score: dict[str, typing.Any] = {
        r["model"]: -math.inf if r["metric"] is None else sign * r["metric"] for r in trial.summary
    }
    chosen = {spec: max(options, key=lambda c: score[c]) for spec, options in trials.items()}
    return chosen, trial
