"""`learn_many` over sequences of dicts and scipy.sparse CSR matrices is the `learn_one` loop, bit
for bit, on every model, and so are `predict_many` and `predict_proba_many` (issue 10).

The compiled engines learn such batches in C (`river_cw/_engines/_batch.h`, with the diagonal's hooks in
`river_cw/_engines/_diagonal.c` and the arrowhead's, the default model's, in `river_cw/_engines/_arrowhead.c`);
`tests/engines/test_rerun_on_other_engine.py` runs this module again on the pure-Python engine,
whose `learn_many` is the plain loop.
"""

from __future__ import annotations

import itertools
import math
import pickle

import hypothesis
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from river import feature_extraction
from scipy import sparse

import river_cw
from tests.conftest import examples, outcome, read_jsonl, shuffled
from tests.support.bits import assert_same, bits_of, state

MODELS = [
    river_cw.AROW(),
    river_cw.AROW(diagonal="drop", r=0.3, forgetting=0.05),
    river_cw.AROW(learn_intercept=False, covariance="full"),
    river_cw.CW(),
    river_cw.CW(covariance="diagonal", diagonal="exact"),
    river_cw.CW(variant="var", covariance="diagonal", diagonal="exact", learn_intercept=False),
    river_cw.NHERD(covariance="diagonal", diagonal="exact", C=0.1),
    river_cw.NHERD(diagonal="drop", forgetting=0.2),
    river_cw.SOP(learn_intercept=False),
    river_cw.SCW(variant="II", diagonal="drop"),
    river_cw.SCW(calibrate=True),
    river_cw.VotedRDA(l1=0.01),
]
IDS = [repr(m).replace("\n", "").replace(" ", "") for m in MODELS]
NAMES = ["a", "b", "c", "d", "e", "f"]

values = st.one_of(
    st.floats(-100, 100, allow_nan=False),
    st.integers(-5, 5),
    st.sampled_from([0.0, -0.0, 1e-160, 1e150, -1e150, 2**60, 1e-300]),
)
rows = st.dictionaries(st.sampled_from(NAMES), values, max_size=len(NAMES))
batches = st.integers(1, 30).flatmap(
    lambda n: st.tuples(
        st.lists(rows, min_size=n, max_size=n),
        st.lists(st.sampled_from(["x", "y", "z", "w"]), min_size=n, max_size=n),
        st.lists(st.sampled_from([1.0, 0.0, 0.5, 2.0, 3, 1e300]), min_size=n, max_size=n),
    )
)
binary = st.integers(1, 30).flatmap(
    lambda n: st.tuples(
        st.lists(rows, min_size=n, max_size=n),
        st.lists(st.booleans(), min_size=n, max_size=n),
        st.just([1.0] * n),
    )
)


def loop(model, dicts, labels, weights):
    for x, y, w in zip(dicts, labels, weights):
        model.learn_one(x, y, w)


def loop_outcome(model, dicts, labels, weights):
    """None, or the error of the first row learn_one refuses, as learn_many names it."""
    for i, (x, y, w) in enumerate(zip(dicts, labels, weights)):
        error = outcome(lambda: model.learn_one(x, y, w))
        if error is not None:
            kind, message = error.split(": ", 1)
            return f"{kind}: row {i}: {message}"
    return None


def assert_same_as_the_loop(a, b, probe):
    """`a`, which learned batches, is `b`, which learned their rows one by one, to the bit; and
    its batch predictions on `probe` are `b`'s, row by row."""
    assert_same(a, b)  # every float to the bit, every insertion order (the pickle)
    assert a.predict_many(probe) == [b.predict_one(x) for x in probe]
    assert a.predict_proba_many(probe) == [b.predict_proba_one(x) for x in probe]


def csr_of(dicts):
    """The dicts as a CSR matrix over NAMES, each row's entries in the dict's order."""
    indptr, indices, data = [0], [], []
    for x in dicts:
        indices += [NAMES.index(f) for f in x]
        data += [float(v) for v in x.values()]
        indptr.append(len(indices))
    shape = (len(dicts), len(NAMES))
    return sparse.csr_array((np.array(data, dtype=float), np.array(indices), indptr), shape=shape)


def floats(dicts):
    return [{f: float(v) for f, v in x.items()} for x in dicts]


@pytest.mark.parametrize("model", MODELS, ids=IDS)
@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(st.one_of(batches, binary), min_size=1, max_size=3))
def test_learn_many_on_dicts_is_the_learn_one_loop(model, parts):
    many, one = model.clone(), model.clone()
    for dicts, labels, weights in parts:
        assert outcome(lambda: many.learn_many(dicts, labels, weights)) == loop_outcome(
            one, dicts, labels, weights
        )
        assert_same_as_the_loop(
            many, one, [x for x in dicts if outcome(lambda: one.predict_one(x)) is None]
        )


@pytest.mark.parametrize("model", MODELS, ids=IDS)
@settings(max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(st.one_of(batches, binary), min_size=1, max_size=3), hashed=st.booleans())
def test_learn_many_on_csr_is_the_learn_one_loop(model, parts, hashed):
    many, one = model.clone(), model.clone()
    features = None if hashed else NAMES
    for dicts, labels, weights in parts:
        X = csr_of(dicts)
        named = floats(dicts)
        if hashed:
            named = [{NAMES.index(f): v for f, v in x.items()} for x in named]
        assert outcome(
            lambda: many.learn_many(X, np.array(labels), np.array(weights), features=features)
        ) == loop_outcome(one, named, labels, weights)
        assert pickle.dumps(many) == pickle.dumps(one)
        if all(outcome(lambda: one.predict_one(x)) is None for x in named):
            assert many.predict_many(X, features=features) == [one.predict_one(x) for x in named]


@pytest.mark.parametrize("covariance", ["arrowhead", "diagonal"])
@pytest.mark.parametrize("rows", ["dicts", "csr", "hashed csr"])
def test_batches_whose_surprise_forgets_are_the_learn_one_loop(covariance, rows):
    """forgetting="auto" (`river_cw.surprise`): the kernel learns every row, those the
    surprise's rate makes forget too (the general row, or the arrowhead's lean dict path,
    which forget as `learn_one` does), in one call per batch once both labels are known; the
    labels turn to noise half way, so that many rows forget, and the batches are the loop's to
    the bit."""
    rng = np.random.default_rng(4)
    dicts, labels = [], []
    for i in range(800):
        x = {f: float(v) for f, v in zip(NAMES, rng.normal(size=len(NAMES))) if v > -0.5}
        x.setdefault("a", 1.0)
        dicts.append(x if rows != "hashed csr" else {NAMES.index(f): v for f, v in x.items()})
        labels.append(bool(x["a"] > 0) if i < 400 else bool(rng.random() < 0.5))
    # centre=False: the kernel's calls alone (a deciding model's first rows go one by one)
    many = river_cw.AROW(covariance=covariance, forgetting="auto", centre=False)
    one = many.clone()
    calls = recording_kernel(many, 4)  # the row each call starts at
    rates = set()
    for start in range(0, 800, 100):
        batch, ys = dicts[start : start + 100], labels[start : start + 100]
        for x, y in zip(batch, ys):
            rates.add(river_cw.surprise.rate(one._surprise))
            one.learn_one(x, y)
        if rows == "csr":
            many.learn_many(csr_of(batch), np.array(ys), features=NAMES)
        elif rows == "hashed csr":  # int columns, resolved lazily, a row at a time
            many.learn_many(
                csr_of([{NAMES[j]: v for j, v in x.items()} for x in batch]), np.array(ys)
            )
        else:
            many.learn_many(batch, ys)
        assert_same(many, one)
    assert len(rates) > 10  # 0, and the rates that many rows forgot at
    first = labels.index(not labels[0])  # the second label, new: learn_one's
    assert calls == [0, 1, first + 1, *([0] * 7)]


