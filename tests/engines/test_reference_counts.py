"""The compiled engines hold no reference and no memory they should let go (issue 33).

Each test runs one workload of a compiled engine (the diagonal Gaussian engine,
`river_cw/_engines/_diagonal.c` with `_batch.h`; the arrowhead's, `river_cw/_engines/_arrowhead.c`; voted RDA's,
`river_cw/_engines/_rda.c`) many times over the same objects after a warm-up: learning (the lean path and
the general one), the engine's margin() and update() called apart, predicting, mini-batches of
dicts and of CSR arrays, text, pickling, a changelog's marks (mark, changed, set_weights), and
the error paths (bad values, a key whose ``==``
raises, non-finite scores, bad arrays, a step's bad result). Then

- the reference counts (`sys.getrefcount`) of the objects handed to the engine (feature names,
  labels, values, texts, the example dicts) are what they were: a reference kept per call shows
  as a count that grows with the cycles;
- the memory Python's allocators hold (`tracemalloc`, which sees the engines' `PyMem` tables as
  well as every object) has not grown: a leaked float or dict shows as bytes per cycle. What
  pytest-xdist's thread (execnet's) allocates meanwhile, messages the controller sends to the
  worker, is left out: tracemalloc traces every thread, and those messages made a workload of
  a few short cycles fail in the suite and pass alone (32 and 223 bytes a cycle).

A failure names the workload and what leaked. Checked by injection into `_diagonal.c`, each
caught while the rest of the suite passed: learn's ``Py_DECREF`` of the example's dict removed
fails six workloads, naming the feature names and values whose counts grew by one per call;
margin()'s, the margin and update workload, naming the example dicts; margin_pairs' of its
pairs, six workloads by their memory (416 to 672 bytes per cycle). Each workload counts enough
cycles (`enough_cycles`) that a leak of 8 bytes per engine call would show.
"""

from __future__ import annotations

import copy
import gc
import math
import pickle
import sys
import tracemalloc

import numpy as np
import pytest
from scipy import sparse

import river_cw
from river_cw import centring, rda, text
from river_cw._engines import arrowhead
from river_cw._engines.rda_engine import PythonRDA

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        river_cw.ENGINE != "c" or rda._compiled is None,
        reason="the compiled engines are not built (or RIVER_CW_PURE_PYTHON=1)",
    ),
]

WARM_UP = 200  # cycles before counting: the tables, caches and free lists settle
GROWTH = 64 * 1024  # bytes a workload may add over all its counted cycles
SMALLEST_LEAK = 8  # bytes: a pointer's worth, the least one engine call could keep
# pytest-xdist's messages, received and kept by execnet's thread while a workload runs
OTHER_THREADS = tracemalloc.Filter(False, "*/execnet/*")


def enough_cycles(calls: int) -> int:
    """Cycles of `calls` engine calls each after which a leak of SMALLEST_LEAK bytes per call
    has grown past GROWTH, by half again (a leaked object, 24 bytes or more, three times over)."""
    return math.ceil(1.5 * GROWTH / (SMALLEST_LEAK * calls))


def fresh(word: str) -> str:
    """A str object of its own (not interned), so that only the engine's use moves its count."""
    return "".join(list(word))


FEATURES = [fresh(f"feature{i}") for i in range(8)]
VALUES = [float(i) + 0.5 for i in range(8)]  # float objects of their own, reused by every cycle
LABELS = [fresh("spam"), fresh("ham"), fresh("eggs")]
NOT_A_NUMBER = fresh("not a number")  # what a broken step returns for gamma


def example(shift: int = 0) -> dict:
    return {FEATURES[(i + shift) % 8]: VALUES[i] for i in range(5)}


X = [example(shift) for shift in range(4)]  # the dicts every cycle reuses
WATCHED = {
    **{f"feature {name!r}": name for name in FEATURES},
    **{f"value {value!r}": value for value in VALUES},
    **{f"label {label!r}": label for label in LABELS},
    "a broken step's gamma": NOT_A_NUMBER,
    **{f"example dict {i}": x for i, x in enumerate(X)},
}


