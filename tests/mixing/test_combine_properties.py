"""`combine` over every covariance, rule and mixing method, in rounds, on real streams.

Issue 39: the default model's mixing broke while every engine's own tests stayed green. Here
each case runs rounds of iterative mixing as the server does (members copied from the last mix
learn their own shard, then `combine(members, base=mix)`), on a dense raw stream (river's
Phishing, uncentred features and an intercept) and on text (the bundled SMS spam, sparse, many
features), binary and multi-class (river's ImageSegments), with and without an intercept and
forgetting, 1 to 5 members, random shard sizes. After every round:

- combining raises nothing (the members started from the base);
- the result is a proper Gaussian: finite means, every variance positive and finite, and with
  full or arrowhead covariance a positive definite matrix (the arrowhead's: every latent
  variance positive, river_cw/_engines/arrowhead.py);
- ``"l2"`` gives every weight the base's mean plus the members' changes of it;
- mixing unchanged copies of the mix returns it;
- and at the end the KL mix of binary models of one or two members is about as accurate on
  held-out examples as its members, for the rules of `SOFT` (three members or more from a young
  mix overshoot: a known gap, the strict xfails at the end). Not held here, measured in docs/guide/mixing.md: L2's sum of the members' mean
  changes, and the multi-class mixes, overshoot where the members correct the same error.
"""

from __future__ import annotations

import copy
import math
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from river import datasets

import river_cw
from river_cw import INTERCEPT
from river_cw.text import BagOfWords
from streams.io.files import sms_spam

RULES = {
    "AROW": river_cw.AROW,
    "CW var": lambda **kw: river_cw.CW(variant="var", **kw),
    "CW stdev": lambda **kw: river_cw.CW(variant="stdev", **kw),
    "NHERD": river_cw.NHERD,
    "SOP": river_cw.SOP,
    "SCW": river_cw.SCW,
}
COVARIANCES = ["arrowhead", "diagonal", "full"]
SOFT = ("AROW", "NHERD", "SCW")
"""The rules whose KL mixes are held to their members' accuracy. CW's and SOP's are not yet:
members that started from one base correct the same mistakes, each by a full step, and the
delta rule adds the corrections (tests/models/test_covariance_contract.py's `KNOWN_GAPS`). One
case hypothesis found: CW var, arrowhead, no intercept, five members of 40 Phishing examples
from a base of three rounds: the mix 0.46 on held-out examples, its members 0.71 to 0.80."""


def _stream(name: str) -> tuple[list, list]:
    """(training examples, held-out examples), shuffled once."""
    if name == "text":
        bag = BagOfWords()
        data = [(bag.transform_one(x["text"]), y) for x, y in sms_spam()]
        random.Random(0).shuffle(data)
        return data[:1500], data[-800:]
    source = datasets.Phishing() if name == "dense" else datasets.ImageSegments()
    data = list(source)
    random.Random(0).shuffle(data)
    return data[:-400], data[-400:]


STREAMS = {name: _stream(name) for name in ("dense", "text", "multiclass")}


def means(model) -> dict:
    """``{(label, feature): mean}`` of every weight, the intercept's included (public views)."""
    if model.is_binary:
        return {(None, f): mu for f, mu in {**model.weights, INTERCEPT: model.intercept}.items()}
    out = {(c, f): mu for c in model.classes_ for f, mu in model.weights[c].items()}
    return out | {(c, INTERCEPT): model.intercept[c] for c in model.classes_}


def assert_proper(model) -> None:
    """Finite means, positive finite variances, and a positive definite covariance."""
    assert all(math.isfinite(mu) for mu in means(model).values())
    variances = (
        model.variances
        if model.is_binary
        else {(c, f): s for c in model.classes_ for f, s in model.variances[c].items()}
    )
    assert all(0.0 <= s < math.inf for s in variances.values())
    gaussian = model.gaussian
    if model.covariance == "full" and gaussian.index:  # R'R, R triangular: PD iff diag(R) != 0
        # (not R'R's eigenvalues: with R's entries near 1e9, eigvalsh's rounding alone is 1e2)
        assert np.isfinite(gaussian.chol).all() and (np.diag(gaussian.chol) > 0.0).all()
    if model.covariance == "arrowhead":  # positive definite iff every latent variance is > 0
        for block in gaussian.blocks:
            assert all(0.0 <= w[-1] < math.inf for w in block.values())


def accuracy(model, examples: list) -> float:
    return sum(model.predict_one(x) == y for x, y in examples) / len(examples)


