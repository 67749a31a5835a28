"""Input checks shared by every classifier: a bad example raises before the model is touched."""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = ["check_features", "check_label"]


def check_features(x: dict) -> None:
    """Raise `TypeError` or `ValueError` naming the first feature of `x` that is not a finite number.

    The classifiers call this only when their fast path stumbles (a `TypeError` in the arithmetic
    or a non-finite sum), so valid examples pay nothing for it.

    >>> check_features({"a": 1, "b": 2.5})
    >>> check_features({"a": float("nan")})
    Traceback (most recent call last):
    ...
    ValueError: feature 'a' has a non-finite value: nan
    >>> check_features({"a": "3"})
    Traceback (most recent call last):
    ...
    TypeError: feature 'a' has a non-numeric value: '3' (str)

    """
    for name, value in x.items():
        if not isinstance(value, (numbers.Real, np.bool_)):
            raise TypeError(
                f"feature {name!r} has a non-numeric value: {value!r} ({type(value).__name__})"
            )
        if not math.isfinite(value):
            raise ValueError(f"feature {name!r} has a non-finite value: {value!r}")


def check_label(y) -> None:
    """Raise `ValueError` for a missing label (None or NaN) and `TypeError` for an unhashable one.

    >>> check_label(None)
    Traceback (most recent call last):
    ...
    ValueError: missing label: learn_one needs a class label, got None

    """
    if y is None or (isinstance(y, float) and math.isnan(y)):
        raise ValueError(f"missing label: learn_one needs a class label, got {y!r}")
    try:
        hash(y)
    except TypeError:
        raise TypeError(f"labels must be hashable, got {type(y).__name__}: {y!r}") from None
