"""What a user's install builds: a wheel built from the sdist, as pip and `python -m build` do
it, carries the compiled engines (setup.py marks them optional, so a source missing from the
sdist would only make the install fall back to pure Python, silently)."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

import river_cw
from tests.conftest import tracked_files

EXTENSIONS = {"_diagonal", "_arrowhead", "_rda", "_text"}


@pytest.mark.slow
def test_the_wheel_built_from_the_sdist_holds_every_compiled_engine(tmp_path):
    source = tracked_files(tmp_path / "source")
    # `python -m build` makes the sdist, then the wheel from the unpacked sdist alone
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(tmp_path / "dist"), str(source)],
        check=True,
        capture_output=True,
        text=True,
    )
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    built = {name.split("/")[-1].split(".")[0] for name in names if name.endswith((".so", ".pyd"))}
    assert built == EXTENSIONS, f"the wheel's compiled modules: {sorted(built)}"
    # the version has one source (river_cw.__version__), the licence and the bundled data ship
    assert wheel.name.startswith(f"river_cw-{river_cw.__version__}-"), wheel.name
    assert any(
        name.endswith(".dist-info/licenses/LICENSE") or name.endswith("/LICENSE") for name in names
    ), names
    assert "streams/io/data/sms_spam_collection.jsonl.gz" in names