cases = st.fixed_dictionaries(
    {
        "stream": st.sampled_from(list(STREAMS)),
        "rule": st.sampled_from(list(RULES)),
        "covariance": st.sampled_from(COVARIANCES),
        "method": st.sampled_from(["kl", "l2"]),
        "members": st.integers(1, 5),
        "sizes": st.lists(st.integers(0, 40), min_size=1, max_size=5),
        "forgetting": st.sampled_from([0.0, 0.02]),
        "learn_intercept": st.booleans(),
        "seed": st.integers(0, 2**16),
    }
)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=cases)
def test_rounds_of_mixing_keep_a_proper_gaussian_that_predicts_as_well_as_its_members(case):
    training, held_out = STREAMS[case["stream"]]
    if case["covariance"] == "full" and case["stream"] == "text":
        case["covariance"] = "arrowhead"  # O(d^2) over thousands of words: not what full is for
    options = {"forgetting": case["forgetting"], "learn_intercept": case["learn_intercept"]}
    if case["rule"] == "SOP":
        options.pop("forgetting")  # the second-order perceptron keeps no forgetting
    base = RULES[case["rule"]](covariance=case["covariance"], **options)
    rng = random.Random(case["seed"])
    position = rng.randrange(len(training) // 2)
    for size in case["sizes"]:
        members = [copy.deepcopy(base) for _ in range(case["members"])]
        for member in members:
            for x, y in training[position : position + size]:
                member.learn_one(x, y)
            position = (position + size) % (len(training) - 40)
        if sum(bool(m.classes_) for m in members) == 0:
            continue
        mixed = river_cw.combine(members, method=case["method"], base=base)
        assert_proper(mixed)
        if len(mixed.classes_) == 1:
            continue  # as the protocol does: a mix that knows one label is not adopted
        if case["method"] == "l2" and list(base.classes_) == list(mixed.classes_):
            start = means(base)  # the members hold their weights as the base does
            theirs = [means(m) for m in members]  # (a full model's views solve its factor)
            for key, mean in means(mixed).items():
                mean0 = start.get(key, 0.0)
                change = math.fsum(m.get(key, mean0) - mean0 for m in theirs)
                assert mean == pytest.approx(mean0 + change, rel=1e-9, abs=1e-9)
        base = mixed
    copies = river_cw.combine([base, copy.deepcopy(base)], method=case["method"], base=base)
    assert means(copies) == means(base)  # bit for bit
    if not base.classes_:
        return
    members = [copy.deepcopy(base) for _ in range(case["members"])]
    for member in members:
        for x, y in training[position : position + 40]:
            member.learn_one(x, y)
        position = (position + 40) % (len(training) - 40)
    mixed = river_cw.combine(members, method=case["method"], base=base)
    assert_proper(mixed)
    if (
        case["method"] == "kl"
        and case["stream"] != "multiclass"
        and case["rule"] in SOFT
        and case["members"] <= 2  # more from a young mix overshoot: the known gap below
    ):
        scores = [accuracy(m, held_out) for m in members]
        assert accuracy(mixed, held_out) >= min(scores) - 0.1, (accuracy(mixed, held_out), scores)


@pytest.mark.xfail(
    strict=True,
    reason="known gap: the delta rule adds up the members' corrections of the same errors of a "
    "young mix, and the KL mix of three members or more overshoots (docs/guide/mixing.md)",
)
@pytest.mark.parametrize("members, forgetting", [(5, 0.0), (3, 0.02)])
def test_the_kl_mix_of_several_members_of_a_young_mix_is_about_as_accurate_as_they_are(
    members, forgetting
):
    """Found by the property above (three members, forgetting=0.02, seed 2): from a mix of 12
    examples, members of 40 examples each all correct its errors, the delta rule adds their
    corrections up, and the mix falls below its least accurate member on held-out Phishing. Five
    members: 0.568 against 0.845 (two: 0.865 against 0.850); three that forget: 0.713 against
    0.828 (0.823 against 0.838 without forgetting). The mixing guide describes the overshoot on
    product reviews; the property above holds the bound for one or two members."""
    training, held_out = STREAMS["dense"]
    base = river_cw.AROW(covariance="arrowhead", forgetting=forgetting)
    position = random.Random(2).randrange(len(training) // 2)
    for size in (4, 40):
        shards = [copy.deepcopy(base) for _ in range(members)]
        for member in shards:
            for x, y in training[position : position + size]:
                member.learn_one(x, y)
            position = (position + size) % (len(training) - 40)
        base = river_cw.combine(shards, method="kl", base=base)
    scores = [accuracy(m, held_out) for m in shards]
    assert accuracy(base, held_out) >= min(scores) - 0.1, (accuracy(base, held_out), scores)
