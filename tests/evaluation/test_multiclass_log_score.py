"""benchmarks/multiclass_log_score.py, the prototype of a multi-class log score: it drives the
model it wraps (the forgetting it sets is the one the model uses), and its quick run prints a
row for every stream."""

from __future__ import annotations

import math

from river.datasets import synth

import river_cw
from benchmarks import multiclass_log_score as study


def three_labels(n: int, seed: int = 1) -> list:
    rbf = synth.RandomRBFDrift(seed_model=seed, seed_sample=seed, n_classes=3, change_speed=0.01)
    return list(rbf.take(n))


def test_a_prototype_that_never_forgets_is_the_model_that_never_forgets():
    prototype, plain = study.LogScoreDriven(limit=math.inf), river_cw.AROW(forgetting=0)
    for x, y in three_labels(400):
        assert prototype.predict_proba_one(x) == plain.predict_proba_one(x)
        prototype.learn_one(x, y)
        plain.learn_one(x, y)
    assert prototype.forgot == 0 and prototype.model.variances == plain.variances


def test_the_prototype_forgets_what_its_log_score_says():
    """After the concept's labels are permuted, the log loss runs above the entropy and the
    prototype forgets: the rate it sets is the model's, and the variances grow back."""
    stream = three_labels(600)
    swapped = {0: 1, 1: 2, 2: 0}
    stream += [(x, swapped[y]) for x, y in stream]
    prototype, plain = study.LogScoreDriven(), river_cw.AROW(forgetting=0)
    for x, y in stream:
        prototype.learn_one(x, y)
        plain.learn_one(x, y)
    assert prototype.forgot > 0 and prototype.model.forgetting >= 0.0
    grown = prototype.model.variances
    assert sum(sum(block.values()) for block in grown.values()) > sum(
        sum(block.values()) for block in plain.variances.values()
    )


def test_the_quick_run_prints_a_row_for_every_stream(capsys):
    study.main(["--quick"])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + len(study.streams(10, quick=True))
    assert all(line.count("|") == len(study.models()) + 2 for line in rows)
