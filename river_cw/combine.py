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

Where a member's change is not evidence. An exact update only adds precision, so the delta rule
is then at least as certain as every member (``P - P_i = sum_(l != i) (P_l - P0) >= 0``). Three
things break that: forgetting (``forgetting > 0`` lowers precisions), the arrowhead's
projected step (its change of the intercept's row can be indefinite: the derivation is in
`river_cw._engines.combine_arrowhead`), and a member moved to the others' centre
(`river_cw.centring`: the shift's projection onto the family). The delta rule could then be less certain than a member, or no
Gaussian at all. The fallback, the same for every covariance, is the base's discount: each
factor's base weight ``-(n - 1)`` becomes ``-lambda (n - 1)``, lambda the largest in [0, 1] that
keeps the mix at least as certain as the most certain member (lambda = 0, the product of the
members, always does, so the result is always a proper Gaussian; where the delta rule keeps it,
lambda = 1 and the result is the delta rule exactly).

The moment analogue (``method="l2"``). The paper's L2 combination averages the means and the
covariances; with a base its delta analogue adds each member's change of the mean to the base
mean, ``mu = mu0 + sum_i (mu_i - mu0)`` in the weights' own coordinates, and each member's
change of the variance in the log domain, ``s = s0 prod_i (s_i / s0)``: adding the variance
changes themselves would drive a variance negative as soon as the members together removed
more than it had (two members that each halve a variance would leave nothing), while in the log
domain it stays in ``(0, s0]`` and agrees with the sum of the changes to first order. The
arrowhead takes the log domain on its latent variances (`river_cw._engines.combine_arrowhead`), full
covariance on the matrices (log-Euclidean, `river_cw._engines.combine_full`).

The rules live with the engines they mix: `river_cw._engines.combine_diagonal` (per weight),
`river_cw._engines.combine_full` (the matrices) and `river_cw._engines.combine_arrowhead` (per factor, in the
family's own parameters). This module aligns the models' labels, pipelines and text
classifiers, and says what a model learned since a base (`changes`).

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
mixed with the others. The calibration's temperature is mixed by the same delta rule, its
curvature as a precision (`river_cw.calibration.mix`), the share of flipped labels and the
surprise of models that set their own forgetting by the examples each member saw
(`river_cw.flips.mix`, `river_cw.surprise.mix`), their log score too
where the mix centres (`river_cw.surprise.mix_log_score`). Pipelines mix their last step, a
Gaussian classifier; the other steps must be identical in every model (stateless ones such as a
bag of words). Voted RDA keeps no Gaussian and cannot be mixed.
"""

from __future__ import annotations

import copy
import pickle

from river import compose

from . import calibration, centring, covariances, flips, surprise
from .gaussian_classifier import GaussianClassifier
from .labels import order_key
from .text import TextClassifier

__all__ = ["changes", "combine"]

METHODS = ("kl", "l2")


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
    product of the members' Gaussians divided by the base's counted n - 1 times; where that
    would be less certain than a member, the base is discounted: see the module docstring),
    ``"l2"`` adds the changes of the mean exactly and, in the log domain, of the variance. A
    weight absent from a member has the base's value. Members may have learned labels the base
    had not seen. The result is always a proper Gaussian (positive definite, finite).

    Parameters
    ----------
    models
        Models of one class and one set of hyper-parameters: Gaussian classifiers (any
        covariance), pipelines ending in one (e.g. ``BagOfWords() | AROW()``) whose other steps
        are identical, or `river_cw.text.TextClassifier`s of the same text options. They are
        not modified.
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
    # the coordinates the Gaussians meet in, where the models centre their features
    frame, merged_centring = centring.common_frame(
        [model._centring for model in models], base and base._centring, base is not None
    )
    gaussians = [_framed(model, labels, frame) for model in models]
    merged = first.clone()
    merged._centring = merged_centring
    skipped = [model.n_skipped_updates for model in models]
    mixer = covariances.of(first).mixer
    # a member's variances may grow from the base's where it forgets ("auto" included), or where
    # it was moved to the frame from another centre than the base's (the shift's projection)
    moved = any(model.centre_ != frame for model in [*models, *([base] if base else [])])
    forgets = first.forgetting != 0 or moved
    merged._temperature = calibration.mix(
        [model._temperature for model in models], None if base is None else base._temperature
    )
    merged._surprise = surprise.mix(
        [model._surprise for model in models], None if base is None else base._surprise
    )
    merged._flips = flips.mix(
        [model._flips for model in models], None if base is None else base._flips
    )
    merged._log_score = (
        None
        if merged_centring is None
        else surprise.mix_log_score(
            [model._log_score for model in models], None if base is None else base._log_score
        )
    )
    if base is None:
        merged.set_gaussian(mixer.mix(gaussians, method, None, forgets), labels)
        merged.n_skipped_updates = sum(skipped)
    else:
        start = _framed(base, labels, frame)
        merged.set_gaussian(mixer.mix(gaussians, method, start, forgets), labels)
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
    only = covariances.of(model).only
    if only is None or model.centre_ != base.centre_:
        return copy.deepcopy(model)  # its weights are not held apart, or moved: all of them
    gaussian = _aligned(model, labels)
    changed = [
        {f: w for f, w in block.items() if start.get(f) != w}
        for block, start in zip(gaussian.blocks, _aligned(base, labels).blocks)
    ]
    out = copy.copy(model)
    out._temperature = copy.copy(model._temperature)  # its own: the copy shares no state
    out._surprise = copy.copy(model._surprise)
    out._log_score = copy.copy(model._log_score)
    out._flips = copy.copy(model._flips)
    out._centring = copy.deepcopy(model._centring)
    out.set_gaussian(only(gaussian, changed), labels)
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


def _framed(model: GaussianClassifier, labels: list, frame: dict):
    """`_aligned`, in coordinates centred at `frame` (``{}``: raw; `river_cw.centring.shift`):
    itself where the model's are those, else a copy."""
    gaussian = _aligned(model, labels)
    own = model.centre_
    delta = {f: frame.get(f, 0.0) - own.get(f, 0.0) for f in frame.keys() | own.keys()}
    delta = {f: d for f, d in delta.items() if d != 0.0}
    if not delta:
        return gaussian
    try:
        return model._moved(gaussian, delta)
    except ValueError as error:
        raise ValueError(
            f"cannot mix these models, moving one to the others' centre: {error}"
        ) from error


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
