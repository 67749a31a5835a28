"""Which of two labels is the positive one: the order every binary model of the library uses.

A binary model keeps one weight vector, and a weight is positive when its feature speaks for one
of the two labels: the *positive label*. It is the larger of the two in the order of `order_key`,
whichever label arrived first, so that two models that learned the same examples have the same
weights, the sign of a weight reads the same in every model (a Kafka partition that met "ham"
first and one that met "spam" first), and river's convention holds: ``True`` over ``False``.

A model that met the positive label first learned it as y = -1 and is negated when the other
label arrives; every rule is odd in ``(w, y)``, so it is then, to the bit, the model that knew
the order from the start (a zero may differ in sign). Models that learned the same examples in
different orders still differ where the order of the examples matters in itself: updates that
share a feature (the intercept among them) do not commute, and voted RDA's average weighs each
predictor by the examples it survived.

The order, for labels of any hashable type:

1. numbers, by value: ``bool`` and ``int`` labels, and strings that read as a finite number
   (``"1"``, ``"+1"``, ``"-1"``, ``"0.5"``; what ``float`` reads). So ``True > False``,
   ``1 > 0``, ``1 > -1``, ``"+1" > "-1"`` and ``"1" > "0"``;
2. then every other string, in Python's order of strings (by code point: ``"spam" > "ham"``,
   ``"positive" > "negative"``, ``"yes" > "no"``, ``"True" > "False"``, ``"b" > "B"``);
3. then labels of other types, by the name of their type and then their ``repr``.

Labels of equal value (``1`` and ``"1"``, ``"+1"`` and ``"1"``) are ordered by type name, then by
``repr``; two labels whose keys are equal in every part (objects of one type with the same
``repr``) keep the order in which they arrived.

>>> sorted(["spam", "ham"], key=order_key), sorted(["+1", "-1"], key=order_key)
(['ham', 'spam'], ['-1', '+1'])
>>> sorted([1, "a", False, "-2"], key=order_key)
['-2', False, 1, 'a']
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["order_key", "predicted_labels"]


def order_key(label) -> tuple:
    """The sort key of a label in the order of the module docstring.

    Parameters
    ----------
    label
        A label of any hashable type.

    Examples
    --------

    >>> max(["spam", "ham"], key=order_key), max([False, True], key=order_key)
    ('spam', True)

    """
    number = _number(label)
    if number is not None:
        return 0, number, type(label).__name__, repr(label)
    if isinstance(label, str):
        return 1, label
    return 2, type(label).__name__, repr(label)


def predicted_labels(classes: list) -> list:
    """The labels a model's predictions range over, given those it has learned (its
    ``classes_``): those, and, while it knows a single label that is a bool (Python's or
    numpy's), the other bool of its type too, after it: ``[known, not known]``.

    A bool has two values, so a model that has met one knows the other before it arrives, as
    river's binary classifiers do (`LogisticRegression` answers ``{False: 0.5, True: 0.5}``
    before it learns). The known label is learned as y = -1 until the other arrives
    (`river_cw.base`), so the model's score is already the margin of the other, and its
    probabilities and predictions are a binary model's. A model that knows one label of any
    other type cannot name a second and is certain of its one label. Progressive validation
    shows the difference: river's `LogLoss` reads a missing ``True`` as probability 0, and so
    charges 34.5 nats (its clamp at 1e-15) for the first example of the second label to a model
    certain of the first.

    Parameters
    ----------
    classes
        The labels a model has learned, in the order of its ``classes_``.

    Examples
    --------

    >>> predicted_labels([True]), predicted_labels(["spam"]), predicted_labels([0, 1])
    ([True, False], ['spam'], [0, 1])
    >>> predicted_labels([np.False_])
    [np.False_, np.True_]

    """
    if len(classes) == 1 and isinstance(classes[0], (bool, np.bool_)):
        known = classes[0]
        return [known, type(known)(not known)]
    return classes


def _number(label) -> int | float | None:
    """The value of a bool, an int or a string that reads as a finite number; else None."""
    if isinstance(label, (bool, int)):
        return label
    if isinstance(label, str):
        try:
            value = float(label)
        except ValueError:
            return None
        return value if math.isfinite(value) else None
    return None
