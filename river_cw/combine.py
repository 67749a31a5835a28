"""Merging Gaussian models: of disjoint shards (Crammer, Dredze and Pereira, JMLR 2012, section
7.10), and of models that learned their shards since a common start (iterative mixing).

Without a base, ``combine`` is the paper's combination of models trained from the prior on
disjoint shards. With ``base=``, the models all started from the same Gaussian ``N(mu0,
Sigma0)`` (the base, e.g. the model of the last mixing round) and each learned its own shard
since; this is iterative parameter mixing (McDonald, Hall and Mann, NAACL 2010, who average
perceptrons after each epoch) for Gaussian models, done many times during a stream.

The delta rule (``method="kl"``). Write a Gaussian in natural parameters, precision
``P = Sigma^-1`` and precision-weighted mean ``h = P mu``. Every update of the family adds
evidence to the precision (``P += gamma d d'``, section 2 of the paper), and a model that learned
shard i from the base holds ``N_i ~ N_0 L_i``, the base times the likelihood-like factor of its
shard. The model that learned every shard holds ``N_0 prod_i L_i = prod_i N_i / N_0^(n-1)``: the
product of the members' Gaussians divided by the common one counted n - 1 times. A product of
Gaussians adds natural parameters, a division subtracts them, so per weight

    P = P0 + sum_i (P_i - P0)        h = h0 + sum_i (h_i - h0)        mu = h / P

Each member's change of precision and of precision-weighted mean is added to the common start,
each shard's evidence counted once. The paper's plain product (``base=None``) counts the common
part n times; an average of precisions (the minimiser of the summed KL divergences) counts each
shard's evidence 1/n times. Since precisions only grow, ``P >= P_i > 0`` for members that
descend from the base: the rule is always a proper Gaussian. With diagonal covariance it holds
per weight; with full covariance for the matrices.

The moment analogue (``method="l2"``). The paper's L2 combination averages the means and the
covariances; with a base its delta analogue adds each member's change of the mean to the base
mean, ``mu = mu0 + sum_i (mu_i - mu0)``, and each member's change of the variance in the log
domain, ``s = s0 prod_i (s_i / s0)``: adding the variance changes themselves would drive a
variance negative as soon as the members together removed more than it had (two members that
each halve a variance would leave nothing), while in the log domain it stays in ``(0, s0]``
and agrees with the sum of the changes to first order. The arrowhead's analogue is below.

The arrowhead (``covariance="arrowhead"``, `river_cw.arrowhead`). Per block the family is
``b ~ N(mu_b, S)``, ``w_j = a_j + k_j b + e_j``, ``e_j ~ N(0, c_j)``: the covariance holds the
diagonal, the intercept's row and ``Sigma_jk = k_j k_k S`` elsewhere, and the precision is an
arrowhead matrix, a diagonal plus the intercept's row and column (with ``r_j = 1/c_j``)::

    P_jj = r_j      P_bj = -k_j r_j      P_bb = 1/S + sum_j k_j^2 r_j
    h_j  = a_j r_j                       h_b  = mu_b/S - sum_j k_j a_j r_j

(h = P mu with ``mu_j = a_j + k_j mu_b``). Natural parameters add entry by entry, and a sum of
arrowhead precisions is an arrowhead precision: the delta rule (and the product) of members of
the family is in the family, with no projection, the exact Gaussian the dense rule gives (unlike
a single step, which the arrowhead's update must project back, `river_cw.arrowhead`). Reading
the family's parameters back: per feature, with weights ``w_i = 1`` for a member and ``-(n - 1)``
for the base (over the members that changed it; every member, weight 1, without a base),

    r = sum_i w_i r_i      k = sum_i w_i r_i k_i / r      a = sum_i w_i r_i a_i / r

and the root's marginal precision ``t = 1/S`` (the Schur complement ``P_bb - sum_j k_j^2 r_j``)
and ``u = mu_b / S`` take the same rule plus each feature's spread of the members' loadings:

    t = sum_i w_i / S_i + sum_j sum_i w_i r_ij (k_ij - k_j)^2
    u = sum_i w_i mu_b_i / S_i - sum_j sum_i w_i r_ij (k_ij - k_j)(a_ij - a_j)

O(features x members), no matrix formed. A feature that one member changed alone takes that
member's ``(a_j, k_j, c_j)`` and adds nothing to the root's correction; so mixing copies of an
unchanged model returns the model bit for bit, and so does mixing one changed member with
unchanged ones. Without a base the correction is a weighted variance (never negative) and the
product is a proper Gaussian. With a base every ``r`` is at least each member's, but the
arrowhead's projected steps do not make ``P_i - P0`` positive semi-definite (only its latent
precisions grow), so the root's ``t`` could in principle fall to 0: the mix then raises
`ValueError` (never seen in 1,500 rounds of eight members on dense uncentred streams). The moment
analogue without a base averages the means and covariances and keeps what the family keeps,
``S``, ``Sigma_bj`` and ``Sigma_jj`` (the M-projection, as the arrowhead's "drop" step does);
from a base it is the diagonal's rule on the family's own parameters, those of the latent
coordinates (b, e) where the family is diagonal: the changes of ``mu_b``, ``a_j`` and ``k_j``
add, those of the latent variances ``S`` and ``c_j`` add in the log domain (so they stay in
``(0, s0]``); a parameter one member changed alone takes its value.

A weight whose variance underflowed to 0 is a point mass: the result takes the average of the
point masses' means, with variance 0. A weight that only one member changed takes that member's
value exactly, and a weight no member changed keeps the base's: mixing copies of an unchanged
model returns the model, bit for bit.

Labels: models are aligned on one label list before their weights meet. Binary models that know
both labels hold them in the same order (their weights score `positive_label`, whichever label
came first), so they meet as they are; a model that knows one label learned it as y = -1 and is
negated (its Gaussian over ``-w``) where that label is the positive one. When the union of the
labels has three or more, binary models are lifted to one block per label as the classifiers do
at their third label (``[empty, w]``; a model that knew one label keeps ``-w`` on its block) and
blocks of labels a model never saw are empty (the prior). With a base, every member must extend
the base's label list (as a model that started from it does); a base that knew exactly one label
and learned from it cannot be aligned with members that learned different second labels.

An intercept (a classifier's bias weight) is a weight of the Gaussian like any other and is
mixed with the others. Pipelines mix their last step, a Gaussian classifier; the other steps
must be identical in every model (stateless ones such as a bag of words). Voted RDA keeps no
Gaussian and cannot be mixed.
"""

