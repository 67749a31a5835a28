"""river's mini-batch API: `learn_many`, `predict_many`, `predict_proba_many` are the row loop,
bit for bit, in order (issue 9)."""

from __future__ import annotations

import math
import os
import pickle
import random
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import river_cw

ROOT = Path(__file__).resolve().parents[2]
MODELS = [
    river_cw.AROW(),
    river_cw.AROW(forgetting="auto"),
    river_cw.AROW(learn_intercept=False, covariance="full"),
    river_cw.CW(covariance="diagonal", diagonal="exact"),
    river_cw.NHERD(),
    river_cw.SCW(variant="II"),
    river_cw.SOP(),
    river_cw.VotedRDA(l1=0.01),
    river_cw.VotedRDA(prediction="vote", loss="log"),
]

values = st.one_of(
    st.floats(-100, 100, allow_nan=False),
    st.integers(-5, 5),
    st.just(math.nan),  # pandas' missing value: the feature is absent from that row
)
frames = st.integers(1, 25).flatmap(
    lambda n: st.tuples(
        st.lists(
            st.fixed_dictionaries({f"f{j}": values for j in range(4)}), min_size=n, max_size=n
        ),
        st.lists(st.sampled_from(["a", "b", "c"]), min_size=n, max_size=n),
        st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3]), min_size=n, max_size=n),
    )
)


def rows_of(records, columns):
    """The rows as `learn_one` would get them: in the frame's column order, missing values left
    out (an insertion order of new weights is part of a model's state)."""
    return [
        {f: r[f] for f in columns if f in r and not (isinstance(r[f], float) and math.isnan(r[f]))}
        for r in records
    ]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: repr(m).replace("\n", "").replace(" ", ""))
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(frames, min_size=1, max_size=3), use_weights=st.booleans())
def test_learn_many_is_the_learn_one_loop_bit_for_bit(model, batches, use_weights):
    many, one = model.clone(), model.clone()
    for records, labels, weights in batches:
        X = pd.DataFrame(records, index=range(100, 100 + len(records)))
        y = pd.Series(labels, index=X.index)
        w = pd.Series(weights, index=X.index) if use_weights else 1.0
        many.learn_many(X, y, w)
        row_weights = weights if use_weights else [1.0] * len(labels)
        for x, label, weight in zip(rows_of(records, X.columns), labels, row_weights):
            one.learn_one(x, label, weight)
        assert pickle.dumps(many) == pickle.dumps(one)
        predicted = many.predict_many(X)
        probas = many.predict_proba_many(X)
        assert list(predicted.index) == list(X.index) == list(probas.index)
        assert list(probas.columns) == one.classes_
        for i, x in zip(X.index, rows_of(records, X.columns)):
            assert predicted[i] == one.predict_one(x)
            assert probas.loc[i].to_dict() == one.predict_proba_one(x)


def centred(rule):
    """`rule()` centred on 200 dense rows of f0..f3 near 5 (labels a and b)."""
    model = rule()
    rng = random.Random(1)
    for _ in range(200):
        x = {f"f{j}": 5.0 + rng.random() for j in range(4)}
        model.learn_one(x, "a" if x["f0"] + x["f1"] > x["f2"] + x["f3"] else "b")
    assert model.centre_
    return model


@pytest.mark.parametrize("rule", [river_cw.AROW, river_cw.SCW])
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(frames, min_size=1, max_size=3), use_weights=st.booleans())
def test_a_centred_models_batches_are_its_one_example_loops(rule, batches, use_weights):
    """A centred model's dict rows go through the batch kernel less the centre; the rows it
    declines (a centred feature missing, an int, a weight of 0, a third label) through
    `learn_one` and `predict_one`: the loops' model and predictions, to the bit."""
    many, one = centred(rule), centred(rule)
    for records, labels, weights in batches:
        rows = rows_of(records, [f"f{j}" for j in range(4)])
        row_weights = weights if use_weights else [1.0] * len(labels)
        many.learn_many(rows, labels, row_weights)
        for x, label, weight in zip(rows, labels, row_weights):
            one.learn_one(x, label, weight)
        assert pickle.dumps(many) == pickle.dumps(one)
        assert many.predict_many(rows) == [one.predict_one(x) for x in rows]
        assert many.predict_proba_many(rows) == [one.predict_proba_one(x) for x in rows]


def test_before_any_label_the_batch_predictions_are_empty():
    X = pd.DataFrame({"a": [1.0, 2.0]})
    model = river_cw.AROW()
    assert model.predict_many(X).tolist() == [None, None]
    assert model.predict_proba_many(X).shape == (2, 0)


def test_a_bad_row_is_named_and_the_rows_before_it_are_learned():
    model, one = river_cw.AROW(), river_cw.AROW()
    X = pd.DataFrame({"a": [1.0, -1.0, 2.0], "b": [0.5, math.inf, 1.0]}, index=["r1", "r2", "r3"])
    with pytest.raises(ValueError, match=r"row 'r2'.*'b'"):
        model.learn_many(X, pd.Series([True, False, True], index=X.index))
    one.learn_one({"a": 1.0, "b": 0.5}, True)
    assert pickle.dumps(model) == pickle.dumps(one)
    with pytest.raises(ValueError, match="y has 2 entries for 3 rows"):
        model.learn_many(X, pd.Series([True, False]))
    with pytest.raises(ValueError, match=r"row 'r1'.*w must be"):
        model.learn_many(X, pd.Series([True, False, True], index=X.index), w=-1.0)


def test_importing_river_cw_does_not_need_pandas():
    code = (
        "import sys; sys.modules['pandas'] = None\n"  # any import of pandas now fails
        "import river_cw\n"
        "m = river_cw.AROW(); m.learn_one({'a': 1.0}, True); print(m.predict_one({'a': 1.0}))"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "True"
