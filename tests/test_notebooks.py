"""The notebooks in examples/ run from top to bottom in a fresh kernel of this interpreter."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import require_broker_package

nbformat = pytest.importorskip("nbformat", reason="the notebooks need the [dev] extra")
nbclient = pytest.importorskip("nbclient", reason="the notebooks need the [dev] extra")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
NOTEBOOKS = sorted(EXAMPLES.glob("*.ipynb"))
KAFKA = {"kafka_walkthrough"}


@pytest.fixture
def kernel_name(tmp_path, monkeypatch):
    """A kernel spec that runs this interpreter (in CI the test run's own fresh venv), whatever
    kernels the machine has installed."""
    spec = tmp_path / "kernels" / "river-cw-tests"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    kernel = {"argv": argv, "display_name": "river-cw tests", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(kernel))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    return "river-cw-tests"


def test_there_are_notebooks_and_their_outputs_are_stripped():
    assert {p.stem for p in NOTEBOOKS} >= {"spam_live", "noise_and_drift", "kafka_walkthrough"}
    for path in NOTEBOOKS:
        notebook = nbformat.read(path, as_version=4)
        for cell in notebook.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, path.name


@pytest.mark.slow
@pytest.mark.parametrize(
    "path",
    [
        pytest.param(path, marks=[pytest.mark.kafka] if path.stem in KAFKA else [], id=path.stem)
        for path in NOTEBOOKS
    ],
)
def test_notebook_runs_in_a_fresh_kernel(path, kernel_name):
    if path.stem in KAFKA:
        require_broker_package()
    notebook = nbformat.read(path, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell("import sys\nprint(sys.executable)"))
    client = nbclient.NotebookClient(
        notebook,
        kernel_name=kernel_name,
        timeout=300,
        resources={"metadata": {"path": str(EXAMPLES)}},
    )
    client.execute()  # raises CellExecutionError, with the cell and its traceback, on a failure
    assert notebook.cells[-1].outputs[0]["text"] == sys.executable + "\n"  # this interpreter
    images = [
        output
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if "image/png" in output.get("data", {})
    ]
    assert images or path.stem in KAFKA, "no figure was drawn"
    assert not [
        output
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if output.get("name") == "stderr" and "Warning" in output.get("text", "")
    ]
