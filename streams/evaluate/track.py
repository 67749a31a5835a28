"""One model's part in a side-by-side progressive validation (`streams.evaluate.progressive`).

A `Track` predicts each example when it arrives (`predict`: its label and, for a model with
probabilities, its distribution), scores that prediction when the label arrives and then learns
the label (`learn`), and writes a record of its learning curve on demand (`record`: the columns of
`streams.evaluate.results.COLUMNS`). It times the model's own calls only. What a model raises
becomes a `ModelError` naming the model and the example, with a hint when a model of numbers met
strings.

The per-example work is kept below the model's own (benchmarks/evaluate_overhead.py): no context
manager per call, and two of river's metrics kept as the numbers they amount to, by river's own
arithmetic (tests/evaluation/test_evaluation.py holds them to river's objects, to the bit):

* `metrics.Accuracy` (the default metric) is its confusion matrix's true positives over its total
  weight: with unit weights, the examples scored right over those scored, the counts the
  `accuracy` and `mistakes` columns keep anyway;
* the `log_loss` column is `metrics.CrossEntropy`: the running mean (`river.stats.Mean`) of minus
  the log of the probability given to the true label, clamped to [1e-15, 1 - 1e-15].
"""

from __future__ import annotations

import math
import time

from river import base, metrics

from streams.evaluate.scoring import gives_probabilities, metric_name, scored

__all__ = ["ModelError"]

LOW, HIGH = 1e-15, 1 - 1e-15  # river's CrossEntropy clamps a probability to [LOW, HIGH]
clock = time.perf_counter


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
        try:  # a model that cannot take the first example stops here
            self.has_proba = gives_probabilities(model, x)
        except Exception as error:
            raise failure(name, 0, x, error) from error
        if not (metric.requires_labels or self.has_proba):
            raise ValueError(f"{metric_name(metric)} needs probabilities: {name} gives none")
        # river's Accuracy is the counts below; any other metric is river's object, updated
        self.metric = None if type(metric) is metrics.Accuracy else metric.clone()
        self.recent = metric.clone()  # since the previous record (river's metric alone)
        self.labels = metric.requires_labels
        self.scored = self.mistakes = self.n_metric = self.n_recent = 0
        self.n_loss = 0.0  # river's Mean of the log losses: its weight and its value
        self.loss = 0.0
        self.seconds = 0.0
        self._last = (0, 0)  # (scored, mistakes) at the previous record
        self.pending: dict[int, tuple] = {}  # example -> its prediction, until its label comes

    def predict(self, i: int, x: dict) -> None:
        """Predict example i on arrival (its label and distribution), for `learn` to score."""
        x = dict(x)
        model = self.model
        start = clock()
        try:
            label = model.predict_one(x)
            proba = model.predict_proba_one(x) if self.has_proba else None
        except Exception as error:
            raise failure(self.name, i, x, error) from error
        self.seconds += clock() - start
        self.pending[i] = (label, proba)

    def learn(self, i: int, x: dict, y, y_learn) -> None:
        """Score example i's prediction against its label y, then learn the example with
        `y_learn`."""
        label, proba = self.pending.pop(i)
        if scored(label):
            self.scored += 1
            self.mistakes += label != y
        if proba:  # river's CrossEntropy: no key equal to y adds a loss of 0
            p = proba.get(y)  # clamped as river's max(min(p, HIGH), LOW) clamps it
            loss = 0.0 if p is None else -math.log(HIGH if p > HIGH else LOW if p < LOW else p)
            self.n_loss += 1.0
            self.loss += (1.0 / self.n_loss) * (loss - self.loss)
        if self.metric is not None:
            y_pred = label if self.labels else proba
            if scored(y_pred):
                self.metric.update(y, y_pred)
                self.recent.update(y, y_pred)
                self.n_metric += 1
                self.n_recent += 1
        x = dict(x)
        start = clock()
        try:
            self.model.learn_one(x, y_learn)
        except Exception as error:
            raise failure(self.name, i, x, error) from error
        self.seconds += clock() - start

    def record(self, noise: str, step: int, flipped: int) -> dict:
        last_scored, last_mistakes = self._last
        self._last = (self.scored, self.mistakes)
        recent = self.scored - last_scored
        right = self.scored - self.mistakes
        if self.metric is None:  # river's Accuracy: true positives over the total weight
            value = right / self.scored if self.scored else None
            recent_right = recent - (self.mistakes - last_mistakes)
            recent_value = recent_right / recent if recent else None
        else:
            value = self.metric.get() if self.n_metric else None
            recent_value = self.recent.get() if self.n_recent else None
            self.recent, self.n_recent = self.metric.clone(), 0
        return {
            "noise": noise,
            "model": self.name,
            "step": step,
            "metric": value,
            "recent_metric": recent_value,
            "accuracy": right / self.scored if self.scored else None,
            "recent_accuracy": 1.0 - (self.mistakes - last_mistakes) / recent if recent else None,
            "log_loss": self.loss if self.n_loss else None,
            "scored": self.scored,
            "mistakes": self.mistakes,
            "flipped": flipped,
            "seconds": self.seconds,
            "throughput": step / self.seconds if self.seconds > 0 else math.inf,
        }


def failure(name: str, i: int, x: dict, error: Exception) -> ModelError:
    """What a model raised on example i, as a `ModelError` saying who, where and why."""
    strings = [f"{f!r}: {v!r}" for f, v in x.items() if isinstance(v, str)]
    hint = (
        f"; the example holds strings ({', '.join(strings[:5])}): a model of numbers needs "
        "an encoder first, e.g. 'river.preprocessing.OneHotEncoder() | ...'"
        if strings and isinstance(error, TypeError) and set(x) != {"text"}
        else ""
    )
    return ModelError(
        f"model {name} failed on example {i + 1:,}: {type(error).__name__}: {error}{hint}"
    )