class EqualRaises:
    """A feature name equal in hash to a learned one, whose == raises (a hostile key)."""

    def __hash__(self):
        return hash(FEATURES[0])

    def __eq__(self, other):
        raise KeyError("no comparison")


def assert_no_leak(workload: str, cycle, calls: int, watched: dict | None = None) -> None:
    """Run `cycle` (`calls` engine calls) WARM_UP times, then `enough_cycles(calls)` times
    counting: the watched objects' reference counts must not change, nor the traced memory grow
    by more than GROWTH."""
    watched = WATCHED if watched is None else watched
    cycles = enough_cycles(calls)
    for _ in range(WARM_UP):
        cycle()
    gc.collect()
    before = {name: sys.getrefcount(obj) for name, obj in watched.items()}
    tracemalloc.start()
    try:
        for _ in range(cycles):
            cycle()
        gc.collect()
        kept = tracemalloc.take_snapshot().filter_traces([OTHER_THREADS]).statistics("lineno")
    finally:
        tracemalloc.stop()
    grown = sum(stat.size for stat in kept)
    after = {name: sys.getrefcount(obj) for name, obj in watched.items()}
    held = [
        f"{name}: {before[name]} -> {after[name]}"
        for name in watched
        if after[name] != before[name]
    ]
    assert not held, f"{workload}: references kept over {cycles:,} cycles: " + "; ".join(held)
    assert grown <= GROWTH, (
        f"{workload}: memory grew by {grown:,} bytes over {cycles:,} cycles "
        f"({grown / cycles:,.1f} bytes per cycle); the most, by line: "
        + "; ".join(str(stat) for stat in kept[:3])
    )


def raises(error, call, *args) -> None:
    try:
        call(*args)
    except error:
        return
    raise AssertionError(f"{call.__qualname__}{args} did not raise {error}")


def learned(model, labels=LABELS[:2]):
    """`model` after a few examples of each label."""
    for i, x in enumerate(X * 3):
        model.learn_one(x, labels[i % len(labels)])
    return model


# -- the Gaussian engines: diagonal (with the batch kernel and text) and arrowhead -----------


CALLS = 3 * len(X)  # learn_and_predict's engine calls per cycle


def learn_and_predict(model, labels):
    def cycle():
        for i, x in enumerate(X):
            model.learn_one(x, labels[i % len(labels)])
            model.predict_one(x)
            model.predict_proba_one(x)

    return cycle


class PythonStep(river_cw.AROW):
    """AROW through the general path: no step in C, so learn_one calls the engine's `learn`."""

    _native_step = None


DIAGONAL = {"covariance": "diagonal", "diagonal": "project"}  # the diagonal engine, AROW's scheme
ARROWHEAD = {"covariance": "arrowhead", "diagonal": "drop", "initial_intercept_variance": 100.0}


class BrokenStep(PythonStep):
    """A rule whose step, for a weight of 2, returns a gamma that is not a number: the engines'
    error path for a step's bad result (learn's and the batch kernel's)."""

    def _step(self, m, v, w):
        return (VALUES[0], NOT_A_NUMBER) if w == 2.0 else super()._step(m, v, w)


