"""The runnable examples of the README stay runnable, and the README and getting-started show
what the quickstart prints."""

from __future__ import annotations

import ast
import contextlib
import io
import re
import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="module")
def quickstart() -> list[str]:
    """The lines `examples/quickstart.py` prints."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runpy.run_path(str(EXAMPLES / "quickstart.py"), run_name="__main__")
    return out.getvalue().splitlines()


def test_quickstart_runs_and_learns_spam(quickstart):
    out = quickstart
    assert out[-3].startswith("[5,574] Accuracy:")
    assert float(out[-3].split("Accuracy: ")[1].rstrip("%")) > 95.0
    assert float(out[-2].split("CrossEntropy: ")[1]) < 0.5
    ham, spam = (float(part.split(": ")[1]) for part in out[-1].strip("{}").split(", "))
    assert spam > 0.5 > ham


@pytest.mark.parametrize("document", ["README.md", "docs/getting-started.md"])
def test_the_quickstarts_last_line_shown_is_what_it_prints(document, quickstart):
    """The probabilities the document quotes are the printed ones, rounded as shown."""
    text = (ROOT / document).read_text(encoding="utf-8")
    [shown] = re.findall(r"`(\{'ham': [0-9.]+, 'spam': [0-9.]+\})` for the last line", text)
    digits = [len(d) for d in re.findall(r"\.(\d+)", shown)]
    printed = ast.literal_eval(quickstart[-1])
    rounded = {k: round(v, n) for (k, v), n in zip(printed.items(), digits)}
    assert ast.literal_eval(shown) == rounded, f"{document} shows {shown}, the quickstart {rounded}"


@pytest.mark.parametrize("document", ["README.md", "docs/getting-started.md"])
def test_the_quickstarts_accuracy_quoted_is_what_it_prints(document, quickstart):
    """ "97.7% accuracy after one pass": the last accuracy printed, to the digit shown."""
    text = " ".join((ROOT / document).read_text(encoding="utf-8").split())
    [shown] = re.findall(r"([0-9.]+)% accuracy after one pass", text)
    printed = float(quickstart[-3].split("Accuracy: ")[1].rstrip("%"))
    assert shown == f"{printed:.{len(shown.split('.')[1])}f}", (document, shown, printed)