@pytest.mark.parametrize("covariance", ["arrowhead", "diagonal"])
def test_a_lazy_csr_batch_resolves_the_columns_of_a_row_that_forgets(covariance):
    """A hashed CSR batch after a first one runs lazily (its columns resolved as the lean rows
    meet them); a row that forgets takes the general row, which reads resolved columns: the
    batch's rest is resolved from it, a column the epoch has not seen included, and the
    batches are the loop's to the bit."""
    from array import array

    first = [{0: 1.0, 1: -0.5}, {0: -1.0, 2: 0.5}] * 20
    second = [{3: 2.0, 0: 1.0}, {4: -1.0, 1: 0.5}, {5: 1.5, 2: -1.0}]  # new columns
    many = river_cw.AROW(covariance=covariance)
    one = many.clone()
    ys = [True, False] * 20
    many.learn_many(csr_matrix(first), np.array(ys))
    for x, y in zip(first, ys):
        one.learn_one(x, y)
    drifted = array("d", [1000.0, 0.4, 0.05])  # mistakes far beyond those expected
    many._surprise[:] = drifted
    one._surprise[:] = drifted
    many.learn_many(csr_matrix(second), np.array([True, False, True]))
    for x, y in zip(second, [True, False, True]):
        assert river_cw.surprise.rate(one._surprise) > 0.0  # every row forgets
        one.learn_one(x, y)
    assert_same(many, one)


def csr_matrix(rows: list[dict]) -> sparse.csr_array:
    """Rows of int columns (hashed features) as a CSR matrix of 6 columns, in the dicts' order."""
    indptr, indices, data = [0], [], []
    for x in rows:
        indices += list(x)
        data += list(x.values())
        indptr.append(len(indices))
    return sparse.csr_array((np.array(data), np.array(indices), indptr), shape=(len(rows), 6))


EXACT = [
    river_cw.CW(covariance="diagonal", diagonal="exact"),
    river_cw.CW(variant="var", covariance="diagonal", diagonal="exact", learn_intercept=False),
    river_cw.NHERD(covariance="diagonal", diagonal="exact", C=0.1),
]
weighted_binary = st.integers(1, 20).flatmap(
    lambda n: st.tuples(
        st.lists(rows, min_size=n, max_size=n),
        st.lists(st.booleans(), min_size=n, max_size=n),
        st.lists(st.sampled_from([1.0, 0.5, 2.0, 1e-3, 7.5]), min_size=n, max_size=n),
    )
)


@pytest.mark.parametrize("model", EXACT, ids=[repr(m).replace(" ", "") for m in EXACT])
@settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(weighted_binary, min_size=1, max_size=3), hashed=st.booleans())
def test_exact_schemes_on_weighted_binary_rows_are_the_learn_one_loop(model, parts, hashed):
    """A binary model's exact step runs its solver in C in the kernel (as learn_one's lean path
    does), for dict and CSR rows alike, with sample weights (NHERD's shrink scales with w)."""
    dicts_model, csr_model, one = model.clone(), model.clone(), model.clone()
    features = None if hashed else NAMES
    for dicts, labels, weights in parts:
        named = floats(dicts)
        if hashed:
            named = [{NAMES.index(f): v for f, v in x.items()} for x in named]
        expected = loop_outcome(one, named, labels, weights)
        assert outcome(lambda: dicts_model.learn_many(named, labels, weights)) == expected
        assert (
            outcome(lambda: csr_model.learn_many(csr_of(dicts), labels, weights, features=features))
            == expected
        )
        assert pickle.dumps(dicts_model) == pickle.dumps(one)
        assert pickle.dumps(csr_model) == pickle.dumps(one)


def test_csr_matrix_other_formats_and_hashed_columns():
    dicts = [{"a": 1.0, "c": 2.0}, {"b": -1.0}, {"a": 0.5, "b": 1.0, "c": -3.0}]
    labels = [True, False, True]
    X = csr_of(dicts)
    for matrix in (sparse.csr_matrix(X), X.tocoo(), X.tocsc()):
        model, one = river_cw.AROW(), river_cw.AROW()
        model.learn_many(matrix, labels, features=NAMES)
        loop(one, dicts, labels, [1.0] * 3)
        assert model.weights == one.weights
    hashed = river_cw.AROW()
    hashed.learn_many(X, labels)
    assert set(hashed.weights) == {0, 1, 2}


def test_a_column_stored_twice_in_a_row_is_one_feature_summed():
    X = sparse.csr_array((np.array([1.0, 2.0, 0.5]), np.array([0, 1, 0]), [0, 3]), shape=(1, 2))
    model, one = river_cw.AROW(), river_cw.AROW()
    model.learn_many(X, [True], features=["a", "b"])
    one.learn_one({"a": 1.5, "b": 2.0}, True)
    assert pickle.dumps(model) == pickle.dumps(one)


@pytest.mark.parametrize("model", [river_cw.AROW(), river_cw.VotedRDA()], ids=["AROW", "RDA"])
def test_columns_named_alike_are_refused_before_learning(model):
    X = sparse.csr_array([[1.0, 2.0, 0.0], [0.0, 1.0, 3.0]])
    with pytest.raises(ValueError, match="features names columns 0 and 2 alike: 'a'"):
        model.learn_many(X, [1, 0], features=["a", "b", "a"])
    assert not model.classes_
    with pytest.raises(ValueError, match="features has 2 names for 3 columns"):
        model.learn_many(X, [1, 0], features=["a", "b"])
    model.learn_many(X[:, :2], [1, 0], features=["a", "b"])  # an unused duplicate is harmless
    assert model.classes_ == [0, 1]  # [negative, positive]


