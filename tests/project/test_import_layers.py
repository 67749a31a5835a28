"""The package layout's import rules (streams/__init__.py and CONTRIBUTING.md state them).

`streams.io` and `streams.models` are the ground floor; `streams.evaluate` and `streams.kafka`
stand on them and never import each other; only `streams.cli` imports both. `river_cw` holds the
algorithms and imports nothing of `streams`; `streams` imports only the modules of `river_cw` the
API reference documents, never its engines (`river_cw._engines`, private), which stand below the
models: they import of the rest of `river_cw` only the engine switch and the input checks.
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


def documented_modules() -> set[str]:
    """The modules of river_cw the API reference (docs/api) renders with ``::: name``."""
    names = {
        line.split()[1]
        for page in (ROOT / "docs" / "api").rglob("*.md")
        for line in page.read_text().splitlines()
        if line.startswith("::: river_cw")
    }
    return {name for name in names if (ROOT / f"{name.replace('.', '/')}.py").exists()}


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

ENGINES = "river_cw._engines"
"""The engines' private package: only river_cw imports it."""

BELOW_THE_ENGINES = {"river_cw.engine", "river_cw.validation"}
"""What the engines import of river_cw outside their package: the switch, the input checks."""


def test_the_modules_streams_may_import_are_documented_in_the_api_reference():
    undocumented = PUBLIC - {"river_cw"} - documented_modules()
    assert not undocumented, f"public but not in docs/api: {sorted(undocumented)}"
    assert not {m for m in documented_modules() if m.startswith(ENGINES)}, "docs/api shows engines"


def _absolute_imports(path: Path) -> set[str]:
    """The modules `path` imports, relative imports resolved against its package."""
    module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set(_imports(path))
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.split(".")
            base = base[: len(base) - node.level + 1]
            stem = ".".join(base + ([node.module] if node.module else []))
            found.add(stem)
            found.update(f"{stem}.{alias.name}" for alias in node.names)
    return found


@pytest.mark.parametrize(
    "path",
    [p for p in MODULES if p.relative_to(ROOT).parts[:2] == ("river_cw", "_engines")],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_the_engines_import_of_river_cw_only_their_package_the_switch_and_the_checks(path):
    above = {
        name
        for name in _absolute_imports(path)
        if name.split(".")[0] == "river_cw"
        and name != "river_cw"
        and not name.startswith(ENGINES)
        and name not in BELOW_THE_ENGINES
        and name.rpartition(".")[0] not in BELOW_THE_ENGINES  # a name from one of them
    }
    assert not above, f"{path.relative_to(ROOT)} imports models' modules {sorted(above)}"


@pytest.mark.parametrize(
    "path",
    [p for p in MODULES if p.relative_to(ROOT).parts[0] == "streams"]
    + sorted((ROOT / "examples").rglob("*.py")),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_nothing_outside_river_cw_imports_its_engines(path):
    engines = {name for name in _imports(path) if name.startswith(ENGINES)}
    assert not engines, f"{path.relative_to(ROOT)} imports {sorted(engines)}"


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
