"""The documentation site: it builds without a warning, its reference covers the public API, and
every public parameter is documented (numpydoc) where `help()` and the site show it."""

from __future__ import annotations

import doctest
import importlib
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

griffe = pytest.importorskip("griffe", reason="the docs tests need the [docs] extra")
pytest.importorskip("mkdocs", reason="the docs tests need the [docs] extra")

ROOT = Path(__file__).resolve().parents[2]
API = ROOT / "docs" / "api"
DIRECTIVE = re.compile(r"^::: (?P<path>[\w.]+)$", re.MULTILINE)

# The public surface of streams (readers, evaluation and simulators, the server's configuration,
# committed reads): these modules' __all__, with river_cw's, must be in the reference
STREAMS = [
    "streams.io.base",
    "streams.io.jsonl",
    "streams.io.csv",
    "streams.io.libsvm",
    "streams.io.files",
    "streams.io.schema",
    "streams.models.specs",
    "streams.models.labels",
    "streams.evaluate.progressive",
    "streams.evaluate.scoring",
    "streams.evaluate.track",
    "streams.evaluate.results",
    "streams.evaluate.noise",
    "streams.evaluate.drift",
    "streams.evaluate.synthetic",
    "streams.evaluate.sharded",
    "streams.kafka.config",
    "streams.kafka.committed",
]


def _directives() -> list[str]:
    """The objects the reference pages render (``::: path`` lines)."""
    return [m["path"] for page in API.rglob("*.md") for m in DIRECTIVE.finditer(page.read_text())]


def _documented() -> set[str]:
    """Every public name the reference shows: the objects it renders, and the public members of
    the modules it renders whole (mkdocstrings shows a module's ``__all__``)."""
    names = set()
    for path in _directives():
        names.add(path)
        module = _module(path)
        if module is not None and _renders_members(path):
            names.update(f"{path}.{name}" for name in getattr(module, "__all__", ()))
    return names


def _module(path: str):
    try:
        return importlib.import_module(path)
    except ImportError:
        return None


def _renders_members(path: str) -> bool:
    for page in API.rglob("*.md"):
        text = page.read_text()
        block = re.search(rf"^::: {re.escape(path)}\n((?:    .*\n)*)", text, re.MULTILINE)
        if block is not None:
            return "members: false" not in block[1]
    return False


def test_the_reference_shows_every_public_name():
    import river_cw

    documented = _documented()
    wanted = {f"river_cw.{name}" for name in river_cw.__all__}
    wanted |= {f"river_cw.text.{name}" for name in ("TextClassifier", "BagOfWords")}
    for module in STREAMS:
        wanted |= {f"{module}.{name}" for name in importlib.import_module(module).__all__}
    assert sorted(wanted - documented) == []


def test_the_reference_shows_every_command():
    from streams.cli import COMMANDS

    text = (API / "cli.md").read_text()
    assert sorted(c for c in COMMANDS if f"<!-- help: {c} -->" not in text) == []


def _public_objects():
    """The griffe objects of every class and function the reference shows."""
    loader = griffe.GriffeLoader(docstring_parser="numpy", search_paths=[str(ROOT)])
    for package in ("river_cw", "streams"):
        loader.load(package)
    loader.resolve_aliases(implicit=False, external=False)
    seen = set()
    for path in sorted(_documented()):
        obj = loader.modules_collection.get_member(path)
        if obj.is_alias:
            obj = obj.final_target
        if (obj.is_class or obj.is_function) and obj.path not in seen:
            seen.add(obj.path)
            yield obj


def _ours(obj) -> bool:
    return obj.path.split(".")[0] in ("river_cw", "streams")


def _parameters(function) -> list[str]:
    return [
        p.name
        for p in function.parameters
        if p.name not in ("self", "cls") and not (p.name.startswith("_"))
    ]


def _documented_parameters(docstring, warnings: list[str]) -> set[str]:
    if docstring is None:
        return set()
    handler = _Collect()
    logger = logging.getLogger("griffe")
    logger.addHandler(handler)
    try:
        sections = docstring.parse("numpy", warn_unknown_params=True)
    finally:
        logger.removeHandler(handler)
    warnings += handler.messages
    return {
        p.name.lstrip("*")
        for section in sections
        if section.kind.value in ("parameters", "other parameters")
        for p in section.value
    }


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def _undocumented():
    """(object, parameter or griffe's complaint) for every public callable falling short."""
    for obj in _public_objects():
        callables = []
        if obj.is_class:
            init = obj.all_members.get("__init__")
            docstrings = [obj.docstring, init.docstring if init is not None else None]
            if init is not None and _ours(init):
                callables.append((obj.path, init, docstrings))
            for name, member in obj.all_members.items():
                member = member.final_target if member.is_alias else member
                if name.startswith("_") or not member.is_function or not _ours(member):
                    continue
                callables.append((f"{obj.path}.{name}", member, [member.docstring]))
        else:
            callables.append((obj.path, obj, [obj.docstring]))
        for path, function, docstrings in callables:
            warnings: list[str] = []
            documented = set()
            for docstring in docstrings:
                documented |= _documented_parameters(docstring, warnings)
            for warning in warnings:
                yield path, warning
            for name in _parameters(function):
                if name not in documented:
                    yield path, f"parameter {name!r} is not documented"


def test_every_public_parameter_is_documented():
    """Including the parameters a classifier inherits (`forgetting`, `calibrate`): `help()` and
    the reference show a class's own docstring, not its base's."""
    assert [f"{path}: {problem}" for path, problem in _undocumented()] == []


def test_every_public_class_and_function_has_an_example():
    """A doctest, or a code block where it needs a broker or the shared data; exceptions
    excepted."""
    missing = [
        obj.path
        for obj in _public_objects()
        if not (obj.is_class and any(str(b).endswith(("Error", "Exception")) for b in obj.bases))
        and not any(
            mark in (obj.docstring.value if obj.docstring else "") for mark in (">>>", "```python")
        )
    ]
    assert missing == []


def test_help_shows_inherited_parameters():
    import river_cw

    for name in ("forgetting", "calibrate", "learn_intercept", "initial_variance"):
        assert f"\n    {name}\n" in river_cw.AROW.__doc__, name


def test_readme_is_short_and_for_users():
    """The engines' history went to benchmarks/HISTORY.md, the details to the guides."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    assert "callgrind" not in readme and "epoch" not in readme


@pytest.mark.parametrize(
    "page",
    sorted(p for p in (ROOT / "docs").rglob("*.md") if ">>> " in p.read_text()),
    ids=lambda p: str(p.relative_to(ROOT / "docs")),
)
def test_the_guides_examples_run(page):
    failures, _ = doctest.testfile(
        str(page), module_relative=False, optionflags=doctest.ELLIPSIS, verbose=False
    )
    assert failures == 0


@pytest.mark.slow
def test_the_site_builds_without_a_warning(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert (tmp_path / "site" / "api" / "river_cw" / "AROW" / "index.html").exists()
    assert (tmp_path / "site" / "examples" / "spam_live" / "index.html").exists()
