"""benchmarks/log_score_limit.py: its quick variant holds what the study found, on river's
RandomRBFDrift at two seeds where the limit of 2.5 fell behind river's best."""

from __future__ import annotations

import pytest

from benchmarks import log_score_limit as study
from river_cw import surprise

pytestmark = pytest.mark.slow


def test_the_library_is_one_of_the_variants():
    assert (surprise.LOG_SCORE_LIMIT, surprise.LOG_SCORE_FLOOR) in study.VARIANTS


def test_the_quick_variant_keeps_the_default_within_a_point_where_the_old_limit_fell_behind():
    lines = study.main(["--quick"])
    rows = {
        line.split(" | ")[0][2:]: line.split(" | ")[1:] for line in lines if line[:7] == "| limit"
    }
    before = rows[study.name((study.STUDIED_LIMIT, 0.0))]
    library = rows[study.name(study.LIBRARY)]
    assert before[0] == "0 of 2" and library[0] == "2 of 2"
    assert float(library[1]) > float(before[1]) + 1.0  # points, on average
