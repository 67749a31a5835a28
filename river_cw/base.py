"""The label logic every classifier of the library shares.

Labels are discovered online, in any hashable type. While at most two are known the model is
binary, exactly as in the papers: one weight vector ``w`` and the score ``w . x``, with y = +1
for the *positive label* and y = -1 for the other. The positive label is the larger of the two
in the order of `river_cw.labels` (``True`` over ``False``, ``1`` over ``0``, ``"+1"`` over
``"-1"``, ``"spam"`` over ``"ham"``), whichever arrived first: ``classes_`` holds the two labels
in that order, ``[negative, positive]``. Until the second label arrives the first one is learned
as y = -1; if it turns out to be the positive one, the model is negated (`_negate`: the rules
are odd in ``(w, y)``, so this is, to the bit, the model that knew the order from the start).
Meanwhile a model whose one label is a bool predicts over both bools, the known one as the
negative label (`river_cw.labels.predicted_labels`); one of any other type is certain of it.
When a third label arrives the model becomes multi-class with one weight block per label and the
feature map f(x, z) of Crammer, Dredze and Kulesza (2009): the score of z is ``w_z . x`` and an
update moves along the difference vector ``f(x, y) - f(x, y')`` against the best-scoring wrong
label y'. The binary vector becomes the positive label's block and the negative label gets an
empty block, so no prediction changes at that moment: ``score(positive) - score(negative) =
w . x`` as before. Labels after the first two keep their order of arrival in ``classes_``.

A subclass stores the weights and provides the hooks `_scores`, `_add_block`, `_lift`,
`_negate`, `_layout`/`_restore_layout` and `_update` (and `_learning_scores` where updates are
judged by other weights than predictions, as in voted RDA); this base turns labels into blocks
and signs. The mini-batch methods loop over a batch's rows (`river_cw.batch.Rows`).

Every public method converts the feature values to Python floats first
(`river_cw.validation.as_floats`). A call either succeeds or raises `TypeError`/`ValueError`
naming the feature or the label, and then the model is exactly as it was: `_update` validates
and computes before it writes, and a new label is registered only together with a successful
update (the block structure is restored if the update raises).

The intercept (``learn_intercept=True``) is a weight like any other, of a feature whose value is
always 1 and whose name is `INTERCEPT`, a reserved object no user feature can equal: it has a
mean and a variance in the Gaussian and every rule updates it as it updates the features, in
both engines and with the full covariance alike. The public views (`weights`, `variances`,
`covariances`) leave it out and show it as `intercept` and `intercept_variance`.
"""

from __future__ import annotations

import abc
import copy
from typing import ClassVar

from river import base

from .batch import Rows, column, sample_weights
from .engine import text as _text
from .labels import order_key, predicted_labels
from .probabilities import most_probable
from .validation import as_floats, check_label, check_weight

__all__ = ["INTERCEPT", "LinearClassifier"]


class _Intercept:
    """The type of `INTERCEPT`: one object, equal only to itself, pickled by reference."""

    __slots__ = ()

    def __repr__(self):
        return "river_cw.INTERCEPT"

    def __hash__(self):  # fixed, so that nothing depends on the process (PYTHONHASHSEED, id)
        return 0x1C7E5CE97

    def __reduce__(self):
        return "INTERCEPT"  # the module attribute: unpickles (and deep-copies) to the same object


INTERCEPT = _Intercept()
"""The feature name of the intercept: its value is always 1.0 (see `learn_intercept`)."""

_TOKEN_COUNTS = _text.TokenCounts if _text is not None else None
"""The type of a text's token counts without their dict (see `LinearClassifier._features`)."""


