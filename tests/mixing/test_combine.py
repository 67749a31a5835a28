"""`combine` without a base: the paper's combinations of models trained on disjoint shards
(Crammer, Dredze and Pereira, JMLR 2012, section 7.10) against a dense transcription of the
formulas, on hypothesis-drawn models, binary and multi-class."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import river_cw
from tests.mixing.test_combine_base import MODELS, examples, learned

LABELS = ["a", "b", "c"]


def gaussians(model) -> dict:
    """``{(label, feature): (mean, variance)}`` of the learned weights (label None for the one
    vector of a binary model), read from the public state."""
    means, variances = model.weights, model.variances
    if model.is_binary:
        return {(None, f): (means[f], variances[f]) for f in means}
    return {(c, f): (means[c][f], variances[c][f]) for c in means for f in means[c]}


def dense(model, keys, prior):
    """Mean vector and covariance matrix over `keys`, a weight the model never learned at the
    prior (mean 0, variance `prior`)."""
    weights = gaussians(model)
    pairs = [weights.get(key, (0.0, prior)) for key in keys]
    return np.array([mu for mu, _ in pairs]), np.diag([s for _, s in pairs])


def kl(parts):
    """The normalised product: ``Sigma^-1 = sum_c Sigma_c^-1``, ``mu = Sigma sum_c Sigma_c^-1
    mu_c``."""
    precision = sum(np.linalg.inv(S) for _, S in parts)
    weighted = sum(np.linalg.inv(S) @ mu for mu, S in parts)
    return np.linalg.solve(precision, weighted), np.linalg.inv(precision)


def l2(parts):
    """The average of the means and of the covariances."""
    return sum(mu for mu, _ in parts) / len(parts), sum(S for _, S in parts) / len(parts)


@pytest.mark.parametrize("n_labels", [2, 3])
@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("method, formula", [("kl", kl), ("l2", l2)], ids=["kl", "l2"])
@settings(max_examples=30, deadline=None)
@given(shards=st.lists(examples, min_size=1, max_size=4))
def test_a_combination_of_shards_follows_the_papers_formula(
    method, formula, name, n_labels, shards
):
    labels = LABELS[:n_labels]
    first = [({"a": 1.0}, k) for k in range(n_labels)]  # every member meets the labels in order
    members = [learned(MODELS[name](), first + shard, labels) for shard in shards]
    prior = members[0].initial_variance
    keys = sorted({key for m in members for key in gaussians(m)}, key=repr)
    mean, covariance = formula([dense(m, keys, prior) for m in members])
    merged = river_cw.combine(members, method=method)
    assert merged.classes_ == members[0].classes_ and set(gaussians(merged)) == set(keys)
    got_mean, got_covariance = dense(merged, keys, prior)
    np.testing.assert_allclose(got_mean, mean, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got_covariance, covariance, rtol=1e-9, atol=1e-12)
