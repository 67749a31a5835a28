"""The engine switch: whether the compiled extensions serve, decided once, here.

river_cw has two engines with the same numbers, bit for bit: the compiled one (the C extensions
of the private package `river_cw._engines`: `_diagonal`, the diagonal Gaussian engine;
`_arrowhead`, the arrowhead Gaussian engine; `_full`, the full-covariance engine's kernels;
`_rda`, voted RDA's; `_text`, the token counting of `river_cw.text.BagOfWords`) and pure Python,
the readable reference. The extensions are optional: an install without a compiler builds none of
them, and pure Python serves. This module is the only one that imports them; every other module asks it.

The environment variable ``RIVER_CW_PURE_PYTHON``, read once when river_cw is imported:

- unset, empty or ``0``: the compiled engine, where all five extensions are built; pure Python
  everywhere otherwise;
- ``1``: pure Python everywhere (models, voted RDA and text counting), built or not;
- anything else is refused with a `ValueError` naming the variable, rather than guessed at.

`ENGINE` says which engine serves (also `river_cw.ENGINE`): ``"c"`` or ``"python"``, and
`REASON` why pure Python serves (None on the compiled engine): the switch, or the extension that
did not import with its `ImportError`. The extensions are `diagonal`, `arrowhead`, `full`,
`rda` and `text` here, all five None when pure Python serves.

A fallback nobody asked for is announced, once, at import: a `PurePythonWarning` (a
`RuntimeWarning`) naming the extension that did not import, why, and the cost
(`PURE_PYTHON_COST`: the pure-Python engine's `learn_one` takes 20 to 45 times the
instructions). ``RIVER_CW_PURE_PYTHON=1`` asks for pure Python, and warns of nothing.

The compiled engines call back into Python where Python does the work (naming a bad feature in
its error, `as_floats`' general conversion) or defines a type the C recognises (NHERD's
`HerdingShrink`): the module that owns each hook hands it over when it is imported, through the
extension's ``connect(name=hook)``; the C looks up no Python name itself.
"""

from __future__ import annotations

import os
import warnings
from importlib import import_module
from types import ModuleType

__all__ = [
    "ENGINE",
    "PURE_PYTHON",
    "REASON",
    "PurePythonWarning",
    "arrowhead",
    "diagonal",
    "full",
    "rda",
    "text",
]

SWITCH = "RIVER_CW_PURE_PYTHON"


def _pure_python(value: str) -> bool:
    """What a value of ``RIVER_CW_PURE_PYTHON`` asks for: True for pure Python."""
    if value in ("", "0"):
        return False
    if value == "1":
        return True
    raise ValueError(
        f"{SWITCH}={value!r}: set it to 1 for the pure-Python engine, or to 0 (or leave it "
        "unset) for the compiled engine where it is built"
    )


PURE_PYTHON = _pure_python(os.environ.get(SWITCH, ""))

EXTENSIONS = ("_diagonal", "_arrowhead", "_full", "_rda", "_text")  # of `river_cw._engines`
PACKAGE = f"{__package__}._engines"


class PurePythonWarning(RuntimeWarning):
    """The compiled extensions did not import, so the pure-Python engine serves (about 10x
    slower); not raised where ``RIVER_CW_PURE_PYTHON=1`` asks for pure Python."""


def _import_extensions() -> tuple[list[ModuleType], str | None]:
    """The five extensions, or none of them and why: the first that did not import, with its
    `ImportError` (built without a compiler, or partly)."""
    modules = []
    for name in EXTENSIONS:
        try:  # by name: the extensions are compiled modules, which a type checker does not read
            modules.append(import_module(f"{PACKAGE}.{name}"))
        except ImportError as error:
            return [], f"{PACKAGE}.{name} did not import ({error})"
    return modules, None


diagonal: ModuleType | None = None
arrowhead: ModuleType | None = None
full: ModuleType | None = None
rda: ModuleType | None = None
text: ModuleType | None = None
REASON: str | None = f"{SWITCH}=1" if PURE_PYTHON else None
# what pure Python costs, in the fallback's warning and `river-cw evaluate`'s report
# (docs/tables/learn_one.md: the pure-Python rows against the compiled ones)
PURE_PYTHON_COST = "about 30x slower"
if not PURE_PYTHON:
    _modules, REASON = _import_extensions()
    if _modules:  # all five: the compiled engine serves throughout
        diagonal, arrowhead, full, rda, text = _modules
    else:  # pure Python serves throughout, unasked: say so, once (this module runs once)
        warnings.warn(
            f"river_cw falls back to its pure-Python engine, {PURE_PYTHON_COST}: {REASON}. "
            f"Reinstall river-cw where a C compiler is available, or set {SWITCH}=1 to choose "
            "pure Python without this warning.",
            PurePythonWarning,
            stacklevel=1,  # here: the importer is whichever module of river_cw came first
        )
    del _modules

ENGINE = "python" if diagonal is None else "c"
"""Which engine serves: ``"c"``, or ``"python"`` where ``RIVER_CW_PURE_PYTHON=1`` asks for it or
the compiled extensions did not import (announced at import by a `PurePythonWarning`)."""