@pytest.mark.parametrize("learn_intercept", [True, False])
@pytest.mark.parametrize("covariance", ["diagonal", "arrowhead"])
def test_a_column_named_like_the_intercept_is_the_loop_too(covariance, learn_intercept):
    """A feature named `INTERCEPT` (the arrowhead's root, with or without an intercept) goes to
    learn_one and predict_one, in CSR and dict rows alike."""
    names = [river_cw.INTERCEPT, "a", "b"]
    X = sparse.csr_array([[2.0, 1.0, 0.0], [0.0, 1.0, -1.0], [-1.0, 0.0, 3.0], [0.0, 2.0, 1.0]])
    dicts = [{f: v for f, v in zip(names, row) if v} for row in X.toarray().tolist()]
    labels = [True, False, True, True]
    params = {"covariance": covariance, "learn_intercept": learn_intercept}
    csr, rows, one = (river_cw.AROW(**params) for _ in range(3))
    csr.learn_many(X, labels, features=names)
    rows.learn_many(dicts, labels)
    loop(one, dicts, labels, [1.0] * len(dicts))
    assert pickle.dumps(csr) == pickle.dumps(one)
    assert pickle.dumps(rows) == pickle.dumps(one)
    expected = bits_of([one.predict_proba_one(x) for x in dicts])
    assert bits_of(csr.predict_proba_many(X, features=names)) == expected
    assert bits_of(csr.predict_proba_many(dicts)) == expected


@pytest.mark.parametrize("model", MODELS, ids=IDS)
@pytest.mark.parametrize(
    "bad",
    [{"a": math.nan}, {"b": "1"}, {"a": 10**400}, {"a": 1e308, "b": 1e308}, {"c": math.inf}],
    ids=["nan", "str", "huge-int", "overflow", "inf"],
)
def test_a_bad_row_raises_as_learn_one_named_and_the_rows_before_it_are_learned(model, bad):
    dicts = [{"a": 1.0}, {"b": 2, "c": -1.0}, {"a": -1.0, "d": 0.5}, bad, {"a": 3.0}]
    labels = ["x", "y", "z", "x", "y"]
    many, one = model.clone(), model.clone()
    expected = loop_outcome(one, dicts, labels, [1.0] * 5)
    assert expected is None or expected.split(": ")[1] == "row 3"
    assert outcome(lambda: many.learn_many(dicts, labels)) == expected
    assert pickle.dumps(many) == pickle.dumps(one)
    if "b" not in bad:  # as a CSR row too (a str value has no CSR form)
        X = csr_of([bad]) if not isinstance(bad.get("a"), int) else None
        if X is not None:
            again = loop_outcome(one, floats([bad]), ["x"], [1.0])
            assert outcome(lambda: many.learn_many(X, ["x"], features=NAMES)) == again
            assert pickle.dumps(many) == pickle.dumps(one)


@pytest.mark.parametrize(
    "labels, weights, error, message",
    [
        ([True, None], 1.0, ValueError, "row 1: missing label"),
        ([True, [1]], 1.0, TypeError, "row 1: labels must be hashable"),
        ([True, False], [1.0, -2.0], ValueError, "row 1: w must be a finite number >= 0"),
        ([True, False], [1.0, "2"], TypeError, "row 1: w must be a real number"),
        ([True, False], -1.0, ValueError, "row 0: w must be"),
        ([True], 1.0, ValueError, "y has 1 entries for 2 rows"),
    ],
)
def test_bad_labels_and_weights_are_named(labels, weights, error, message):
    model, one = river_cw.AROW(), river_cw.AROW()
    dicts = [{"a": 1.0}, {"b": 1.0}]
    with pytest.raises(error, match=message):
        model.learn_many(dicts, labels, weights)
    if message.startswith("row 1"):
        one.learn_one(dicts[0], labels[0])
    assert pickle.dumps(model) == pickle.dumps(one)


class Touchy(str):
    """A label hashed as its text whose == raises (when `error` is set): a dict finds it only by
    identity."""

    error: BaseException | None = None

    def __hash__(self):
        return str.__hash__(self)

    def __eq__(self, other):
        if Touchy.error is not None:
            raise Touchy.error
        return str.__eq__(self, other)


@pytest.mark.parametrize("error", [None, ValueError("touchy ==")])
def test_labels_are_found_by_equality_or_named_as_learn_one_names_them(error):
    """The kernel looks each row's label up in the model's classes as learn_one does: labels
    equal to a class but distinct objects are that class; a label whose == raises is learn_one's
    error, named with its row, the rows before it learned."""
    dicts = [{"a": 1.0}, {"b": 2.0}, {"a": -1.0, "b": 1.0}, {"c": 1.0}, {"a": 0.5}]
    fresh = ["".join(["ha", "m"]), "".join(["sp", "am"])]  # equal to, not, the first labels
    labels = ["ham", "spam", fresh[0], Touchy("spam"), fresh[1]]
    for csr in (False, True):
        many, one = river_cw.AROW(), river_cw.AROW()
        X, features = (csr_of_names(dicts), ["a", "b", "c"]) if csr else (dicts, None)
        Touchy.error = error
        try:
            expected = loop_outcome(one, dicts, labels, [1.0] * 5)
            assert outcome(lambda: many.learn_many(X, labels, features=features)) == expected
        finally:
            Touchy.error = None
        assert (expected is None) == (error is None)
        assert pickle.dumps(many) == pickle.dumps(one)


def test_an_interrupt_in_a_labels_hash_propagates_and_keeps_the_rows_before():
    """Ctrl-C landing in a label's __hash__ inside the kernel is raised as it is, not taken for
    an unhashable label."""

    class Interrupting:
        def __hash__(self):
            raise KeyboardInterrupt

    dicts = [{"a": 1.0}, {"b": 1.0}, {"a": 2.0}, {"b": 3.0}]
    many, one = river_cw.AROW(), river_cw.AROW()
    loop(one, dicts[:3], [True, False, True], [1.0] * 3)
    with pytest.raises(KeyboardInterrupt):
        many.learn_many(dicts, [True, False, True, Interrupting()])
    assert pickle.dumps(many) == pickle.dumps(one)


def csr_of_names(dicts):
    """The dicts as a CSR matrix over the columns a, b, c."""
    return sparse.csr_array([[x.get(f, 0.0) for f in "abc"] for x in dicts])


def test_bad_batches_are_refused():
    model = river_cw.AROW()
    with pytest.raises(TypeError, match="X must be a pandas DataFrame, a sequence of dicts"):
        model.learn_many({"a": 1.0}, [True])
    with pytest.raises(TypeError, match="row 1: a row is a dict of features, got list"):
        model.learn_many([{"a": 1.0}, [1.0]], [True, False])
    with pytest.raises(TypeError, match=r"features names the columns of a scipy\.sparse X only"):
        model.learn_many([{"a": 1.0}], [True], features=["a"])
    with pytest.raises(TypeError, match="dtype complex128"):
        model.learn_many(sparse.csr_array(np.array([[1j]])), [True])
    assert not model.classes_


