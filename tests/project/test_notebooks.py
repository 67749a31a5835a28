"""The notebooks in examples/ are committed executed, and they still run from top to bottom in a
fresh kernel of this interpreter (`python -m tests.project.notebooks --write` regenerates them)."""

from __future__ import annotations

import pytest

from tests.conftest import require_broker_package
from tests.project.notebooks import NOTEBOOKS, execute

nbformat = pytest.importorskip("nbformat", reason="the notebooks need the [dev] extra")
pytest.importorskip("nbclient", reason="the notebooks need the [dev] extra")

KAFKA = {"kafka_walkthrough"}


def _outputs(notebook) -> list[list]:
    return [cell.outputs for cell in notebook.cells if cell.cell_type == "code"]


def _problems(notebook) -> list[str]:
    """What a reader of the committed notebook would find wrong: a code cell not run, or run out
    of order, without output, an error, a warning, a progress widget."""
    problems = []
    for i, cell in enumerate(c for c in notebook.cells if c.cell_type == "code"):
        where = f"code cell {i + 1}"
        if cell.execution_count != i + 1:
            problems.append(f"{where}: execution count {cell.execution_count}, not {i + 1}")
        if not cell.outputs:
            problems.append(f"{where} has no output")
        for output in cell.outputs:
            if output.output_type == "error":
                problems.append(f"{where}: {output.ename}: {output.evalue}")
            if output.get("name") == "stderr":
                problems.append(f"{where} wrote to stderr: {output.text[:200]!r}")
            if "application/vnd.jupyter.widget-view+json" in output.get("data", {}):
                problems.append(f"{where} shows a widget (a progress bar?)")
    return problems


def test_there_are_notebooks():
    assert {p.stem for p in NOTEBOOKS} >= {"spam_live", "noise_and_drift", "kafka_walkthrough"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_notebook_shows_its_outputs(path):
    notebook = nbformat.read(path, as_version=4)
    assert _problems(notebook) == []
    images = [
        o for outputs in _outputs(notebook) for o in outputs if "image/png" in o.get("data", {})
    ]
    assert images or path.stem in KAFKA, "no figure was drawn"


@pytest.mark.slow
@pytest.mark.parametrize(
    "path",
    [
        pytest.param(path, marks=[pytest.mark.kafka] if path.stem in KAFKA else [], id=path.stem)
        for path in NOTEBOOKS
    ],
)
def test_notebook_runs_as_committed(path):
    """Run again, each cell gives outputs of the kinds committed (numbers may differ: timings)."""
    if path.stem in KAFKA:
        require_broker_package()
    notebook = execute(path)  # raises CellExecutionError, with the cell and its traceback
    assert _problems(notebook) == []

    def kinds(notebook):
        return [
            [(o.output_type, sorted(o.get("data", {}))) for o in outputs]
            for outputs in _outputs(notebook)
        ]

    assert kinds(notebook) == kinds(nbformat.read(path, as_version=4))