from __future__ import annotations

import copy
import math
import pickle

import numpy as np
from river import compose

from .arrowhead import ArrowheadGaussian, PythonArrowheadGaussian
from .base import GaussianClassifier
from .gaussian import DiagonalGaussian, FullGaussian, PythonDiagonalGaussian
from .labels import order_key
from .text import TextClassifier

__all__ = ["changes", "combine"]

METHODS = ("kl", "l2")
ARROWHEADS = (ArrowheadGaussian, PythonArrowheadGaussian)  # the compiled engine and the Python one


def combine(models: list, method: str = "kl", base=None):
    """Merge models of the same class and hyper-parameters into one (see the module docstring).

    ``"kl"`` without `base` is the paper's "KL" combination: ``Sigma^-1 = sum_c Sigma_c^-1`` and
    ``mu = Sigma sum_c Sigma_c^-1 mu_c``, the normalised product of the models' Gaussians (note
    that the Gaussian minimising the summed KL divergence ``sum_c KL(N || N_c)`` would instead
    average the precisions). ``"l2"`` averages the means and the covariances. A weight a model
    never learned counts with its prior (mean 0, variance `initial_variance`); a weight no model
    learned keeps the prior. The models must have seen the same labels, in any order.

    With `base`, a model every member started from, the members' changes since the base are
    added to it: ``"kl"`` adds the changes of precision and of precision-weighted mean (the
    product of the members' Gaussians divided by the base's counted n - 1 times), ``"l2"`` the
    changes of the mean and, in the log domain, of the variance. A weight absent from a member
    has the base's value. Members may have learned labels the base had not seen.

    Parameters
    ----------
    models
        Models of one class and one set of hyper-parameters: Gaussian classifiers (any
        covariance; full covariance mixes from a base with ``"kl"`` only), pipelines ending in one (e.g. ``BagOfWords()
        | AROW()``) whose other steps are identical, or `river_cw.text.TextClassifier`s of the
        same text options. They are not modified.
    method
        ``"kl"`` (precisions and precision-weighted means add) or ``"l2"`` (means and
        covariances average; with `base`, mean changes add and variance changes add in the log
        domain).
    base
        The model every member started from (the last mix), or None for models trained from
        the prior on disjoint shards.

    Returns
    -------
    A new model of the members' class, or `ValueError` when the models cannot be mixed (voted
    RDA, river's models, other hyper-parameters, pipelines with different steps).

    Examples
    --------

    >>> import copy
    >>> import river_cw
    >>> a, b = river_cw.AROW(), river_cw.AROW()
    >>> a.learn_one({"x": 1.0}, True)
    >>> a.learn_one({"x": -1.0}, False)
    >>> b.learn_one({"x": -1.0}, False)
    >>> b.learn_one({"x": 1.0}, True)
    >>> merged = river_cw.combine([a, b], method="kl")
    >>> merged.predict_one({"x": 2.0})
    True

    Mixing rounds: members copied from a base learn, then continue from their mix.

    >>> start = river_cw.AROW()
    >>> start.learn_one({"x": 1.0}, True)
    >>> members = [copy.deepcopy(start) for _ in range(3)]
    >>> members[0].learn_one({"y": 1.0}, False)
    >>> members[1].learn_one({"z": 1.0}, True)
    >>> mixed = river_cw.combine(members, base=start)
    >>> sorted(mixed.weights) == ["x", "y", "z"]
    True
    >>> river_cw.combine([start, start], base=start).weights == start.weights
    True

    References
    ----------
    [^1]: Crammer, K., Dredze, M. and Pereira, F., 2012. Confidence-weighted linear
    classification for text categorization. JMLR 13, 1891-1926 (section 7.10).
    [^2]: McDonald, R., Hall, K. and Mann, G., 2010. Distributed training strategies for the
    structured perceptron. NAACL.

    """
    if method not in METHODS:
        raise ValueError(f"method must be 'kl' or 'l2', got {method!r}")
    models = list(models)
    if not models:
        raise ValueError("combine needs at least one model")
    every = models if base is None else [*models, base]
    if any(isinstance(model, compose.Pipeline) for model in every):
        return _combine_pipelines(models, method, base)
    if any(isinstance(model, TextClassifier) for model in every):
        _same_text_options(every)
        mixed = combine([model.classifier for model in models], method, base and base.classifier)
        return models[0].clone({"classifier": mixed})
    first = models[0]
    for model in every:
        if not isinstance(model, GaussianClassifier):
            raise ValueError(
                f"cannot mix {type(model).__name__}: only Gaussian classifiers (CW, AROW, "
                "NHERD, SOP, SCW) keep a Gaussian over their weights"
            )
        if type(model) is not type(first) or model._get_params() != first._get_params():
            raise ValueError("combine needs models of the same class and hyper-parameters")
    if base is None:
        for model in models[1:]:
            if set(model.classes_) != set(first.classes_):
                raise ValueError(
                    f"combine needs models that saw the same labels: "
                    f"{first.classes_!r} vs {model.classes_!r}"
                )
        labels = list(first.classes_)  # a binary model's two labels are in their order
    else:
        labels = _extended_labels(models, base)
    gaussians = [_aligned(model, labels) for model in models]
    merged = first.clone()
    skipped = [model.n_skipped_updates for model in models]
    if base is None:
        merged.set_gaussian(_combine_plain(gaussians, method), labels)
        merged.n_skipped_updates = sum(skipped)
    else:
        merged.set_gaussian(_combine_from(gaussians, _aligned(base, labels), method), labels)
        merged.n_skipped_updates = base.n_skipped_updates + sum(
            s - base.n_skipped_updates for s in skipped
        )
    return merged