class LinearClassifier(base.MiniBatchClassifier, abc.ABC):
    """Base for the linear classifiers: labels to weight blocks, binary or multi-class; river's
    `MiniBatchClassifier` whose mini-batch methods are the one-example loops over a batch's rows
    (`learn_many` is the `learn_one` loop to the last bit, `predict_many` and `predict_proba_many`
    are `predict_one` and `predict_proba_one` row by row; a model may run a loop compiled by
    overriding `_learn_rows`, `_predict_rows` or `_predict_proba_rows`)."""

    # Attributes added after the first release, with the value that reproduces older models
    # (`__setstate__` fills them in when an older pickle lacks them).
    _PICKLE_DEFAULTS: ClassVar[dict] = {"learn_intercept": False}

    def __init__(self, learn_intercept: bool = False):
        if not isinstance(learn_intercept, bool):
            raise ValueError(f"learn_intercept must be True or False, got {learn_intercept!r}")
        self.learn_intercept = learn_intercept
        self.classes_: list = []
        self._class_index: dict = {}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        for name, value in self._PICKLE_DEFAULTS.items():
            self.__dict__.setdefault(name, value)

    def __reduce_ex__(self, protocol):
        return reduce_by_state(self, protocol)

    def __copy__(self):
        return copied(self, None)

    def __deepcopy__(self, memo: dict):
        return copied(self, memo)

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
    def _negate(self) -> None:
        """Turn the binary model into the one over ``-w``: every quantity odd in the labels'
        sign changes sign (the model of the same examples with y = -1 and +1 swapped)."""

    def _layout(self):
        """A snapshot of the block structure; a subclass returns its containers, not weights.

        The default copies the whole state: always right, and taken only when a label is new.
        """
        return copy.deepcopy(vars(self))

    def _restore_layout(self, layout) -> None:
        """Undo `_lift`/`_add_block` calls made since `layout` was taken."""
        vars(self).update(layout)

    @abc.abstractmethod
    def _update(
        self, x: dict, pairs: tuple[tuple[int, int], ...], w: float, scores: list | None
    ) -> None:
        """Learn from the difference vector ``sum(sign * f(x, block) for block, sign in pairs)``
        with sample weight ``w > 0`` (each subclass documents what the weight means); `scores`
        are the `_learning_scores` of x the pairs were chosen by (None while binary).

        The margin along it is ``y w . x`` when binary and ``w_y . x - w_y' . x`` when
        multi-class; it is computed here, in the same pass as the update's other sums. Raise on a
        bad `x` before anything changes.
        """

    @abc.abstractmethod
    def _weight_blocks(self) -> list[dict]:
        """Per block, ``{feature: weight}`` of the weights predictions use (`INTERCEPT` included)."""

    # -- river API ----------------------------------------------------------------------------

    def _features(self, x: dict) -> dict:
        """`x` as the engines see it: Python floats, and the intercept's constant feature. A
        text's token counts without their dict (`river_cw._engines._text.TokenCounts`, which
        `river_cw.text.TextClassifier` hands a model whose one-call paths read it) become the dict
        here, where a one-call path declined them."""
        if type(x) is _TOKEN_COUNTS:
            x = x.as_dict()  # type: ignore[attr-defined]
        x = as_floats(x)
        return {**x, INTERCEPT: 1.0} if self.learn_intercept else x

    def learn_one(self, x: dict, y, w: float = 1.0) -> None:
        """Learn the example `x` with label `y`.

        Bad input (a non-numeric, NaN or infinite value, a missing label, a bad `w`) raises
        TypeError or ValueError naming it, and leaves the model exactly as it was.

        Parameters
        ----------
        x
            The features, ``{name: number}``; a missing feature is 0.
        y
            The label: any hashable value; a new one makes a binary model multi-class.
        w
            The sample weight, a finite number >= 0 (each rule's class docstring says what it
            means); ``w=0`` validates `x` and `y` and changes nothing, ``w=1`` is the
            unweighted rule to the bit.

        """
        check_label(y)
        w = check_weight(w)
        x = self._features(x)
        if w == 0.0:
            self._learning_scores(x)  # validates x
            return
        k = self._class_index.get(y)
        if self.is_binary and (k is not None or len(self.classes_) < 2):
            sign = 1 if (len(self.classes_) if k is None else k) == 1 else -1
            self._update(x, ((0, sign),), w, None)  # validates x before anything changes
            if k is None:
                self._register(y)
            return
        scores = self._learning_scores(x)  # validates x before anything changes
        if k is not None:
            self._update(x, ((k, 1), (self._best_wrong(scores, k), -1)), w, scores)
            return
        layout = (list(self.classes_), dict(self._class_index), self._layout())
        try:
            k = self._register(y)
            scores = self._learning_scores(x)
            self._update(x, ((k, 1), (self._best_wrong(scores, k), -1)), w, scores)
        except BaseException:
            self.classes_, self._class_index, structure = layout
            self._restore_layout(structure)
            raise

    def predict_one(self, x: dict):  # type: ignore[override]  # no **kwargs, as river's own models
        """The label of largest `predict_proba_one`, or None before any label: the label of
        largest score (`river_cw.probabilities.most_probable` says why they are one):
        `positive_label` where ``w . x > 0`` while binary, else the label whose block scores
        most (the first in ``classes_`` on a tie). While the model knows one bool label it is
        binary over both bools (`river_cw.labels.predicted_labels`): the other one where
        ``w . x > 0``.

        Parameters
        ----------
        x
            The features, ``{name: number}``.
        """
        # validates x, even before any label is known, and names a bad feature
        return most_probable(predicted_labels(self.classes_), self._scores(self._features(x)))

    # -- mini-batches -------------------------------------------------------------------------

    def learn_many(self, X, y, w=1.0, *, features=None) -> None:
        """Learn the rows of `X` with the labels `y`, in order: exactly the `learn_one` loop over
        the rows, to the last bit (weights, predictions, `n_skipped_updates`).

        A bad row raises the error `learn_one` raises, prefixed with the row's name (its index
        in the DataFrame, else its position); the rows before it have been learned, as in the
        loop, and the model is as that loop leaves it.

        Parameters
        ----------
        X
            A pandas DataFrame (row i: its non-missing entries), a sequence of dicts, or a
            `scipy.sparse` CSR matrix (see `river_cw.batch`).
        y
            One label per row (a Series, a list, an array).
        w
            The sample weight: a number, or a sequence or Series of one per row.
        features
            With a sparse `X`, the feature of each column (a vocabulary: column j is the feature
            ``features[j]``); without it, column j is the int j (hashed ids).

        Examples
        --------

        >>> import river_cw
        >>> from scipy import sparse
        >>> model = river_cw.AROW()
        >>> model.learn_many([{"good": 1}, {"bad": 1}, {"good": 2}], ["pos", "neg", "pos"])
        >>> model.predict_many([{"good": 1}, {"bad": 2}])
        ['pos', 'neg']
        >>> X = sparse.csr_array([[1.0, 0.0], [0.0, 1.0]])
        >>> model.learn_many(X, ["pos", "neg"], features=["good", "bad"])
        >>> model.predict_many(X, features=["good", "bad"])
        ['pos', 'neg']
        >>> model.learn_many([{"good": 1}, {"bad": "x"}], ["pos", "neg"])
        Traceback (most recent call last):
        ...
        TypeError: row 1: feature 'bad' has a non-numeric value: 'x' (str)

        """
        rows = Rows.of(X, features)
        labels = column(y, len(rows), "y")
        self._learn_rows(rows, labels, sample_weights(w, len(rows)))

    def _learn_rows(self, rows: Rows, labels: list, weights: list) -> None:
        """The mini-batch loop: `learn_one` row after row (a model may run it compiled)."""
        rows.check_names()
        for i in range(len(rows)):
            self._learn_row(rows, i, labels[i], weights[i])

    def _learn_row(self, rows: Rows, i: int, y, w) -> None:
        try:
            self.learn_one(rows.row(i), y, w)
        except (TypeError, ValueError) as error:
            raise type(error)(f"row {rows.index[i]!r}: {error}") from error

    def predict_many(self, X, *, features=None):
        """`predict_one` of every row of `X`: a Series on the index of a DataFrame, else a list.

        Parameters
        ----------
        X
            A pandas DataFrame, a sequence of dicts, or a `scipy.sparse` CSR matrix (see
            `learn_many`).
        features
            With a sparse `X`, the feature of each column (see `learn_many`).
        """
        rows = Rows.of(X, features)
        predictions = self._predict_rows(rows)
        if not rows.frame:
            return predictions
        import pandas as pd

        return pd.Series(predictions, index=rows.index, dtype=object)

    def predict_proba_many(self, X, *, features=None):
        """`predict_proba_one` of every row of `X`: for a DataFrame, a DataFrame on its index
        with one column per class (in the order of ``classes_``, the order the labels were first
        seen, and the other bool after a single bool label: `river_cw.labels.predicted_labels`);
        else a list of the dicts.

        Parameters
        ----------
        X
            A pandas DataFrame, a sequence of dicts, or a `scipy.sparse` CSR matrix (see
            `learn_many`).
        features
            With a sparse `X`, the feature of each column (see `learn_many`).
        """
        rows = Rows.of(X, features)
        probas = self._predict_proba_rows(rows)
        if not rows.frame:
            return probas
        import pandas as pd

        columns = list(predicted_labels(self.classes_))
        return pd.DataFrame(probas, index=rows.index, columns=columns, dtype=float)

    def _predict_rows(self, rows: Rows) -> list:
        """`predict_one` of every row (a model may run the loop compiled)."""
        return [self.predict_one(x) for x in rows.all()]

    def _predict_proba_rows(self, rows: Rows) -> list[dict]:
        """`predict_proba_one` of every row (a model may run the loop compiled)."""
        return [self.predict_proba_one(x) for x in rows.all()]

    # -- public state -------------------------------------------------------------------------

    def _by_label(self, blocks: list):
        """One block as it is while binary; ``{label: block}`` once multi-class."""
        if self.is_binary:
            return blocks[0]
        return dict(zip(self.classes_, blocks))

    @property
    def positive_label(self):
        """The label that positive weights favour while the model is binary: the larger of its
        two labels in the order of `river_cw.labels` (``True`` over ``False``, ``1`` over ``0``,
        ``"+1"`` over ``"-1"``, ``"spam"`` over ``"ham"``), whichever arrived first; ``classes_``
        is ``[negative, positive]``. None until two labels are known, and once multi-class
        (then every label has weights of its own).

        >>> import river_cw
        >>> model = river_cw.AROW()
        >>> model.learn_one({"free": 1.0}, "spam")
        >>> model.learn_one({"meeting": 1.0}, "ham")
        >>> model.positive_label, model.weights["free"] > 0 > model.weights["meeting"]
        ('spam', True)

        """
        return self.classes_[1] if len(self.classes_) == 2 else None

    @property
    def weights(self) -> dict:
        """The weights predictions use: ``{feature: weight}`` while binary (the score of
        `positive_label`; the other label's is its negation), ``{label: {feature: weight}}``
        once multi-class (one weight vector per label, in the order of ``classes_``). Features
        never learned have weight 0 and are absent; the intercept is `intercept`. A copy."""
        return self._by_label(without_intercept(self._weight_blocks()))

    @property
    def intercept(self):
        """The intercept: a float while binary, ``{label: intercept}`` once multi-class (laid
        out as `weights`); 0.0 until learned, and always without `learn_intercept`."""
        return self._by_label([block.get(INTERCEPT, 0.0) for block in self._weight_blocks()])

    @staticmethod
    def _best_wrong(scores: list[float], k: int) -> int:
        """The best-scoring block other than k (Crammer, Dredze and Kulesza 2009)."""
        return max((z for z in range(len(scores)) if z != k), key=scores.__getitem__)

    # -- internals ----------------------------------------------------------------------------

    def _register(self, y) -> int:
        """Add a new label, just learned as y = +1 when it is the second; the model becomes
        multi-class at the third one. The second label takes its place in the labels' order
        (`positive_label`): when it is the smaller one, the model is negated."""
        self._class_index[y] = len(self.classes_)
        self.classes_.append(y)
        if len(self.classes_) == 2 and order_key(y) < order_key(self.classes_[0]):
            self._negate()
            self.classes_.reverse()
            self._class_index.update({c: i for i, c in enumerate(self.classes_)})
        elif len(self.classes_) == 3:
            self._lift()
            self._add_block()
        elif len(self.classes_) > 3:
            self._add_block()
        return self._class_index[y]


def reduce_by_state(model, protocol):
    """A model's pickle through the versioned state format (`river_cw.state`), which names no
    module but `river_cw.state`: a pickle written by this version loads in later ones. A model
    the format does not describe (a subclass, a feature name of another type) is pickled as any
    object."""
    from . import state  # it imports the models

    try:
        return state.loads, (state.dumps(model),)
    except TypeError:
        return object.__reduce_ex__(model, protocol)


def copied(model, memo: dict | None):
    """A copy of `model` as `copy.copy` (`memo` None) or `copy.deepcopy` make one of any object
    (its `__getstate__`, copied deeply with `memo`, to its `__setstate__`): without the trip
    through bytes its pickle takes."""
    clone = object.__new__(type(model))
    if memo is not None:
        memo[id(model)] = clone
    state = model.__getstate__()
    clone.__setstate__(state if memo is None else copy.deepcopy(state, memo))
    return clone


def without_intercept(blocks: list[dict]) -> list[dict]:
    """The blocks ``{feature: value}`` without the intercept's entry (the public views')."""
    return [{f: v for f, v in block.items() if f is not INTERCEPT} for block in blocks]
