"""The compiled engines under AddressSanitizer and UndefinedBehaviorSanitizer (issue 26).

The extensions are built with ``-fsanitize=address,undefined`` from a copy of the project's tracked
files (into a temporary directory: the checkout's own build stays as it is), and the tests of the
engines (diagonal, arrowhead, full, voted RDA), of their marks, of batches, text, hostile input
and centring run against that build (of the comparisons with the pure-Python engine, the cases that reach compiled
code a case kept does not: `KEPT_COMPARISONS`, `FULL_GENERAL_PATH`). Python itself is not
instrumented, so the ASan runtime is preloaded (``LD_PRELOAD``), Python's allocator hands every request to malloc
(``PYTHONMALLOC=malloc``, so that ASan sees the engines' `PyMem` buffers) and leak detection is off
(the interpreter keeps memory to its exit on purpose; the engines' leaks are
`tests/engines/test_reference_counts.py`'s). A sanitizer report stops the run: ASan aborts on its
first error, UBSan is built not to recover and halts on error.

Skipped, with the reason, only where the toolchain lacks a compiler or the sanitizer runtimes;
with the environment variable CI set, that skip is a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from river_cw.engine import EXTENSIONS
from tests.conftest import ROOT, run_pytest, tracked_files
from tests.engines.test_compiled_vs_python import IDS as CONFIG_IDS

TESTS = [
    "tests/engines/test_compiled_vs_python.py",
    "tests/engines/test_calibration_step.py",
    "tests/engines/test_margin_variance.py",
    "tests/engines/test_arrowhead.py",
    "tests/engines/test_full_compiled_vs_python.py",
    "tests/engines/test_rda_compiled_vs_python.py",
    "tests/engines/test_batch_kernels.py",
    "tests/text/test_bag_of_words.py",
    "tests/text/test_text_classifier.py",
    "tests/models/test_hostile_input.py",
    "tests/engines/test_marks_and_changes.py",
    "tests/models/test_centring.py",
    "tests/models/test_log_score.py",
    "tests/models/test_flips.py",
]
SANITIZE = "-fsanitize=address,undefined"
# -O0: no function is inlined but where the code asks for it, so the build also checks that the
# engines' numbers never rest on the optimiser (at -O1 and above GCC inlined the full engine's
# vector helpers; at -O0 its AVX2 kernels called them across two ABIs and computed wrong numbers,
# which test_arrowhead's comparison with the full covariance caught). A quarter of -O1's compile
# time (7 s against 27), and the run, Python's time, as long (90 s against 102)
CFLAGS = f"{SANITIZE} -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O0"
# The full covariance's compiled kernels and one-call paths (_full.c) run under the sanitizers in
# test_full_compiled_vs_python; its models in the other files (hostile input at sixteen orders of
# magnitude: the pure-Python views, numpy and LAPACK) run on the normal build. The sweeps over
# whole corpora spend a fifth of the sanitized run in river's own tokenizer, the reference they
# compare with, for code paths the generated texts of the same files reach (every piece of ASCII
# and Unicode); they run on the normal build.
DESELECT = (
    "(not full or full_compiled_vs_python)"
    " and not every_text_of_every_corpus and not every_shared_corpus"
)
# test_compiled_vs_python's two long comparisons with the pure-Python engine, step by step in each
# of its 20 configurations of both engines, were two thirds of this run (110 of 160 s): the
# reference engine and the comparisons are Python, slow under ASan with every allocation through
# malloc. Kept, by test, parameter and configuration (test_compiled_vs_python's ids): the cases that
# reach the compiled paths. Measured with gcov, the kept cases and the rest of this run reach every
# line and branch of the compiled engines that all 80 cases reach (the kept cases alone, all but two
# or three branches that turn on the numbers: in the exact sums, the exact solver, a table's probe).
KEPT_COMPARISONS = {
    "test_same_models_predictions_and_probabilities": {
        # two labels, every configuration: the lean path (learn_native, score_native) with each
        # rule's C step (_steps.h, _exact.h) and each scheme, in each engine's copy of them
        2: CONFIG_IDS,
        # four labels: the general path over several blocks (margin, update, the scores of every
        # block; negate when the labels' order turns the binary model), in each engine
        4: ["AROW{'covariance': 'diagonal', 'diagonal': 'project'}", "AROW{}"],
    },
    "test_same_with_intercept_sample_weights_forgetting_and_calibration": {
        # three labels keep every case on the general path: forgetting's relaxation of the
        # variances with the intercept, sample weights and calibration, in each engine (the
        # diagonal with NHERD's exact scheme, the herding update of update_core; the arrowhead
        # with a flat intercept prior); without forgetting, nothing more is reached
        0.0: [],
        0.05: [
            "NHERD{'covariance': 'diagonal', 'diagonal': 'exact', 'C': 0.1}",
            "AROW{'diagonal': 'project', 'initial_intercept_variance': None}",
        ],
        "auto": [],  # three labels: the surprise's rate forgets as 0.05 does, on the same path
    },
    "test_auto_forgetting_on_a_reversed_concept_is_the_same": {
        # two labels: the lean path's surprise (its step, and the examples it hands over to the
        # general path) in each engine; three labels add nothing compiled
        2: ["AROW{'covariance': 'diagonal', 'diagonal': 'project'}", "AROW{}"],
        3: [],
    },
}
# test_full_compiled_vs_python's comparison with the reference: its multi-class and forgetting
# cases take the full engine's general path, the rule's step in Python and the compiled kernels
# on the numbers it returns, the same C for every rule: AROW's cases stand for the others (each
# rule's C step runs here in the binary and no-intercept cases, the one-call path). The other
# rules' eight cases were 11 s of this run's 100 (their durations in a run alone).
FULL_GENERAL_PATH = {
    "test": "tests/engines/test_full_compiled_vs_python.py::test_models_learn_and_predict_as_on_the_reference",
    "cases": ["multi-class", "forgetting"],
    "rules": ["CW", "NHERD", "SCW", "SOP"],
}
REPORTS = ("ERROR: AddressSanitizer", "runtime error:")


def left_out_comparisons() -> list[str]:
    """``--deselect`` of each case of `KEPT_COMPARISONS`' tests that it does not keep, and of
    `FULL_GENERAL_PATH`'s."""
    full = FULL_GENERAL_PATH
    args = [
        f"--deselect={full['test']}[{case}-{rule}]"
        for case in full["cases"]
        for rule in full["rules"]
    ]
    for test, kept in KEPT_COMPARISONS.items():
        for value, configs in kept.items():
            unknown = set(configs) - set(CONFIG_IDS)
            assert not unknown, f"not configurations of test_compiled_vs_python: {unknown}"
            args += [
                f"--deselect=tests/engines/test_compiled_vs_python.py::{test}[{value}-{config}]"
                for config in CONFIG_IDS
                if config not in configs
            ]
    return args


