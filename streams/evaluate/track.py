"""One model's part in a side-by-side progressive validation (`streams.evaluate.progressive`).

A `Track` predicts each example when it arrives (`ask`), scores those predictions when the label
arrives and then learns it (`answer`), and writes a record of its learning curve on demand
(`record`: the columns of `streams.evaluate.results.COLUMNS`). It times the model's own calls
only. What a model raises becomes a `ModelError` naming the model and the example, with a hint
when a model of numbers met strings.
"""

from __future__ import annotations

import contextlib
import math
import time

from river import base, metrics

from streams.evaluate.scoring import gives_probabilities, metric_name, scored

__all__ = ["ModelError"]


class ModelError(ValueError):
    """A model raised on an example: the model, the example and the error, in one line."""


class Track:
    """One model's state in the side-by-side run."""

    def __init__(
        self, name: str, model: base.Classifier, metric: metrics.base.ClassificationMetric, x: dict
    ):
        """`x`, the first example, tells whether the model gives probabilities."""
        self.name = name
        self.model = model
        self.metric = metric.clone()
        self.recent = metric.clone()
        self.log_loss = metrics.CrossEntropy()
        with named(name, 0, x):  # a model that cannot take the first example stops here
            self.has_proba = gives_probabilities(model, x)
        if not (metric.requires_labels or self.has_proba):
            raise ValueError(f"{metric_name(metric)} needs probabilities: {name} gives none")
        self.pending: dict[int, tuple] = {}  # example -> (predicted label, distribution)
        self.scored = self.mistakes = self.scored_proba = self.n_metric = self.n_recent = 0
        self.seconds = 0.0
        self._last = (0, 0)  # (scored, mistakes) at the previous record

    def ask(self, i: int, x: dict) -> None:
        """Predict example i (its label and its distribution) on arrival."""
        x = dict(x)
        start = time.perf_counter()
        with named(self.name, i, x):
            label = self.model.predict_one(x)
            proba = self.model.predict_proba_one(x) if self.has_proba else None
        self.seconds += time.perf_counter() - start
        self.pending[i] = (label, proba)

    def answer(self, i: int, x: dict, y, y_learn) -> None:
        """Score example i's predictions against its label y, then learn it with `y_learn`."""
        label, proba = self.pending.pop(i)
        if scored(label):
            self.scored += 1
            self.mistakes += label != y
        if self.has_proba and scored(proba):
            self.log_loss.update(y, proba)
            self.scored_proba += 1
        y_pred = label if self.metric.requires_labels else proba
        if scored(y_pred):
            self.metric.update(y, y_pred)
            self.recent.update(y, y_pred)
            self.n_metric += 1
            self.n_recent += 1
        x = dict(x)
        start = time.perf_counter()
        with named(self.name, i, x):
            self.model.learn_one(x, y_learn)
        self.seconds += time.perf_counter() - start

    def record(self, noise: str, step: int, flipped: int) -> dict:
        last_scored, last_mistakes = self._last
        self._last = (self.scored, self.mistakes)
        recent = self.scored - last_scored
        record = {
            "noise": noise,
            "model": self.name,
            "step": step,
            "metric": self.metric.get() if self.n_metric else None,
            "recent_metric": self.recent.get() if self.n_recent else None,
            "accuracy": (self.scored - self.mistakes) / self.scored if self.scored else None,
            "recent_accuracy": 1.0 - (self.mistakes - last_mistakes) / recent if recent else None,
            "log_loss": self.log_loss.get() if self.scored_proba else None,
            "scored": self.scored,
            "mistakes": self.mistakes,
            "flipped": flipped,
            "seconds": self.seconds,
            "throughput": step / self.seconds if self.seconds > 0 else math.inf,
        }
        self.recent, self.n_recent = self.metric.clone(), 0
        return record


@contextlib.contextmanager
def named(name: str, i: int, x: dict):
    """Turn what a model raises on example i into a `ModelError` saying who, where and why."""
    try:
        yield
    except Exception as error:
        strings = [f"{f!r}: {v!r}" for f, v in x.items() if isinstance(v, str)]
        hint = (
            f"; the example holds strings ({', '.join(strings[:5])}): a model of numbers needs "
            "an encoder first, e.g. 'river.preprocessing.OneHotEncoder() | ...'"
            if strings and isinstance(error, TypeError) and set(x) != {"text"}
            else ""
        )
        raise ModelError(
            f"model {name} failed on example {i + 1:,}: {type(error).__name__}: {error}{hint}"
        ) from error