@pytest.mark.parametrize(
    "workload, model, labels",
    [
        ("AROW learn_one (lean path) and predict", river_cw.AROW(**DIAGONAL), LABELS[:2]),
        (
            "AROW with intercept (score_native: predictions in one call)",
            river_cw.AROW(learn_intercept=True, **DIAGONAL),
            LABELS[:2],
        ),
        ("AROW multi-class (margin and update)", river_cw.AROW(**DIAGONAL), LABELS),
        (
            "AROW with forgetting (general path)",
            river_cw.AROW(forgetting=0.01, **DIAGONAL),
            LABELS[:2],
        ),
        ("AROW with its step in Python (engine.learn)", PythonStep(**DIAGONAL), LABELS[:2]),
        (
            "CW var exact (lean exact solver)",
            river_cw.CW(variant="var", covariance="diagonal", diagonal="exact"),
            LABELS[:2],
        ),
        (
            "CW stdev exact multi-class (Python solver)",
            river_cw.CW(covariance="diagonal", diagonal="exact"),
            LABELS,
        ),
        (
            "NHERD exact (herding shrink)",
            river_cw.NHERD(covariance="diagonal", diagonal="exact"),
            LABELS,
        ),
        ("SOP", river_cw.SOP(covariance="diagonal"), LABELS[:2]),
        ("AROW arrowhead (lean path) and predict", river_cw.AROW(**ARROWHEAD), LABELS[:2]),
        ("AROW arrowhead multi-class (learn)", river_cw.AROW(**ARROWHEAD), LABELS),
        (
            "AROW arrowhead with forgetting (learn)",
            river_cw.AROW(forgetting=0.01, **ARROWHEAD),
            LABELS[:2],
        ),
        ("AROW arrowhead with its step in Python (learn)", PythonStep(**ARROWHEAD), LABELS[:2]),
        ("AROW full (one call) and predict", river_cw.AROW(covariance="full"), LABELS[:2]),
        ("AROW full multi-class (compiled kernels)", river_cw.AROW(covariance="full"), LABELS),
    ],
)
def test_gaussian_engines_learning_and_predicting_keep_no_reference_nor_memory(
    workload, model, labels
):
    assert_no_leak(workload, learn_and_predict(model, labels), calls=CALLS)


def test_arrowhead_learning_that_forgets_in_one_call_keeps_no_reference_nor_memory():
    """The default model's one-call `learn_one` on examples its surprise makes forget
    (``forgetting="auto"`` with a rate above 0: the lean path's margin with keep < 1, its
    forgotten entries and root written), of learned features and of an unseen one."""
    from array import array

    from river_cw import surprise

    model = learned(river_cw.AROW(**ARROWHEAD))
    drifted = array("d", [1000.0, 0.4, 0.05])  # mistakes far beyond those expected
    unseen = {fresh("unseen"): VALUES[0], **X[0]}
    rates = []

    def cycle():
        for x in (*X, unseen):
            model._surprise[:] = drifted
            rates.append(surprise.rate(model._surprise))
            model.learn_one(x, LABELS[0])
            model.learn_one(x, LABELS[1], 0.5)

    cycle()
    assert min(rates) == surprise.HIGHEST  # every example forgot
    watched = WATCHED | {f"feature {name!r}": name for name in unseen} | {"example dict": unseen}
    assert_no_leak(
        "arrowhead learning that forgets", cycle, calls=2 * (len(X) + 1), watched=watched
    )


def test_arrowhead_predictions_in_one_call_keep_no_reference_nor_memory(monkeypatch):
    """The workload "AROW arrowhead (lean path) and predict" predicts in one call of the engine
    (`score_native`, and `score_rows` for a batch: its `scores` and `score_variances`, the
    general path's, are not called); predictions alone, with no learning to reset the engine's
    scratch, of learned features and of an unseen one, whose key the engine's pass holds until
    it returns, keep nothing; nor do a CSR batch's rows, read from its arrays."""
    model = learned(river_cw.AROW(**ARROWHEAD))
    unseen = {fresh("unseen"): VALUES[0], **X[0]}
    names = list(dict.fromkeys([*FEATURES, *unseen]))
    csr = sparse.csr_array(np.array([[x.get(name, 0.0) for name in names] for x in (*X, unseen)]))

    def predict():
        for x in (*X, unseen):
            model.predict_one(x)
            model.predict_proba_one(x)
        model.predict_many([*X, unseen])
        model.predict_proba_many(csr, features=names)
        model.predict_proba_many(csr)  # hashed ids, every one unseen

    general = []
    for name in ("scores", "score_variances"):
        monkeypatch.setattr(
            arrowhead.ArrowheadGaussian, name, lambda self, x, name=name: general.append(name)
        )
    learn_and_predict(model, LABELS[:2])()
    predict()
    assert general == []
    monkeypatch.undo()
    watched = WATCHED | {f"feature {name!r}": name for name in unseen} | {"example dict": unseen}
    calls = 2 * (len(X) + 1) + 3
    assert_no_leak("arrowhead predictions", predict, calls=calls, watched=watched)


