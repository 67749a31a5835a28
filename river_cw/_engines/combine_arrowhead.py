"""Mixing arrowhead Gaussians (`river_cw._engines.arrowhead`): the rules of `river_cw.combine`, block by
block, in the family's own parameters.

The family. Per block, ``b ~ N(mu_b, S)`` (the intercept, the *root*) and ``w_j = a_j + k_j b +
e_j``, ``e_j ~ N(0, c_j)``: the density factorises into the root's marginal and one conditional
per feature, ``p(b) prod_j p(w_j | b)``, and so do its natural parameters (precision P and
``h = P mu``), a sum of one term per factor. With ``r_j = 1/c_j`` the conditional of feature j
contributes the quadratic ``r_j (w_j - a_j - k_j b)^2`` in ``(w_j, b)``, the root ``(b -
mu_b)^2 / S``; summed, the precision is an arrowhead matrix (a diagonal plus the intercept's row
and column)::

    P_jj = r_j      P_bj = -k_j r_j      P_bb = 1/S + sum_j k_j^2 r_j
    h_j  = a_j r_j                       h_b  = mu_b/S - sum_j k_j a_j r_j

and it is positive definite exactly when every ``r_j > 0`` and the root's marginal precision
``t = 1/S`` (the Schur complement ``P_bb - sum_j k_j^2 r_j``) is > 0.

Combining factor by factor. A weighted sum of the models' terms of one factor (weight 1 for a
member, ``-beta`` for the base) is again such a term plus a remainder in b alone: with ``r =
sum_i w_i r_i``, ``k = sum_i w_i r_i k_i / r`` and ``a = sum_i w_i r_i a_i / r``,

    sum_i w_i r_i (w_j - a_i - k_i b)^2 = r (w_j - a - k b)^2 + spread b^2 - 2 tilt b + const
    spread = sum_i w_i r_i (k_i - k)^2        tilt = -sum_i w_i r_i (k_i - k)(a_i - a)

so the features' remainders join the root's: ``t = sum_i w_i / S_i + sum_j spread_j`` and ``u =
mu_b t = sum_i w_i mu_b_i / S_i + sum_j tilt_j``. Natural parameters add entry by entry, so this
is the dense rule's Gaussian exactly, O(features x members), no matrix formed. A factor that one
member changed alone takes that member's numbers and adds no remainder, so mixing copies of an
unchanged model returns it bit for bit, and so does mixing one changed member with unchanged
ones.

Without a base (the paper's product) every weight is 1: each remainder is a weighted variance
(>= 0), r and t only grow, and the product is a proper Gaussian.

What a member adds, from a base. The delta rule gives the base the weight ``-(n - 1)`` in each
factor n members changed: ``P = P0 + sum_i (P_i - P0)``, where ``P_i - P0``, "the precision a
member added", is the sum of its factors' changes. The root's change ``1/S_i - 1/S0`` is >= 0,
and so is each ``r_ij - r0_j`` (without forgetting); but the change of a conditional whose
loading moved is indefinite: as a quadratic form in ``(w_j, b)`` its determinant is ``-r_ij r0_j
(k_ij - k0_j)^2``. The whole change is positive semi-definite, evidence as an exact Bayesian
update adds, only when the root's gain pays for the loadings' moves::

    1/S_i - 1/S0 >= sum_j (k_ij - k0_j)^2 / (c0_j - c_ij)

The dense rule's step ensures that; the arrowhead's projected step (`river_cw._engines.arrowhead`) grows
the latent precisions but not this sum, and neither does forgetting (which lowers precisions).
The delta rule then subtracts more precision of the intercept than the members added: with the
default model on text, t fell below 0 within a few rounds.

The fallback: the base's discount. Each factor's base weight becomes ``-lambda (n - 1)`` with
``lambda`` in ``[0, 1]``: 1 is the delta rule, 0 the product of the members' terms (the common
start counted once per member that changed the factor). Take the largest lambda for which the
mix is at least as certain about the factor as the most certain member that changed it:
``r_j >= max_i r_ij`` for a feature, ``t >= max_i 1/S_i`` for the root (``1/S0`` when no member
changed the root). Then

- it is a valid Gaussian: every ``r_j > 0`` and ``t > 0``, so the arrowhead precision is
  positive definite (and finite: the floor is a member's);
- such a lambda exists: at 0 every weight is positive, each remainder a weighted variance, so
  ``r_j = sum_i r_ij`` and ``t >= sum_i 1/S_i`` meet the floor;
- it is found exactly: with ``P(lambda) = P(1) + (1 - lambda) Q``, Q the base's terms (each
  positive semi-definite), r_j and t only fall as lambda grows; a feature's lambda is linear in
  its ``r_j`` (closed form), the root's in its t once the features' are fixed (closed form), and
  where even the root's lambda 0 falls short, one cap on every feature's lambda is found by
  bisection (t is monotone in it);
- it reduces to the delta rule where that is a combination of evidence: when every member's
  change is positive semi-definite, ``P = P_i + sum_(l != i) (P_l - P0) >= P_i`` for each member,
  so ``r_j >= r_ij`` and ``t >= 1/S_i`` (a marginal precision grows with the joint one), and
  lambda is 1. The diagonal covariance's rule is this one per weight (`river_cw._engines.combine_diagonal`).

The moment analogue. Without a base it averages the members' means and covariances and keeps
what the family keeps, ``S``, ``Sigma_bj = k_j S`` and ``Sigma_jj = c_j + k_j^2 S`` (the
M-projection, as the arrowhead's "drop" step does). From a base, the mean is the base's plus
the members' changes of the mean, exactly as `river_cw.combine` promises, in the weights' own
coordinates: ``mu_j = mu0_j + sum_i (mu_ij - mu0_j)`` with ``mu_j = a_j + k_j mu_b``, every
member counted, since a member that moved the intercept moved every weight loaded on it; the
covariance is the diagonal's rule on the family's latent coordinates (b, e), where it is
diagonal: the loadings' changes add, the latent variances' ``S`` and ``c_j`` add in the log
domain (``s = s0 prod_i (s_i / s0)``, positive, and at most the largest of the models' when
forgetting made some grow), and ``a_j = mu_j - k_j mu_b`` places the mean. Every variance
positive, the result is a valid Gaussian.

References: Crammer, Dredze and Pereira 2012 (JMLR 13), section 7.10, the combinations;
McDonald, Hall and Mann 2010 (NAACL), iterative parameter mixing.
"""

