"""`combine` and `changes` with ``covariance="arrowhead"`` against dense matrices.

The arrowhead's precision is an arrowhead matrix and natural parameters add entry by entry, so
the delta rule (and the product) of arrowhead models is in the family: the mixed model's whole
covariance matrix, read from its public views, must be the dense rule's (river_cw/_engines/combine_arrowhead.py).
Where that rule would be less certain than a member (the projected step's change of the
intercept's row is not always evidence), the base's discount keeps a valid Gaussian that meets
the floors. The moment analogue keeps the averaged moments of the intercept and of every
(intercept, feature) pair; from a base, the changes of the mean add exactly (the latent
variances' in the log domain).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from river import feature_extraction

import river_cw
from river_cw import INTERCEPT, text
from tests.mixing.test_combine_base import FEATURES, learned

MODELS = {
    "AROW drop wide": lambda: river_cw.AROW(
        r=0.5, covariance="arrowhead", diagonal="drop", initial_intercept_variance=100.0
    ),
    "CW project": lambda: river_cw.CW(covariance="arrowhead", diagonal="project"),
    "NHERD no intercept": lambda: river_cw.NHERD(covariance="arrowhead", learn_intercept=False),
}

# uncentred values, where the intercept and the weights correlate most
examples = st.lists(
    st.tuples(
        st.dictionaries(st.sampled_from(FEATURES), st.floats(-1, 6), min_size=1, max_size=4),
        st.integers(0, 3),
    ),
    max_size=10,
)


def public(model, labels) -> tuple[dict, dict]:
    """``({key: mean}, {(key, key): covariance})`` with keys ``(label, feature)`` (the intercept
    `INTERCEPT`), laid out by label as the classifiers score: a binary vector scores its second
    label against the first, a model that knew one label scores it by ``-w`` (the covariance of
    ``-w`` is that of w). From the public views alone."""
    known = model.classes_
    if not model.is_binary:
        means = {(c, f): mu for c in known for f, mu in model.weights[c].items()}
        means |= {(c, INTERCEPT): model.intercept[c] for c in known}
        return means, model.covariances
    if len(labels) <= 2:
        label, sign = labels[-1], -1.0 if known and known[0] != labels[0] else 1.0
    else:
        label, sign = (known[1], 1.0) if len(known) == 2 else (known[0], -1.0)
    means = {
        (label, f): sign * mu for f, mu in {**model.weights, INTERCEPT: model.intercept}.items()
    }
    cov = {((label, f), (label, g)): value for (f, g), value in model.covariances.items()}
    return means, cov


def keys_of(models, labels) -> list:
    return sorted({k for m in models for k, _ in public(m, labels)[1]}, key=repr)


def dense(model, keys, labels):
    """Mean vector and precision matrix over `keys`; a weight never learned is independent at
    its prior (`initial_intercept_variance` for the intercept)."""
    means, cov = public(model, labels)
    learned_keys = [k for k in keys if (k, k) in cov]
    rows = [keys.index(k) for k in learned_keys]
    intercept = model.initial_intercept_variance or model.initial_variance
    priors = [intercept if k[1] is INTERCEPT else model.initial_variance for k in keys]
    precision = np.diag(1.0 / np.array(priors))
    block = np.array([[cov[k, g] for g in learned_keys] for k in learned_keys])
    precision[np.ix_(rows, rows)] = np.linalg.inv(block) if rows else precision[np.ix_(rows, rows)]
    return np.array([means.get(k, 0.0) for k in keys]), precision


def assert_dense_rule(merged, members, base, labels):
    """The mixed model is the dense rule's Gaussian (the members' precisions and
    precision-weighted means added, less the base's n - 1 times; none without a base) wherever
    that rule is at least as certain as the most certain member that changed each factor (a
    feature's conditional precision ``P_jj``, the intercept's marginal precision ``1/Sigma_bb``),
    as it is when every member's change is evidence; elsewhere the base's discount: a positive
    definite Gaussian that meets those floors (river_cw/_engines/combine_arrowhead.py)."""
    assert merged.classes_ == labels
    every = members if base is None else [base, *members]
    keys = keys_of([*every, merged], labels)
    parts = [dense(m, keys, labels) for m in members]
    precision = sum(p for _, p in parts)
    weighted = sum(p @ mu for mu, p in parts)
    if base is not None:
        mean0, precision0 = dense(base, keys, labels)
        precision = precision - (len(members) - 1) * precision0
        weighted = weighted - (len(members) - 1) * (precision0 @ mean0)
    got_mean, got_precision = dense(merged, keys, labels)
    if base is None or _meets_floors(precision, parts, dense(base, keys, labels), keys):
        covariance = np.linalg.inv(precision)
        scale = np.abs(covariance).max()
        np.testing.assert_allclose(
            np.linalg.inv(got_precision), covariance, rtol=1e-8, atol=1e-9 * scale
        )
        np.testing.assert_allclose(got_mean, covariance @ weighted, rtol=1e-8, atol=1e-9)
        return
    assert np.all(np.isfinite(got_mean)) and np.linalg.eigvalsh(got_precision)[0] > 0
    assert _meets_floors(got_precision, parts, dense(base, keys, labels), keys, slack=1e-9)


def _meets_floors(precision, parts, start, keys, slack=0.0) -> bool:
    """Whether `precision` is at least as certain as the most certain member that changed each
    factor (its natural parameters differ from the base's): ``P_jj`` for a feature, the
    intercept's marginal precision for the root (every block's)."""
    mean0, precision0 = start
    try:
        covariance = np.linalg.inv(precision)
    except np.linalg.LinAlgError:
        return False
    for i, key in enumerate(keys):
        root = key[1] is INTERCEPT

        def certainty(p, c=None):
            return 1.0 / c[i, i] if root else p[i, i]

        changers = [
            (p, mu)
            for mu, p in parts
            if not (np.array_equal(p[i], precision0[i]) and np.isclose(mu[i], mean0[i]))
        ]
        if not changers:
            continue
        floor = max(certainty(p, np.linalg.inv(p)) for p, _ in changers)
        if root and not np.all(np.linalg.eigvalsh(precision) > 0):
            return False
        if certainty(precision, covariance) < floor * (1.0 - 1e-7 - slack):
            return False
    return True


def started(model, start, labels):
    """A base that knew both labels first: every member keeps its order."""
    return learned(model, [({"a": 1.0}, 0), ({"b": 2.0}, 1), *start], labels)


@pytest.mark.parametrize("name", list(MODELS))
@settings(max_examples=20, deadline=None)
@given(start=examples, shards=st.lists(examples, min_size=1, max_size=4))
def test_binary_delta_rule_is_the_dense_rule(name, start, shards):
    labels = [False, True]
    base = started(MODELS[name](), start, labels)
    members = [learned(base, shard, labels) for shard in shards]
    assert_dense_rule(river_cw.combine(members, base=base), members, base, labels)


@settings(max_examples=20, deadline=None)
@given(start=examples, shards=st.lists(examples, min_size=2, max_size=4))
def test_multiclass_delta_rule_with_new_labels_is_the_dense_rule(start, shards):
    """A base that knew two labels; members learn up to two more, some staying binary."""
    base = started(MODELS["AROW drop wide"](), start, "xy")
    members = [learned(base, shard, "xy" + "zw"[: i % 3]) for i, shard in enumerate(shards)]
    merged = river_cw.combine(members, base=base)
    labels = list(merged.classes_)
    assert labels[:2] == ["x", "y"] and set(labels) == {c for m in members for c in m.classes_}
    assert_dense_rule(merged, members, base, labels)


@settings(max_examples=20, deadline=None)
@given(shards=st.lists(examples, min_size=2, max_size=4))
def test_first_round_from_a_fresh_model_any_label_order(shards):
    """From a model that knew nothing, members may have met the labels in any order, or one."""
    base = MODELS["CW project"]()
    members = [learned(base, shard, "ba" if i % 2 else "ab") for i, shard in enumerate(shards)]
    members = [m for m in members if m.classes_] or [learned(base, [({"a": 1.0}, 0)], "a")]
    merged = river_cw.combine(members, base=base)
    assert_dense_rule(merged, members, base, list(merged.classes_))


@pytest.mark.parametrize("n_labels", [2, 3])
@settings(max_examples=20, deadline=None)
@given(shards=st.lists(examples, min_size=1, max_size=4))
def test_a_combination_of_shards_is_the_dense_product(n_labels, shards):
    labels = "abc"[:n_labels]
    first = [({"a": 1.0}, k) for k in range(n_labels)]  # every member meets the labels in order
    members = [learned(MODELS["AROW drop wide"](), first + s, labels) for s in shards]
    assert_dense_rule(river_cw.combine(members), members, None, list(members[0].classes_))


@settings(max_examples=20, deadline=None)
@given(shards=st.lists(examples, min_size=1, max_size=4))
def test_l2_averages_the_moments_the_family_keeps(shards):
    """The intercept's mean and variance, every feature's mean and variance and its covariance
    with the intercept are the members' averages (a weight never learned at its prior)."""
    labels = [False, True]
    first = [({"a": 1.0}, 0), ({"b": 3.0}, 1)]
    members = [learned(MODELS["AROW drop wide"](), first + s, labels) for s in shards]
    merged = river_cw.combine(members, method="l2")
    keys = keys_of([*members, merged], labels)
    moments = []  # (mean, covariance) of every member, then of the mix, over the same keys
    for model in [*members, merged]:
        mean, precision = dense(model, keys, labels)
        moments.append((mean, np.linalg.inv(precision)))
    (mean, cov), parts = moments[-1], moments[:-1]
    root = keys.index((True, INTERCEPT))
    for i in range(len(keys)):
        for j in {i, root}:  # what the family keeps: Var(w_i) and Cov(w_i, b)
            average = np.mean([c[i, j] for _, c in parts])
            assert cov[i, j] == pytest.approx(average, rel=1e-9)
        average = np.mean([m[i] for m, _ in parts])
        assert mean[i] == pytest.approx(average, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("method", ["kl", "l2"])
@pytest.mark.parametrize("name", list(MODELS))
def test_mixing_copies_of_an_unchanged_model_returns_it_bit_for_bit(name, method):
    labels = ["spam", "ham"]
    model = learned(
        MODELS[name](), [({"a": 5.0, "b": -2.0}, 0), ({"a": 6.0, "c": 0.5}, 1)] * 3, labels
    )

    def state(m):
        return m.weights, m.intercept, m.covariances

    merged = river_cw.combine([model, copy.deepcopy(model), model], base=model, method=method)
    assert merged.classes_ == model.classes_ and state(merged) == state(model)
    # one member changed, the others not: that member, bit for bit
    changed = learned(model, [({"a": 5.5, "d": 1.0}, 0)], labels)
    merged = river_cw.combine([model, changed, model], base=model, method=method)
    assert state(merged) == state(changed)
    # the changes alone mix as the model does
    merged = river_cw.combine([river_cw.changes(changed, model)], base=model, method=method)
    assert state(merged) == state(changed)


def test_mixing_the_changes_is_mixing_the_models():
    base = started(MODELS["AROW drop wide"](), [({"c": 5.0}, 1), ({"a": 5.5}, 0)], "xy")
    members = [
        learned(base, [({"a": 5.0 + i, "d": 1.0}, 1), ({f: 6.0}, 0)], "xy")
        for i, f in enumerate("bcd")
    ]
    deltas = [river_cw.changes(m, base) for m in members]
    assert set(deltas[0].weights) == {"a", "b", "d"}  # the weights it learned, no others
    mixed, from_changes = (river_cw.combine(ms, base=base) for ms in (members, deltas))
    assert (mixed.weights, mixed.intercept, mixed.covariances) == (
        from_changes.weights,
        from_changes.intercept,
        from_changes.covariances,
    )


@settings(max_examples=20, deadline=None)
@given(start=examples, shards=st.lists(examples, min_size=2, max_size=4))
def test_l2_from_a_base_adds_the_changes_of_the_mean(start, shards):
    """Every weight's mean, the intercept's included, is the base's plus the members' changes
    of it (public views); the loadings k_j add their changes and the latent variances S and c_j
    theirs in the log domain, never above the base's (the engines' own parameters, `blocks`)."""
    base = started(MODELS["AROW drop wide"](), start, "xy")
    members = [learned(base, shard, "xy") for shard in shards]
    merged = river_cw.combine(members, method="l2", base=base)

    def means(model):
        return {**model.weights, INTERCEPT: model.intercept}

    for key, mean in means(merged).items():
        mean0 = means(base).get(key, 0.0)
        change = sum(means(m).get(key, 0.0) - mean0 for m in members)
        assert mean == pytest.approx(mean0 + change, rel=1e-9, abs=1e-12)
    (start_block,), (got,) = base.gaussian.blocks, merged.gaussian.blocks
    blocks = [m.gaussian.blocks[0] for m in members]
    for key, values in got.items():
        initial = start_block.get(key, [0.0, 100.0] if key is INTERCEPT else [0.0, 0.0, 1.0])
        parts = [block.get(key, initial) for block in blocks]
        if key is not INTERCEPT:
            change = sum(part[1] - initial[1] for part in parts)
            assert values[1] == pytest.approx(initial[1] + change, rel=1e-9, abs=1e-12)
        assert 0.0 < values[-1] <= min(part[-1] for part in parts)
        assert np.log(values[-1]) == pytest.approx(
            np.log(initial[-1]) + sum(np.log(p[-1]) - np.log(initial[-1]) for p in parts),
            rel=1e-9,
            abs=1e-12,
        )


def test_a_member_that_did_not_start_from_the_base_is_refused():
    """Told by its variances above the base's: a model that never forgets (one that may, as
    with ``forgetting="auto"``, can grow them)."""
    never = MODELS["AROW drop wide"]().clone({"forgetting": 0.0})
    base = started(never.clone(), [({"a": 5.0}, 1), ({"a": 6.0}, 0)], "xy")
    stranger = started(never.clone(), [], "xy")  # its variances above the base's
    with pytest.raises(ValueError, match="did not start from the base"):
        river_cw.combine([stranger, base], base=base)


@pytest.mark.parametrize("method", ["kl", "l2"])
def test_text_pipelines_mix_their_arrowhead_classifier(method):
    """`TextClassifier` and ``BagOfWords() | AROW()`` mix their last step (no base: l2 too)."""
    docs = [("free prize now", True), ("see you at lunch", False), ("win a free phone", True)]
    classifier = MODELS["AROW drop wide"]
    for make in (
        lambda: text.TextClassifier(classifier()),
        lambda: feature_extraction.BagOfWords() | classifier(),
    ):
        members = [make() for _ in range(2)]
        for i, member in enumerate(members):
            for doc, y in docs[i:] + docs[:i]:
                member.learn_one(doc, y)
        mixed = river_cw.combine(members, method=method)
        last = [m.classifier if isinstance(m, text.TextClassifier) else m[-1] for m in members]
        alone = river_cw.combine(last, method=method)
        got = mixed.classifier if isinstance(mixed, text.TextClassifier) else mixed[-1]
        assert (got.weights, got.intercept) == (alone.weights, alone.intercept)
        assert mixed.predict_one("free phone prize") is True