def test_the_multiclass_calibration_keeps_no_reference_nor_memory():
    """The compiled calibration of three labels or more (`multiclass_step`,
    `multiclass_probabilities`): on its stack buffers (4 labels) and on the heap (20), with and
    without a surprise, and through its errors (a score that is not a number, a temperature that
    is not two float64)."""
    from array import array

    from river_cw.engine import diagonal

    few, many = VALUES[:4], VALUES * 2 + VALUES[:4]
    temperature, observed = array("d", [1.0, 1.0]), array("d", [100.0, 0.1, 0.1])

    def cycle():
        for scores in (few, many):
            diagonal.multiclass_step(temperature, scores, 2.0, 1, 1.0, observed)
            diagonal.multiclass_step(temperature, scores, 3.0, 2, 0.5, None)
            diagonal.multiclass_probabilities(scores, 2.0, 1.5)
            bad = [*scores[:-1], NOT_A_NUMBER]
            raises(TypeError, diagonal.multiclass_probabilities, bad, 2.0, 1.0)
            raises(TypeError, diagonal.multiclass_step, temperature, bad, 2.0, 0, 1.0, observed)
            raises(
                TypeError,
                diagonal.multiclass_step,
                array("d", [1.0]),
                scores,
                2.0,
                0,
                1.0,
                observed,
            )

    watched = WATCHED | {"temperature": temperature, "surprise": observed}
    assert_no_leak("the multi-class calibration", cycle, calls=10, watched=watched)


@pytest.mark.parametrize("covariance", ["diagonal", "arrowhead"])
def test_score_variances_of_listed_blocks_keep_no_reference_nor_memory(covariance):
    """`score_variances(x, blocks)` (what `margin_variance` reads): blocks in a tuple and in a
    list, and its refusals (an index out of range, not an int, not a sequence); and
    `scores_with_scale` (the arrowhead's compiled: its variances on the stack, and on the heap
    beyond 16 blocks), through a bad example's error too."""
    model = learned(river_cw.AROW(**(DIAGONAL if covariance == "diagonal" else ARROWHEAD)), LABELS)
    engine = model._gaussian
    many = copy.deepcopy(engine)
    for _ in range(18):
        many.add_block()
    x = model._features(X[0])
    bad = {**x, fresh("bad"): NOT_A_NUMBER}
    listed = [2, 0]

    def cycle():
        engine.score_variances(x, (0, 1))
        engine.score_variances(x, listed)
        engine.score_variances(x, None)
        raises(IndexError, engine.score_variances, x, (0, len(LABELS)))
        raises(TypeError, engine.score_variances, x, (0, 1.0))
        raises(TypeError, engine.score_variances, x, iter((0, 1)))
        engine.scores_with_scale(x)
        many.scores_with_scale(x)
        raises(TypeError, engine.scores_with_scale, bad)

    watched = WATCHED | {"example dict": x, "listed blocks": listed}
    assert_no_leak("score_variances of listed blocks", cycle, calls=10, watched=watched)