from __future__ import annotations

import math

from .arrowhead import ArrowheadGaussian
from .combine_diagonal import log_domain

__all__ = ["mix"]

BISECTIONS = 60  # halvings of the features' cap on the base's discount (to 2^-60)


def mix(gaussians: list, method: str, base, forgets: bool = False):
    """Mix arrowhead Gaussians block by block: ``"kl"`` by the delta rule from `base` (with the
    base's discount where it is not a combination of evidence) or the product of the members
    without one; ``"l2"`` by the changes of the mean from `base` or the averaged moments
    without one. `forgets`: the models forget, so a member's variances may have grown since the
    base (otherwise `ValueError`: it did not start from the base)."""
    first = gaussians[0]
    prior, root, root_prior = first.initial_variance, first.root, first.root_variance
    starts = [None] * len(first.blocks) if base is None else base.blocks
    merged_blocks = []  # assigned whole: the compiled engine's `blocks` is a copy
    for start, *blocks in zip(starts, *(g.blocks for g in gaussians)):
        if method == "l2" and base is None:
            merged_blocks.append(_arrowhead_moments(blocks, prior, root, root_prior))
        elif method == "l2":
            _check_descent(blocks, start, prior, root, root_prior, forgets)
            merged_blocks.append(_arrowhead_changes(blocks, start, prior, root, root_prior))
        else:
            if start is not None:
                _check_descent(blocks, start, prior, root, root_prior, forgets)
            merged_blocks.append(_arrowhead_natural(blocks, start, prior, root, root_prior))
    merged = ArrowheadGaussian(prior, root, root_prior)
    merged.blocks = merged_blocks
    return merged


def _changed(key, start, blocks: list) -> list:
    """The members' values of `key` that differ from `start` (a base's), in member order."""
    return [w for block in blocks if (w := block.get(key)) is not None and list(w) != start]


def _check_descent(blocks: list, start: dict, prior, root, root_prior, forgets: bool) -> None:
    """`ValueError` for a member whose latent variance grew from the base's, which no model
    that does not forget can do: it did not start from the base."""
    if forgets:
        return
    for block in blocks:
        for key, w in block.items():
            initial = start.get(key, (0.0, root_prior) if key is root else (0.0, 0.0, prior))
            if not w[-1] <= initial[-1]:
                raise ValueError(
                    f"a member's variance of {key!r} grew from the base's ({initial[-1]!r} to "
                    f"{w[-1]!r}): it did not start from the base"
                )


