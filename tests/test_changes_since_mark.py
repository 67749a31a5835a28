"""`DiagonalGaussian.mark`, `changed` and `set_weights`: what a changelog writes, in both engines.

`changed` lists exactly the weights whose mean or variance differs bit for bit from the mark
(new ones included, in the table's order), whichever path wrote them (learn_one, the compiled
lean path, learn_many's kernel on dicts and CSR arrays, forgetting, the text path, set_weights;
the compiled engine notes each entry it writes, so that a mark costs what was written); `set_weights` applied to a copy taken at the
mark rebuilds the model bit for bit; the two engines answer alike; a layout change (a third
label) or a copy leaves no mark (None: write the engine whole).
"""

from __future__ import annotations

import pickle
import random

import pytest
from scipy import sparse

import river_cw
from river_cw import diagonal
from river_cw.text import TextClassifier
from tests.test_engines import CONFIGS, IDS, bits, state, stream

ENGINES = [diagonal.PythonDiagonalGaussian]
if river_cw.ENGINE == "c":
    ENGINES.append(diagonal.DiagonalGaussian)
ENGINE_IDS = ["python", "compiled"][: len(ENGINES)]
DIAGONAL = [(cls, params) for cls, params in CONFIGS if params.get("covariance") == "diagonal"]
DIAGONAL_IDS = [
    name for name, (_, params) in zip(IDS, CONFIGS) if params.get("covariance") == "diagonal"
]


def on(engine, cls, params):
    model = cls(**params)
    model.set_gaussian(engine(model.initial_variance), model.classes_)
    return model


def hex_changes(changes) -> list[dict]:
    return [{f: (bits(m), bits(s)) for f, (m, s) in block.items()} for block in changes]


def moved(before: list[dict], after: list[dict]) -> list[dict]:
    """Per block, the weights of `after` not bit for bit in `before` (the `state` form)."""
    return [
        {f: w for f, w in block.items() if old.get(f) != w} for old, block in zip(before, after)
    ]


def csr(rows: list[dict]):
    """The rows as a CSR array and its column names (learn_many's compiled lean path)."""
    features = list(dict.fromkeys(f for x in rows for f in x))
    column = {f: j for j, f in enumerate(features)}
    data, indices, indptr = [], [], [0]
    for x in rows:
        for f, v in x.items():
            data.append(float(v))
            indices.append(column[f])
        indptr.append(len(data))
    shape = (len(rows), len(features))
    return sparse.csr_array((data, indices, indptr), shape=shape), features


def learn(model, batch: list, how: str) -> None:
    xs, ys = [x for x, _ in batch], [y for _, y in batch]
    if how == "one":
        for x, y in batch:
            model.learn_one(x, y)
    elif how == "many":
        model.learn_many(xs, ys)
    else:
        X, features = csr(xs)
        model.learn_many(X, ys, features=features)


@pytest.mark.parametrize("engine", ENGINES, ids=ENGINE_IDS)
@pytest.mark.parametrize("forgetting", [0.0, 0.1], ids=["", "forgetting"])
@pytest.mark.parametrize("cls, params", DIAGONAL, ids=DIAGONAL_IDS)
def test_changed_is_what_moved_and_rebuilds_the_model_bit_for_bit(engine, cls, params, forgetting):
    """Whichever path writes the weights (learn_one, the lean path, learn_many's kernel on
    dicts and on CSR arrays, forgetting), over marks taken one after the other."""
    model = on(engine, cls, {**params, "learn_intercept": True, "forgetting": forgetting})
    data = list(stream(3, n=240))
    replica, marked = None, None
    for i, start in enumerate(range(0, len(data), 40)):
        learn(model, data[start : start + 40], ("one", "many", "csr")[i % 3])
        if replica is None:  # no mark yet: the engine is written whole
            assert model.gaussian.changed() is None
            replica = pickle.loads(pickle.dumps(model))
        else:
            changes = model.gaussian.changed()
            assert hex_changes(changes) == moved(marked, state(model))
            order = [list(block) for block in model.gaussian.blocks]
            assert [list(block) for block in changes] == [
                [f for f in block if f in changed] for block, changed in zip(order, changes)
            ]  # in the table's order: new features are appended as they were learned
            replica.gaussian.set_weights(pickle.loads(pickle.dumps(changes)))
            replica.classes_, replica._class_index = model.classes_, model._class_index
            replica.n_skipped_updates = model.n_skipped_updates
        assert state(replica) == state(model)
        assert pickle.dumps(replica) == pickle.dumps(model)
        model.gaussian.mark()
        marked = state(model)
        assert model.gaussian.changed() == [{}] * len(marked)