def test_diagonal_engine_margin_and_update_keep_no_reference_nor_memory():
    """The engine's margin() and update() called apart, as the Python engine's learn calls them
    (the compiled learn fuses them in C): forgetting, new features and a stale token's error."""
    engine = learned(river_cw.AROW(**DIAGONAL), LABELS)._gaussian
    unseen = {fresh("unseen"): VALUES[0], **X[0]}

    def cycle():
        for x in (*X, unseen):
            _, v, _, token = engine.margin(x, ((0, 1), (1, -1)), 0.99, 0.01)
            engine.update(token, 0.1, 0.1, v, "project")
        engine.margin(X[1], ((2, 1),))
        raises(RuntimeError, engine.update, token, 0.1, 0.1, 1.0, "drop")  # an older margin's

    watched = WATCHED | {f"feature {name!r}": name for name in unseen} | {"example dict": unseen}
    assert_no_leak("margin and update", cycle, calls=12, watched=watched)


@pytest.mark.parametrize("params", [DIAGONAL, ARROWHEAD], ids=["diagonal", "arrowhead"])
def test_batches_that_forget_keep_no_reference_nor_memory(params):
    """The batch kernel's rows that the surprise makes forget (``forgetting="auto"``, a rate
    above 0: the general rows' margin with keep < 1, the arrowhead's lean dict path, a lazy CSR
    call's rest resolved from such a row), on dicts, named and hashed CSR rows."""
    from array import array

    from river_cw import surprise

    model = learned(river_cw.AROW(**params))
    drifted = array("d", [1000.0, 0.4, 0.05])  # mistakes far beyond those expected
    y = [LABELS[i % 2] for i in range(len(X))]
    csr = sparse.csr_array(np.array([[x.get(name, 0.0) for name in FEATURES] for x in X]))
    hashed = sparse.csr_array(csr.toarray()[:, :6])

    def cycle():
        for rows, features in ((X, None), (csr, FEATURES), (hashed, None)):
            model._surprise[:] = drifted
            model.learn_many(rows, y, features=features)

    cycle()
    assert surprise.rate(model._surprise) > 0.0  # the rows forgot to the last
    assert_no_leak("learn_many, rows that forget", cycle, calls=3)


@pytest.mark.parametrize("labels", [LABELS[:2], LABELS], ids=["binary", "multi-class"])
def test_compiled_engines_batches_of_dicts_and_csr_keep_no_reference_nor_memory(labels):
    """The batch kernels (learn_rows, score_rows) of both engines, the diagonal's and the
    arrowhead's (the default model's, with forgetting too: the general rows; centred: dict rows
    less the centre), on dicts, named and hashed CSR rows."""
    model = learned(river_cw.AROW(**DIAGONAL), labels)
    exact = learned(river_cw.CW(covariance="diagonal", diagonal="exact"), labels)
    default = learned(river_cw.AROW(**ARROWHEAD), labels)
    forgetting = learned(river_cw.AROW(forgetting=0.01, **ARROWHEAD), labels)
    dense = [dict(zip(FEATURES, VALUES[i:] + VALUES[:i])) for i in range(4)]  # every feature
    centred = river_cw.AROW(**ARROWHEAD)
    for i in range(centring.WARM_UP):
        centred.learn_one(dense[i % 4], labels[i % len(labels)])
    assert centred.centre_
    # binary rows run in the kernels' loop, five copies of X through it; the rows of several
    # labels go one by one to the general path (each row a call, 40 us): one copy reaches it
    rows = X * (5 if len(labels) == 2 else 1)
    y = [labels[i % len(labels)] for i in range(len(rows))]
    csr = sparse.csr_array(np.array([[x.get(name, 0.0) for name in FEATURES] for x in rows]))
    hashed = sparse.csr_array(csr.toarray()[:, :6])

    def cycle():
        for each in (model, exact, default, forgetting):
            each.learn_many(rows, y)
            each.learn_many(csr, y, features=FEATURES)
            each.learn_many(hashed, y)
            each.predict_many(csr, features=FEATURES)
            each.predict_proba_many(rows)
            each.predict_proba_many(hashed)
        default.predict_many(rows)
        default.predict_proba_many(csr, features=FEATURES)
        centred.learn_many(dense * 5, [labels[i % len(labels)] for i in range(20)])
        centred.predict_proba_many(dense)

    assert_no_leak(f"learn_many, {len(labels)} labels", cycle, calls=26)


