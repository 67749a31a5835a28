"""`GaussianClassifier`, the class every Gaussian rule subclasses: the model
(`river_cw.gaussian_model`) with its common cases in one call of the compiled engine.

A rule names its step in C (`_native_step`, `_native_exact_step`: river_cw/_steps.h and
river_cw/_exact.h). Then `learn_one` of a binary model with a known label runs in one call of
the compiled engine (the *lean* path, `_lean_spec`); `predict_one` and `predict_proba_one` of a
binary model score in one call of a compiled engine (`score_native`; the full one's scores, not
its variances), and `predict_many` and `predict_proba_many` run their loops in one call of the
diagonal or arrowhead engine (`score_rows`); `learn_many` runs its loop in either's batch kernel
(`learn_rows`, river_cw/_batch.h). The one-call paths read x as a dict or as a text's token
counts without their dict (`river_cw._text.TokenCounts`, from `river_cw.text.TextClassifier`;
`_features` makes it the dict where they decline). Each path
gives the general path's numbers, bit for bit, and hands it every case it does not take (a new
label, a value to name in an error, calibration, forgetting; a new feature of the full
covariance); under the pure-Python engine the general path serves throughout. The glossary of these paths heads
river_cw/_shell.h.
"""

from __future__ import annotations

import functools
import inspect
import math
from typing import Any

from . import covariances
from .base import INTERCEPT, LinearClassifier
from .batch import Rows
from .covariances import COMPILED
from .gaussian import SKIPPED
from .gaussian_model import GaussianModel

__all__ = ["GaussianClassifier"]

_STALE = object()  # a lean-path spec to be built anew (see GaussianClassifier.__setattr__)


@functools.cache
def _hyperparameters(cls) -> frozenset:
    """The names of a model class's hyperparameters (its ``__init__``'s parameters)."""
    return frozenset(inspect.signature(cls.__init__).parameters) - {"self"}