def test_both_engines_report_the_same_changes():
    if river_cw.ENGINE != "c":
        pytest.skip("the compiled engine is not built or RIVER_CW_PURE_PYTHON is set")
    models = [
        on(engine, river_cw.CW, {"covariance": "diagonal", "diagonal": "exact"})
        for engine in ENGINES
    ]
    for model in models:
        model.learn_one({"a": 1.0}, 0)
        model.learn_one({"b": 1.0}, 1)  # the second label after the first: no negation
        model.gaussian.mark()
    for x, y in stream(11, n=50):
        for model in models:
            model.learn_one(x, y)
    compiled, python = (hex_changes(m.gaussian.changed()) for m in reversed(models))
    assert compiled == python and compiled != [{}]


@pytest.mark.parametrize("engine", ENGINES, ids=ENGINE_IDS)
def test_a_sign_of_zero_is_a_change(engine):
    g = engine(1.0)
    g.set_weights([{"a": (0.0, 1.0)}])
    g.mark()
    g.set_weights([{"a": (-0.0, 1.0)}])
    assert [{f: bits(m) for f, (m, _) in block.items()} for block in g.changed()] == [
        {"a": "-0x0.0p+0"}
    ]


@pytest.mark.parametrize("engine", ENGINES, ids=ENGINE_IDS)
def test_a_new_layout_or_a_copy_has_no_mark(engine):
    model = on(engine, river_cw.AROW, {"covariance": "diagonal", "learn_intercept": False})
    model.learn_one({"a": 1.0}, "x")
    model.learn_one({"b": 1.0}, "y")
    model.gaussian.mark()
    assert pickle.loads(pickle.dumps(model.gaussian)).changed() is None
    model.learn_one({"c": 1.0}, "y")
    assert model.gaussian.changed() == [{"c": tuple(model.gaussian.blocks[0]["c"])}]
    model.learn_one({"c": 1.0}, "z")  # a third label: one block per label from now on
    assert model.gaussian.changed() is None
    model.gaussian.mark()
    for operation in ("negate", "lift", "add_block"):
        getattr(model.gaussian, operation)()
        assert model.gaussian.changed() is None
        model.gaussian.mark()
    model.gaussian.reorder([1, 0, 2, 3, 4])
    assert model.gaussian.changed() is None


@pytest.mark.parametrize("engine", ENGINES, ids=ENGINE_IDS)
def test_set_weights_refuses_changes_of_other_blocks(engine):
    g = engine(1.0)
    with pytest.raises(ValueError, match="2 block"):
        g.set_weights([{}, {}])
    with pytest.raises(ValueError, match="pair"):
        g.set_weights([{"a": (1.0, 2.0, 3.0)}])


def test_the_text_path_reports_its_changes():
    model = TextClassifier(river_cw.AROW(covariance="diagonal"), on="text")
    texts = [("free prize now", True), ("lunch at noon", False), ("prize at noon", True)]
    model.learn_one({"text": texts[0][0]}, texts[0][1])
    model.learn_one({"text": texts[1][0]}, texts[1][1])
    engine = model.classifier.gaussian
    engine.mark()
    before = state(model.classifier)
    model.learn_one({"text": texts[2][0]}, texts[2][1])
    assert hex_changes(engine.changed()) == moved(before, state(model.classifier))
    assert set(engine.changed()[0]) == {"prize", "at", "noon", river_cw.INTERCEPT}


def test_random_marks_against_a_replica():
    """Marks at random points of a long multi-label stream (a third label midway)."""
    rng = random.Random(5)
    model = river_cw.NHERD(covariance="diagonal", diagonal="exact", C=0.1)
    replica = None
    for i, (x, y) in enumerate(stream(21, n=400, n_labels=2)):
        model.learn_one(x, y if i < 200 else rng.randrange(4))
        if rng.random() < 0.1:
            changes = model.gaussian.changed()
            if changes is None:
                replica = pickle.loads(pickle.dumps(model))
            else:
                replica.gaussian.set_weights(changes)
            replica.classes_, replica._class_index = list(model.classes_), dict(model._class_index)
            replica.n_skipped_updates = model.n_skipped_updates
            assert state(replica) == state(model)
            model.gaussian.mark()
