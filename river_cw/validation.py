"""Input checks shared by every classifier: a bad example raises before the model is touched."""

from __future__ import annotations

import decimal
import math
import numbers

import numpy as np

from . import engine

__all__ = ["as_floats", "check_features", "check_label", "check_weight", "is_real", "to_float"]


def to_float(name, value) -> float:
    """`value` as a Python float (float64), or `TypeError`/`ValueError` naming feature `name`.

    Every real number converts: Python and numpy ints and floats of every width, bool,
    `fractions.Fraction`, `decimal.Decimal`. Complex numbers (with a zero imaginary part too),
    strings and other objects raise `TypeError`; values outside float64 (``10**400``, a huge
    Fraction, ``np.longdouble(1e400)``), NaN and infinities raise `ValueError`.

    >>> to_float("a", np.int8(12)), to_float("b", np.float16(0.5)), to_float("c", True)
    (12.0, 0.5, 1.0)
    >>> to_float("a", 10**400)
    Traceback (most recent call last):
    ...
    ValueError: feature 'a' has a value beyond the float64 range: 100000000000000000000000000...
    >>> to_float("z", 1j)
    Traceback (most recent call last):
    ...
    TypeError: feature 'z' has a non-real value: 1j (complex)

    """
    if isinstance(value, (complex, np.complexfloating)):
        raise TypeError(
            f"feature {name!r} has a non-real value: {value!r} ({type(value).__name__})"
        )
    if not isinstance(value, (numbers.Real, np.bool_, decimal.Decimal)):
        raise TypeError(
            f"feature {name!r} has a non-numeric value: {value!r} ({type(value).__name__})"
        )
    try:
        result = float(value)
    except (OverflowError, decimal.InvalidOperation):
        result = math.inf
    if math.isfinite(result):
        return result
    if not _finite(value):
        raise ValueError(f"feature {name!r} has a non-finite value: {value!r}")
    text = repr(value)
    raise ValueError(
        f"feature {name!r} has a value beyond the float64 range: "
        f"{text if len(text) <= 30 else text[:27] + '...'}"
    )


def _finite(value) -> bool:
    """Whether a real number is finite in its own type (a longdouble 1e400 is, as float64 not)."""
    if isinstance(value, decimal.Decimal):
        return value.is_finite()
    if isinstance(value, (float, np.floating)):
        return bool(np.isfinite(value))
    return True


def as_floats(x: dict) -> dict:
    """`x` with every value a Python float: the boundary of every classifier.

    Dicts of floats (and of small Python ints, which compute exactly as their floats) pass as
    they are; larger ints are converted in one C-level pass; anything else goes value by value
    through `to_float`, which names the feature it refuses. NaN and infinite floats pass here
    and are refused where the engines sum (see `check_features`).
    The model's state therefore only ever holds Python floats, whatever numpy types come in.
    """
    values = x.values()
    kinds = set(map(type, values))
    if kinds <= _FLOAT:
        return x
    if kinds <= _EXACT:
        try:
            # hypot >= every |value| (to rounding); one C-level pass, cheaper than min and max
            if math.hypot(*values) <= _EXACT_INT:
                return x
            return dict(zip(x, map(float, values)))
        except OverflowError:
            pass
    return {name: to_float(name, value) for name, value in x.items()}


_FLOAT = {float}
_EXACT = {float, int}
# Python ints up to 2**26 in magnitude need no conversion: every product the engines form with
# them (x * w, x * x) rounds exactly as with float(x), so results are the same to the bit.
_EXACT_INT = 2**26


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
        to_float(name, value)


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


def is_real(value: object) -> bool:
    """Whether `value` is a real number and not a bool: what a numeric hyperparameter must be.

    A predicate, not an `isinstance` check in place: narrowing a ``float`` to `numbers.Real`
    leaves a type checker an intersection it cannot give the attribute assigned from it.

    >>> is_real(0.5), is_real(2), is_real(True), is_real("0.5")
    (True, True, False, False)

    """
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_weight(w) -> float:
    """The sample weight `w` of `learn_one` as a Python float, or an error naming `w`.

    A weight is a finite real number >= 0 (Python or numpy; bools are refused as a likely
    mistake): `TypeError` for anything else that is not a real number, `ValueError` for a
    negative, NaN or infinite one.

    >>> check_weight(2), check_weight(0.5)
    (2.0, 0.5)
    >>> check_weight(-1.0)
    Traceback (most recent call last):
    ...
    ValueError: w must be a finite number >= 0, got -1.0
    >>> check_weight("2")
    Traceback (most recent call last):
    ...
    TypeError: w must be a real number, got '2' (str)

    """
    if type(w) is float and 0.0 <= w < math.inf:
        return w
    if isinstance(w, (bool, np.bool_)) or not isinstance(w, numbers.Real):
        raise TypeError(f"w must be a real number, got {w!r} ({type(w).__name__})")
    try:
        value = float(w)
    except OverflowError:
        value = math.inf
    if not 0.0 <= value < math.inf:
        raise ValueError(f"w must be a finite number >= 0, got {w!r}")
    return value


_as_floats_python = as_floats
if engine.diagonal is not None:  # the same function with its fast paths compiled
    engine.diagonal.connect(as_floats=_as_floats_python)  # its general case
    as_floats = engine.diagonal.as_floats