def changes(model, base):
    """What `model` learned since `base`: a copy of it holding only the weights whose mean or
    variance differ from the base's (with the arrowhead, whose ``(a_j, k_j, c_j)`` or root
    differ; all of them with full covariance).

    `combine(..., base=base)` takes a weight absent from a member for the base's, so mixing
    these is mixing the models themselves, with far less to store or send when each learned a
    few examples. On its own it is no model to predict with (its other weights are missing).

    Parameters
    ----------
    model
        A model that learned since `base` (of its class and hyper-parameters; a pipeline or a
        `river_cw.text.TextClassifier` as in `combine`).
    base
        The model `model` started from.

    Examples
    --------

    >>> import copy
    >>> import river_cw
    >>> start = river_cw.AROW()
    >>> start.learn_one({"a": 1.0, "b": 1.0}, True)
    >>> model = copy.deepcopy(start)
    >>> model.learn_one({"b": 1.0, "c": 1.0}, False)
    >>> sorted(river_cw.changes(model, start).weights)
    ['b', 'c']
    >>> river_cw.combine([river_cw.changes(model, start)], base=start).weights == model.weights
    True

    """
    if isinstance(model, compose.Pipeline) or isinstance(base, compose.Pipeline):
        last = _last_step([model, base])
        head = copy.deepcopy(list(model.steps.items())[:-1])
        return compose.Pipeline(*head, (last, changes(model.steps[last], base.steps[last])))
    if isinstance(model, TextClassifier) or isinstance(base, TextClassifier):
        _same_text_options([model, base])
        return model.clone({"classifier": changes(model.classifier, base.classifier)})
    labels = _extended_labels([model], base)
    if model.covariance == "full":
        return copy.deepcopy(model)
    gaussian = _aligned(model, labels)
    changed = [  # assigned whole: the compiled engines' `blocks` is a copy
        {f: w for f, w in block.items() if start.get(f) != w}
        for block, start in zip(gaussian.blocks, _aligned(base, labels).blocks)
    ]
    delta: PythonDiagonalGaussian | PythonArrowheadGaussian
    if model.covariance == "diagonal":
        delta = diagonal = DiagonalGaussian(model.initial_variance)
        diagonal.blocks = changed
        diagonal.reset_bound()
    else:
        delta = ArrowheadGaussian(gaussian.initial_variance, gaussian.root, gaussian.root_variance)
        delta.blocks = changed
    out = copy.copy(model)
    out.set_gaussian(delta, labels)
    return out


