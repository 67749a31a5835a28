"""The engine switch (`river_cw.engine`): one module imports the compiled extensions and reads
``RIVER_CW_PURE_PYTHON`` once, with one meaning for every part of river_cw; the C looks up no
Python name of river_cw (its hooks are handed over at import)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

import river_cw

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "river_cw"

# what each part of river_cw says about the engine serving it, from a fresh interpreter
REPORT = """
import json
import river_cw
from river_cw import cw, engine, rda, text, validation
from river_cw._engines import arrowhead, diagonal, full
print(json.dumps({
    "ENGINE": river_cw.ENGINE,
    "diagonal": diagonal.DiagonalGaussian is not diagonal.PythonDiagonalGaussian,
    "arrowhead": arrowhead.ArrowheadGaussian is not arrowhead.PythonArrowheadGaussian,
    "full": full.FullGaussian is not full.PythonFullGaussian,
    "exact solvers": cw._compiled is not None,
    "as_floats": validation.as_floats is not validation._as_floats_python,
    "voted RDA": rda._compiled is not None,
    "text counting": text.COMPILED,
}))
"""


def engines_under(value: str | None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("RIVER_CW_PURE_PYTHON", None)
    if value is not None:
        env["RIVER_CW_PURE_PYTHON"] = value
    return subprocess.run(
        [sys.executable, "-c", REPORT], env=env, capture_output=True, text=True, cwd=ROOT
    )


def parts(run: subprocess.CompletedProcess) -> dict:
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout)


def test_switch_0_serves_every_part_from_one_engine_the_compiled_one_where_built():
    report = parts(engines_under("0"))
    compiled = report.pop("ENGINE") == "c"
    assert report == dict.fromkeys(report, compiled), report
    built = all(find_spec(f"river_cw._engines.{name}") for name in river_cw.engine.EXTENSIONS)
    assert compiled == built


def test_switch_1_serves_every_part_from_pure_python():
    report = parts(engines_under("1"))
    assert report.pop("ENGINE") == "python"
    assert not any(report.values()), report


def test_switch_refuses_a_value_it_does_not_know_at_import():
    run = engines_under("yes")
    assert run.returncode != 0
    assert "ValueError: RIVER_CW_PURE_PYTHON='yes'" in run.stderr, run.stderr[-2000:]


@pytest.mark.parametrize("value, pure", [("", False), ("0", False), ("1", True)])
def test_switch_values_and_their_meaning(value, pure):
    assert river_cw.engine._pure_python(value) is pure


@pytest.mark.parametrize("value", ["yes", "true", "2", " 1", "off", "False"])
def test_switch_refuses_any_other_value_naming_the_variable(value):
    with pytest.raises(ValueError, match=re.escape(f"RIVER_CW_PURE_PYTHON={value!r}: set it to 1")):
        river_cw.engine._pure_python(value)


def test_only_the_engine_module_imports_the_compiled_extensions():
    importers = {
        path.name
        for path in PACKAGE.glob("*.py")
        # an import statement, or the extension's name handed to import_module
        if re.search(
            r"import _(diagonal|rda|text)\b|from \._(diagonal|rda|text) |[\"']_(diagonal|rda|text)[\"']",
            path.read_text(),
        )
    }
    assert importers == {"engine.py"}


def test_the_c_imports_no_python_module_its_hooks_are_handed_over():
    for path in [*PACKAGE.glob("*.c"), *PACKAGE.glob("*.h")]:
        assert "PyImport" not in path.read_text(), f"{path.name} imports a Python module"


# --- a build without a compiler says so (issue 42) ---------------------------------------------

# river_cw imported where the extensions named cannot be (as on an install built without a
# compiler, or partly), every warning kept; what it reports is printed as JSON
REFUSED = """
import json, sys, warnings
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name in {refused!r}:
            raise ImportError(f"no compiled module {{name}}")
        return None
sys.meta_path.insert(0, Refuse())
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import river_cw
    import river_cw.engine, river_cw.text
print(json.dumps({{
    "ENGINE": river_cw.ENGINE,
    "REASON": river_cw.engine.REASON,
    "warnings": [[w.category.__name__, str(w.message)] for w in caught],
    "file": river_cw.__file__,
}}))
"""


def refused(names: tuple[str, ...], switch: str | None) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("RIVER_CW_PURE_PYTHON", None)
    if switch is not None:
        env["RIVER_CW_PURE_PYTHON"] = switch
    code = REFUSED.format(refused=tuple(f"river_cw._engines.{name}" for name in names))
    run = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT
    )
    report = parts(run)
    assert Path(report.pop("file")).is_relative_to(PACKAGE)  # this checkout's river_cw
    return report


@pytest.mark.parametrize("names", [river_cw.engine.EXTENSIONS, ("_text",)])
def test_a_fallback_nobody_asked_for_warns_once_naming_the_extension_why_and_the_cost(names):
    report = refused(names, None)
    first = f"river_cw._engines.{names[0]}"
    reason = f"{first} did not import (no compiled module {first})"
    assert report == {
        "ENGINE": "python",
        "REASON": reason,
        "warnings": [
            [
                "PurePythonWarning",
                f"river_cw falls back to its pure-Python engine, about 30x slower: {reason}. "
                "Reinstall river-cw where a C compiler is available, or set "
                "RIVER_CW_PURE_PYTHON=1 to choose pure Python without this warning.",
            ]
        ],
    }
    assert issubclass(river_cw.engine.PurePythonWarning, RuntimeWarning)


@pytest.mark.parametrize("names", [river_cw.engine.EXTENSIONS, ()])
def test_pure_python_asked_for_warns_of_nothing(names):
    report = refused(names, "1")
    assert report == {"ENGINE": "python", "REASON": "RIVER_CW_PURE_PYTHON=1", "warnings": []}


@pytest.mark.skipif(river_cw.ENGINE != "c", reason="the extensions are not built here")
def test_the_compiled_engine_warns_of_nothing():
    report = refused((), None)
    assert report == {"ENGINE": "c", "REASON": None, "warnings": []}
