"""`combine(..., base=)`: the delta rule of iterative mixing against its dense definition."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from river import preprocessing

import river_cw
from river_cw import text
from streams.models.specs import classifier_of

FEATURES = "abcdef"

DIAGONAL = {"covariance": "diagonal"}  # the weights' Gaussians are independent
MODELS = {
    "AROW": lambda **kw: river_cw.AROW(r=0.5, diagonal="project", **DIAGONAL, **kw),
    "CW var exact": lambda **kw: river_cw.CW(variant="var", diagonal="exact", **DIAGONAL, **kw),
    "NHERD drop": lambda **kw: river_cw.NHERD(diagonal="drop", **DIAGONAL, **kw),
    "SOP": lambda **kw: river_cw.SOP(**DIAGONAL, **kw),
}

examples = st.lists(
    st.tuples(
        st.dictionaries(st.sampled_from(FEATURES), st.floats(-3, 3), min_size=1, max_size=4),
        st.integers(0, 3),
    ),
    max_size=12,
)


def learned(model, stream, labels):
    model = copy.deepcopy(model)
    for x, y in stream:
        model.learn_one(x, labels[y % len(labels)])
    return model


def per_label(model, labels) -> dict:
    """``{(label, feature): (mean, variance)}`` of the weights, laid out by label: the scores'
    Gaussian as the classifiers define it (a binary vector scores its second label against the
    first; a model that knew one label scores it by ``-w``). An independent transcription."""
    means, variances = model.weights, model.variances
    known = model.classes_
    if not model.is_binary:
        return {(c, f): (means[c][f], variances[c][f]) for c in known for f in means[c]}
    if len(labels) <= 2:
        sign = -1.0 if known and known[0] != labels[0] else 1.0
        return {(labels[-1], f): (sign * means[f], variances[f]) for f in means}
    label, sign = (known[1], 1.0) if len(known) == 2 else (known[0], -1.0)
    return {(label, f): (sign * means[f], variances[f]) for f in means}


def dense(model, keys, labels, prior):
    """Mean vector and precision matrix over `keys`."""
    weights = per_label(model, labels)
    mean = np.array([weights.get(k, (0.0, prior))[0] for k in keys])
    precision = np.diag([1.0 / weights.get(k, (0.0, prior))[1] for k in keys])
    return mean, precision


def assert_delta_rule(merged, members, base, labels):
    """The merged Gaussian is the product of the members' Gaussians divided by the base's
    counted n - 1 times, computed on dense matrices."""
    prior = base.initial_variance
    assert merged.classes_ == labels
    keys = sorted({k for m in (base, *members) for k in per_label(m, labels)}, key=repr)
    mean0, precision0 = dense(base, keys, labels, prior)
    parts = [dense(m, keys, labels, prior) for m in members]
    n = len(members)
    precision = sum(p for _, p in parts) - (n - 1) * precision0
    weighted = sum(p @ mu for mu, p in parts) - (n - 1) * (precision0 @ mean0)
    mean = np.linalg.solve(precision, weighted)
    variance = np.diag(np.linalg.inv(precision))
    got_mean, got_variance = dense(merged, keys, labels, prior)
    np.testing.assert_allclose(got_mean, mean, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(1.0 / np.diag(got_variance), variance, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", list(MODELS))
@settings(max_examples=40, deadline=None)
@given(start=examples, shards=st.lists(examples, min_size=1, max_size=4))
def test_binary_delta_rule_is_the_product_divided_by_the_base(name, start, shards):
    labels = [False, True]
    base = MODELS[name]()
    base.learn_one({"a": 1.0}, False)
    base.learn_one({"b": 1.0}, True)  # both labels known: every member keeps the base's order
    base = learned(base, start, labels)
    members = [learned(base, shard, labels) for shard in shards]
    merged = river_cw.combine(members, base=base)
    assert_delta_rule(merged, members, base, labels)


@settings(max_examples=40, deadline=None)
@given(start=examples, shards=st.lists(examples, min_size=2, max_size=4))
def test_multiclass_delta_rule_with_new_labels(start, shards):
    """A base that knew two labels; members learn up to two more, some staying binary."""
    base = learned(
        river_cw.AROW(r=0.5, diagonal="project", **DIAGONAL),
        [({"a": 1.0}, 0), ({"b": 1.0}, 1), *start],
        "xy",
    )
    members = [learned(base, shard, "xy" + "zw"[: i % 3]) for i, shard in enumerate(shards)]
    merged = river_cw.combine(members, base=base)
    labels = list(merged.classes_)
    assert labels[:2] == ["x", "y"] and set(labels) == {c for m in members for c in m.classes_}
    assert_delta_rule(merged, members, base, labels)


@settings(max_examples=30, deadline=None)
@given(shards=st.lists(examples, min_size=2, max_size=4))
def test_first_round_from_a_fresh_model_any_label_order(shards):
    """From a model that knew nothing, members may have met the labels in any order, or one."""
    base = river_cw.AROW(**DIAGONAL)
    members = [learned(base, shard, "ba" if i % 2 else "ab") for i, shard in enumerate(shards)]
    members = [m for m in members if m.classes_] or [learned(base, [({"a": 1.0}, 0)], "a")]
    merged = river_cw.combine(members, base=base)
    assert_delta_rule(merged, members, base, list(merged.classes_))


def test_full_covariance_delta_rule_against_dense_matrices():
    rng = np.random.default_rng(3)

    def stream(n):
        return [
            ({f: float(v) for f, v in zip("abc", rng.normal(size=3))}, int(rng.integers(2)))
            for _ in range(n)
        ]

    base = learned(river_cw.AROW(covariance="full"), stream(5), "ab")
    members = [learned(base, stream(6), "ab") for _ in range(3)]
    merged = river_cw.combine(members, base=base)
    keys = sorted({k for k, _ in base.covariances}, key=repr)  # features and the intercept

    def moments(model):  # from the public views
        weights = {**model.weights, river_cw.INTERCEPT: model.intercept}
        cov = model.covariances
        matrix = np.array([[cov[k, g] for g in keys] for k in keys])
        return np.array([weights[k] for k in keys]), np.linalg.inv(matrix)

    mean0, precision0 = moments(base)
    parts = [moments(m) for m in members]
    precision = sum(p for _, p in parts) - 2 * precision0
    mean = np.linalg.solve(precision, sum(p @ mu for mu, p in parts) - 2 * precision0 @ mean0)
    got_mean, got_precision = moments(merged)
    np.testing.assert_allclose(got_mean, mean, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got_precision, precision, rtol=1e-9, atol=1e-12)
    # l2: the mean changes add; the covariance changes add in the matrices' log domain
    merged = river_cw.combine(members, method="l2", base=base)
    got_mean, got_precision = moments(merged)
    np.testing.assert_allclose(got_mean, mean0 + sum(mu - mean0 for mu, _ in parts), atol=1e-12)

    def log(precision):
        values, vectors = np.linalg.eigh(np.linalg.inv(precision))
        return (vectors * np.log(values)) @ vectors.T

    expected = log(precision0) + sum(log(p) - log(precision0) for _, p in parts)
    np.testing.assert_allclose(log(got_precision), expected, rtol=1e-7, atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(start=examples, shards=st.lists(examples, min_size=2, max_size=4))
def test_l2_delta_rule_adds_mean_changes_and_log_variance_changes(start, shards):
    base = learned(
        river_cw.AROW(r=0.5, diagonal="project", **DIAGONAL),
        [({"a": 1.0}, 0), ({"b": 1.0}, 1), *start],
        "xy",
    )
    members = [learned(base, shard, "xy") for shard in shards]
    merged = river_cw.combine(members, method="l2", base=base)
    prior = base.initial_variance
    for f in merged.weights:
        mu0, s0 = base.weights.get(f, 0.0), base.variances.get(f, prior)
        mus = [m.weights.get(f, mu0) for m in members]
        ss = [m.variances.get(f, s0) for m in members]
        assert merged.weights[f] == pytest.approx(mu0 + sum(mu - mu0 for mu in mus), abs=1e-12)
        assert 0.0 <= merged.variances[f] <= min(ss)
        assert math.log(merged.variances[f]) == pytest.approx(
            math.log(s0) + sum(math.log(s) - math.log(s0) for s in ss), rel=1e-9, abs=1e-12
        )


@pytest.mark.parametrize("method", ["kl", "l2"])
@pytest.mark.parametrize("name", list(MODELS))
def test_mixing_copies_of_an_unchanged_model_returns_it(name, method):
    model = learned(
        MODELS[name](),
        [({"a": 1.0, "b": -2.0}, 0), ({"a": -1.0, "c": 0.5}, 1)] * 3,
        ["spam", "ham"],
    )
    merged = river_cw.combine([model, copy.deepcopy(model), model], method=method, base=model)
    assert merged.classes_ == model.classes_
    assert merged.weights == model.weights and merged.variances == model.variances
    # one member changed: the result is that member, bit for bit
    changed = learned(model, [({"d": 1.0}, 0)], ["spam", "ham"])
    merged = river_cw.combine([model, changed], method=method, base=model)
    assert merged.weights == changed.weights and merged.variances == changed.variances


def test_rebasing_a_member_on_the_mix_keeps_its_own_new_evidence():
    """A member that published, learned more, and adopts the mix: mix plus its new changes."""
    base = learned(river_cw.AROW(), [({"a": 1.0}, 0), ({"b": 1.0}, 1)], "xy")
    members = [learned(base, [({"c": 1.0}, i % 2)], "xy") for i in range(3)]
    mixed = river_cw.combine(members, base=base)
    later = learned(members[0], [({"d": 1.0}, 1)], "xy")
    rebased = river_cw.combine([mixed, later], base=members[0])
    one_pass = river_cw.combine([*members[1:], later], base=base)
    for f in one_pass.weights:
        assert rebased.weights[f] == pytest.approx(one_pass.weights[f], rel=1e-12)
        assert rebased.variances[f] == pytest.approx(one_pass.variances[f], rel=1e-12)


def test_pipelines_mix_their_classifier():
    pipeline = text.BagOfWords(on="text") | river_cw.AROW()
    pipeline.learn_one({"text": "free prize"}, "spam")
    a, b = copy.deepcopy(pipeline), copy.deepcopy(pipeline)
    a.learn_one({"text": "see you at noon"}, "ham")
    b.learn_one({"text": "win cash now"}, "spam")
    merged = river_cw.combine([a, b], base=pipeline)
    assert list(merged.steps) == ["BagOfWords", "AROW"]
    assert {"noon", "cash", "free"} <= set(merged["AROW"].weights)
    expected = river_cw.combine([a["AROW"], b["AROW"]], base=pipeline["AROW"])
    assert merged["AROW"].weights == expected.weights
    merged.learn_one({"text": "brand new words"}, "ham")  # the mixed pipeline learns on
    assert "brand" in merged["AROW"].weights


def test_three_step_pipelines_keep_their_first_steps_in_the_mix_and_the_changes():
    pipeline = text.BagOfWords(on="text") | preprocessing.Normalizer() | river_cw.AROW()
    pipeline.learn_one({"text": "free prize"}, "spam")
    a, b = copy.deepcopy(pipeline), copy.deepcopy(pipeline)
    a.learn_one({"text": "see you at noon"}, "ham")
    b.learn_one({"text": "win cash now"}, "spam")
    steps = ["BagOfWords", "Normalizer", "AROW"]
    delta = river_cw.changes(a, pipeline)
    assert list(delta.steps) == steps
    assert delta["AROW"].weights == river_cw.changes(a["AROW"], pipeline["AROW"]).weights
    merged = river_cw.combine([delta, b], base=pipeline)
    assert list(merged.steps) == steps
    assert merged["AROW"].weights == river_cw.combine([a, b], base=pipeline)["AROW"].weights
    other = text.BagOfWords(on="text") | preprocessing.Normalizer(order=1) | river_cw.AROW()
    with pytest.raises(ValueError, match="'Normalizer' differs"):
        river_cw.combine([a, other], base=pipeline)


def test_skipped_updates_since_the_base_are_counted_once():
    """``n_skipped_updates`` of a mix: the base's, plus what each member skipped since it (the
    plain combination: the members' sum)."""
    base = learned(river_cw.AROW(), [({"a": 1.0}, 0), ({"b": 1.0}, 1)], "xy")
    base.n_skipped_updates = 2
    members = [learned(base, [({"c": 1.0}, i)], "xy") for i in range(3)]
    for member, skipped in zip(members, (2, 5, 3)):
        member.n_skipped_updates = skipped
    assert river_cw.combine(members, base=base).n_skipped_updates == 2 + 0 + 3 + 1
    assert river_cw.combine(members).n_skipped_updates == 2 + 5 + 3