def _last_step(pipelines: list) -> str:
    """The name of the last step of pipelines whose other steps are identical."""
    if not all(isinstance(model, compose.Pipeline) for model in pipelines):
        raise ValueError("cannot mix pipelines with models that are not pipelines")
    names = list(pipelines[0].steps)
    head = [pickle.dumps(step) for step in list(pipelines[0].steps.values())[:-1]]
    for model in pipelines:
        if list(model.steps) != names:
            raise ValueError(f"cannot mix pipelines of other steps: {names} vs {list(model.steps)}")
        for name, step, state in zip(names, model.steps.values(), head):
            if pickle.dumps(step) != state:
                raise ValueError(
                    f"cannot mix pipelines whose step {name!r} differs between the models: "
                    "only the last step, the Gaussian classifier, is mixed"
                )
    return names[-1]


def _same_text_options(models: list) -> None:
    """`ValueError` unless the models are text classifiers of the same text options."""
    if not all(isinstance(model, TextClassifier) for model in models):
        raise ValueError("cannot mix text classifiers with models that are not")
    options = [
        {k: v for k, v in model._get_params().items() if k != "classifier"} for model in models
    ]
    if any(other != options[0] for other in options):
        raise ValueError(
            "cannot mix text classifiers of other text options: only the classifier is mixed"
        )


def _combine_pipelines(models: list, method: str, base):
    """Mix the last steps of pipelines whose other steps are identical."""
    first = models[0]
    last = _last_step(models if base is None else [*models, base])
    mixed = combine(
        [model.steps[last] for model in models],
        method,
        None if base is None else base.steps[last],
    )
    head = copy.deepcopy(list(first.steps.items())[:-1])
    return compose.Pipeline(*head, (last, mixed))  # a new pipeline: river caches its plan


def _extended_labels(models: list, base) -> list:
    """The base's labels, then the members' new ones in order of appearance (two labels in the
    binary models' order, `LinearClassifier.positive_label`); every member must extend the base's
    labels (a base of one label may become either of a member's two)."""
    known = list(base.classes_)
    labels = list(known)
    for model in models:
        prefix = list(model.classes_[: len(known)]) == known
        if not set(known) <= set(model.classes_) or (len(known) > 1 and not prefix):
            raise ValueError(
                f"a member with labels {model.classes_!r} did not start from the base "
                f"(labels {known!r}): its labels must extend the base's"
            )
        labels += [c for c in model.classes_ if c not in labels]
    if len(known) == 1 and len(labels) >= 3 and base.weights:
        raise ValueError(
            f"cannot mix members that learned the labels {labels[1:]!r} after a base that knew "
            f"only {known[0]!r}: its weights score it against whichever label came next"
        )
    return _binary_order(labels)


