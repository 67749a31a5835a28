"""The engine switch: whether the compiled extensions serve, decided once, here.

river_cw has two engines with the same numbers, bit for bit: the compiled one (the C extensions
`river_cw._diagonal`, the diagonal Gaussian engine; `river_cw._rda`, voted RDA's; `river_cw._text`,
the token counting of `river_cw.text.BagOfWords`) and pure Python, the readable reference. The
extensions are optional: an install without a compiler builds none of them, and pure Python
serves. This module is the only one that imports them; every other module asks it.

The environment variable ``RIVER_CW_PURE_PYTHON``, read once when river_cw is imported:

- unset, empty or ``0``: the compiled engine, where all three extensions are built; pure Python
  everywhere otherwise;
- ``1``: pure Python everywhere (models, voted RDA and text counting), built or not;
- anything else is refused with a `ValueError` naming the variable, rather than guessed at.

`ENGINE` says which engine serves (also `river_cw.ENGINE`): ``"c"`` or ``"python"``. The
extensions are `diagonal`, `rda` and `text` here, all three None when pure Python serves.

The compiled engines call back into Python where Python does the work (naming a bad feature in
its error, `as_floats`' general conversion) or defines a type the C recognises (NHERD's
`HerdingShrink`): the module that owns each hook hands it over when it is imported, through the
extension's ``connect(name=hook)``; the C looks up no Python name itself.
"""

from __future__ import annotations

import os
from importlib import import_module
from types import ModuleType

__all__ = ["ENGINE", "PURE_PYTHON", "diagonal", "rda", "text"]

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

diagonal: ModuleType | None = None
rda: ModuleType | None = None
text: ModuleType | None = None
if not PURE_PYTHON:
    try:  # by name: the extensions are compiled modules, which a type checker does not read
        diagonal, rda, text = (
            import_module(f"{__package__}.{name}") for name in ("_diagonal", "_rda", "_text")
        )
    except ImportError:  # built without a compiler (or partly): pure Python serves throughout
        diagonal = rda = text = None

ENGINE = "python" if diagonal is None else "c"
