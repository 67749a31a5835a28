"""Mixing diagonal Gaussians (`river_cw._engines.diagonal`): the rules of `river_cw.combine`, weight by
weight.

Every weight is its own Gaussian ``(mean, variance)``. The paper's combinations of models
trained on disjoint shards (Crammer, Dredze and Pereira, JMLR 2012, section 7.10): "KL", the
normalised product (precisions and precision-weighted means add, `_product`), and "L2", the
average of the means and of the variances (`_average`). From a base, the delta rule adds each
member's change of precision and of precision-weighted mean to the base's, and its moment
analogue each member's change of the mean, and of the variance in the log domain (`_delta`;
the derivations are `river_cw.combine`'s). A variance that underflowed to 0 is a point mass,
whose mean wins; a weight one member changed alone takes that member's value exactly.

The delta rule's fallback, the base's discount (`river_cw._engines.combine_arrowhead` derives it for the
arrowhead, of which this is the one-weight case): a member that forgot (``forgetting > 0``) can
hold less precision than the base, and the delta rule ``P = P0 + sum_i (P_i - P0)`` then counts
the base's forgotten precision once per member and can fall below every member's, or below 0.
The base's weight ``-(n - 1)`` becomes ``-lambda (n - 1)``, lambda the largest in [0, 1] with
``P >= max_i P_i`` (the mix at least as certain as its most certain member). At lambda = 0 that
holds (``P = sum_i P_i``), so the result is always a proper Gaussian; without forgetting every
change adds precision, ``P >= P_i`` for every member, and lambda is 1: the delta rule exactly.
"""

from __future__ import annotations

import math

from .diagonal import DiagonalGaussian, PythonDiagonalGaussian

__all__ = ["log_domain", "mix"]


def mix(gaussians: list, method: str, base, forgets: bool = False) -> PythonDiagonalGaussian:
    """The members' `gaussians` mixed by `method` (``"kl"`` or ``"l2"``), from `base` (a diagonal
    Gaussian they all started from) or, with None, as models of disjoint shards. `forgets`: the
    models forget, so a member's variance may have grown since the base."""
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
                combined[f] = _delta(f, start.get(f, (0.0, prior)), blocks, method, forgets)
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


def _delta(feature, start, blocks: list, method: str, forgets: bool) -> list:
    """One weight mixed from its base value `start` (``(mean, variance)``) by the delta rule
    (with the base's discount where the members forgot, see the module docstring)."""
    mu0, s0 = start
    changed = []
    for block in blocks:
        pair = block.get(feature)
        if pair is None or (pair[0] == mu0 and pair[1] == s0):
            continue
        if not (pair[1] <= s0 or forgets):
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
        return [mean, log_domain(s0, [s for _, s in changed])]
    certain = [mu for mu, s in changed if s == 0.0 or 1.0 / s == math.inf]
    if certain or s0 == 0.0:
        return [math.fsum(certain or [mu0]) / len(certain or [mu0]), 0.0]
    try:
        members = [1.0 / s for _, s in changed]
        precision = math.fsum([*members, -(k - 1) / s0])
        weighted = math.fsum([*(mu / s for mu, s in changed), -(k - 1) * (mu0 / s0)])
    except OverflowError:  # a partial sum beyond float64
        precision = weighted = math.inf
    if not (math.isfinite(precision) and math.isfinite(weighted)):
        return _product(changed)  # precisions beyond float64: the members' product
    floor = max(members)
    if not precision >= floor * (1.0 - 1e-12):  # the base's discount
        lam = (math.fsum(members) - floor) / ((k - 1) / s0)
        precision = math.fsum([*members, -lam * (k - 1) / s0])
        weighted = math.fsum([*(mu / s for mu, s in changed), -lam * (k - 1) * (mu0 / s0)])
    return [weighted / precision, 1.0 / precision]


def log_domain(s0: float, variances: list) -> float:
    """A variance whose changes from `s0` add in the log domain, ``s0 prod_i (s_i / s0)``: in
    ``(0, s0]`` when every member's shrank (and at most each of theirs, whatever the product's
    rounding); at most the largest of the models' where forgetting made some grow."""
    if s0 == 0.0:
        return 0.0
    s = s0
    for s_i in variances:
        s *= s_i / s0
    if all(s_i <= s0 for s_i in variances):
        return min([s, *variances])
    return min(s, max([s0, *variances]))