def _binary_order(labels: list) -> list:
    """Two labels as a binary model holds them, ``[negative, positive]``; more as they are."""
    return sorted(labels, key=order_key) if len(labels) == 2 else labels


def _aligned(model: GaussianClassifier, labels: list):
    """The model's Gaussian with blocks laid out for `labels` (see the module): itself when it
    is laid out so, else a copy."""
    gaussian = model.gaussian
    known = list(model.classes_)
    if known == labels or (len(labels) <= 2 and (not known or known[0] == labels[0])):
        return gaussian
    gaussian = pickle.loads(pickle.dumps(gaussian, protocol=pickle.HIGHEST_PROTOCOL))
    if len(labels) <= 2:
        gaussian.negate()  # one label, learned as y = -1, is the positive one of `labels`
        return gaussian
    if model.is_binary:  # one block per label, as `LinearClassifier._register` lifts
        if len(known) == 1:
            gaussian.negate()
        gaussian.lift()
        known = [None] * (2 - len(known)) + known
    missing = [c for c in labels if c not in known]
    known = [missing.pop(0) if c is None else c for c in known]
    for label in missing:
        gaussian.add_block()
        known.append(label)
    gaussian.reorder([known.index(c) for c in labels])
    return gaussian


def _combine_plain(gaussians: list, method: str):
    if isinstance(gaussians[0], DiagonalGaussian):
        return _combine_diagonal(gaussians, method, None)
    if isinstance(gaussians[0], ARROWHEADS):
        return _combine_arrowhead(gaussians, method, None)
    return _combine_full(gaussians, method, None)


def _combine_from(gaussians: list, base, method: str):
    if isinstance(base, DiagonalGaussian):
        return _combine_diagonal(gaussians, method, base)
    if isinstance(base, ARROWHEADS):
        return _combine_arrowhead(gaussians, method, base)
    if method != "kl":
        raise ValueError("full covariance mixes from a base with method='kl' only")
    return _combine_full(gaussians, method, base)


def _combine_diagonal(gaussians: list, method: str, base) -> PythonDiagonalGaussian:
    prior = gaussians[0].initial_variance
    merged = DiagonalGaussian(prior)
    merged_blocks = []  # assigned whole: the compiled engine's `blocks` is a copy
    base_blocks = [{}] * len(gaussians[0].blocks) if base is None else base.blocks
    for start, *blocks in zip(base_blocks, *(g.blocks for g in gaussians)):
        if base is None:
            combined = {}
            for f in dict.fromkeys(key for block in blocks for key in block):
                pairs = [block.get(f, (0.0, prior)) for block in blocks]
                combined[f] = _product(pairs) if method == "kl" else _average(pairs)
        else:  # the base's weights, and those the members have, mixed
            combined = {f: [mu, s] for f, (mu, s) in start.items()}
            for f in dict.fromkeys(key for block in blocks for key in block):
                combined[f] = _delta(f, start.get(f, (0.0, prior)), blocks, method)
        merged_blocks.append(combined)
    merged.blocks = merged_blocks
    merged.reset_bound()
    return merged


def _average(pairs: list) -> list:
    n = len(pairs)
    return [sum(mu for mu, _ in pairs) / n, sum(s for _, s in pairs) / n]


def _product(pairs: list) -> list:
    """``[mean, variance]`` of the normalised product of 1-D Gaussians ``(mean, variance)``.

    A variance that underflowed to 0 (or whose precision overflows) is a point mass: the
    product is then the point masses' average mean with variance 0, never a division by 0."""
    certain = [mu for mu, s in pairs if s == 0.0 or 1.0 / s == math.inf]
    if certain:
        return [math.fsum(certain) / len(certain), 0.0]
    precision = sum(1.0 / s for _, s in pairs)
    weighted = sum(mu / s for mu, s in pairs)
    if math.isfinite(precision) and math.isfinite(weighted):
        return [weighted / precision, 1.0 / precision]
    # precisions whose sum float64 cannot hold: the same product, scaled by the least variance
    least = min(s for _, s in pairs)
    shares = [least / s for _, s in pairs]  # in (0, 1]
    total = math.fsum(shares)
    return [math.fsum(r * mu for r, (mu, _) in zip(shares, pairs)) / total, least / total]