class _Feature:
    """A feature that two members or more changed since the base: its factor mixed with the
    base's weight ``-lam (n - 1)``, `lam` the largest in [0, 1] (at most `cap`) that keeps
    ``r >= max_i r_i`` (the module docstring)."""

    def __init__(self, changed: list, start: list | None):
        self.changed, self.start = changed, start or [0.0, 0.0, 1.0]
        self.least = min(c for _, _, c in changed)  # the most certain member's variance
        self.members = [self.least / c for _, _, c in changed]  # members' precisions x least
        self.base = 0.0 if start is None else (len(changed) - 1) * (self.least / start[2])
        total = math.fsum([*self.members, -self.base])
        self.lam = 1.0 if total >= 1.0 else (math.fsum(self.members) - 1.0) / self.base

    def mixed(self, cap: float = 1.0) -> tuple[list, list, list]:
        """``[a, k, c]`` and the factor's terms of the root's spread and tilt."""
        shares = [*self.members, -min(self.lam, cap) * self.base]
        parts = [*self.changed, self.start]
        total = math.fsum(shares)
        a = math.fsum(s * p[0] for s, p in zip(shares, parts)) / total
        k = math.fsum(s * p[1] for s, p in zip(shares, parts)) / total
        spread = [s * (p[1] - k) ** 2 / self.least for s, p in zip(shares, parts)]
        tilt = [-s * (p[1] - k) * (p[0] - a) / self.least for s, p in zip(shares, parts)]
        return [a, k, self.least / total], spread, tilt


def _arrowhead_natural(blocks: list, start, prior: float, root, root_prior: float) -> dict:
    """One block of the delta rule from `start` (a base's block, with the base's discount where
    needed), or of the members' product when `start` is None (see the module docstring)."""
    if start is None:
        return _arrowhead_product(blocks, prior, root, root_prior)
    out = {f: list(w) for f, w in start.items()}
    pending: dict = {}  # feature -> _Feature, mixed from two members or more
    for f in dict.fromkeys(f for block in blocks for f in block if f is not root):
        triple = list(start.get(f, (0.0, 0.0, prior)))
        changed = _changed(f, triple, blocks)
        certain = [(a, k) for a, k, c in changed if c == 0.0 or 1.0 / c == math.inf]
        if len(changed) <= 1 or certain or triple[2] == 0.0:
            out[f] = _point_or_one(changed, certain, triple)
            continue
        pending[f] = _Feature(changed, triple)
    pair = list(start.get(root, (0.0, root_prior)))
    changed = _changed(root, pair, blocks)
    if not pending:  # no feature mixed from two members or more
        if changed or root in start:
            out[root] = list(changed[0]) if len(changed) == 1 else pair
        if len(changed) <= 1:
            return out
    mixed = {f: feature.mixed() for f, feature in pending.items()}
    root_mix = _Root(changed, pair)
    if not root_mix.fits(*_terms(mixed)):
        low, high = 0.0, 1.0  # the features' cap: the floor holds at 0, fails at 1
        for _ in range(BISECTIONS):
            middle = (low + high) / 2.0
            trial = {f: feature.mixed(middle) for f, feature in pending.items()}
            if root_mix.fits(*_terms(trial)):
                low, mixed = middle, trial
            else:
                high = middle
        if low == 0.0:
            mixed = {f: feature.mixed(0.0) for f, feature in pending.items()}
        root_mix.fits(*_terms(mixed))
    for f, (triple, _, _) in mixed.items():
        out[f] = triple
    out[root] = root_mix.value
    return out


def _terms(mixed: dict) -> tuple[list, list]:
    return (
        [term for _, s, _ in mixed.values() for term in s],
        [term for _, _, t in mixed.values() for term in t],
    )