def test_models_that_cannot_be_mixed_are_refused():
    # a stranger is told by its variances above the base's: models that never forget
    base = learned(river_cw.AROW(forgetting=0.0), [({"a": 1.0}, 0), ({"b": 1.0}, 1)], "xy")
    member = learned(base, [({"c": 1.0}, 0)], "xy")
    with pytest.raises(ValueError, match="only Gaussian classifiers"):
        river_cw.combine([river_cw.VotedRDA(), river_cw.VotedRDA()])
    with pytest.raises(ValueError, match="hyper-parameters"):
        river_cw.combine([member], base=river_cw.AROW(r=2.0))
    stranger = learned(river_cw.AROW(forgetting=0.0), [({"c": 1.0}, 1)], "yx")
    with pytest.raises(ValueError, match="did not start from the base"):
        river_cw.combine([member, stranger], base=base)
    grown = learned(river_cw.AROW(forgetting=0.0), [({"a": 1.0}, 0), ({"b": 2.0}, 1)], "xy")
    with pytest.raises(ValueError, match="grew from the base"):
        river_cw.combine([member, base], base=grown)
    one = learned(river_cw.AROW(), [({"a": 1.0}, 0)], "x")
    with pytest.raises(ValueError, match="knew only 'x'"):
        river_cw.combine(
            [learned(one, [({"b": 1.0}, 0)], "y"), learned(one, [({"b": 1.0}, 0)], "z")], base=one
        )
    piped = text.BagOfWords(on="text") | river_cw.AROW()
    other = text.BagOfWords(on="text", lowercase=False) | river_cw.AROW()
    with pytest.raises(ValueError, match="step 'BagOfWords' differs"):
        river_cw.combine([piped, other])
    with pytest.raises(ValueError, match="not pipelines"):
        river_cw.combine([piped, river_cw.AROW()])
    for model, plain in ((piped, base), (base, piped)):  # either side of changes()
        with pytest.raises(ValueError, match="not pipelines"):
            river_cw.changes(model, plain)
    texts = text.TextClassifier(river_cw.AROW(), on="text")
    for model, plain in ((texts, base), (base, texts)):
        with pytest.raises(ValueError, match="text classifiers with models that are not"):
            river_cw.changes(model, plain)