def _delta(feature, start, blocks: list, method: str) -> list:
    """One weight mixed from its base value `start` (``(mean, variance)``) by the delta rule."""
    mu0, s0 = start
    changed = []
    for block in blocks:
        pair = block.get(feature)
        if pair is None or (pair[0] == mu0 and pair[1] == s0):
            continue
        if not pair[1] <= s0:
            raise ValueError(
                f"a member's variance of {feature!r} grew from the base's ({s0!r} to "
                f"{pair[1]!r}): it did not start from the base"
            )
        changed.append(pair)
    if not changed:
        return [mu0, s0]
    if len(changed) == 1:
        return list(changed[0])
    k = len(changed)
    if method == "l2":
        mean = math.fsum([mu0, *(mu - mu0 for mu, _ in changed)])
        variance = s0
        for _, s in changed:
            variance *= s / s0
        return [mean, variance]
    certain = [mu for mu, s in changed if s == 0.0 or 1.0 / s == math.inf]
    if certain:
        return [math.fsum(certain) / len(certain), 0.0]
    try:
        precision = math.fsum([*(1.0 / s for _, s in changed), -(k - 1) / s0])
        weighted = math.fsum([*(mu / s for mu, s in changed), -(k - 1) * (mu0 / s0)])
    except OverflowError:  # a partial sum beyond float64
        precision = weighted = math.inf
    if not (math.isfinite(precision) and math.isfinite(weighted)):
        return _product(changed)  # precisions beyond float64: the members' product
    return [weighted / precision, 1.0 / precision]


def _combine_full(gaussians: list, method: str, base) -> FullGaussian:
    prior = gaussians[0].initial_variance
    merged = FullGaussian(prior)
    merged.n_blocks = gaussians[0].n_blocks
    every = gaussians if base is None else [base, *gaussians]
    keys = list(dict.fromkeys(key for g in every for key in g.index))
    index = {key: i for i, key in enumerate(keys)}
    n = len(keys)

    def embedded(g):  # on the merged index, unseen weights at the prior
        rows = np.array([index[key] for key in g.index], dtype=int)
        mean, precision = np.zeros(n), np.eye(n) / prior
        mean[rows] = g.mean
        precision[np.ix_(rows, rows)] = g.precision
        return mean, precision

    parts = [embedded(g) for g in gaussians]
    means = [mean for mean, _ in parts]
    precisions = [precision for _, precision in parts]
    if base is not None:
        mean0, precision0 = embedded(base)
        k = len(gaussians) - 1
        precision = sum(precisions) - k * precision0
        weighted = sum(p @ mu for p, mu in zip(precisions, means)) - k * (precision0 @ mean0)
        mean = np.linalg.solve(precision, weighted)
    elif method == "kl":
        precision = sum(precisions)
        mean = np.linalg.solve(precision, sum(p @ mu for p, mu in zip(precisions, means)))
    else:
        mean = sum(means) / len(means)
        cov = sum(np.linalg.inv(p) for p in precisions) / len(precisions)
        precision = np.linalg.inv(cov)
    try:
        merged.set_precision(index, mean, (precision + precision.T) / 2.0)
    except np.linalg.LinAlgError:
        raise ValueError(
            "the mixed precision is not positive definite: the members did not start from the base"
        ) from None
    return merged


# -- the arrowhead (see the module docstring) ---------------------------------------------------


