"""The engine-sensitive tests again under the other engine, so that one test run covers both.

The suite runs on the active engine (`river_cw.ENGINE`: the compiled one once built); this test runs
the modules that exercise the diagonal engine's behaviour in a subprocess on the other one
(``RIVER_CW_PURE_PYTHON=1`` forces pure Python). `tests/engines/test_compiled_vs_python.py` (which
needs both engines, so it is not run again here) checks the two engines against each other number by
number.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

import river_cw
from tests.conftest import ROOT, run_pytest

MODULES = [
    "tests/engines/test_diagonal.py",
    "tests/models/test_hostile_input.py",
    "tests/text/test_text_classifier.py",
    "tests/engines/test_batch_kernels.py",  # learn_many is the plain loop there
    "tests/models/test_voted_rda.py",  # voted RDA's loops are compiled too (river_cw._engines._rda)
    "tests/models/test_predict_is_most_probable.py",  # predict and probabilities agree on either engine
    "tests/models/test_positive_label.py",  # and the binary weights' orientation too
    "river_cw",
]
# the full-covariance models have one engine, numpy: a second run would repeat the first. On
# pure Python, TextClassifier and the BagOfWords it is compared with both count tokens with
# river's own code: the sweeps over whole corpora would spend their time there, for the code
# paths the generated texts of the same module reach
KEYWORDS = "not full and not every_shared_corpus"
DESELECT = [
    # the long accuracy run on books adds minutes and nothing engine-specific
    "tests/models/test_voted_rda.py::test_l1_trades_weights_for_accuracy_on_books",
    # river's estimator checks hold voted RDA to river's conventions, checked on the active
    # engine (as test_classifiers checks the Gaussian rules'): the engines' numbers are the same
    # to the bit (tests/engines/test_rda_compiled_vs_python.py)
    "tests/models/test_voted_rda.py::test_check_estimator",
]


@pytest.mark.slow
def test_the_other_engine_passes_the_engine_sensitive_tests():
    if importlib.util.find_spec("river_cw._engines._diagonal") is None:
        pytest.skip("the compiled engine is not built: the whole suite ran on pure Python")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if river_cw.ENGINE == "c":
        env["RIVER_CW_PURE_PYTHON"] = "1"
    else:
        env.pop("RIVER_CW_PURE_PYTHON", None)
    deselect = [f"--deselect={test}" for test in DESELECT]
    run = run_pytest([*MODULES, "-k", KEYWORDS, *deselect], cwd=ROOT, env=env)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