@pytest.mark.parametrize("method", ["kl", "l2"])
def test_mixing_the_changes_is_mixing_the_models(method):
    base = learned(river_cw.AROW(), [({"a": 1.0}, 0), ({"b": 1.0}, 1)], "xy")
    members = [
        learned(base, [({"a": 0.5, f"n{i}": 1.0}, i), ({"c": 1.0}, 2)], "xyz") for i in range(3)
    ]
    delta = [river_cw.changes(m, base) for m in members]
    assert "b" not in delta[0].weights["y"]  # unchanged since the base: left out
    mixed = river_cw.combine(members, method=method, base=base)
    from_changes = river_cw.combine(delta, method=method, base=base)
    assert mixed.classes_ == from_changes.classes_
    assert mixed.weights == from_changes.weights and mixed.variances == from_changes.variances
    piped = text.BagOfWords(on="text") | river_cw.AROW()
    grown = copy.deepcopy(piped)
    grown.learn_one({"text": "hello"}, "ham")
    assert river_cw.changes(grown, piped)["AROW"].weights == grown["AROW"].weights


def holding(blocks: list[dict], labels: list):
    """An AROW holding the diagonal Gaussian `blocks` ({feature: (mean, variance)}) as is."""
    gaussian = river_cw._engines.diagonal.DiagonalGaussian(1.0)
    gaussian.blocks = [{f: list(pair) for f, pair in block.items()} for block in blocks]
    gaussian.reset_bound()
    model = river_cw.AROW(**DIAGONAL)
    model.set_gaussian(gaussian, labels)
    return model


