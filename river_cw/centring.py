"""Centring the arrowhead's features at their means (issue 41): the intercept at the data.

The arrowhead family (`river_cw._engines.arrowhead`) keeps each weight's covariance with the
intercept and drops the covariances between weights, which hang on the intercept alone. On raw
features far from zero those covariances are large (on U[0, 1] features ``E[x_i x_j] = 1/4``
against ``E[x_i^2] = 1/3``), so the family is a coarse approximation of the full posterior
there. Learned on features centred at their means, ``z = x - m``, the intercept is the score at
the data's centre instead of at the origin, the covariances between weights shrink, and so does
what the family drops: on drifting dense streams the default AROW goes from within a point of
river's best linear model on 10 of 27 streams to 16, and on the stationary dense streams it
gains up to 2.6 points and loses at most 0.02 (benchmarks/README.md, "Issue 41: centred features
in the library"; `python benchmarks/centred_arrowhead.py --part library`).

The rule ("dense"). A model learns its first `WARM_UP` examples as they are and keeps their
features' running means while every one has the same features (a dense stream). At the
`WARM_UP`-th it moves to coordinates centred at those means, for good: the Gaussian is mapped
by the affine change of coordinates that keeps every margin, ``b' = b + w . m`` (the intercept
takes the score at m, the weights stay), then brought back onto the family (`shift`). From then
on every example is learned and scored as ``x - m``; a feature x lacks is 0, its centred value
``-m_j``, as the raw model reads it, and a feature new since is not centred. Sparse input (text,
one-hot) whose examples differ in their features is never centred and costs one comparison per
example until it decides (at its second example, for text). Measured against centring at
running means moved with every example (the prototype of benchmarks/centred_arrowhead.py): the
same accuracy to 0.1-0.3 points on the drifting and stationary dense streams, with no shift per
example. A centred model pays the subtraction: the compiled engines' one-call paths take the
centre and subtract in their pass over x (about 13% more instructions on eight features); the
general path learns `Centring.centred`'s dict, the same numbers.

`shift` is exact where the family allows: the mean (so every margin), the intercept's variance,
and each weight's variance and covariance with the intercept are those of the mapped Gaussian
(the M-projection, the arrowhead's "drop" scheme, which keeps the moments of every (intercept,
weight) pair); the covariances between weights are the family's, through the intercept, so the
margins' variances are those of the family in the new coordinates. The public views
(`GaussianClassifier.weights`, `variances`, ...) read the model shifted back to the raw
coordinates the same way; the state format, the changelog and `river_cw.combine` carry the
centring (`common_frame`: where mixed models meet).
"""

from __future__ import annotations

import math
from operator import sub

from .validation import as_floats

__all__ = ["WARM_UP", "Centring", "common_frame", "shift"]

WARM_UP = 200  # examples learned as they are, their features' means kept, before centring


class Centring:
    """Where a model's features are centred: deciding (`means` of the `seen` examples so far,
    every one with the same features), or `centre` (``{feature: mean}``), for good. A model that
    will never centre holds None instead (see `observe`)."""

    __slots__ = ("_order", "centre", "means", "seen")

    def __init__(self, seen: int = 0, means: dict | None = None, centre: dict | None = None):
        self.seen = seen
        self.means = {} if means is None and centre is None else means
        self.centre = centre
        self._order = _order(centre)

    def centre_at(self, centre: dict) -> None:
        """Centred at `centre` from now on (the means, once the model has moved there)."""
        self.centre, self.means = centre, None
        self._order = _order(centre)

    def __eq__(self, other) -> bool:
        return isinstance(other, Centring) and self.__getstate__() == other.__getstate__()

    def __getstate__(self):
        return (self.seen, self.means, self.centre)

    def __setstate__(self, state) -> None:
        self.seen, self.means, self.centre = state
        self._order = _order(self.centre)

    def __repr__(self) -> str:
        if self.centre is not None:
            return f"Centring(centre={self.centre!r})"
        return f"Centring(seen={self.seen}, means={self.means!r})"

    def observe(self, x: dict) -> bool | None:
        """Count the learned example `x` (validated, as `as_floats` gives it) while deciding:
        True when it is the `WARM_UP`-th of a dense stream (the model now centres: `shift` it
        by `means`), False while deciding, None when `x`'s features are not those of the first
        example (the model never centres)."""
        means = self.means
        assert means is not None, "deciding"
        if self.seen and x.keys() != means.keys():
            return None
        seen = self.seen = self.seen + 1
        if seen == 1:
            self.means = {name: float(value) for name, value in x.items()}
            return WARM_UP == 1
        for name, value in x.items():
            mean = means[name]
            means[name] = mean + (value - mean) / seen
        return seen == WARM_UP

    def centred(self, x: dict) -> dict:
        """`x` in the centred coordinates: ``x_j - m_j``, ``-m_j`` for a centred feature it
        lacks, its other features as they are; validated as `as_floats` validates (the engines
        name a value that is not finite)."""
        keys, means = self._order  # type: ignore[misc]
        if len(x) == len(keys):  # the dense stream's example: its features, in C-level loops
            try:
                return dict(zip(keys, map(sub, map(x.__getitem__, keys), means)))
            except (KeyError, TypeError, OverflowError):  # one lacking, or a value to name
                pass
        x = as_floats(x)
        centre = self.centre
        assert centre is not None, "centred"
        z = {name: value - centre.get(name, 0.0) for name, value in x.items()}
        if not centre.keys() <= x.keys():
            z.update((name, -m) for name, m in centre.items() if name not in x)
        return z