def test_numpy_values_and_mappings_go_through_learn_one():
    dicts = [{"a": np.float32(0.1), "b": True}, {"a": np.int64(3)}, {"c": 1.5}]
    model, one = river_cw.AROW(), river_cw.AROW()
    model.learn_many(dicts, [1, 0, 1], np.array([1.0, 2.0, 0.5]))
    loop(one, dicts, [1, 0, 1], [1.0, 2.0, 0.5])
    assert pickle.dumps(model) == pickle.dumps(one)


def test_a_step_error_is_named_with_its_row_and_keeps_the_rows_before():
    class Broken(river_cw.AROW):
        def _step(self, m, v, w):
            if w == 2.0:
                raise ValueError("no step for w=2")
            return super()._step(m, v, w)

    model, one = Broken(), river_cw.AROW()
    with pytest.raises(ValueError, match="row 2: no step for w=2"):
        model.learn_many([{"a": 1.0}, {"b": 1.0}, {"a": 2.0}], [1, 0, 1], [1.0, 1.0, 2.0])
    loop(one, [{"a": 1.0}, {"b": 1.0}], [1, 0], [1.0, 1.0])
    assert model.weights == one.weights and model.variances == one.variances


def test_a_step_that_changes_the_engine_mid_batch_is_refused_and_the_engine_stays_usable():
    class Meddling(river_cw.AROW):
        _native_step = None  # the Python step, called by the kernel with the engine free

        def _step(self, m, v, w):
            if w == 2.0:
                self.gaussian.add_block()  # a new layout under the batch's rows
            return super()._step(m, v, w)

    model = Meddling()
    model.learn_many([{"a": 1.0}, {"b": 1.0}], [1, 0])
    if hasattr(model.gaussian, "learn_rows"):  # the compiled kernel refuses it
        with pytest.raises(RuntimeError, match="the engine changed during a step"):
            model.learn_many([{"a": 2.0}], [1], [2.0])
    else:  # the plain loop cannot notice
        model.learn_many([{"a": 2.0}], [1], [2.0])
    assert model.gaussian.scores({"a": 1.0})  # not left busy, as the kernel used to leave it


@pytest.mark.parametrize("covariance", ["diagonal", "arrowhead"])
def test_a_step_that_replaces_the_margin_is_refused_as_learn_one_refuses_it(covariance):
    """A rule's step in Python runs with the engine free, between a row's margin and its update:
    one that takes another margin (here a learn_one that learns nothing) leaves the row's update
    without its margin, which learn_one refuses (the engine's update checks its margin's token)
    and so does the kernel; a step that only predicts changes nothing, in either."""

    class Relearning(river_cw.AROW):
        _native_step = None  # the Python step, called by the kernel with the engine free
        act = None

        def _step(self, m, v, w):
            if self.act is not None:
                act, self.act = self.act, None
                act(self)
            return super()._step(m, v, w)

    def relearn(model):
        model.learn_one({}, True)  # no feature, no intercept: nothing to learn

    def predict(model):
        model.predict_proba_one({"a": 1.0, "b": -2.0})
        model.predict_many([{"a": 1.0}, {"c": 1.0}])

    def made(act):
        model = Relearning(learn_intercept=False, covariance=covariance)
        model.learn_many([{"a": 1.0}, {"b": 1.0}], [True, False])
        model.act = act
        return model

    rows = [{"a": 1.0, "c": 2.0}, {"b": -1.0, "c": 1.0}]
    one, many = made(relearn), made(relearn)
    if river_cw.ENGINE == "c":
        with pytest.raises(RuntimeError, match="update needs the latest margin"):
            loop(one, rows, [False, True], [1.0, 1.0])
        with pytest.raises(RuntimeError, match="the engine changed during a step"):
            many.learn_many(rows, [False, True])
    else:  # the pure-Python engine's update takes the margin it is handed
        loop(one, rows, [False, True], [1.0, 1.0])
        many.learn_many(rows, [False, True])
    assert state(many) == state(one)  # nothing learned past the margin
    one, many = made(predict), made(predict)
    loop(one, rows, [False, True], [1.0, 1.0])
    many.learn_many(rows, [False, True])
    assert state(many) == state(one)


# -- predictions in one call (`score_rows`, river_cw/_engines/_batch.h and river_cw/_engines/_arrowhead.c) --------

COVARIANCES = ["diagonal", "arrowhead"]  # the compiled engines with a score_rows kernel


def served(model, X, features=None) -> list[bool]:
    """Per row of X, whether the engine's `score_rows` serves it (all False without one)."""
    kernel = getattr(model.gaussian, "score_rows", None)
    if kernel is None:
        return [False] * len(X)
    rows = river_cw.batch.Rows.of(X, features)
    batch = rows.dicts if rows.csr is None else rows.csr
    intercept = river_cw.INTERCEPT if model.learn_intercept else None
    return [score is not None for score in kernel(batch, intercept, None)]


