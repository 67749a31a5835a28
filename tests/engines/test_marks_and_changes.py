"""`mark`, `changed` and `set_weights` of the diagonal and arrowhead engines: what a changelog
writes, in both engines of each.

`changed` lists exactly the weights whose numbers differ bit for bit from the mark (the
diagonal's mean and variance, the arrowhead's (a_j, k_j, c_j) and its root's (mu_b, S); new ones
included, in the table's order), whichever path wrote them (learn_one, the compiled lean path,
learn_many's kernel on dicts and CSR arrays, forgetting, the text path, set_weights; the compiled
engines note each entry they write, so that a mark costs what was written); `set_weights`
applied to a copy taken at the mark rebuilds the model bit for bit; the two engines of a
covariance answer alike; a layout change (a third label, a negation, blocks added, reordered,
restored or replaced) or a copy leaves no mark (None: write the engine whole).
"""

from __future__ import annotations

import copy
import pickle
import random

import pytest
from scipy import sparse

import river_cw
from river_cw import INTERCEPT
from river_cw._engines import arrowhead, diagonal
from river_cw.text import TextClassifier
from tests.engines.test_compiled_vs_python import CONFIGS, IDS, stream
from tests.support.bits import bits, state

ENGINES = {  # per covariance: the Python engine, the compiled one
    "diagonal": (diagonal.PythonDiagonalGaussian, diagonal.DiagonalGaussian),
    "arrowhead": (arrowhead.PythonArrowheadGaussian, arrowhead.ArrowheadGaussian),
}
KINDS = ["python", "compiled"] if river_cw.ENGINE == "c" else ["python"]
COVARIANCES = list(ENGINES)
PRIOR = {"diagonal": (0.0, 1.0), "arrowhead": (0.0, 0.0, 1.0)}  # an unseen weight's numbers


def engine(covariance: str, kind: str, initial_variance=1.0, intercept_variance=None):
    """An empty engine of `covariance`, the Python one or the compiled one (`kind`)."""
    cls = ENGINES[covariance][KINDS.index(kind)]
    if covariance == "arrowhead":
        return cls(initial_variance, INTERCEPT, intercept_variance)
    return cls(initial_variance)


def on(kind, cls, params):
    """The model of `cls` with `params` on the `kind` engine of its covariance."""
    model = cls(**params)
    gaussian = engine(
        model.covariance, kind, model.initial_variance, model.initial_intercept_variance
    )
    model.set_gaussian(gaussian, model.classes_)
    return model


def hex_changes(changes) -> list[dict]:
    return [{f: tuple(map(bits, w)) for f, w in block.items()} for block in changes]


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


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("forgetting", [0.0, 0.1], ids=["", "forgetting"])
@pytest.mark.parametrize("cls, params", CONFIGS, ids=IDS)
def test_changed_is_what_moved_and_rebuilds_the_model_bit_for_bit(kind, cls, params, forgetting):
    """Whichever path writes the weights (learn_one, the lean path, learn_many's kernel on
    dicts and on CSR arrays, forgetting), over marks taken one after the other."""
    model = on(kind, cls, {**params, "learn_intercept": True, "forgetting": forgetting})
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
            # the calibration's temperature and share of flips, as a changelog's header carries
            # them (no weight)
            replica._temperature = copy.copy(model._temperature)
            replica._flips = copy.copy(model._flips)
        assert state(replica) == state(model)
        assert pickle.dumps(replica) == pickle.dumps(model)
        model.gaussian.mark()
        marked = state(model)
        assert model.gaussian.changed() == [{}] * len(marked)


@pytest.mark.parametrize(
    "cls, params",
    [
        (river_cw.CW, {"covariance": "diagonal", "diagonal": "exact"}),
        (river_cw.NHERD, {"covariance": "arrowhead"}),
    ],
    ids=COVARIANCES,
)
def test_both_engines_report_the_same_changes(cls, params):
    if river_cw.ENGINE != "c":
        pytest.skip("the compiled engine is not built or RIVER_CW_PURE_PYTHON is set")
    models = [on(kind, cls, params) for kind in KINDS]
    for model in models:
        model.learn_one({"a": 1.0}, 0)
        model.learn_one({"b": 1.0}, 1)  # the second label after the first: no negation
        model.gaussian.mark()
    for x, y in stream(11, n=50):
        for model in models:
            model.learn_one(x, y)
    compiled, python = (hex_changes(m.gaussian.changed()) for m in reversed(models))
    assert compiled == python and compiled != [{}]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("covariance", COVARIANCES)
def test_a_sign_of_zero_is_a_change(covariance, kind):
    g = engine(covariance, kind)
    g.set_weights([{"a": PRIOR[covariance], "b": PRIOR[covariance]}])
    g.mark()
    g.set_weights([{"a": (-0.0, *PRIOR[covariance][1:]), "b": PRIOR[covariance]}])
    assert hex_changes(g.changed()) == [{"a": ("-0x0.0p+0", *map(bits, PRIOR[covariance][1:]))}]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("covariance", COVARIANCES)
