"""Merging Gaussian models trained on disjoint shards (Crammer, Dredze and Pereira 2012, 7.10)."""

from __future__ import annotations

import copy
import math

import numpy as np

from .base import GaussianClassifier
from .gaussian import DiagonalGaussian, FullGaussian

__all__ = ["combine"]


def combine(models: list[GaussianClassifier], method: str = "kl") -> GaussianClassifier:
    """Merge models of the same class and hyper-parameters into one.

    ``"kl"`` is the paper's "KL" combination: ``Sigma^-1 = sum_c Sigma_c^-1`` and
    ``mu = Sigma sum_c Sigma_c^-1 mu_c``, the normalised product of the models' Gaussians (each
    model's evidence multiplied in; note that the Gaussian minimising the summed KL divergence
    ``sum_c KL(N || N_c)`` would instead average the precisions). A weight whose variance
    underflowed to 0 in some model is a point mass: it takes the average of those models'
    means, with variance 0. ``"l2"`` averages the means and the covariances. A weight a model
    never learned counts with its prior (mean 0, variance `initial_variance`); a weight no model
    learned keeps the prior.

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
    if model.is_binary:  # the other orientation: the Gaussian over -w
        model._gaussian.negate()
    else:
        model._gaussian.reorder([model._class_index[c] for c in classes])
    model.classes_ = list(classes)
    model._class_index = {c: i for i, c in enumerate(classes)}
    return model


def _combine_diagonal(gaussians: list[DiagonalGaussian], method: str) -> DiagonalGaussian:
    prior = gaussians[0].initial_variance
    merged = DiagonalGaussian(prior)
    merged_blocks = []  # assigned whole: the compiled engine's `blocks` is a copy
    for blocks in zip(*(g.blocks for g in gaussians)):
        combined = {}
        for f in set().union(*blocks):
            pairs = [block.get(f, (0.0, prior)) for block in blocks]
            if method == "kl":
                combined[f] = _product(pairs)
            else:
                n = len(pairs)
                combined[f] = [sum(mu for mu, _ in pairs) / n, sum(s for _, s in pairs) / n]
        merged_blocks.append(combined)
    merged.blocks = merged_blocks
    merged.reset_bound()
    return merged


def _product(pairs: list) -> list:
    """``[mean, variance]`` of the normalised product of 1-D Gaussians ``(mean, variance)``.

    A variance that underflowed to 0 (or whose precision overflows) is a point mass: the
    product is then the point masses' average mean with variance 0, never a division by 0."""
    certain = [mu for mu, s in pairs if s == 0.0 or 1.0 / s == math.inf]
    if certain:
        return [math.fsum(certain) / len(certain), 0.0]
    precision = sum(1.0 / s for _, s in pairs)
    return [sum(mu / s for mu, s in pairs) / precision, 1.0 / precision]


def _combine_full(gaussians: list[FullGaussian], method: str) -> FullGaussian:
    prior = gaussians[0].initial_variance
    merged = FullGaussian(prior)
    merged.n_blocks = gaussians[0].n_blocks
    keys = list(dict.fromkeys(key for g in gaussians for key in g.index))
    index = {key: i for i, key in enumerate(keys)}
    n = len(keys)
    means, precisions = [], []
    for g in gaussians:  # each model on the merged index, unseen weights at the prior
        rows = np.array([index[key] for key in g.index], dtype=int)
        mean, precision = np.zeros(n), np.eye(n) / prior
        mean[rows] = g.mean
        precision[np.ix_(rows, rows)] = g.precision
        means.append(mean)
        precisions.append(precision)
    if method == "kl":
        precision = sum(precisions)
        mean = np.linalg.solve(precision, sum(p @ mu for p, mu in zip(precisions, means)))
    else:
        mean = sum(means) / len(means)
        cov = sum(np.linalg.inv(p) for p in precisions) / len(precisions)
        precision = np.linalg.inv(cov)
    merged.set_precision(index, mean, (precision + precision.T) / 2.0)
    return merged