@pytest.mark.parametrize("learn_intercept", [True, False])
@pytest.mark.parametrize("kind", ["dicts", "named CSR", "hashed CSR"])
@pytest.mark.parametrize("covariance", COVARIANCES)
@settings(max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(learned=binary, probe=st.lists(rows, max_size=12))
def test_predict_many_of_a_binary_model_is_the_predict_one_loop(
    covariance, kind, learn_intercept, learned, probe
):
    """`predict_many` and `predict_proba_many` of a binary model, which the compiled engines
    serve in one call of `score_rows`, are the `predict_one` / `predict_proba_one` loop to the
    bit, on dicts and CSR rows alike; the kernel serves every row the loop accepts."""
    model = river_cw.AROW(covariance=covariance, learn_intercept=learn_intercept)
    dicts, labels, _ = learned
    for x, y in zip(dicts, labels):
        if outcome(lambda: model.learn_one(x, y)) is not None:
            return  # a learned value beyond float64: learn_one's own tests
    probe = [x for x in floats(probe) if outcome(lambda: model.predict_one(x)) is None]
    X, features, named = probe, None, probe
    if kind != "dicts":
        X, features = csr_of(probe), NAMES if kind == "named CSR" else None
        if kind == "hashed CSR":
            named = [{NAMES.index(f): v for f, v in x.items()} for x in probe]
    assert model.predict_many(X, features=features) == [model.predict_one(x) for x in named]
    assert bits_of(model.predict_proba_many(X, features=features)) == bits_of(
        [model.predict_proba_one(x) for x in named]
    )
    if model.is_binary and hasattr(model.gaussian, "score_rows"):
        assert all(served(model, X, features))


DECLINED = {  # rows score_rows leaves to the general path, which serves or refuses them
    "a str value": {"a": "1"},
    "a NaN": {"a": math.nan},
    "an int beyond float64": {"a": 10**400},
    "the intercept's name": {river_cw.INTERCEPT: 2.0, "a": 1.0},
    "a sum beyond float64": {"d": 1e308, "e": 1e308},
}


@pytest.mark.parametrize("row", list(DECLINED.values()), ids=list(DECLINED))
@pytest.mark.parametrize("labels", [[True, False], ["x", "y", "z"]], ids=["binary", "3 classes"])
@pytest.mark.parametrize("covariance", COVARIANCES)
def test_rows_the_kernel_declines_are_the_general_paths(covariance, labels, row):
    """A row `score_rows` declines (every row of a multi-class model; a value other than a
    float, a bool or an int within float64; the intercept's name among the features; unseen
    values summing beyond float64) goes to `predict_one`: a batch holding it gives the loop's predictions or
    raises the loop's error, on dicts and (where the row has one) CSR rows."""
    model = river_cw.AROW(covariance=covariance)
    for i, x in enumerate([{"a": 1.0, "b": -1.0}, {"b": 2.0, "c": 0.5}, {"a": -1.0}] * 2):
        model.learn_one(x, labels[i % len(labels)])
    batch = [{"a": 1.0}, row, {"b": 1.0, "c": 1.0}]
    kernel = model.is_binary and hasattr(model.gaussian, "score_rows")
    assert served(model, batch) == [kernel, False, kernel]
    batches = [(batch, None, batch)]
    if all(isinstance(v, float) for v in row.values()):  # as CSR rows, in the columns' order
        names = [*NAMES, river_cw.INTERCEPT]
        X = sparse.csr_array(np.array([[x.get(f, 0.0) for f in names] for x in batch]))
        batches.append((X, names, [{f: x[f] for f in names if f in x} for x in batch]))
    for X, features, dicts in batches:
        for many, one in (
            ("predict_many", "predict_one"),
            ("predict_proba_many", "predict_proba_one"),
        ):
            expected = outcome(lambda: [getattr(model, one)(x) for x in dicts])
            assert outcome(lambda: getattr(model, many)(X, features=features)) == expected
            if expected is None:
                assert bits_of(getattr(model, many)(X, features=features)) == bits_of(
                    [getattr(model, one)(x) for x in dicts]
                )


def recording_kernel(model, position: int) -> list:
    """Give `model` an engine whose kernel records its argument at `position` per call."""
    if not hasattr(model.gaussian, "learn_rows"):
        pytest.skip("the pure-Python engine has no batch kernel")
    calls = []
    kernel = type(model.gaussian).learn_rows

    class Recording(type(model.gaussian)):
        def learn_rows(self, *args):
            calls.append(args[position])
            return kernel(self, *args)

    kind = river_cw.covariances.of(model)
    engine = kind.start(Recording, model.initial_variance, model.initial_intercept_variance)
    model.set_gaussian(engine, model.classes_)
    return calls


@pytest.mark.parametrize("covariance", ["diagonal", "arrowhead"])
def test_the_kernel_runs_where_it_can_and_a_model_needs_it(covariance):
    """The compiled engine learns a batch in one call per run of known labels; while the
    model decides whether to centre its features (`river_cw.centring`), one call per row."""
    model = river_cw.AROW(covariance=covariance, centre=False)
    calls = recording_kernel(model, 4)  # the row it starts at
    model.learn_many([{"a": 1.0}] * 5 + [{"b": 1.0}] * 5, [1] * 5 + [0] * 5)
    assert calls == [0, 1, 6]  # label 1 is new at row 0, label 0 at row 5
    deciding = river_cw.AROW(covariance=covariance)
    calls = recording_kernel(deciding, 4)
    deciding.learn_many([{"a": 1.0}] * 3 + [{"b": 1.0}] * 5, [1] * 3 + [0] * 5)
    # rows 0 to 3 one by one (row 3, new features, decides: never), then the rest at once
    expected = [0, 0, 0, 0, 0] if covariance == "arrowhead" else [0, 1, 4]
    assert calls == expected


# -- the CSR columns kept across batches (river_cw/_engines/_batch.h's BatchCache) ---------------------

POOL = ["w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7"]
WIDTH = 6  # the vocabulary's columns


def fresh(name: str) -> str:
    """An equal name that is another object (the kernel checks its columns by identity)."""
    return "".join(list(name))


csr_rows = st.lists(  # (column, value) pairs: repeated columns, explicit zeros, empty rows
    st.tuples(st.integers(0, WIDTH - 1), st.sampled_from([1.0, -2.0, 0.0, 0.5, 3.0])),
    max_size=5,
)
csr_batch = st.integers(1, 12).flatmap(
    lambda n: st.tuples(
        st.lists(csr_rows, min_size=n, max_size=n),
        st.lists(st.sampled_from(["x", "y", "z"]), min_size=n, max_size=n),
        st.lists(st.sampled_from([1.0, 0.5, 2.0]), min_size=n, max_size=n),
    )
)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("vocabulary"), csr_batch),
        st.tuples(st.just("hashed"), csr_batch),
        st.tuples(st.just("rename"), st.integers(0, WIDTH - 1), st.integers(0, len(POOL) - 1)),
        st.tuples(st.just("learn_one"), csr_batch),
        st.tuples(st.just("learn_one hashed"), csr_batch),
        st.tuples(st.just("learn_one equal keys"), csr_batch),
    ),
    min_size=1,
    max_size=6,
)


def csr_rows_matrix(rows_):
    indptr, indices, data = [0], [], []
    for row in rows_:
        indices += [j for j, _ in row]
        data += [v for _, v in row]
        indptr.append(len(indices))
    shape = (len(rows_), WIDTH)
    arrays = (np.array(data, dtype=float), np.array(indices, dtype=int), indptr)
    return sparse.csr_array(arrays, shape=shape)


def named_rows(rows_, names):
    """The dicts learn_one gets (river_cw.batch.Rows.row: a repeated column's values summed)."""
    out = []
    for row in rows_:
        x: dict = {}
        for j, value in row:
            name = j if names is None else names[j]
            x[name] = x[name] + value if name in x else value
        out.append(x)
    return out


KEPT = (0, 1, 4, 7)  # project, drop with forgetting, exact, NHERD drop with forgetting
# keys that equal a hashed column's int j as a dict key, of other types (so the features learn_one
# adds between batches are found for those columns), and a str that equals none
EQUAL_KEYS = [0.0, True, 2, "3", 4.0, 5]


@pytest.mark.parametrize("model", [MODELS[i] for i in KEPT], ids=[IDS[i] for i in KEPT])
@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=operations)
def test_csr_columns_kept_across_batches_are_the_learn_one_loop(model, steps):
    """One vocabulary list learned from batch after batch while the model also learns rows one
    by one with equal names of other objects (and keys equal to hashed columns' ints, of other
    types), the list is renamed in place (never two columns alike) and hashed batches share the
    model: always bit for bit the learn_one loop."""
    many, one = model.clone(), model.clone()
    names = [fresh(POOL[j]) for j in range(WIDTH)]
    for step in steps:
        if step[0] == "rename":
            _, j, k = step
            if POOL[k] not in names:
                names[j] = fresh(POOL[k])
            continue
        kind, (rows_, labels, weights) = step
        if kind.startswith("learn_one"):
            keys = {
                "learn_one": [fresh(n) for n in names],
                "learn_one hashed": None,
                "learn_one equal keys": EQUAL_KEYS,
            }[kind]
            dicts = named_rows(rows_, keys)
            assert outcome(lambda: loop(many, dicts, labels, weights)) is None
        else:
            features = names if kind == "vocabulary" else None
            X = csr_rows_matrix(rows_)
            dicts = named_rows(rows_, features)
            assert outcome(lambda: many.learn_many(X, labels, weights, features=features)) is None
        loop(one, dicts, labels, weights)
        assert pickle.dumps(many) == pickle.dumps(one)