@pytest.mark.parametrize("with_base", [False, True], ids=["plain", "delta"])
def test_precisions_beyond_float64_mix_to_a_finite_product(with_base):
    """Variances of 1e-308 (a CW weight after tens of thousands of examples), whose precisions
    sum beyond float64: KL mixing still gives the precision-weighted mean and the product's
    variance, scaled by the least variance, instead of an OverflowError (seen in the full
    reproduction's 10-shard table)."""
    labels = [False, True]
    base = holding([{"a": (0.0, 1.0), "b": (0.5, 1.0)}], labels)
    members = [holding([{"a": (mu, 1e-308), "b": (0.5, 1.0)}], labels) for mu in (1.0, 2.0, 3.0)]
    merged = river_cw.combine(members, base=base if with_base else None)
    (mu, s) = merged.gaussian.blocks[0]["a"]
    assert mu == pytest.approx(2.0, rel=1e-12)
    assert s == pytest.approx(1e-308 / 3, rel=1e-9)
    assert merged.gaussian.blocks[0]["b"] == [0.5, 1.0 if with_base else 1.0 / 3]


@pytest.mark.parametrize("method", ["kl", "l2"])
def test_one_pipeline_or_text_classifier_mixed_alone_is_itself(method):
    for model in (
        text.BagOfWords(on="text") | river_cw.AROW(),
        text.TextClassifier(river_cw.AROW(), on="text"),
    ):
        model.learn_one({"text": "free prize"}, "spam")
        model.learn_one({"text": "see you at noon"}, "ham")
        for mixed in (river_cw.combine([model], method), river_cw.combine([model], base=model)):
            assert classifier_of(mixed).weights == classifier_of(model).weights
            assert classifier_of(mixed).variances == classifier_of(model).variances