class _Root:
    """The root's marginal from the base's `pair` and the members' `changed` ones, with the
    features' remainders: ``t = sum_i w_i / S_i + sum spread``, ``u = sum_i w_i mu_b_i / S_i +
    sum tilt``, the base's weight ``-lam (n - 1)`` (1 when no member changed the root) with the
    largest lam in [0, 1] that keeps ``t >= max_i 1/S_i``."""

    def __init__(self, changed: list, pair: list | None):
        self.changed, self.pair = changed, pair or [0.0, 1.0]
        self.certain = [mu for mu, s in changed if s == 0.0 or 1.0 / s == math.inf]
        if not self.certain and self.pair[1] == 0.0:
            self.certain = [self.pair[0]]
        self.with_base = pair is not None
        self.value: list = self.pair

    def fits(self, spread: list, tilt: list) -> bool:
        """Set `value` from the remainders; whether it meets the floor at the base's discount
        of at least 0 (False: the features' discount must grow)."""
        if self.certain:
            self.value = [math.fsum(self.certain) / len(self.certain), 0.0]
            return True
        changed, (mu0, s0) = self.changed, self.pair
        weighted = [(1.0, mu, s) for mu, s in changed] or [(1.0, mu0, s0)]
        floor = max(1.0 / s for _, _, s in weighted)
        try:
            members = math.fsum([*(w / s for w, _, s in weighted), *spread])
            means = math.fsum([*(w * mu / s for w, mu, s in weighted), *tilt])
        except OverflowError:  # a partial sum beyond float64
            members = means = math.inf
        base = (len(changed) - 1) / s0 if changed and self.with_base else 0.0
        t = members - base
        lam = 1.0
        if not t >= floor and base > 0.0:
            lam = max(0.0, (members - floor) / base)
            t = members - lam * base
        if not (math.isfinite(t) and math.isfinite(means)):
            raise ValueError(
                f"the mixed precision of the intercept is not finite ({t!r}): a member holds "
                "precisions beyond float64"
            )
        if not t >= floor * (1.0 - 1e-12):
            return False  # the features' remainders take too much: their discount must grow
        self.value = [(means - lam * base * mu0) / t, 1.0 / t]
        return True


def _point_or_one(changed: list, certain: list, start: list) -> list:
    """A feature not mixed by the rule: the base's numbers (no member changed it), its one
    member's, or the average of the point masses (conditional variances that underflowed to
    0; a base's point mass when no member is one)."""
    if certain:
        n = len(certain)
        return [math.fsum(a for a, _ in certain) / n, math.fsum(k for _, k in certain) / n, 0.0]
    if len(changed) == 1:
        return list(changed[0])
    return list(start)


def _arrowhead_product(blocks: list, prior: float, root, root_prior: float) -> dict:
    """One block of the members' product (no base): every factor's weights are 1, so the
    remainders are weighted variances and the result a proper Gaussian."""
    out = {}
    pending = {}
    for f in dict.fromkeys(f for block in blocks for f in block if f is not root):
        triples = [list(block.get(f, (0.0, 0.0, prior))) for block in blocks]
        certain = [(a, k) for a, k, c in triples if c == 0.0 or 1.0 / c == math.inf]
        if certain:
            out[f] = _point_or_one(triples, certain, triples[0])
            continue
        pending[f] = _Feature(triples, None)
    mixed = {f: feature.mixed() for f, feature in pending.items()}
    for f, (triple, _, _) in mixed.items():
        out[f] = triple
    if not any(root in block for block in blocks) and not mixed:
        return out
    root_mix = _Root([list(block.get(root, (0.0, root_prior))) for block in blocks], None)
    root_mix.fits(*_terms(mixed))
    out[root] = root_mix.value
    return out


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
    """One block of the moment analogue from `start`: the base's mean plus the members' changes
    of the mean, the loadings' changes added and the latent variances' in the log domain, each
    feature's ``a`` placing its mean (see the module docstring). A key that one member changed
    alone, with no other member moving the root, takes that member's numbers."""
    out = {f: list(w) for f, w in start.items()}
    pair = list(start.get(root, (0.0, root_prior)))
    roots = [list(block.get(root, pair)) for block in blocks]
    moved = [i for i, w in enumerate(roots) if w != pair]  # the members that moved the root
    if len(moved) == 1:
        mu_b, s = roots[moved[0]]
    else:
        mu_b = math.fsum([pair[0], *(w[0] - pair[0] for w in roots)])
        s = log_domain(pair[1], [roots[i][1] for i in moved])
    if moved:
        out[root] = [mu_b, s]
    for f in dict.fromkeys(f for block in blocks for f in block if f is not root):
        triple = list(start.get(f, (0.0, 0.0, prior)))
        changers = [i for i, block in enumerate(blocks) if list(block.get(f, triple)) != triple]
        if len(changers) == 1 and set(moved) <= set(changers):
            out[f] = list(blocks[changers[0]][f])
            continue
        if not changers:
            continue
        a0, k0, c0 = triple
        mean0 = a0 + k0 * pair[0]
        changes = []
        for block, (mu_b_i, _) in zip(blocks, roots):  # every member's change of the mean
            a, k, _ = block.get(f, triple)
            changes.append(a + k * mu_b_i - mean0)
        mean = math.fsum([mean0, *changes])
        k = math.fsum([k0, *(blocks[i][f][1] - k0 for i in changers)])
        c = log_domain(c0, [blocks[i][f][2] for i in changers])
        out[f] = [mean - k * mu_b, k, c]
    return out
