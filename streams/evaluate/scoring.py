"""What progressive validation scores, and with which metric, as river's scores it.

A prediction is scored unless it is None or ``{}`` (`scored`); a metric that needs labels is fed
`predict_one`, any other `predict_proba_one`, and only a model that has `predict_proba_one`
(`gives_probabilities`) can be scored by a metric of probabilities. `OneClass` makes river's
binary metrics score one class of labels of any type, and `metric_name` names a metric in a
table.
"""

from __future__ import annotations

import typing

from river import base, metrics

__all__ = ["OneClass", "metric_name"]


class OneClass(metrics.base.ClassificationMetric):
    """A binary river metric of one class against the others, for labels of any type.

    river 0.26's binary metrics (F1, MCC, Precision, ROCAUC ...) turn the labels into booleans
    (`y == pos_val`) and then look `pos_val` up in their confusion matrix of booleans, so with
    `pos_val="spam"` they score 0 whatever the predictions. Here each label becomes
    `y == label` first (a distribution, the probability of `label`), and the wrapped metric
    keeps `pos_val=True`.

    Parameters
    ----------
    metric
        A river binary metric (`metrics.F1()`, `metrics.MCC()`, `metrics.ROCAUC()` ...).
    label
        The class scored as the positive one.

    Examples
    --------

    >>> f1 = OneClass(metrics.F1(), "spam")
    >>> for y_true, y_pred in [("spam", "spam"), ("ham", "spam"), ("spam", "ham")]:
    ...     f1.update(y_true, y_pred)
    >>> f1.get()
    0.5

    """

    def __init__(self, metric: metrics.base.BinaryMetric, label: typing.Hashable):
        if not isinstance(metric, metrics.base.BinaryMetric):
            raise ValueError(f"{type(metric).__name__} is not a binary metric")
        self.metric = metric.clone({"pos_val": True})
        self.label = label

    def _binary(self, y_pred):
        if self.metric.requires_labels:
            return y_pred == self.label
        p = y_pred.get(self.label, 0.0) if isinstance(y_pred, dict) else y_pred
        return {True: p, False: 1.0 - p}

    def update(self, y_true, y_pred, w=1.0) -> None:
        """Add an observation to the metric (river's `Metric.update`).

        Parameters
        ----------
        y_true
            The true label.
        y_pred
            The predicted label, or ``{label: probability}`` for a metric of probabilities.
        w
            The observation's weight.
        """
        self.metric.update(y_true == self.label, self._binary(y_pred), w)

    def revert(self, y_true, y_pred, w=1.0) -> None:
        """Remove an observation from the metric (river's `Metric.revert`).

        Parameters
        ----------
        y_true
            The true label.
        y_pred
            The predicted label, or ``{label: probability}`` for a metric of probabilities.
        w
            The observation's weight.
        """
        self.metric.revert(y_true == self.label, self._binary(y_pred), w)

    def get(self) -> float:
        return self.metric.get()

    @property
    def bigger_is_better(self) -> bool:
        return self.metric.bigger_is_better

    @property
    def requires_labels(self) -> bool:
        return self.metric.requires_labels

    @property
    def works_with_weights(self) -> bool:
        return self.metric.works_with_weights


def metric_name(metric: metrics.base.Metric) -> str:
    """A short name for a river metric: its class, and the positive class of a binary one.

    Parameters
    ----------
    metric
        A river metric.

    Examples
    --------

    >>> metric_name(OneClass(metrics.F1(), "spam")), metric_name(metrics.CrossEntropy())
    ('F1 (spam)', 'CrossEntropy')
    """
    if isinstance(metric, OneClass):
        return f"{type(metric.metric).__name__} ({metric.label})"
    name = type(metric).__name__
    if isinstance(metric, metrics.base.BinaryMetric):
        name += f" ({metric.pos_val})"
    return name


def scored(y_pred) -> bool:
    """Whether river's progressive validation scores a prediction: neither None nor ``{}``."""
    return y_pred is not None and y_pred != {}


def gives_probabilities(model: base.Classifier, x: dict) -> bool:
    """Whether `model` has `predict_proba_one`, asked of a fresh clone on `x` (river's base
    classifier raises `NotImplementedError` for models without it)."""
    try:
        model.clone().predict_proba_one(dict(x))
    except NotImplementedError:
        return False
    return True
