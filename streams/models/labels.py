"""Labels as a stream gives them, for models that take only True and False.

river's binary classifiers (``linear_model.LogisticRegression``, ``PAClassifier``, ``ALMA`` ...,
and any pipeline or composition that ends in one: their ``_multiclass`` is False) learn booleans.
`arrange` fits such a model, whatever its shape, to the labels of a stream, in this one place:

* labels that are all booleans: the model as it is, river's own case;
* two labels of any other type: `BinaryLabels`, which gives the model True for the positive label
  of `river_cw.labels` (``"spam"`` over ``"ham"``, ``"+1"`` over ``"-1"``, ``"True"`` over
  ``"False"``, ``1`` over ``0``, the label river_cw's binary models score) and False for the
  other, and answers in the stream's labels;
* one label, or three or more: river's ``multiclass.OneVsRestClassifier``.

Models that take any labels (river_cw's, river's multi-class ones) are left as they are. Labels
keep their type throughout: a CSV's ``"True"`` is the string, and it is a string the model answers.

>>> from river import linear_model, preprocessing
>>> model = arrange(preprocessing.StandardScaler() | linear_model.LogisticRegression(), ["ham", "spam"])
>>> print(model)
BinaryLabels(StandardScaler | LogisticRegression)
>>> model.positive
'spam'
>>> model.learn_one({"free": 1.0}, "spam")
>>> sorted(model.predict_proba_one({"free": 1.0}))
['ham', 'spam']
"""

from __future__ import annotations

import typing

from river import base

from river_cw.labels import order_key

__all__ = ["BinaryLabels", "arrange", "needs_booleans"]


def needs_booleans(model: base.Estimator) -> bool:
    """Whether a classifier (of any shape) learns only True and False.

    Parameters
    ----------
    model
        A river classifier, or a pipeline or composition ending in one.

    Examples
    --------

    >>> from river import linear_model, naive_bayes, preprocessing
    >>> needs_booleans(preprocessing.StandardScaler() | linear_model.LogisticRegression())
    True
    >>> needs_booleans(naive_bayes.GaussianNB())
    False

    """
    return not typing.cast(base.Classifier, model)._multiclass


def arrange(model: base.Classifier, labels: typing.Collection) -> base.Classifier:
    """`model` fitted to a stream of these labels (see the module docstring).

    Parameters
    ----------
    model
        A river classifier, or a pipeline or composition ending in one.
    labels
        The stream's labels (repeats are ignored).

    Examples
    --------

    >>> from river import linear_model
    >>> arrange(linear_model.LogisticRegression(), ["-1", "+1"]).positive
    '+1'
    >>> type(arrange(linear_model.LogisticRegression(), ["a", "b", "c"])).__name__
    'OneVsRestClassifier'

    """
    labels = list(dict.fromkeys(labels))
    if not needs_booleans(model) or all(isinstance(label, bool) for label in labels):
        return model
    if len(labels) == 2:
        return BinaryLabels(model, labels)
    from river import multiclass  # river.multiclass loads river.linear_model

    return multiclass.OneVsRestClassifier(model)


class BinaryLabels(base.Wrapper, base.Classifier):
    """A binary classifier that learns True and False, on two labels of any type.

    The larger label in the order of `river_cw.labels` (`positive`) is True for the classifier,
    the other (`negative`) False; predictions and probabilities come back as those labels. A
    label that is neither raises `ValueError`.

    Parameters
    ----------
    classifier
        A classifier that learns booleans: a river binary classifier, or a pipeline or
        composition ending in one.
    labels
        The two labels, in any order.

    Examples
    --------

    >>> from river import linear_model
    >>> model = BinaryLabels(linear_model.LogisticRegression(), ["+1", "-1"])
    >>> model.negative, model.positive
    ('-1', '+1')
    >>> model.learn_one({"x": 1.0}, "+1")
    >>> model.predict_one({"x": 1.0})
    '+1'

    """

    def __init__(self, classifier: base.Classifier, labels: typing.Sequence):
        if len(set(labels)) != 2:
            raise ValueError(f"BinaryLabels needs two distinct labels, got {list(labels)!r}")
        self.classifier = classifier
        self.labels = list(labels)
        self.negative, self.positive = sorted(self.labels, key=order_key)

    @property
    def _wrapped_model(self):
        return self.classifier

    def _boolean(self, y) -> bool:
        if y == self.positive:
            return True
        if y == self.negative:
            return False
        raise ValueError(f"label {y!r} is neither {self.negative!r} nor {self.positive!r}")

    def _label(self, answer):
        return self.positive if answer else self.negative

    def learn_one(self, x: dict, y, **kwargs) -> None:
        """Learn `y` as True if it is `positive`, as False if it is `negative`.

        Parameters
        ----------
        x
            The features.
        y
            One of the two labels (another raises `ValueError`).
        **kwargs
            Passed on to the classifier's `learn_one`.
        """
        self.classifier.learn_one(x, self._boolean(y), **kwargs)

    def predict_one(self, x: dict, **kwargs):
        """The classifier's answer as one of the two labels (None stays None).

        Parameters
        ----------
        x
            The features.
        **kwargs
            Passed on to the classifier's `predict_one`.
        """
        answer = self.classifier.predict_one(x, **kwargs)
        return None if answer is None else self._label(answer)

    def predict_proba_one(self, x: dict, **kwargs) -> dict:
        """The classifier's probabilities, keyed by the two labels.

        Parameters
        ----------
        x
            The features.
        **kwargs
            Passed on to the classifier's `predict_proba_one`.
        """
        proba = self.classifier.predict_proba_one(x, **kwargs)
        return {self._label(answer): p for answer, p in proba.items()}

    @classmethod
    def _unit_test_params(cls):
        from river import linear_model

        yield {"classifier": linear_model.LogisticRegression(), "labels": [False, True]}