def _combine_arrowhead(gaussians: list, method: str, base):
    """Mix arrowhead Gaussians block by block: ``"kl"`` by the delta rule from `base` or the
    product of the members without one; ``"l2"`` by the parameters' changes from `base` or the
    averaged moments without one."""
    first = gaussians[0]
    prior, root, root_prior = first.initial_variance, first.root, first.root_variance
    starts = [None] * len(first.blocks) if base is None else base.blocks
    merged_blocks = []  # assigned whole: the compiled engine's `blocks` is a copy
    for start, *blocks in zip(starts, *(g.blocks for g in gaussians)):
        if method == "l2" and base is None:
            merged_blocks.append(_arrowhead_moments(blocks, prior, root, root_prior))
        elif method == "l2":
            merged_blocks.append(_arrowhead_changes(blocks, start, prior, root, root_prior))
        else:
            merged_blocks.append(_arrowhead_natural(blocks, start, prior, root, root_prior))
    merged = ArrowheadGaussian(prior, root, root_prior)
    merged.blocks = merged_blocks
    return merged


def _changed(key, start, blocks: list) -> list:
    """The members' values of `key` that differ from `start` (a base's), in member order."""
    changed = [w for block in blocks if (w := block.get(key)) is not None and list(w) != start]
    for w in changed:
        if not w[-1] <= start[-1]:
            raise ValueError(
                f"a member's variance of {key!r} grew from the base's ({start[-1]!r} to "
                f"{w[-1]!r}): it did not start from the base"
            )
    return changed


def _arrowhead_natural(blocks: list, start, prior: float, root, root_prior: float) -> dict:
    """One block of the delta rule from `start` (a base's block), or of the members' product
    when `start` is None: the features' natural parameters add, then the root's, each
    feature's share of the root's precision and of its precision-weighted mean corrected by
    the spread of the members' loadings (see the module docstring)."""
    out = {} if start is None else {f: list(w) for f, w in start.items()}
    # the corrections of the root's t and u, one pair per mixed feature
    spread: list[float] = []
    tilt: list[float] = []
    features = dict.fromkeys(f for block in blocks for f in block if f is not root)
    for f in features:
        if start is None:
            parts = [[1.0, *block.get(f, (0.0, 0.0, prior))] for block in blocks]
        else:
            triple = list(start.get(f, (0.0, 0.0, prior)))
            changed = _changed(f, triple, blocks)
            if len(changed) <= 1:  # the base's or its one member's values, exactly
                out[f] = list(changed[0]) if changed else triple
                continue
            parts = [[1.0, *w] for w in changed] + [[-(len(changed) - 1), *triple]]
        out[f] = _mixed_feature(parts, spread, tilt)
    roots = [block[root] for block in blocks if root in block]
    if start is None:
        if not (roots or spread):
            return out
        pairs = [list(block.get(root, (0.0, root_prior))) for block in blocks]
        weighted = [[1.0, *pair] for pair in pairs]
    else:
        pair = list(start.get(root, (0.0, root_prior)))
        changed = _changed(root, pair, blocks)
        if not spread:  # no feature mixed from two members or more
            if changed or root in start:
                out[root] = list(changed[0]) if len(changed) == 1 else pair
            if len(changed) <= 1:
                return out
        weighted = [[1.0, *w] for w in changed] + [[-(len(changed) - 1) if changed else 1.0, *pair]]
    out[root] = _mixed_root(weighted, spread, tilt, root)
    return out


def _mixed_feature(parts: list, spread: list, tilt: list) -> list:
    """``[a, k, c]`` of one feature from the parts ``[weight, a_i, k_i, c_i]`` (weight 1 for a
    member, ``-(n - 1)`` for the base), its natural parameters ``r = 1/c``, ``-k r`` and ``a r``
    added with those weights; appends the root's corrections ``sum_i w_i r_i (k_i - k)^2`` and
    ``-sum_i w_i r_i (k_i - k)(a_i - a)`` to `spread` and `tilt`. Conditional variances that
    underflowed to 0 are point masses given the root: their average, variance 0."""
    certain = [
        (a, k) for weight, a, k, c in parts if weight > 0 and (c == 0.0 or 1.0 / c == math.inf)
    ]
    if certain:
        n = len(certain)
        return [math.fsum(a for a, _ in certain) / n, math.fsum(k for _, k in certain) / n, 0.0]
    least = min(c for weight, _, _, c in parts if weight > 0)
    shares = [weight * (least / c) for weight, _, _, c in parts]  # the precisions, times `least`
    total = math.fsum(shares)
    a = math.fsum(share * a for share, (_, a, _, _) in zip(shares, parts)) / total
    k = math.fsum(share * k for share, (_, _, k, _) in zip(shares, parts)) / total
    for share, (_, a_i, k_i, _) in zip(shares, parts):
        spread.append(share * (k_i - k) ** 2 / least)
        tilt.append(-share * (k_i - k) * (a_i - a) / least)
    return [a, k, least / total]