def test_a_new_layout_or_a_copy_has_no_mark(covariance, kind):
    model = on(kind, river_cw.AROW, {"learn_intercept": False, "covariance": covariance})
    model.learn_one({"a": 1.0}, "x")
    model.learn_one({"b": 1.0}, "y")
    model.gaussian.mark()
    assert pickle.loads(pickle.dumps(model.gaussian)).changed() is None
    assert copy.copy(model.gaussian).changed() is None
    assert copy.deepcopy(model).gaussian.changed() is None
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
    model.gaussian.mark()
    model.gaussian.restore_layout(model.gaussian.layout())
    assert model.gaussian.changed() is None
    model.gaussian.mark()
    model.gaussian.blocks = copy.deepcopy(model.gaussian.blocks)  # the same numbers, new blocks
    assert model.gaussian.changed() is None


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("covariance", COVARIANCES)
def test_set_weights_refuses_changes_of_other_blocks(covariance, kind):
    g = engine(covariance, kind)
    with pytest.raises(ValueError, match="2 block"):
        g.set_weights([{}, {}])
    with pytest.raises(ValueError, match="weight is"):
        g.set_weights([{"a": (1.0, 2.0, 3.0, 4.0)}])


class LikeA:
    """A key of the hash of "a" whose == raises: looking it up in a block that holds "a" fails."""

    def __hash__(self):
        return hash("a")

    def __eq__(self, other):
        raise ValueError("no ==")


@pytest.mark.parametrize(
    "changes",
    [
        [{"a": (1.0, 2.0, 3.0), "b": (4.0, 5.0)}],  # b is no root: three numbers
        [{"a": (1.0, 2.0, 3.0), INTERCEPT: (4.0, 5.0, 6.0)}],  # the root's are two
        [{"a": (1.0, 2.0, 3.0), "b": (4.0, "5", 6.0)}],
        [{"a": (1.0, 2.0, 3.0), "b": 4.0}],
        [{"b": (4.0, 5.0, 6.0), LikeA(): (7.0, 8.0, 9.0)}],
        [{"a": (1.0, 2.0, 3.0)}, {}],
        [[("a", (1.0, 2.0, 3.0))]],
        5,
    ],
    ids=["short", "root", "text", "number", "raising-eq", "blocks", "no-dict", "no-list"],
)
def test_the_arrowhead_engines_refuse_bad_changes_alike_and_whole(changes):
    """Every entry is read before any is written: bad changes leave the engine as it was, with
    the same error from both engines."""
    errors = []
    for kind in KINDS:
        g = engine("arrowhead", kind)
        g.set_weights([{"a": (0.5, 0.25, 0.75), INTERCEPT: (1.0, 2.0)}])
        g.mark()
        with pytest.raises((TypeError, ValueError)) as error:
            g.set_weights(changes)
        errors.append((error.type, str(error.value)))
        assert g.blocks == [{"a": [0.5, 0.25, 0.75], INTERCEPT: [1.0, 2.0]}]
        assert g.changed() == [{}]
    assert errors == errors[:1] * len(errors)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("covariance", COVARIANCES)
def test_forgetting_without_an_update_is_a_change(covariance, kind):
    """A touch that updates nothing (SOP learns on mistakes only) still forgets the variances of
    x's weights and of the intercept (the arrowhead's root, x touching every learned weight):
    they are written, and listed."""
    params = {"covariance": covariance, "forgetting": 0.2, "learn_intercept": True}
    model = on(kind, river_cw.SOP, params)
    for x, y in [({"a": 1.0, "b": 0.5}, True), ({"b": 1.0, "c": -1.0}, False)]:
        model.learn_one(x, y)
    model.gaussian.mark()
    before = state(model)
    x = {"a": 2.0, "b": -1.0, "c": 1.0}
    model.learn_one(x, model.predict_one(x))  # a correct example: no update
    changes = model.gaussian.changed()
    assert hex_changes(changes) == moved(before, state(model))
    assert set(changes[0]) == {"a", "b", "c", INTERCEPT}


@pytest.mark.parametrize("covariance", COVARIANCES)
def test_the_text_path_reports_its_changes(covariance):
    model = TextClassifier(river_cw.AROW(covariance=covariance), on="text")
    texts = [("free prize now", True), ("lunch at noon", False), ("prize at noon", True)]
    model.learn_one({"text": texts[0][0]}, texts[0][1])
    model.learn_one({"text": texts[1][0]}, texts[1][1])
    engine = model.classifier.gaussian
    engine.mark()
    before = state(model.classifier)
    model.learn_one({"text": texts[2][0]}, texts[2][1])
    assert hex_changes(engine.changed()) == moved(before, state(model.classifier))
    assert set(engine.changed()[0]) == {"prize", "at", "noon", river_cw.INTERCEPT}


@pytest.mark.parametrize(
    "params",
    [
        {"covariance": "diagonal", "diagonal": "exact"},
        {"covariance": "arrowhead", "diagonal": "drop"},
    ],
)
def test_random_marks_against_a_replica(params):
    """Marks at random points of a long multi-label stream (a third label midway)."""
    rng = random.Random(5)
    model = river_cw.NHERD(C=0.1, **params)
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
            # the calibration's temperature and share of flips, as a changelog's header carries
            # them (no weight)
            replica._temperature = copy.copy(model._temperature)
            replica._flips = copy.copy(model._flips)
            assert state(replica) == state(model)
            model.gaussian.mark()
