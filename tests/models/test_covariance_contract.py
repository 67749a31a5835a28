"""The contract every covariance keeps, one suite over the registry (`river_cw.covariances`).

A case is a covariance of `COVARIANCES`, one of its engines (the compiled one where it is built,
and the pure-Python reference) and a rule; a clause is one promise a Gaussian model makes to its
users. `test_every_covariance_keeps_the_contract` runs every clause on every case, so a new
covariance, engine or rule is held to every feature by joining the registry (or `RULES`), and
nothing else. (When the default became the arrowhead, KL and L2 mixing and a forgetting bound
broke with it while each engine's own tests stayed green: issues 39 and 40.)

The clauses: learning, predictions and probabilities (``predict_one`` the label of largest
probability); the engine against the reference engine, bit for bit; the mini-batch paths as the
one-example loops; the public views; pickle, copy and clone; mixing by KL and L2, with and
without a base (a proper Gaussian about as accurate as its members); `river_cw.changes`;
forgetting's bound; calibration; hostile input leaving the model unchanged; and a changelog's
exact restore (for the covariances that keep marks).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import pickle
import random

import numpy as np
import pytest

import river_cw
from river_cw.covariances import COVARIANCES, Covariance, with_marks
from tests.support.bits import public_state

RULES = {
    "AROW": river_cw.AROW,
    "CW": river_cw.CW,
    "NHERD": river_cw.NHERD,
    "SCW": river_cw.SCW,
    "SOP": river_cw.SOP,
}
FEATURES = ("a", "b", "c", "d", "e")


def stream(n: int, labels: int = 2, seed: int = 0, noise: float = 0.0) -> list[tuple[dict, object]]:
    """Dense, uncentred examples (the features near 3, so the intercept matters) of a linear
    concept, a share `noise` of the labels drawn at random; some features absent in each
    example. (CW, the one rule that does not soften its updates, collapses its variances under
    noise: on this stream with 5% noise it ends near chance; AROW's reason to be.)"""
    rng = random.Random(seed)
    truth = [[rng.gauss(0, 1) for _ in FEATURES] for _ in range(labels)]
    data = []
    for _ in range(n):
        x = {f: rng.uniform(2.0, 4.0) for f in FEATURES if rng.random() < 0.8}
        scores = [sum(w * (x.get(f, 0.0) - 3.0) for w, f in zip(ws, FEATURES)) for ws in truth]
        y = max(range(labels), key=scores.__getitem__) if labels > 2 else scores[0] > 0
        if rng.random() < noise:
            y = rng.randrange(labels) if labels > 2 else not y
        data.append((x, y))
    return data


def model_of(kind: Covariance, engine: type, rule: str, **params):
    """A new model of the rule and covariance, holding `engine`."""
    model = RULES[rule](covariance=kind.name, **params)
    if engine is not kind.serving:
        prior = kind.start(engine, model.initial_variance, model.initial_intercept_variance)
        model.set_gaussian(prior, [])
    return model


def learned(kind, engine, rule, data, **params):
    model = model_of(kind, engine, rule, **params)
    for x, y in data:
        model.learn_one(x, y)
    return model


def numbers(model) -> tuple:
    """Everything a model shows of its Gaussian, to the bit, and its count of skipped steps."""
    return (*public_state(model), model.n_skipped_updates)


def accuracy(model, data) -> float:
    return sum(model.predict_one(x) == y for x, y in data) / len(data)


def assert_proper(model) -> None:
    """The model's Gaussian is a proper one: finite means, a positive semi-definite covariance
    (a variance of 0 is a point mass, where CW's variances underflow)."""
    keys = sorted({k for pair in model.covariances for k in pair}, key=repr)
    cov = np.array([[model.covariances.get((f, g), 0.0) for g in keys] for f in keys])
    means = [w for block in _blocks(model.weights, model) for w in block.values()]
    assert all(math.isfinite(w) for w in means)
    assert np.isfinite(cov).all() and (cov.diagonal() >= 0).all()
    if len(keys):
        assert np.linalg.eigvalsh(cov).min() >= -1e-9 * cov.diagonal().max()


def _blocks(view, model) -> list[dict]:
    return [view] if model.is_binary else list(view.values())


# -- the clauses ------------------------------------------------------------------------------


def is_what_the_registry_says(kind, engine, rule) -> None:
    """The entry's facts are the engine's: its prior (the intercept's own where
    `intercept_prior`), correlations, marks and mini-batch kernel; the model holds `engine`; an
    entry cannot be changed."""
    model = model_of(kind, engine, rule)
    assert type(model.gaussian) is engine and engine in kind.engines
    prior = kind.start(engine, 2.0, 7.0)
    intercept = prior.score_covariance({river_cw.INTERCEPT: 1.0})[0, 0]
    assert intercept == (7.0 if kind.intercept_prior else 2.0)
    assert kind.correlates == hasattr(prior, "cov") == hasattr(prior, "index")
    assert kind.keeps_marks == hasattr(prior, "mark") == (kind.only is not None)
    if river_cw.ENGINE == "c":  # the kernel is a compiled engine's
        assert kind.batch_kernel == hasattr(kind.serving, "learn_rows")
    with pytest.raises(dataclasses.FrozenInstanceError):
        kind.keeps_marks = not kind.keeps_marks  # type: ignore[misc]


def learns_and_predicts(kind, engine, rule) -> None:
    """Learning lifts accuracy well above chance; probabilities are a distribution over the
    labels and `predict_one` is the label of largest probability, binary and multi-class."""
    for labels in (2, 3):
        data = stream(600, labels)
        model = learned(kind, engine, rule, data[:400])
        assert accuracy(model, data[400:]) > (0.75 if labels == 2 else 0.7)
        for x, _ in data[400:]:
            proba = model.predict_proba_one(x)
            assert set(proba) == set(model.classes_)
            assert math.isclose(sum(proba.values()), 1.0) and min(proba.values()) >= 0.0
            assert proba[model.predict_one(x)] == max(proba.values())


def matches_the_reference_engine(kind, engine, rule) -> None:
    """The engine's numbers are the pure-Python reference's, bit for bit."""
    for labels in (2, 3):
        data = stream(200, labels)
        model = learned(kind, engine, rule, data)
        reference = learned(kind, kind.reference, rule, data)
        assert numbers(model) == numbers(reference)
        x = data[0][0]
        assert model.predict_proba_one(x) == reference.predict_proba_one(x)


def batches_are_the_loops(kind, engine, rule) -> None:
    """`learn_many`, `predict_many` and `predict_proba_many` are the one-example loops."""
    for labels in (2, 3):
        data = stream(200, labels)
        X, y = [x for x, _ in data], [y for _, y in data]
        one, many = model_of(kind, engine, rule), model_of(kind, engine, rule)
        for x, label in data[:150]:
            one.learn_one(x, label)
        many.learn_many(X[:150], y[:150])
        assert numbers(many) == numbers(one)
        assert many.predict_many(X[150:]) == [one.predict_one(x) for x in X[150:]]
        assert many.predict_proba_many(X[150:]) == [one.predict_proba_one(x) for x in X[150:]]


def shows_its_gaussian(kind, engine, rule) -> None:
    """`weights`, `variances` and `covariances` agree: the same weights, the covariances'
    diagonal the variances, the matrix symmetric; the intercept apart."""
    model = learned(kind, engine, rule, stream(100))
    cov = model.covariances
    assert set(model.weights) == set(model.variances) <= set(FEATURES)
    assert {f: cov[f, f] for f in model.variances} == model.variances
    assert cov[river_cw.INTERCEPT, river_cw.INTERCEPT] == model.intercept_variance
    assert all(cov[g, f] == value for (f, g), value in cov.items())
    assert kind.correlates or all(f == g for f, g in cov)


def pickles_and_copies(kind, engine, rule) -> None:
    """A pickle, a deep copy and a clone: the same model (the clone a new one), and the copies
    go on learning as the original."""
    data = stream(200)
    model = learned(kind, engine, rule, data[:100])
    copies = [pickle.loads(pickle.dumps(model)), copy.deepcopy(model)]
    assert numbers(model.clone()) == numbers(model_of(kind, kind.serving, rule))
    for x, y in data[100:]:
        for m in (model, *copies):
            m.learn_one(x, y)
    assert all(numbers(m) == numbers(model) for m in copies)


def mixes_by_kl(kind, engine, rule) -> None:
    """`combine` by KL (see `mixes`)."""
    mixes(kind, engine, rule, "kl")


def mixes_by_l2(kind, engine, rule) -> None:
    """`combine` by L2 (see `mixes`)."""
    mixes(kind, engine, rule, "l2")


def mixes(kind, engine, rule, method: str) -> None:
    """`combine` of shards from the prior and in rounds from a base: a proper Gaussian, about
    as accurate as its members; unchanged copies of a base mix to the base."""
    data = stream(1000, seed=1)
    train, held = data[:800], data[800:]
    members = [learned(kind, engine, rule, train[i::4]) for i in range(4)]
    mixed = river_cw.combine(members, method)
    assert_proper(mixed)
    assert accuracy(mixed, held) >= min(accuracy(m, held) for m in members) - 0.1
    base = model_of(kind, engine, rule)
    for start in range(0, 800, 200):  # four rounds of four members
        members = [copy.deepcopy(base) for _ in range(4)]
        for i, member in enumerate(members):
            for x, y in train[start + i : start + 200 : 4]:
                member.learn_one(x, y)
        base = river_cw.combine(members, method, base=base)
        assert_proper(base)
    assert accuracy(base, held) >= min(accuracy(m, held) for m in members) - 0.1
    assert numbers(river_cw.combine([base, base], method, base=base)) == numbers(base)


def says_what_changed(kind, engine, rule) -> None:
    """`changes(model, base)` holds the weights learned since the base (every weight where the
    covariance holds none apart), and mixing it onto the base gives the model back."""
    data = stream(200)
    base = learned(kind, engine, rule, data[:150])
    model = copy.deepcopy(base)
    for x, _ in data[150:170]:  # mistakes (every rule learns from one), of two features
        x = {f: x.get(f, 0.0) for f in "ab"}
        model.learn_one(x, model.predict_one(x) is False)
    delta = river_cw.changes(model, base)
    if kind.only is not None:
        assert set(delta.weights) == {"a", "b"}
    assert river_cw.combine([delta], base=base).weights == model.weights


def forgetting_stays_within_the_prior(kind, engine, rule) -> None:
    """With forgetting, a variance never exceeds the prior's, and it comes back to the prior
    where the model stops updating."""
    model = model_of(kind, engine, rule, forgetting=0.1, learn_intercept=False)
    for x, y in stream(300):
        model.learn_one(x, y)
        assert max(model.variances.values()) <= model.initial_variance
    model = model_of(kind, engine, rule, forgetting=0.1)
    prior = model.intercept_variance
    for x, y in stream(300):
        model.learn_one(x, y)
        assert model.intercept_variance <= prior


def calibrates(kind, engine, rule) -> None:
    """``calibrate=True`` changes the probabilities, never the predictions."""
    data = stream(400)
    plain = learned(kind, engine, rule, data[:300])
    calibrated = learned(kind, engine, rule, data[:300], calibrate=True)
    assert calibrated.temperature > 0
    for x, _ in data[300:]:
        assert calibrated.predict_one(x) == plain.predict_one(x)
        assert math.isclose(sum(calibrated.predict_proba_one(x).values()), 1.0)


def refuses_bad_input_unchanged(kind, engine, rule) -> None:
    """Bad input raises TypeError or ValueError naming it, and leaves the model as it was."""
    model = learned(kind, engine, rule, stream(50, 3))
    before = pickle.dumps(model)
    bad = [
        ({"a": math.nan}, 0, 1.0, "'a'"),
        ({"a": 1.0, "b": math.inf}, 1, 1.0, "'b'"),
        ({"a": "1.0"}, 2, 1.0, "'a'"),
        ({"a": 1e308, "b": 1e308}, 0, 1e308, ""),  # may overflow: refused or learned whole
        ({"a": 1.0}, None, 1.0, "label"),
        ({"a": 1.0}, 0, -1.0, ""),
        ({"a": 1.0}, "new", math.nan, ""),
    ]
    for x, y, w, named in bad:
        try:
            model.learn_one(x, y, w)
        except (TypeError, ValueError) as error:
            assert named in str(error)
            assert pickle.dumps(model) == before
        else:
            assert_proper(model)
            model = pickle.loads(before)
    with pytest.raises((TypeError, ValueError), match="'c'"):
        model.predict_proba_one({"c": math.nan})
    assert pickle.dumps(model) == before


def restores_from_its_changelog(kind, engine, rule) -> None:
    """Where the covariance keeps marks, the weights changed since a mark, set on the state
    at the mark, give the model of now, bit for bit (and bad ones change nothing); elsewhere
    the model is written whole."""
    data = stream(300, 3)
    model = learned(kind, engine, rule, data[:150])
    holder = with_marks(model)
    if not kind.keeps_marks:
        assert holder is None
        return
    assert holder is model
    model.gaussian.mark()
    committed = copy.deepcopy(model)
    for x, y in data[150:]:
        model.learn_one(x, y)
    changed = model.gaussian.changed()
    before = pickle.dumps(model)  # the case's engine (a copy holds the serving one)
    for bad in ((1.0,), ("x", 1.0, 1.0)):  # after every good entry: all or nothing
        with pytest.raises((TypeError, ValueError)):
            moved = [{f: (-n[0] - 1.0, *n[1:]) for f, n in block.items()} for block in changed]
            model.gaussian.set_weights([{**block, "bad": bad} for block in moved])
        assert pickle.dumps(model) == before
    committed.gaussian.set_weights(changed)
    committed.classes_, committed._class_index = model.classes_, model._class_index
    committed.n_skipped_updates = model.n_skipped_updates
    assert numbers(committed) == numbers(model)


CLAUSES = [
    is_what_the_registry_says,
    learns_and_predicts,
    matches_the_reference_engine,
    batches_are_the_loops,
    shows_its_gaussian,
    pickles_and_copies,
    mixes_by_kl,
    mixes_by_l2,
    says_what_changed,
    forgetting_stays_within_the_prior,
    calibrates,
    refuses_bad_input_unchanged,
    restores_from_its_changelog,
]


KNOWN_GAPS = {
    (
        "diagonal",
        "SOP",
        "mixes_by_kl",
    ): "the KL delta rule overshoots in rounds: 0.57 vs members' 0.93",
    (
        "arrowhead",
        "SOP",
        "mixes_by_kl",
    ): "the KL delta rule overshoots in rounds: 0.69 vs members' 0.92",
}
"""Clauses a case does not keep yet, with what was measured: strict, so that a fix shows.
(SOP learns only from mistakes; members that started from one base correct the same mistakes,
and the delta rule adds their corrections, which a diagonal precision does not temper.)"""


def _cases() -> list:
    return [
        pytest.param(
            kind,
            engine,
            rule,
            clause,
            id=f"{kind.name}-{engine.__name__}-{rule}-{clause.__name__}",
            marks=[
                pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[gap])
                for gap in [(kind.name, rule, clause.__name__)]
                if gap in KNOWN_GAPS
            ],
        )
        for kind in COVARIANCES.values()
        for engine in kind.engines
        for rule in RULES
        for clause in CLAUSES
    ]


@pytest.mark.parametrize(("kind", "engine", "rule", "clause"), _cases())
def test_every_covariance_keeps_the_contract(kind, engine, rule, clause):
    clause(kind, engine, rule)