@pytest.mark.parametrize("params", [DIAGONAL, ARROWHEAD], ids=["diagonal", "arrowhead"])
def test_gaussian_engines_text_keeps_no_reference_nor_memory(params):
    # ASCII, accented (mapped character by character) and Greek with a capital sigma (river's
    # preprocessing of the whole text)
    texts = [fresh("a free prize for you now"), fresh("see you at lunch, ok?"), fresh("déjà vu")]
    texts.append(fresh("ΟΔΟΣ σας"))
    wrapped = text.TextClassifier(river_cw.AROW(**params))
    piped = text.BagOfWords() | river_cw.AROW(**params)

    def cycle():  # a prediction's pass, then learning on it; a pass kept to the next text
        for i, document in enumerate(texts):
            for model in (wrapped, piped):
                model.predict_one(document)
                model.learn_one(document, LABELS[i % 2])
                model.predict_proba_one(document)

    watched = {f"text {t!r}": t for t in texts} | {f"label {y!r}": y for y in LABELS[:2]}
    assert_no_leak("text in, predict, learn and predict", cycle, calls=24, watched=watched)


@pytest.mark.parametrize("covariance", ["diagonal", "arrowhead"])
@pytest.mark.parametrize("labels", [LABELS[:2], LABELS], ids=["binary", "multi-class"])
def test_gaussian_engines_pickling_keeps_no_reference_nor_memory(labels, covariance):
    model = learned(river_cw.AROW(covariance=covariance), labels)

    def cycle():
        pickle.loads(pickle.dumps(model)).predict_one(X[0])

    assert_no_leak(f"pickle round trip, {len(labels)} labels", cycle, calls=3)


@pytest.mark.parametrize("covariance", ["diagonal", "arrowhead"])
@pytest.mark.parametrize("labels", [LABELS[:2], LABELS], ids=["binary", "multi-class"])
def test_gaussian_engines_marks_keep_no_reference_nor_memory(labels, covariance):
    """A changelog's cycle: learn, `changed` since the last mark written into a replica that
    held the marked state (`set_weights`), a new mark; and set_weights' error paths (changes of
    too many blocks, a weight of too few numbers, a key whose == raises)."""
    model = learned(river_cw.AROW(covariance=covariance, learn_intercept=True), labels)
    replica = pickle.loads(pickle.dumps(model))._gaussian
    engine = model._gaussian
    engine.mark()
    blocks = len(engine.blocks)
    numbers = (VALUES[0],) * (2 if covariance == "diagonal" else 3)
    too_many = [{}] * (blocks + 1)
    too_few = [{FEATURES[0]: numbers[:1]}] + [{}] * (blocks - 1)
    hostile = [{EqualRaises(): numbers}] + [{}] * (blocks - 1)

    def cycle():
        for i, x in enumerate(X):
            model.learn_one(x, labels[i % len(labels)])
        replica.set_weights(engine.changed())
        engine.mark()
        raises(ValueError, replica.set_weights, too_many)
        raises(ValueError, replica.set_weights, too_few)
        raises(KeyError, replica.set_weights, hostile)

    assert_no_leak(f"marks, {len(labels)} labels", cycle, calls=len(X) + 6)
    assert replica.blocks == engine.blocks