class GaussianClassifier(GaussianModel):
    """`GaussianModel` with the compiled engine's one-call paths (see the module docstring)."""

    @property
    def _native_step(self) -> tuple[str, tuple] | None:
        """The rule's `_step` in C, ``(name, params)`` (see river_cw/_steps.h), or None: the
        compiled engine's lean `learn_one` then serves the common case in one call."""
        return None

    @property
    def _native_exact_step(self) -> tuple | None:
        """The rule's `_exact_step` in C for the lean `learn_one`, ``(step, scheme)``: a native
        step ``(name, params)`` (river_cw/_exact.h's `find_exact_step`, or a `_native_step` of
        river_cw/_steps.h) and the scheme its update takes, ``"project"`` or ``("herding", C)``
        (shrinking with C times the sample weight); or None."""
        return None

    def _native_step_of_step(self) -> tuple[str, tuple] | None:
        """`_native_step` where it is this model's `_step` in C: None for a subclass that
        overrides `_step` but not `_native_step` (its own step must run)."""
        return self._native_of("_step", "_native_step")

    def _native_of(self, method: str, native: str):
        """The attribute `native` where it is this model's `method` in C: None when a subclass
        overrides `method` but not `native`."""
        owners = [
            next(c for c in type(self).__mro__ if name in vars(c)) for name in (method, native)
        ]
        return getattr(self, native) if owners[0] is owners[1] else None

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
        # The common case in one call of the compiled engine (`learn_native`: a binary
        # model, a known label, a float weight > 0; x read as `as_floats` reads it, margin,
        # the rule's C step, update): the general path's numbers. Any other case, and any x
        # it does not take as it is (to name a bad feature), goes the general way.
        lean = self._lean
        if lean is _STALE:
            lean = self._lean = self._lean_spec()
        if lean is not None:  # none without a compiled engine (`_lean_spec`)
            outcome = self._gaussian.learn_native(x, y, w, self._class_index, lean)  # type: ignore[union-attr]
            if not outcome:  # learned (or nothing to learn)
                return
            if outcome == SKIPPED:
                self.n_skipped_updates += 1
                return
        LinearClassifier.learn_one(self, x, y, w)

    def _native_scores(self, rows: Rows, proba: bool) -> list | None:
        """The score of every row (`_native_score`'s ``m``), or with `proba` its probabilities
        (`probabilities.binary`'s), in one call of the compiled engine's batch kernel
        (`score_rows`, river_cw/_batch.h: dict rows as `score_native` reads them, CSR rows read
        from the arrays, their names checked as `Rows.check_names` checks them,
        river_cw/_csr.h), None for a row the general path must serve; None where the engine has
        no kernel or the model is not binary."""
        engine: Any = self._gaussian
        if not isinstance(engine, COMPILED) or not self.is_binary:
            return None
        batch = rows.dicts if rows.csr is None else rows.csr
        # math.erfc itself, so that the probabilities are probabilities.binary's to the bit
        spec = (*self.classes_, self.temperature, math.erfc) if proba else None
        return engine.score_rows(batch, INTERCEPT if self.learn_intercept else None, spec)

    def _predict_rows(self, rows: Rows) -> list:
        scores = self._native_scores(rows, False)
        classes = self.classes_
        if scores is None or not classes:
            return super()._predict_rows(rows)
        first, last = classes[0], classes[-1]
        return [
            (last if score > 0 else first) if score is not None else self.predict_one(rows.row(i))
            for i, score in enumerate(scores)
        ]

    def _predict_proba_rows(self, rows: Rows) -> list[dict]:
        if len(self.classes_) != 2 or (probas := self._native_scores(rows, True)) is None:
            return super()._predict_proba_rows(rows)
        return [
            proba if proba is not None else self.predict_proba_one(rows.row(i))
            for i, proba in enumerate(probas)
        ]

    def _native_score(self, x: dict, variance: bool):
        """The compiled engine's score of a binary model, ``m`` or ``(m, v)`` with its
        variance (`score_native`, diagonal, arrowhead or full: x a dict of floats, ints and
        bools, or a `river_cw._text.TokenCounts`), or None where the general path must serve."""
        engine: Any = self._gaussian
        if not isinstance(engine, COMPILED):
            return None
        return engine.score_native(x, INTERCEPT if self.learn_intercept else None, variance)

    _lean = _STALE  # `_lean_spec`, built by the first learn_one after a hyperparameter is set

    def _lean_spec(self):
        """``(step, scheme, intercept)`` of the compiled engine's lean path, or None where the
        model needs the general one (a covariance with no compiled engine; calibration, forgetting, no native step of its own `_step`, or of its own `_exact_step`
        for the exact scheme)."""
        if not covariances.of(self).compiled or self.calibrate or self.forgetting:
            return None
        if self.diagonal == "exact":
            native = self._native_of("_exact_step", "_native_exact_step")
            if native is None:
                return None
            step, scheme = native
        else:
            step, scheme = self._native_step_of_step(), self.diagonal
        if step is None:
            return None
        return step, scheme, INTERCEPT if self.learn_intercept else None

    def __setattr__(self, name: str, value) -> None:
        object.__setattr__(self, name, value)
        if name in _hyperparameters(type(self)):  # the lean path's spec reads them
            object.__setattr__(self, "_lean", _STALE)

    def __getstate__(self) -> dict:
        state = dict(vars(self))
        state.pop("_lean", None)  # derived from the hyperparameters
        return state

    def _learn_rows(self, rows, labels, weights):
        """The mini-batch loop in the compiled engine (`river_cw/_batch.h`) where it has one
        (the diagonal and arrowhead covariances, no calibration): the kernel learns row after
        row as `learn_one` would and stops at a row it leaves to `learn_one` (a new label, a
        weight of 0, a value other than a float, a bool or an int within float64, a bad row),
        which then runs here."""
        engine = covariances.of(self).native_batch(self._gaussian)
        if engine is None or self.calibrate:
            return super()._learn_rows(rows, labels, weights)
        kernel = engine.learn_rows
        step, scheme = self._rule()
        native = None if scheme is None else self._native_step_of_step()
        intercept = INTERCEPT if self.learn_intercept else None
        batch = rows.dicts if rows.csr is None else rows.csr
        lean = self._lean
        if lean is _STALE:
            lean = self._lean = self._lean_spec()
        i, n = 0, len(rows)
        while i < n:
            stats = [i, 0]
            try:
                kernel(
                    batch,
                    labels,
                    self._class_index,
                    weights,
                    i,
                    step,
                    scheme,
                    float(self.forgetting),
                    intercept,
                    stats,
                    native,
                    lean,
                )
            except (TypeError, ValueError) as error:  # raised by the rule's step
                raise type(error)(f"row {rows.index[stats[0]]!r}: {error}") from error
            finally:
                self.n_skipped_updates += stats[1]
            i = stats[0]
            if i < n:
                self._learn_row(rows, i, labels[i], weights[i])
                i += 1
