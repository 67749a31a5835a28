"""The label logic every classifier of the library shares.

Labels are discovered online, in any hashable type. While at most two are known the model is
binary, exactly as in the papers: one weight vector ``w``, the first label seen is y = -1 and the
second y = +1, and the score is ``w . x``. When a third label arrives the model becomes
multi-class with one weight block per label and the feature map f(x, z) of Crammer, Dredze and
Kulesza (2009): the score of z is ``w_z . x`` and an update moves along the difference vector
``f(x, y) - f(x, y')`` against the best-scoring wrong label y'. The binary vector becomes the
second label's block and the first label gets an empty block, so no prediction changes at that
moment: ``score(second) - score(first) = w . x`` as before.

A subclass stores the weights and provides four hooks: `_scores`, `_add_block`, `_lift` and
`_update` (and `_learning_scores` where updates are judged by other weights than predictions,
as in voted RDA); this base turns labels into blocks and signs.
"""

from __future__ import annotations

import abc

from river import base

from .validation import check_label

__all__ = ["LinearClassifier"]


class LinearClassifier(base.Classifier, abc.ABC):
    """Base for the linear classifiers: labels to weight blocks, binary or multi-class."""

    def __init__(self):
        self.classes_: list = []
        self._class_index: dict = {}

    @property
    def _multiclass(self):
        return True

    @property
    def is_binary(self) -> bool:
        """True while the model is a single weight vector (at most two labels known)."""
        return len(self.classes_) <= 2

    # -- hooks --------------------------------------------------------------------------------

    @abc.abstractmethod
    def _scores(self, x: dict) -> list[float]:
        """One score per block (``w_b . x``); raise on a bad `x` before touching the model."""

    def _learning_scores(self, x: dict) -> list[float]:
        """The scores an update is judged by; the prediction scores unless a model averages."""
        return self._scores(x)

    @abc.abstractmethod
    def _add_block(self) -> None:
        """Append an empty weight block (a new label of a multi-class model)."""

    @abc.abstractmethod
    def _lift(self) -> None:
        """Turn the binary vector into blocks ``[empty, w]`` (see the module docstring)."""

    @abc.abstractmethod
    def _update(self, x: dict, pairs: tuple[tuple[int, int], ...], margin: float) -> None:
        """Learn from the difference vector ``sum(sign * f(x, block) for block, sign in pairs)``.

        `margin` is the mean margin along it: ``y w . x`` when binary, ``w_y . x - w_y' . x``
        when multi-class.
        """

    # -- river API ----------------------------------------------------------------------------

    def learn_one(self, x: dict, y, **kwargs) -> None:
        check_label(y)
        scores = self._learning_scores(x)  # validates x before anything changes
        k = self._class_index.get(y)
        if k is None:
            k = self._register(y)
            scores = self._learning_scores(x)
        if self.is_binary:
            sign = 1 if k == 1 else -1
            self._update(x, ((0, sign),), sign * scores[0])
        else:
            wrong = max((z for z in range(len(scores)) if z != k), key=scores.__getitem__)
            self._update(x, ((k, 1), (wrong, -1)), scores[k] - scores[wrong])

    def predict_one(self, x: dict, **kwargs):
        if not self.classes_:
            return None
        scores = self._scores(x)
        if self.is_binary:
            return self.classes_[-1] if scores[0] > 0 else self.classes_[0]
        return self.classes_[max(range(len(scores)), key=scores.__getitem__)]

    # -- internals ----------------------------------------------------------------------------

    def _register(self, y) -> int:
        """Add a new label; the model becomes multi-class at the third one."""
        self._class_index[y] = len(self.classes_)
        self.classes_.append(y)
        if len(self.classes_) == 3:
            self._lift()
            self._add_block()
        elif len(self.classes_) > 3:
            self._add_block()
        return len(self.classes_) - 1