@pytest.mark.parametrize("params", [DIAGONAL, ARROWHEAD], ids=["diagonal", "arrowhead"])
def test_gaussian_engines_error_paths_keep_no_reference_nor_memory(params):
    binary, multi, broken = (
        learned(river_cw.AROW(**params)),
        learned(river_cw.AROW(**params), LABELS),
        learned(BrokenStep(**params)),
    )
    bad_value = {FEATURES[0]: VALUES[0], FEATURES[1]: fresh("x")}
    not_finite = {FEATURES[0]: math.nan, FEATURES[1]: VALUES[1]}
    overflow = {FEATURES[0]: 1e300, FEATURES[1]: 1e300}
    hostile = {EqualRaises(): VALUES[0], FEATURES[1]: VALUES[1]}
    bad_csr = sparse.csr_array(np.ones((2, 3)))
    bad_csr.indices[0] = 7  # a column out of range

    def cycle():
        for model in (binary, multi):
            for x in (bad_value, not_finite, overflow):
                raises((TypeError, ValueError), model.learn_one, x, LABELS[0])
            for x in (bad_value, not_finite):
                raises((TypeError, ValueError), model.predict_one, x)
            raises(KeyError, model.learn_one, hostile, LABELS[1])
            raises(KeyError, model.predict_one, hostile)
            raises(TypeError, model.learn_many, [X[0], bad_value], LABELS[:2])
            raises(TypeError, model.predict_many, [X[0], bad_value])
            raises(KeyError, model.predict_proba_many, [X[0], hostile])
            raises(ValueError, model.learn_many, bad_csr, LABELS[:2])
            raises(ValueError, model.predict_proba_many, bad_csr)
        raises(TypeError, broken.learn_one, X[1], LABELS[0], 2.0)
        raises(TypeError, broken.learn_many, [X[1], X[2]], LABELS[:2], [1.0, 2.0])

    assert_no_leak("bad input, learn and predict", cycle, calls=24)


# -- voted RDA's engine -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "workload, model, labels",
    [
        ("VotedRDA learn_one (compiled path) and predict", river_cw.VotedRDA(l1=0.01), LABELS[:2]),
        ("VotedRDA multi-class (update)", river_cw.VotedRDA(l1=0.01), LABELS),
        ("VotedRDA log loss, last", river_cw.VotedRDA(loss="log", prediction="last"), LABELS[:2]),
    ],
)
def test_voted_rda_engine_learning_and_predicting_keeps_no_reference_nor_memory(
    workload, model, labels
):
    assert not isinstance(model._engine, PythonRDA)  # the compiled engine serves it
    assert_no_leak(workload, learn_and_predict(model, labels), calls=CALLS)


@pytest.mark.parametrize("labels", [LABELS[:2], LABELS], ids=["binary", "multi-class"])
def test_voted_rda_engine_batches_and_pickling_keep_no_reference_nor_memory(labels):
    model = learned(river_cw.VotedRDA(l1=0.01), labels)
    y = [labels[i % len(labels)] for i in range(len(X))]

    def cycle():
        model.learn_many(X, y)
        pickle.loads(pickle.dumps(model)).predict_one(X[0])

    assert_no_leak(f"VotedRDA batches and pickling, {len(labels)} labels", cycle, calls=len(X) + 3)


def test_voted_rda_engine_error_paths_keep_no_reference_nor_memory():
    binary, multi = (learned(river_cw.VotedRDA(l1=0.01), labels) for labels in (LABELS[:2], LABELS))
    bad_value = {FEATURES[0]: VALUES[0], FEATURES[1]: fresh("x")}
    not_finite = {FEATURES[0]: math.inf, FEATURES[1]: VALUES[1]}
    hostile = {EqualRaises(): VALUES[0], FEATURES[1]: VALUES[1]}

    def cycle():
        for model in (binary, multi):
            for x in (bad_value, not_finite):
                raises((TypeError, ValueError), model.learn_one, x, LABELS[0])
                raises((TypeError, ValueError), model.predict_one, x)
            raises(KeyError, model.learn_one, hostile, LABELS[1])
            raises(KeyError, model.predict_one, hostile)

    assert_no_leak("VotedRDA bad input, learn and predict", cycle, calls=12)