def test_a_name_may_move_between_columns_across_batches_but_never_repeat_in_one():
    X = sparse.csr_array([[1.0, 0.0, 2.0]])
    names = ["a", "b", "c"]
    model, one = river_cw.AROW(), river_cw.AROW()
    model.learn_many(X, [True], features=names)
    one.learn_one({"a": 1.0, "c": 2.0}, True)
    names[2] = "a"  # in place: the same list; column 2 is now named as column 0 is
    with pytest.raises(ValueError, match="features names columns 0 and 2 alike: 'a'"):
        model.learn_many(X, [True], features=names)
    assert pickle.dumps(model) == pickle.dumps(one)
    model.learn_many(X[:, 1:], [False], features=names[1:])  # a new list, only "b" and "a"
    one.learn_one({"a": 2.0}, False)
    names[0] = "z"  # no longer alike: column 2 learns "a"
    model.learn_many(X, [True], features=names)
    one.learn_one({"z": 1.0, "a": 2.0}, True)
    assert pickle.dumps(model) == pickle.dumps(one)


def test_a_repeated_name_is_refused_only_in_a_batch_that_uses_both_columns():
    """Calls that follow one another keep their columns resolved (an epoch); a column that takes
    a name another column of the epoch took, or is renamed in place, is checked against the
    columns of its own batch only."""
    names = ["a", "b", "a"]  # columns 0 and 2 alike, never in one batch
    X = sparse.csr_array([[1.0, 2.0, 0.0]])
    Y = sparse.csr_array([[0.0, 1.0, 3.0]])
    model, one = river_cw.AROW(), river_cw.AROW()
    model.learn_many(
        sparse.csr_array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]]), [True, False], features=names
    )
    loop(one, [{"a": 1.0, "b": 1.0}, {"a": 1.0}], [True, False], [1.0, 1.0])
    for batch, label in ((Y, False), (X, True), (Y, True)):
        model.learn_many(batch, [label], features=names)
    loop(
        one,
        [{"b": 1.0, "a": 3.0}, {"a": 1.0, "b": 2.0}, {"b": 1.0, "a": 3.0}],
        [False, True, True],
        [1.0] * 3,
    )
    assert pickle.dumps(model) == pickle.dumps(one)
    model.learn_many(X, [False], features=names)  # column 0 names "a" again: a new epoch
    one.learn_one({"a": 1.0, "b": 2.0}, False)
    names[1] = "c"  # in place, between two calls of that epoch
    model.learn_many(X, [True], features=names)
    one.learn_one({"a": 1.0, "c": 2.0}, True)
    assert pickle.dumps(model) == pickle.dumps(one)
    with pytest.raises(ValueError, match="features names columns 0 and 2 alike: 'a'"):
        model.learn_many(sparse.csr_array([[1.0, 0.0, 1.0]]), [True], features=names)
    assert pickle.dumps(model) == pickle.dumps(one)


def test_a_name_changed_in_place_is_read_after_an_epoch_knew_every_column():
    """Once an epoch has resolved every column of a vocabulary, its calls check the rows as the
    kernel reads them (lazily); a name changed in place between two calls is still read."""
    names = ["a", "b", "c"]
    X = sparse.csr_array([[1.0, 2.0, 0.0], [0.0, 1.0, 3.0], [2.0, 0.0, 1.0]])
    model, one = river_cw.AROW(), river_cw.AROW()

    def both(labels):
        model.learn_many(X, labels, features=names)
        rows = [{names[j]: v for j, v in enumerate(row) if v} for row in X.toarray().tolist()]
        loop(one, rows, labels, [1.0] * len(labels))
        assert pickle.dumps(model) == pickle.dumps(one)

    for labels in ([True, False, True], [False, True, True], [True, True, False]):
        both(labels)  # new labels, then an epoch that learns every column, then a lazy call
    names[1] = "z"
    both([False, True, False])
    assert "z" in model.weights and model.weights["z"] != 0


@pytest.mark.parametrize("covariance", ["diagonal", "arrowhead"])
def test_a_vocabulary_resized_by_a_names_hash_is_refused(covariance):
    """The kernel reads the names by position: a name whose hash shrinks the list is refused."""
    model = river_cw.AROW(covariance=covariance)
    if not hasattr(model.gaussian, "learn_rows"):
        pytest.skip("the pure-Python engine has no batch kernel")

    class Shrinking(str):
        def __hash__(self):
            if len(names) == 3:
                names.pop()
            return str.__hash__(self)

    names = [Shrinking("a"), "b", "c"]
    model.learn_one({"z": 1.0}, True)
    model.learn_one({"z": 1.0}, False)
    with pytest.raises(RuntimeError, match="features changed size during learn_many"):
        model.learn_many(sparse.csr_array([[1.0, 1.0, 1.0]]), [True], features=names)


def test_csr_columns_follow_the_engine_through_a_new_layout_and_a_new_class():
    """The kept columns point at the engine's entries; after the entries are laid out anew
    (reversed through the compiled engine's `blocks`), or a new label adds a block, they are
    found again."""
    X = sparse.csr_array([[1.0, 2.0, 0.0], [0.0, 1.0, 3.0], [1.0, 0.0, 1.0]])
    names = ["a", "b", "c"]
    dicts = named_rows([[(0, 1.0), (1, 2.0)], [(1, 1.0), (2, 3.0)], [(0, 1.0), (2, 1.0)]], names)
    model, one = river_cw.AROW(), river_cw.AROW()
    model.learn_many(X, [1, 0, 1], features=names)
    loop(one, dicts, [1, 0, 1], [1.0] * 3)
    for engine in (model.gaussian, one.gaussian):
        if hasattr(engine, "blocks"):  # the compiled engine: entries in reverse order
            engine.blocks = [dict(reversed(list(block.items()))) for block in engine.blocks]
    model.learn_many(X, [2, 0, 1], features=names)  # label 2: a new block
    loop(one, dicts, [2, 0, 1], [1.0] * 3)
    assert pickle.dumps(model) == pickle.dumps(one)
    model.learn_many(X, [1, 2, 0], features=names)
    loop(one, dicts, [1, 2, 0], [1.0] * 3)
    assert pickle.dumps(model) == pickle.dumps(one)


# -- binary CSR rows through the lean kernel (batch_lean_row: _diagonal.c's, _arrowhead.c's) -----