def _order(centre: dict | None) -> tuple | None:
    """The centre's features and means as two tuples, in its order (`Centring.centred`)."""
    return None if centre is None else (tuple(centre), tuple(centre.values()))


def shift(blocks: list[dict], root, delta: dict, initial_variance: float, root_variance: float):
    """Per block, the entries of an arrowhead Gaussian (`blocks`: ``{feature: [a_j, k_j, c_j],
    root: [mu_b, S]}``) after moving the coordinates' origin by `delta` (``x - delta``): the
    intercept becomes ``b' = b + w . delta``, written back onto the family by matching the
    moments of b' and of every (b', w_j) pair. A feature of `delta` the block has not learned
    enters at its prior, ``(0, 0, initial_variance)``, a root it has not learned at ``(0,
    root_variance)``. None where a number is not finite.

    With ``K = 1 + sum_j delta_j k_j`` and ``V = sum_j delta_j^2 c_j``::

        mu_b' = K mu_b + sum_j delta_j a_j        S' = K^2 S + V
        k_j'  = (K k_j S + delta_j c_j) / S'      a_j' = a_j + k_j mu_b - k_j' mu_b'
        c_j'  = (S c_j (K - delta_j k_j)^2 + (V - delta_j^2 c_j) (c_j + k_j^2 S)) / S'

    (``c_j' = Var(w_j) - Cov(w_j, b')^2 / S'``, each term of its numerator >= 0). Sums are
    exactly rounded, so the features' order changes nothing.

    >>> from river_cw import INTERCEPT
    >>> blocks = [{INTERCEPT: [0.0, 1.0], "x": [2.0, 0.0, 1.0]}]
    >>> [block] = shift(blocks, INTERCEPT, {"x": 1.0}, 1.0, 100.0)
    >>> block[INTERCEPT], block["x"]  # b' = b + w: mean 2, variance 2; w's regression on b' 1/2
    ([2.0, 2.0], [1.0, 0.5, 0.5])
    """
    shifted = []
    for block in blocks:
        mu_b, s = block.get(root, (0.0, root_variance))
        entries = {f: w for f, w in block.items() if f is not root}
        entries.update((f, (0.0, 0.0, initial_variance)) for f in delta if f not in entries)
        K = math.fsum([1.0, *(d * entries[f][1] for f, d in delta.items())])
        mu = math.fsum([K * mu_b, *(d * entries[f][0] for f, d in delta.items())])
        spread = {f: d * d * entries[f][2] for f, d in delta.items()}
        V = math.fsum(spread.values())
        S = K * K * s + V
        out = {root: [mu, S]}
        for f, (a, k, c) in entries.items():
            d = delta.get(f, 0.0)
            k_new = (K * k * s + d * c) / S
            c_new = (s * c * (K - d * k) ** 2 + (V - spread.get(f, 0.0)) * (c + k * k * s)) / S
            out[f] = [a + k * mu_b - k_new * mu, k_new, c_new]
        if not all(math.isfinite(n) for w in out.values() for n in w):
            return None
        shifted.append(out)
    return shifted


def common_frame(members: list, base=None, based: bool = False) -> tuple[dict, Centring | None]:
    """Where models mixed together (`river_cw.combine`) meet, from their centrings (`members`,
    and their common start's, `base`, where `based`): the centre to shift each Gaussian to
    (``{}``: the raw coordinates) and the mix's centring.

    - A member that will never centre (None) makes the mix one that never does: raw.
    - A member already centred sets the centre (the base's, where it is centred): every other
      is shifted there, and the mix is centred there.
    - Members all deciding are counted as one stream, by the delta rule (each member's
      examples since the base once, ``n = n0 + sum_i (n_i - n0)``, and each member's sum of
      values since the base once in the means); where they saw different features the mix
      never centres, and where the count reaches `WARM_UP` it centres at the means.

    >>> base = Centring(50, {"x": 2.0})
    >>> common_frame([Centring(100, {"x": 1.0}), Centring(60, {"x": 3.0})], base, True)
    ({}, Centring(seen=110, means={'x': 1.6363636363636365}))
    >>> common_frame([Centring(150, {"x": 1.0}), Centring(150, {"x": 3.0})], base, True)
    ({'x': 2.0}, Centring(centre={'x': 2.0}))
    """
    every = [base, *members] if based else list(members)  # the base's centre first
    if any(c is None for c in every):
        return {}, None
    centred = [c.centre for c in every if c.centre is not None]
    if centred:
        return dict(centred[0]), Centring(WARM_UP, centre=dict(centred[0]))
    origin = base if based else Centring()
    counted = [c for c in members if c.seen > origin.seen]  # every one deciding: means are set
    assert origin.means is not None and all(c.means is not None for c in counted)
    if any(c.means.keys() != counted[0].means.keys() for c in counted[1:]) or (
        origin.seen and counted and counted[0].means.keys() != origin.means.keys()
    ):
        return {}, None
    if not counted:
        return {}, Centring(origin.seen, dict(origin.means))
    n0 = origin.seen
    n = n0 + sum(c.seen - n0 for c in counted)
    means = {}
    for f in counted[0].means:
        start = n0 * origin.means.get(f, 0.0)  # the sum of the base's values
        means[f] = math.fsum([start, *(c.seen * c.means[f] - start for c in counted)]) / n
    if n < WARM_UP:
        return {}, Centring(n, means)
    if not any(means.values()):
        return {}, None
    return means, Centring(WARM_UP, centre=means)