def unavailable(reason: str):
    """Skip for a toolchain without what the run needs; fail instead where CI is set."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason}: CI must run the sanitizer build")
    pytest.skip(reason)


def asan_runtime() -> str:
    """The path of the compiler's ASan runtime, to preload, or a skip (a failure in CI)."""
    compiler = os.environ.get("CC", "gcc")
    if shutil.which(compiler) is None:
        unavailable(f"no C compiler ({compiler}) to build the sanitized extensions")
    for runtime in ("libasan.so", "libubsan.so"):
        found = subprocess.run(
            [compiler, f"-print-file-name={runtime}"], capture_output=True, text=True
        ).stdout.strip()
        if not os.path.isabs(found) or not os.path.exists(found):
            unavailable(f"{compiler} has no {runtime} (the sanitizer runtime)")
        if runtime == "libasan.so":
            asan = os.path.realpath(found)
    return asan


def build_sanitized(source: Path) -> None:
    env = dict(os.environ, CFLAGS=CFLAGS, LDFLAGS=SANITIZE)
    build = subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--inplace"],
        cwd=source,
        env=env,
        capture_output=True,
        text=True,
    )
    built = {path.name.split(".")[0] for path in (source / "river_cw" / "_engines").glob("_*.so")}
    # setup.py marks the extensions optional: a failed build would only fall back to Python
    assert build.returncode == 0 and built == set(EXTENSIONS), (
        f"built {sorted(built)}\n{build.stdout[-3000:]}\n{build.stderr[-3000:]}"
    )


@pytest.mark.slow
def test_engine_batch_text_and_hostile_input_tests_pass_under_asan_and_ubsan(tmp_path):
    runtime = asan_runtime()
    source = tracked_files(tmp_path / "source")
    if (ROOT.parent / "shared").exists():  # the shared data, where conftest looks for it
        (tmp_path / "shared").symlink_to(ROOT.parent / "shared")
    build_sanitized(source)
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("RIVER_CW_PURE_PYTHON", "PYTHONPATH", "COV_CORE_SOURCE")
    }
    env.update(
        PYTHONPATH=str(source),
        LD_PRELOAD=runtime,
        PYTHONMALLOC="malloc",
        ASAN_OPTIONS="detect_leaks=0:abort_on_error=1",
        UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1",
        # the checkout's Hypothesis directory, not a new one in the copy: Hypothesis works out
        # its Unicode tables once per directory, a loop over every code point that takes
        # seconds of Python under ASan
        HYPOTHESIS_STORAGE_DIRECTORY=str(ROOT / ".hypothesis"),
    )
    check = (
        "import river_cw, river_cw.engine as e; "
        "print(river_cw.ENGINE, *(m.__file__ for m in (e.diagonal, e.arrowhead, e.full, e.rda, "
        "e.text)))"
    )
    active = subprocess.run(
        [sys.executable, "-c", check], cwd=source, env=env, capture_output=True, text=True
    )
    engine, *extensions = active.stdout.split()
    assert engine == "c" and all(path.startswith(str(source)) for path in extensions), (
        f"not the sanitized build: {active.stdout}{active.stderr[-3000:]}"
    )
    # --capture=sys: the sanitizers write their reports to the process's own stderr, which
    # pytest's default capture of file descriptors would lose when ASan aborts
    run = run_pytest(
        ["--capture=sys", "-k", DESELECT, *left_out_comparisons(), *TESTS], cwd=source, env=env
    )
    found = [run.stderr.find(report) for report in REPORTS if report in run.stderr]
    report = run.stderr[max(min(found) - 200, 0) :][:6000] if found else ""
    assert not found, f"a sanitizer report:\n{report}"
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-6000:]
