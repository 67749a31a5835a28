"""The package layout's import rules (streams/__init__.py and CONTRIBUTING.md state them).

`streams.io` and `streams.models` are the ground floor; `streams.evaluate` and `streams.kafka`
stand on them and never import each other; only `streams.cli` imports both. `river_cw` holds the
algorithms and imports nothing of `streams`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# package -> the packages of this project it may import (besides itself)
ALLOWED = {
    "river_cw": set(),
    "streams.io": {"river_cw"},
    "streams.models": {"river_cw"},
    "streams.evaluate": {"river_cw", "streams.io", "streams.models"},
    "streams.kafka": {"river_cw", "streams.io", "streams.models"},
    "streams.cli": {
        "river_cw",
        "streams.io",
        "streams.models",
        "streams.evaluate",
        "streams.kafka",
    },
}


def _package(module: str) -> str | None:
    """The layout package a dotted module name belongs to, or None for a third-party one."""
    return max(
        (p for p in ALLOWED if module == p or module.startswith(p + ".")), key=len, default=None
    )


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            # `from streams import kafka` names a package in the alias
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


MODULES = sorted(
    p
    for top in ("river_cw", "streams")
    for p in (ROOT / top).rglob("*.py")
    if "build" not in p.parts
)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_module_imports_only_what_its_package_may(path):
    module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    own = _package(module)
    if own is None:  # streams/__init__.py: a docstring
        assert not _imports(path)
        return
    wrong = {
        name
        for name in _imports(path)
        if (other := _package(name)) is not None and other != own and other not in ALLOWED[own]
    }
    assert not wrong, f"{module} ({own}) may not import {sorted(wrong)}"


def test_every_module_belongs_to_a_package_of_the_layout():
    loose = [p.name for p in (ROOT / "streams").glob("*.py") if p.name != "__init__.py"]
    assert not loose, f"modules directly under streams/: {loose}; give each its concern's package"


PUBLIC = {
    "river_cw",
    "river_cw.text",
    "river_cw.labels",
    "river_cw.covariances",
    "river_cw.engine",  # the engine switch, its PurePythonWarning (docs/guide/engine.md)
    "river_cw.state",  # the versioned state format (docs/guide/saving.md)
}
"""The modules of river_cw that streams may import: those the API reference documents (and the
names of river_cw's own `__all__`, imported from the package)."""


@pytest.mark.parametrize(
    "path",
    [p for p in MODULES if p.relative_to(ROOT).parts[0] == "streams"],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_streams_import_only_the_public_api_of_river_cw(path):
    import river_cw

    exported = {f"river_cw.{name}" for name in river_cw.__all__}
    private = {
        name
        for name in _imports(path)
        if name.split(".")[0] == "river_cw"
        and name not in PUBLIC | exported
        and name.rpartition(".")[0] not in PUBLIC - {"river_cw"}  # from a public module
    }
    assert not private, f"{path.relative_to(ROOT)} imports private river_cw modules {private}"