LEAN_CSR = [  # a native step and a built-in scheme, nothing forgotten: the lean CSR rows' models
    river_cw.AROW(),
    river_cw.AROW(covariance="diagonal"),
    river_cw.AROW(diagonal="drop", learn_intercept=False, r=0.05),
    river_cw.AROW(covariance="diagonal", diagonal="drop", learn_intercept=False, r=0.05),
    river_cw.CW(variant="var"),
    river_cw.NHERD(C=0.5),
    river_cw.SOP(),
    river_cw.SCW(variant="II", diagonal="drop", C=3.0),
    river_cw.SCW(variant="II", covariance="diagonal", diagonal="drop", C=3.0),
]
LEAN_CSR_IDS = [repr(m).replace("\n", "").replace(" ", "") for m in LEAN_CSR]

csr_values = st.one_of(  # what a float64 CSR array holds, hostile values included
    st.floats(-100, 100, allow_nan=False),
    st.sampled_from([0.0, -0.0, 1.0, 1e-160, 1e-300, 5e-324, 1e150, -1e154, 1e200, 2.0**60]),
    st.sampled_from([math.nan, math.inf, -math.inf]),
)
lean_csr_rows = st.lists(  # stored entries in any order, a column stored twice now and then
    st.tuples(st.integers(0, WIDTH - 1), csr_values), max_size=WIDTH + 1
)
lean_csr_batches = st.integers(1, 25).flatmap(
    lambda n: st.tuples(
        st.lists(
            st.one_of(
                lean_csr_rows,
                st.lists(st.tuples(st.integers(0, WIDTH - 1), st.floats(-3, 3)), max_size=WIDTH),
            ),
            min_size=n,
            max_size=n,
        ),
        st.lists(st.booleans(), min_size=n, max_size=n),
        st.lists(st.sampled_from([1.0, 1.0, 1.0, 0.5, 2.0, 0.0, 1e300]), min_size=n, max_size=n),
    )
)


@pytest.mark.parametrize("model", LEAN_CSR, ids=LEAN_CSR_IDS)
@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(st.tuples(lean_csr_batches, st.booleans()), min_size=1, max_size=4))
def test_binary_csr_rows_through_the_lean_kernel_are_the_learn_one_loop(model, parts):
    """Hostile values (overflowing sums, NaN, infinities, subnormals), margins whose sums the
    bound cannot certify, columns stored twice or out of order, zero and huge weights: every row
    the lean kernel declines goes the general way or to learn_one, in order, and the model, the
    skips and the first error are the loop's, batch after batch (hashed and named)."""
    many, one = model.clone(), model.clone()
    for (rows_, labels, weights), hashed in parts:
        features = None if hashed else NAMES
        X = csr_rows_matrix(rows_)
        dicts = named_rows(rows_, features)
        assert outcome(lambda: many.learn_many(X, labels, weights, features=features)) == (
            loop_outcome(one, dicts, labels, weights)
        )
        assert pickle.dumps(many) == pickle.dumps(one)
        assert many.n_skipped_updates == one.n_skipped_updates


@pytest.mark.parametrize(
    "model",
    [river_cw.AROW(), river_cw.SCW(), river_cw.AROW(covariance="diagonal")],
    ids=["AROW", "SCW", "AROW diagonal"],
)
def test_csr_batches_of_a_real_text_stream_are_the_learn_one_loop(model):
    """SMS messages as word counts, as a vocabulary and as hashed ids, twice: the second time on
    a model that learned them, where many of the default model's rows sum G or the score exactly
    on a rounding tie (one in seven on benchmarks/batch.py's stream), which the lean kernel
    recognises from the row's terms."""
    examples = shuffled(read_jsonl("sms_spam_collection.jsonl.gz"))[:600]
    bow = feature_extraction.BagOfWords(lowercase=True)
    dicts = [{k: float(v) for k, v in bow.transform_one(ex["text"]).items()} for ex in examples]
    labels = [ex["label"] == "spam" for ex in examples]
    vocabulary: dict = {}
    indptr, indices, data = [0], [], []
    for x in dicts:
        indices += [vocabulary.setdefault(token, len(vocabulary)) for token in x]
        data += list(x.values())
        indptr.append(len(indices))
    shape = (len(dicts), len(vocabulary))
    X = sparse.csr_array((np.array(data), np.array(indices), indptr), shape=shape)
    names = list(vocabulary)
    one = model.clone()
    for _ in range(2):
        loop(one, dicts, labels, [1.0] * len(dicts))
    for features in (names, None):
        many = model.clone()
        for _, start in itertools.product(range(2), range(0, len(dicts), 100)):
            many.learn_many(X[start : start + 100], labels[start : start + 100], features=features)
        if features is None:
            assert many.weights == {vocabulary[k]: w for k, w in one.weights.items()}
        else:
            assert pickle.dumps(many) == pickle.dumps(one)


HALFWAY = [1.0 + 2.0**-52, 2.0**-54, 2.0**-54]  # exactly halfway, the last rounding upwards
near_ties = st.lists(  # terms of one size whose errors land on and near a rounding tie
    st.builds(
        lambda k, e: math.ldexp(1.0 + k * 2.0**-52, e), st.integers(-4, 4), st.integers(-3, 3)
    )
    | st.floats(-2.0, 2.0)
    | st.sampled_from([2.0**-53, -(2.0**-53), 3 * 2.0**-54, 2.0**-1074, 1e-300, 0.0]),
    max_size=12,
)


@settings(max_examples=examples(100), deadline=None)
@given(k=near_ties, a=near_ties, c=near_ties, root=st.sampled_from([(0.0, 0.0), (0.5, 1.0)]))
@hypothesis.example(k=HALFWAY, a=HALFWAY, c=HALFWAY, root=(0.0, 0.0))
@hypothesis.example(k=[2.0**-53, 2.0**-160], a=[2.0**-53, -(2.0**-160)], c=[], root=(0.5, 1.0))
def test_the_default_models_csr_rows_on_and_near_ties_are_the_learn_one_loop(k, a, c, root):
    """The arrowhead's lean CSR row (the default model's) sums G, the score and the variance
    where they fall on or a hair from the midpoint of two doubles: its variance sum over both
    lanes of a vector, a sum recognised exact from its terms (their least magnitude, which the
    pass keeps), the triple-length pass and math.fsum's algorithm over the row's arrays give
    learn_one's numbers, and the step learned from there is learn_one's, bit for bit (hashed and
    named columns)."""
    n = min(len(k), len(a))
    c = [abs(t) for t in c[:n]] + [1.0] * (n - len(c))  # variances >= 0
    names = [f"f{j}" for j in range(n)]
    X = sparse.csr_array((np.ones(n), np.arange(n), [0, n]), shape=(1, n))
    for label, features in itertools.product((False, True), (names, None)):
        keys = names if features is not None else range(n)
        many, one = river_cw.AROW(), river_cw.AROW()
        for model in (many, one):
            model.learn_one({"z": 1.0}, False)
            model.learn_one({"z": 1.0}, True)
            block = {key: [a[j], k[j], c[j]] for j, key in enumerate(keys)}
            model.gaussian.blocks = [{**block, river_cw.INTERCEPT: list(root)}]  # (mu_b, S)
        many.learn_many(X, [label], features=features)
        one.learn_one(dict.fromkeys(keys, 1.0), label)
        assert pickle.dumps(many) == pickle.dumps(one)