def _mixed_root(weighted: list, spread: list, tilt: list, root) -> list:
    """``[mu_b, S]`` of the root from ``[weight, mu_b_i, S_i]`` (the members' and base's root
    marginals) and the features' corrections: ``t = sum_i w_i / S_i + sum(spread)`` and ``u =
    sum_i w_i mu_b_i / S_i + sum(tilt)``, ``S = 1/t``, ``mu_b = u / t``."""
    certain = [mu for weight, mu, s in weighted if weight > 0 and (s == 0.0 or 1.0 / s == math.inf)]
    if certain:
        return [math.fsum(certain) / len(certain), 0.0]
    try:
        t = math.fsum([*(weight / s for weight, _, s in weighted), *spread])
        u = math.fsum([*(weight * mu / s for weight, mu, s in weighted), *tilt])
    except OverflowError:  # a partial sum beyond float64
        t = u = math.inf
    if not (math.isfinite(t) and math.isfinite(u) and t > 0.0):
        raise ValueError(
            f"the mixed precision of the intercept ({root!r}) is not positive and finite "
            f"({t!r}): the members did not start from the base"
        )
    return [u / t, 1.0 / t]


def _arrowhead_moments(blocks: list, prior: float, root, root_prior: float) -> dict:
    """One block of the moment analogue: the members' means and covariances averaged, as the
    paper's L2 does, kept where the family keeps them (the moments of the root and of every pair
    (root, feature): ``S``, ``Sigma_bj = k_j S`` and ``Sigma_jj = c_j + k_j^2 S``), which is the
    M-projection of the averaged Gaussian onto the family."""
    n = len(blocks)
    roots = [block.get(root, (0.0, root_prior)) for block in blocks]
    s = math.fsum(s_i for _, s_i in roots) / n
    mu_b = math.fsum(mu for mu, _ in roots) / n
    out = {}
    features = dict.fromkeys(f for block in blocks for f in block if f is not root)
    for f in features:
        triples = [block.get(f, (0.0, 0.0, prior)) for block in blocks]
        mean = math.fsum(a + k * mu for (a, k, _), (mu, _) in zip(triples, roots)) / n
        if s > 0.0:  # k from the averaged Cov(b, w_j); c keeps the averaged Var(w_j) (>= 0 terms)
            k = math.fsum(k * s_i for (_, k, _), (_, s_i) in zip(triples, roots)) / (n * s)
            spread = (s_i * (k_i - k) ** 2 for (_, k_i, _), (_, s_i) in zip(triples, roots))
            c = math.fsum([*(c for _, _, c in triples), *spread]) / n
        else:  # the root a point mass in every member
            k = math.fsum(k for _, k, _ in triples) / n
            c = math.fsum(c for _, _, c in triples) / n
        out[f] = [mean - k * mu_b, k, c]
    if any(root in block for block in blocks):
        out[root] = [mu_b, s]
    return out


def _arrowhead_changes(blocks: list, start: dict, prior: float, root, root_prior: float) -> dict:
    """One block of the moment analogue from `start`: the diagonal's rule on the family's own
    parameters, those of the latent coordinates (b, e), where the family is diagonal: the
    changes of ``mu_b``, ``a_j`` and ``k_j`` add, those of the latent variances ``S`` and
    ``c_j`` add in the log domain. A key that one member changed alone takes its values."""
    out = {f: list(w) for f, w in start.items()}
    for key in dict.fromkeys(f for block in blocks for f in block):
        initial = list(start.get(key, (0.0, root_prior) if key is root else (0.0, 0.0, prior)))
        changed = _changed(key, initial, blocks)
        if len(changed) <= 1:
            if changed:
                out[key] = list(changed[0])
            continue
        *shifts, variance = initial
        values = [math.fsum([x0, *(w[i] - x0 for w in changed)]) for i, x0 in enumerate(shifts)]
        for w in changed:
            variance = variance * (w[-1] / initial[-1]) if initial[-1] else 0.0
        out[key] = [*values, variance]
    return out
