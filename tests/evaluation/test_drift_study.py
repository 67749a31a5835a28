"""benchmarks/drift.py, the drift and calibration study (issue 41): its quick variant writes its
tables, and its numbers stay in the ranges benchmarks/README.md states ("Drift and calibration
defaults: the study", "What the quick variant holds"). "Today's" model of the study is the
uncalibrated `AROW(calibrate=False)`, the default when it ran (`drift.DEFAULT`); its outcome,
the calibration and the forgetting its surprise sets, is `drift.SHIPPED` (``AROW(centre=False)``:
the study's models learn the features as they are), `AROW(forgetting=0)` the calibration alone
(`drift.CALIBRATED`), and today's default `AROW()`, the same on centred features, is
`drift.CENTRED` (`river_cw.centring`). The
study's cost table is not run here: timing belongs to the benchmarks, not to the tests."""

import pytest

from benchmarks import drift
from tests.conftest import shared_file

QUICK_DRIFTING = {"Hyperplane 0.01", "SEA abrupt", "Sine reversed"}
QUICK_STATIONARY = {"Phishing", "SEA s1", "Agrawal s1", "a9a", "SMS"}


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    shared_file("libsvm_a9a.jsonl.gz")
    shared_file("sms_spam_collection.jsonl.gz")
    out = tmp_path_factory.mktemp("drift") / "tables.md"
    found = drift.main(["--quick", "--part", "drift", "stationary", "--out", str(out)])
    return found, out.read_text()


def test_the_quick_variant_writes_its_tables(quick):
    found, text = quick
    assert set(found["drift"]) == QUICK_DRIFTING
    assert set(found["stationary"]) == QUICK_STATIONARY
    for heading in (
        "Drifting streams: prequential accuracy",
        "Drifting streams: log loss",
        "Stationary streams: accuracy",
        "Stationary streams: log loss",
    ):
        assert heading in text
    for stream in QUICK_DRIFTING | QUICK_STATIONARY:
        assert f"| {stream} |" in text


def test_todays_default_freezes_where_the_concept_moves(quick):
    drifting = quick[0]["drift"]
    for row in drifting.values():
        assert drift.best_river(row) - row[drift.DEFAULT][0] > 0.015
    assert drifting["Sine reversed"][drift.DEFAULT][0] < 0.5  # too confident to unlearn


def test_the_chosen_scheme_follows_drift(quick):
    for stream, row in quick[0]["drift"].items():
        accuracy = row[drift.CHOSEN][0]
        assert accuracy > row[drift.DEFAULT][0] + 0.02, stream
        assert accuracy > drift.best_river(row) - 0.035, stream


def test_the_chosen_scheme_loses_at_most_a_third_of_a_point_where_nothing_drifts(quick):
    for stream, row in quick[0]["stationary"].items():
        assert row[drift.CHOSEN][0] >= row[drift.DEFAULT][0] - 0.003, stream


def test_the_newton_temperature_is_at_least_as_good_as_the_grid(quick):
    found = quick[0]
    for stream, row in {**found["drift"], **found["stationary"]}.items():
        newton = row[drift.NEWTON]
        assert newton[1] <= row[drift.GRID][1], stream
        assert newton[0] == row[drift.DEFAULT][0], stream  # predictions do not change


def test_the_default_calibration_is_the_studys_newton_step_on_the_noise_term(quick):
    """The engines' `calibrate=True`, the default, gives the numbers of the prototype it came
    from (the same predictions; log losses equal but for the order of rounding)."""
    found = quick[0]
    for stream, row in {**found["drift"], **found["stationary"]}.items():
        shipped, prototype = row[drift.CALIBRATED], row[drift.NEWTON_NOISE]
        assert shipped[0] == prototype[0] == row[drift.DEFAULT][0], stream
        assert shipped[1] == pytest.approx(prototype[1], rel=1e-12), stream


def test_the_default_follows_drift_and_loses_nothing_where_nothing_drifts(quick):
    """`AROW()` sets its own forgetting (`river_cw.surprise`): ahead of the model that never
    forgets by more than 1.5 points on each drifting stream (it measures +2.2, +1.8 and +43.4
    on these short streams), above 85% on the reversed Sine (89.7%), and no more than 0.3
    points behind it where nothing drifts (it measures -0.15 at worst)."""
    found = quick[0]
    for stream, row in found["drift"].items():
        assert row[drift.SHIPPED][0] > row[drift.CALIBRATED][0] + 0.015, stream
    assert found["drift"]["Sine reversed"][drift.SHIPPED][0] > 0.85
    for stream, row in found["stationary"].items():
        assert row[drift.SHIPPED][0] >= row[drift.CALIBRATED][0] - 0.003, stream


def test_the_chosen_schemes_probabilities_beat_the_uncalibrated_models(quick):
    found = quick[0]
    for stream, row in {**found["drift"], **found["stationary"]}.items():
        assert row[drift.CHOSEN][1] < row[drift.DEFAULT][1], stream


def test_the_chosen_schemes_log_loss_against_rivers_logistic_regression(quick):
    found = quick[0]
    for stream, row in {**found["drift"], **found["stationary"]}.items():
        logistic = min(row[r][1] for r in ("river LR", "river LR sc") if r in row)
        if stream == "Agrawal s1":  # the one stream above it (benchmarks/README.md says why)
            assert row[drift.CHOSEN][1] < logistic + 0.03
        else:
            assert row[drift.CHOSEN][1] < logistic, stream


def test_the_centred_default_gains_where_it_drifts_and_loses_nothing_where_it_does_not(quick):
    """Today's `AROW()` centres dense features (`river_cw.centring`) and, once centred, forgets
    by its log score (`river_cw.surprise`): on the quick variant's drifting streams it is within
    a point of river's best (+0.8, -0.3 and -0.3 points; against the same model uncentred +6.8,
    -0.5 and +4.1), where nothing drifts it gains on the dense streams and is the same model to
    the bit on a9a and SMS (sparse: never centred)."""
    found = quick[0]
    for stream, row in found["drift"].items():
        best = max(row[m][0] for m in drift.RIVER)
        assert row[drift.CENTRED][0] >= best - 0.01, stream
    gains = [row[drift.CENTRED][0] - row[drift.SHIPPED][0] for row in found["drift"].values()]
    assert sum(gains) > 0.03
    for stream, row in found["stationary"].items():
        assert row[drift.CENTRED][0] >= row[drift.SHIPPED][0] - 0.003, stream
        if stream in ("a9a", "SMS"):
            assert row[drift.CENTRED][:2] == row[drift.SHIPPED][:2], stream