def test_hashed_columns_follow_features_learned_between_batches():
    """A hashed column resolved as unseen in one batch (stored only with the value 0) is learned
    by learn_one before the next batch: that batch updates the weight learn_one added rather than
    adding it twice. Between batches that leave the tables as they were, the columns are not
    looked up again, and stay right."""
    X0 = sparse.csr_array((np.array([1.0, 0.0]), np.array([0, 1]), [0, 2]), shape=(1, 3))
    X1 = sparse.csr_array((np.array([2.0, -1.0, 0.5]), np.array([1, 0, 2]), [0, 3]), shape=(1, 3))
    many, one = river_cw.AROW(), river_cw.AROW()
    for model in (many, one):
        model.learn_one({5: 1.0}, False)  # both labels known: the batches are binary
    many.learn_many(X0, [True])
    one.learn_one({0: 1.0, 1: 0.0}, True)
    for model in (many, one):
        model.learn_one({1: 3.0}, False)  # column 1: a new weight
    many.learn_many(X1, [True])
    one.learn_one({1: 2.0, 0: -1.0, 2: 0.5}, True)
    assert pickle.dumps(many) == pickle.dumps(one)
    for model in (many, one):
        model.learn_one({0: 1.0, 2: 1.0}, True)  # known weights only: the tables keep their layout
    many.learn_many(X1, [False])
    many.learn_many(X0, [True])
    one.learn_one({1: 2.0, 0: -1.0, 2: 0.5}, False)
    one.learn_one({0: 1.0, 1: 0.0}, True)
    assert pickle.dumps(many) == pickle.dumps(one)
    assert list(many.weights) == [5, 0, 1, 2]


def test_a_hashed_column_finds_a_feature_learned_between_batches_under_an_equal_key():
    """As above, with the features learn_one adds between the batches keyed by objects of other
    types equal to the columns' ints (True for column 1, 2.0 for column 2; the str "1" equals
    none): the next batch, which continues its epoch where only features were appended, updates
    them rather than adding the ints beside them."""
    X0 = sparse.csr_array((np.array([1.0, 0.0, 0.0]), np.array([0, 1, 2]), [0, 3]), shape=(1, 3))
    X1 = sparse.csr_array((np.array([2.0, -1.0, 0.5]), np.array([1, 0, 2]), [0, 3]), shape=(1, 3))
    many, one = river_cw.AROW(), river_cw.AROW()
    for model in (many, one):
        model.learn_one({5: 1.0}, False)  # both labels known: the batches are binary
    many.learn_many(X0, [True])  # columns 1 and 2 resolved, unseen: stored with the value 0
    one.learn_one({0: 1.0, 1: 0.0, 2: 0.0}, True)
    for model in (many, one):
        model.learn_one({True: 3.0, 2.0: 1.0, "1": 1.0}, False)
    many.learn_many(X1, [True])
    one.learn_one({1: 2.0, 0: -1.0, 2: 0.5}, True)
    assert pickle.dumps(many) == pickle.dumps(one)
    assert list(many.weights) == [5, 0, True, 2.0, "1"]


# -- dict rows of a binary model through the lean path (learn_rows' lean_learn) -----------------

LEAN = [  # models whose learn_one takes the lean path (`_lean_spec` is not None)
    river_cw.AROW(),
    river_cw.AROW(diagonal="drop", learn_intercept=False),
    river_cw.CW(covariance="diagonal", diagonal="exact"),
    river_cw.CW(variant="var", covariance="diagonal", diagonal="exact"),
    river_cw.CW(variant="var", covariance="diagonal", diagonal="exact", learn_intercept=False),
    river_cw.NHERD(covariance="diagonal", diagonal="exact", C=0.1),
    river_cw.SCW(variant="II", diagonal="drop"),
]
LEAN_IDS = [repr(m).replace("\n", "").replace(" ", "") for m in LEAN]

hostile = st.one_of(  # values the lean path declines: the kernel's general way, or learn_one's
    values,
    st.booleans(),
    st.sampled_from(
        [2**70, -(2**60), 10**400, math.nan, math.inf, "1", np.float64(0.5), np.int64(3)]
    ),
)
lean_rows = st.one_of(
    st.dictionaries(st.sampled_from(NAMES), values, max_size=len(NAMES)),
    st.dictionaries(st.sampled_from(NAMES + [river_cw.INTERCEPT]), hostile, max_size=4),
)
lean_batches = st.integers(1, 25).flatmap(
    lambda n: st.tuples(
        st.lists(lean_rows, min_size=n, max_size=n),
        st.lists(st.sampled_from(["x", "y", "x", "y", "z"]), min_size=n, max_size=n),
        st.lists(
            st.sampled_from([1.0, 1.0, 0.0, 0.5, 2.0, 3, True, 1e300]), min_size=n, max_size=n
        ),
    )
)


@pytest.mark.parametrize("model", LEAN, ids=LEAN_IDS)
@settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(lean_batches, min_size=1, max_size=3))
def test_dict_rows_through_the_lean_path_are_the_learn_one_loop(model, parts):
    """New labels, ints, bools, hostile values, the intercept as a feature, sample weights (0,
    ints, huge), a third label mid-batch: every row the lean core declines goes the general way,
    in order, and the model, the skips and the first error are the loop's."""
    assert (model._lean_spec() is not None) == (river_cw.ENGINE == "c")  # none in pure Python
    many, one = model.clone(), model.clone()
    for dicts, labels, weights in parts:
        assert outcome(lambda: many.learn_many(dicts, labels, weights)) == loop_outcome(
            one, dicts, labels, weights
        )
        assert_same_as_the_loop(
            many, one, [x for x in dicts if outcome(lambda: one.predict_one(x)) is None]
        )


def test_the_kernel_is_handed_the_lean_spec_of_learn_one():
    model = river_cw.CW(variant="var", covariance="diagonal", diagonal="exact")
    specs = recording_kernel(model, 11)  # `lean`
    one = model.clone()
    dicts = [{"a": 1.0, "b": 2}, {"a": -1.0}, {"b": True}, {"a": 0.5, "c": -3.0}]
    model.learn_many(dicts, [1, 0, 1, 0])
    loop(one, dicts, [1, 0, 1, 0], [1.0] * 4)
    assert specs and all(spec == model._lean_spec() for spec in specs)
    assert model.weights == one.weights and model.variances == one.variances
