"""The Python side of `GaussianClassifier`'s mini-batch loops in one call of the compiled engine.

`learn_rows` hands a batch to the engine's batch kernel (`learn_rows`, river_cw/_engines/_batch.h)
and runs `learn_one` on each row the kernel leaves to it; `score_rows` scores a batch in one call
(`score_rows`). Both give the `learn_one` and `predict_one` loops' numbers to the bit (see
`river_cw.gaussian_classifier`).
"""

from __future__ import annotations

import functools
import inspect
import math
from typing import Any

from .base import INTERCEPT
from .batch import Rows
from .covariances import COMPILED
from .labels import predicted_labels

STALE = object()
"""A lean-path spec to be built anew (see `GaussianClassifier.__setattr__`)."""


@functools.cache
def hyperparameters(cls) -> frozenset:
    """The names of a model class's hyperparameters (its ``__init__``'s parameters)."""
    return frozenset(inspect.signature(cls.__init__).parameters) - {"self"}


def lean(model):
    """The model's lean-path spec (`GaussianClassifier._lean_spec`), built anew when stale."""
    spec = model._lean
    if spec is STALE:
        spec = model._lean = model._lean_spec()
    return spec


def score_rows(model, rows: Rows, proba: bool, centre=None) -> list | None:
    """The score of every row (`_native_score`'s ``m``), or with `proba` its probabilities
    (`probabilities.binary`'s), in one call of the compiled engine's batch kernel (`score_rows`,
    river_cw/_engines/_batch.h: dict rows as `score_native` reads them, less a centred model's
    `centre` where given, CSR rows read from the arrays, their names checked as
    `Rows.check_names` checks them, river_cw/_engines/_csr.h), None for a row the general path
    must serve; None where the engine has no kernel or the model is not binary."""
    engine: Any = model._gaussian
    if not isinstance(engine, COMPILED) or not model.is_binary:
        return None
    batch = rows.dicts if rows.csr is None else rows.csr
    spec = None
    if proba:  # math.erfc itself, so that the probabilities are probabilities.binary's to the bit
        labels = predicted_labels(model.classes_)
        spec = (*labels, model.temperature, model.margin_noise, model.flip_share, math.erfc)
    intercept = INTERCEPT if model.learn_intercept else None
    if centre is None:
        return engine.score_rows(batch, intercept, spec)
    return engine.score_rows(batch, intercept, spec, centre)  # the arrowhead's


def kernel_calibrates(model) -> bool:
    """Whether the batch kernel can learn for `model` as `learn_one` would: it takes the
    calibration's Newton step of a binary model (`river_cw.calibration.newton_step`, in C), not
    the multi-class one."""
    return model._temperature is None or len(model.classes_) <= 2


def learn_rows(model, engine, rows: Rows, labels: list, weights: list, centre=None) -> None:
    """`learn_many`'s loop in `engine`'s batch kernel: it learns row after row as `learn_one`
    would and stops at a row it leaves to `learn_one` (a new label, a weight of 0, a value other
    than a float, a bool or an int within float64, a bad row), which then runs here; once a new
    label makes a calibrating model multi-class (`kernel_calibrates`), `learn_one` takes the
    rest. A centred model's dict rows (`centre`, its `river_cw.centring.Centring.centre`) go
    through the lean path less the centre, as `learn_one`'s `learn_native`."""
    kernel = engine.learn_rows
    step, scheme = model._rule()
    native = None if scheme is None else model._native_step_of_step()
    intercept = INTERCEPT if model.learn_intercept else None
    batch = rows.dicts if rows.csr is None else rows.csr
    spec = lean(model)
    i, n = 0, len(rows)
    while i < n:
        if not kernel_calibrates(model):
            model._learn_row(rows, i, labels[i], weights[i])
            i += 1
            continue
        stats = [i, 0]
        try:
            kernel(
                batch,
                labels,
                model._class_index,
                weights,
                i,
                step,
                scheme,
                float(model._fixed_rate()),
                intercept,
                stats,
                native,
                spec,
                model._calibration_spec(),
                centre,
            )
        except (TypeError, ValueError) as error:  # raised by the rule's step
            raise type(error)(f"row {rows.index[stats[0]]!r}: {error}") from error
        finally:
            model.n_skipped_updates += stats[1]
        i = stats[0]
        if i < n:
            model._learn_row(rows, i, labels[i], weights[i])
            i += 1