def _normal_stream(rng, n: int, features: str) -> list:
    return [
        (
            {f: float(v) for f, v in zip(features, rng.normal(size=len(features)))},
            int(rng.integers(2)),
        )
        for _ in range(n)
    ]


def _dense_moments(model, keys: list) -> tuple[np.ndarray, np.ndarray]:
    """Mean vector and covariance matrix over `keys` from the public views, a weight the model
    never learned at the prior (mean 0, its prior variance, no correlation)."""
    weights = {**model.weights, river_cw.INTERCEPT: model.intercept}
    cov, prior = model.covariances, model.initial_variance
    matrix = [[cov.get((k, g), prior if k == g else 0.0) for g in keys] for k in keys]
    return np.array([weights.get(k, 0.0) for k in keys]), np.array(matrix)


def _log_spd(matrix: np.ndarray) -> np.ndarray:
    values, vectors = np.linalg.eigh(matrix)
    return (vectors * np.log(values)) @ vectors.T


def test_full_covariance_l2_from_a_base_meets_weights_some_members_never_saw():
    """A feature two members learned and the base and the third never saw: at the prior in
    theirs, and the log-domain rule on the union of the weights."""
    rng = np.random.default_rng(5)
    base = learned(river_cw.AROW(covariance="full"), _normal_stream(rng, 5, "ab"), "ab")
    members = [
        learned(base, _normal_stream(rng, 6, "abd"), "ab"),
        learned(base, _normal_stream(rng, 6, "bd"), "ab"),
        learned(base, _normal_stream(rng, 4, "b"), "ab"),
    ]
    merged = river_cw.combine(members, method="l2", base=base)
    keys = sorted({k for k, _ in merged.covariances}, key=repr)
    assert "d" in keys
    mean0, cov0 = _dense_moments(base, keys)
    parts = [_dense_moments(m, keys) for m in members]
    got_mean, got_cov = _dense_moments(merged, keys)
    np.testing.assert_allclose(got_mean, mean0 + sum(mu - mean0 for mu, _ in parts), atol=1e-12)
    expected = _log_spd(cov0) + sum(_log_spd(c) - _log_spd(cov0) for _, c in parts)
    np.testing.assert_allclose(_log_spd(got_cov), expected, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("method", ["kl", "l2"])
def test_full_covariance_the_one_member_that_learned_is_the_mix_to_the_bit(method):
    rng = np.random.default_rng(6)
    base = learned(river_cw.AROW(covariance="full"), _normal_stream(rng, 5, "abc"), "ab")
    member = learned(base, _normal_stream(rng, 4, "abcd"), "ab")
    mixed = river_cw.combine([copy.deepcopy(base), member, copy.deepcopy(base)], method, base=base)
    assert (mixed.weights, mixed.intercept, mixed.covariances) == (
        member.weights,
        member.intercept,
        member.covariances,
    )


def test_full_covariance_members_that_forgot_mix_at_least_as_certain_as_each():
    """Forgetting lowers precisions, so the delta rule (the base counted -(n - 1) times) can be
    less certain than a member; the base's discount keeps the mix at least as certain as every
    member, and is the delta rule where that holds."""
    rng = np.random.default_rng(7)
    model = river_cw.AROW(covariance="full", forgetting=0.3)
    base = learned(model, _normal_stream(rng, 30, "abc"), "ab")
    members = [learned(base, _normal_stream(rng, 8, "abc"), "ab") for _ in range(3)]
    mixed = river_cw.combine(members, base=base)
    keys = sorted({k for k, _ in mixed.covariances}, key=repr)
    precision = np.linalg.inv(_dense_moments(mixed, keys)[1])
    own = [np.linalg.inv(_dense_moments(m, keys)[1]) for m in members]
    plain = sum(own) - 2 * np.linalg.inv(_dense_moments(base, keys)[1])
    assert min(np.linalg.eigvalsh(plain - p)[0] for p in own) < 0  # the delta rule would not do
    margins = [np.linalg.eigvalsh(precision - p)[0] for p in own]
    scale = np.abs(precision).max()
    assert min(margins) >= -1e-7 * scale
    assert min(margins) <= 1e-6 * scale  # the largest discount: as certain as a member, no more
    assert np.linalg.eigvalsh(plain - precision)[0] < 0  # discounted: more certain than plain
