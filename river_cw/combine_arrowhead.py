"""Mixing arrowhead Gaussians (`river_cw.arrowhead`): the rules of `river_cw.combine`, block by
block, in the family's own parameters.

Per block the family (``covariance="arrowhead"``) is ``b ~ N(mu_b, S)``,
``w_j = a_j + k_j b + e_j``, ``e_j ~ N(0, c_j)``: the covariance holds the diagonal, the
intercept's row and ``Sigma_jk = k_j k_k S`` elsewhere, and the precision is an arrowhead
matrix, a diagonal plus the intercept's row and column (with ``r_j = 1/c_j``)::

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

References: Crammer, Dredze and Pereira 2012 (JMLR 13), section 7.10, the combinations;
McDonald, Hall and Mann 2010 (NAACL), iterative parameter mixing.
"""

from __future__ import annotations

import math

from .arrowhead import ArrowheadGaussian

__all__ = ["mix"]


def mix(gaussians: list, method: str, base):
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
