"""The runnable examples of the README stay runnable."""

from __future__ import annotations

import runpy
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_quickstart_runs_and_learns_spam(capsys):
    runpy.run_path(str(EXAMPLES / "quickstart.py"), run_name="__main__")
    out = capsys.readouterr().out.splitlines()
    assert out[-3].startswith("[5,574] Accuracy:")
    assert float(out[-3].split("Accuracy: ")[1].rstrip("%")) > 95.0
    assert float(out[-2].split("CrossEntropy: ")[1]) < 0.5
    ham, spam = (float(part.split(": ")[1]) for part in out[-1].strip("{}").split(", "))
    assert spam > 0.5 > ham
