"""Merging Gaussian models trained on disjoint shards (Crammer, Dredze and Pereira 2012, 7.10)."""

from __future__ import annotations

import copy

import numpy as np

from .base import GaussianClassifier
from .gaussian import DiagonalGaussian, FullGaussian

__all__ = ["combine"]


def combine(models: list[GaussianClassifier], method: str = "kl") -> GaussianClassifier:
    """Merge models of the same class and hyper-parameters into one.

    ``"kl"`` weights each model by its precision, ``Sigma^-1 = sum_c Sigma_c^-1`` and
    ``mu = Sigma sum_c Sigma_c^-1 mu_c`` (the Gaussian minimising the summed KL divergence);
    ``"l2"`` averages the means and covariances. A weight a model never learned counts with its
    prior (mean 0, variance `initial_variance`); a weight no model learned keeps the prior.

    The models must have seen the same labels, in any order: a binary model whose labels came in
    the other order is negated first (its Gaussian over ``-w``). The inputs are not modified.

    >>> import river_cw
    >>> a, b = river_cw.AROW(), river_cw.AROW()
    >>> a.learn_one({"x": 1.0}, True)
    >>> a.learn_one({"x": -1.0}, False)
    >>> b.learn_one({"x": -1.0}, False)
    >>> b.learn_one({"x": 1.0}, True)
    >>> merged = river_cw.combine([a, b], method="kl")
    >>> merged.predict_one({"x": 2.0})
    True

    """
    if method not in ("kl", "l2"):
        raise ValueError(f"method must be 'kl' or 'l2', got {method!r}")
    if not models:
        raise ValueError("combine needs at least one model")
    first = models[0]
    for model in models[1:]:
        if type(model) is not type(first) or model._get_params() != first._get_params():
            raise ValueError("combine needs models of the same class and hyper-parameters")
        if set(model.classes_) != set(first.classes_):
            raise ValueError(
                f"combine needs models that saw the same labels: "
                f"{first.classes_!r} vs {model.classes_!r}"
            )
    aligned = [_aligned(model, first.classes_) for model in models]
    merged = first.clone()
    merged.classes_ = list(first.classes_)
    merged._class_index = dict(first._class_index)
    if isinstance(first._gaussian, DiagonalGaussian):
        merged._gaussian = _combine_diagonal([m._gaussian for m in aligned], method)
    else:
        merged._gaussian = _combine_full([m._gaussian for m in aligned], method)
    return merged


def _aligned(model: GaussianClassifier, classes: list) -> GaussianClassifier:
    """A copy of `model` whose blocks follow the label order of `classes`."""
    if model.classes_ == classes:
        return model
    model = copy.deepcopy(model)
    gaussian = model._gaussian
    if model.is_binary:  # the other orientation: the Gaussian over -w
        if isinstance(gaussian, DiagonalGaussian):
            for w in gaussian.blocks[0].values():
                w[0] = -w[0]
        else:
            gaussian.mean = -gaussian.mean
    else:
        order = [model._class_index[c] for c in classes]
        if isinstance(gaussian, DiagonalGaussian):
            gaussian.blocks = [gaussian.blocks[k] for k in order]
        else:
            new_block = {k: b for b, k in enumerate(order)}
            gaussian.index = {(new_block[b], f): i for (b, f), i in gaussian.index.items()}
    model.classes_ = list(classes)
    model._class_index = {c: i for i, c in enumerate(classes)}
    return model


def _combine_diagonal(gaussians: list[DiagonalGaussian], method: str) -> DiagonalGaussian:
    prior = gaussians[0].initial_variance
    merged = DiagonalGaussian(prior)
    merged.blocks = []
    for blocks in zip(*(g.blocks for g in gaussians)):
        combined = {}
        for f in set().union(*blocks):
            pairs = [block.get(f, (0.0, prior)) for block in blocks]
            if method == "kl":
                precision = sum(1.0 / s for _, s in pairs)
                mean = sum(mu / s for mu, s in pairs) / precision
                combined[f] = [mean, 1.0 / precision]
            else:
                n = len(pairs)
                combined[f] = [sum(mu for mu, _ in pairs) / n, sum(s for _, s in pairs) / n]
        merged.blocks.append(combined)
    return merged


def _combine_full(gaussians: list[FullGaussian], method: str) -> FullGaussian:
    prior = gaussians[0].initial_variance
    merged = FullGaussian(prior)
    merged.n_blocks = gaussians[0].n_blocks
    keys = list(dict.fromkeys(key for g in gaussians for key in g.index))
    merged.index = {key: i for i, key in enumerate(keys)}
    n = len(keys)
    means, covs = [], []
    for g in gaussians:  # each model on the merged index, unseen weights at the prior
        rows = np.array([merged.index[key] for key in g.index], dtype=int)
        mean, cov = np.zeros(n), prior * np.eye(n)
        mean[rows] = g.mean
        cov[np.ix_(rows, rows)] = g.cov
        means.append(mean)
        covs.append(cov)
    if method == "kl":
        precisions = [np.linalg.inv(cov) for cov in covs]
        merged.cov = np.linalg.inv(sum(precisions))
        merged.mean = merged.cov @ sum(p @ mu for p, mu in zip(precisions, means))
    else:
        merged.mean = sum(means) / len(means)
        merged.cov = sum(covs) / len(covs)
    return merged
