"""The arrowhead Gaussian: the weights independent given the intercept (issue 30).

On raw, uncentred dense features the posterior over the weights correlates the intercept b
strongly with every feature's weight: with x near 5.5 the data pin down ``b + 5.5 w`` and leave
``b - 5.5 w`` loose. A diagonal covariance cannot hold that correlation, so its steps along b
undo the steps along w (AROW 0.65 on one feature uniform on [5, 6], 0.98 with full covariance).
Full covariance costs O(d^2) per example. This engine keeps, per weight block, the part of Sigma
that matters for an intercept, at the diagonal engine's O(nnz) per example.

The family. Per block, the intercept b (the *root*) is Gaussian, and each feature's weight
depends on the root alone::

    b ~ N(mu_b, S),      w_j = a_j + k_j b + e_j,      e_j ~ N(0, c_j), all independent.

Its covariance holds ``Sigma_bb = S``, ``Sigma_bj = k_j S`` and ``Sigma_jj = c_j + k_j^2 S``:
the diagonal plus the intercept's row and column (an arrowhead), while two features correlate
only through the root, ``Sigma_jk = k_j k_k S``; its precision is an arrowhead matrix (a star
graphical model: the maximum-entropy completion of those entries, Dempster 1972). With one
feature it is every Gaussian over (b, w); without an intercept (the root never in x) every k_j
stays 0 and it is the diagonal model. The mean is ``mu_j = a_j + k_j mu_b``.

The margin. With d the difference vector (``d_j = sign x_j``, ``d_b = sign x_b``), the margin
is a sum of independent terms, ``d . w = sum_j d_j a_j + g b + sum_j d_j e_j`` with ``g = d_b +
sum_j d_j k_j``, so ``m = sum_j d_j a_j + g mu_b`` and ``v = g^2 S + sum_j c_j d_j^2``: three
sums over the features present (sum d_j a_j, sum d_j k_j, sum c_j d_j^2), O(nnz).

The update. In the latent coordinates ``z = (b, e)``, independent with variances (S, c_j), the
margin is linear, ``d . w = const + u . z`` with ``u = (g, d_j)``, and the rule's full-covariance
step ``mu_z += alpha Lambda u``, ``Lambda^-1 += gamma u u'`` gives a Gaussian p that couples b
and the e_j of x. It is projected back onto the family by matching the root's marginal and each
feature's conditional given the root (the moments of every pair (b, w_j)), with
``rho = gamma / (1 + gamma V_e)``, ``V_e = sum_j c_j d_j^2`` (the variance of the margin but the
root's term)::

    mu_b <- mu_b + alpha S g                     1/S <- 1/S + rho g^2          (p's marginal of b)
    k_j  <- k_j - rho g c_j d_j                  a_j <- a_j + c_j d_j (alpha + rho g mu_b_new)
    c_j  <- c_j / (1 + gamma c_j d_j^2)          ("project": KL(q||p), the I-projection)
    c_j  <- c_j (1 - rho c_j d_j^2)              ("drop": KL(p||q), the M-projection)

(the new k_j, a_j are p's regression of w_j on b: ``Cov_p(w_j, b) / Var_p(b)`` and ``E_p[w_j] -
k_j E_p[b]``). Features absent from x keep (a_j, k_j, c_j): given b they are independent of
the update, so their conditional is p's exactly. Both projections keep p's marginal of b and
p's conditional means given b; they differ only in c_j. "drop" keeps ``Var_p(w_j | b)`` (the
moments of every (b, w_j), as the diagonal "drop" keeps ``Var_p(w_j)``); "project" keeps the
diagonal of p's conditional precision of the features given b (as the diagonal "project" keeps
the diagonal of p's precision), and is then the exact minimiser of KL(q || p) over the family:
that divergence splits into ``KL(q(b) || p(b)) + E_q(b) KL(q(w | b) || p(w | b))``, the first
term is 0 at p's marginal and the second is a mean-field problem for each b, whose solution
keeps p's conditional means (linear in b) and the diagonal of its conditional precision.

Several blocks (multi-class): the blocks of the difference vector's labels share one step; each
root's ``rho`` counts the margin variance of everything but its own term, ``rho_k = gamma / (1 +
gamma (v - g_k^2 S_k))``, so that each root keeps p's marginal and each (b_k, w_j) pair p's
moments (the roots of the two labels are decorrelated, as a diagonal model decorrelates its
weights).

The intercept's prior (`initial_intercept_variance`). Under N(0, a) for every weight, a boundary
at distance t from the origin needs an intercept near ``-t |w|``, which the prior penalises as
``(t |w|)^2 / a``: on three features uniform on [5, 6] even full covariance reads 0.960 (5,000
examples), against 0.990 on [0, 1]. A flat prior on the intercept removes that: the likelihood is
unchanged by shifting a feature, ``x_j -> x_j + delta`` with ``b -> b - delta w_j``, and so is a
flat prior on b, so the exact posterior's predictions do not depend on where the features are
centred (full covariance with an intercept variance of 100 reads 0.989 on [5, 6]). The
arrowhead approximates that posterior; a wide finite variance stands for the flat prior, which
no rule's step can take (CW's steps diverge as the variance grows without bound).

Forgetting (``forgetting = f``, ``keep = 1 - f``, ``rest = f / a``, ``rest_b = f / a_b``). The
stabilised forgetting of Kulhavy and Zarrop (1993) relaxes the precision toward the prior's, ``P
<- keep P + (1 - keep) P0``, so that a variance never exceeds its prior; the engines forget only
what an example touches (directional forgetting), at O(nnz). Relaxing each latent variance
toward its prior (``1/S <- keep/S + rest_b``, ``1/c_j <- keep/c_j + rest``, k_j kept) does not
keep that bound: a weight's variance is ``c_j + k_j^2 S``, and with ``c_j`` back near ``a`` or
``S`` grown toward a wide ``a_b`` it exceeds ``a`` (by hundreds of times on hostile streams). The
precision of the family is itself an arrowhead, ``P_bb = 1/S + sum_j k_j^2/c_j``, ``P_bj =
-k_j/c_j``, ``P_jj = 1/c_j``, so Kulhavy and Zarrop's step stays in the family, entry by entry::

    c_j' = c_j / (keep + rest c_j)       k_j'/c_j' = keep k_j/c_j       (P_jj, P_bj)
    1/S' = keep/S + rest_b + rest sum_j k_j k_j'                         (P_bb's Schur complement)

and the means stay (``a_j' = a_j + (k_j - k_j') mu_b``): the precision is relaxed, not the
evidence of the mean, as the diagonal engine does. It is exact for a block whose features x all
touches; a feature x does not touch keeps its ``(k_j, c_j)``, and its variance ``c_j + k_j^2 S``
would grow with S: the root's variance is forgotten only when x holds the root and touches
every feature the block has learned (every example of a dense stream), and otherwise stays. The
bound holds weight by weight on any stream, from ``c_j + k_j^2 S <= a`` before (``u = c_j/a``,
``z = k_j^2 S / a <= 1 - u``, ``t = keep + (1 - keep) u``, so ``c_j' = a u / t``, ``k_j' = keep
k_j / t``):

- S forgotten: ``S' <= S / (keep + rest S k_j k_j')`` (the other terms are >= 0), and
  ``(c_j' + k_j'^2 S') / a - 1 <= keep (z - (1 - u)) / (t + (1 - keep) z) <= 0``;
- S kept: ``(c_j' + k_j'^2 S) / a = u/t + keep^2 z / t^2 <= 1``, since ``t (t - u) = t keep (1 -
  u) >= keep^2 (1 - u)``;
- a feature not touched keeps its numbers, and S only shrinks (``S' = S``, or an update).

The root's own variance ``S' <= S / (keep + rest_b S) <= a_b`` for ``S <= a_b``. A variance
already over its prior by a rounding comes back toward it (the first case contracts the excess
by ``keep``): the engines' numbers stay within an ulp or two of the prior, the rounding of
``c_j / (keep + rest c_j)`` at ``c_j = a``. Every forgotten member is a proper Gaussian (S and
the c_j positive), and the step costs the diagonal engine's per touched feature plus one
exactly rounded sum.

References: Crammer, Dredze and Pereira 2012 (JMLR 13), section 6, the diagonal projections;
Dempster, A. P., 1972. Covariance selection. Biometrics 28(1), 157-175 (the maximum-entropy
completion); Wainwright, M. J. and Jordan, M. I., 2008. Graphical models, exponential families,
and variational inference, section 5.5 (structured mean field); Kulhavy, R. and Zarrop, M. B.,
1993. On a general concept of forgetting. International Journal of Control 58(4), 905-924.
"""

from __future__ import annotations

import math
from math import fsum
from typing import Any

import numpy as np

from .. import engine
from . import _marks
from .gaussian import (
    IndependentBlocks,
    _learn,
    _raise_bad_input,
    _total,
    check_pairs,
    selected_blocks,
)

__all__ = ["ArrowheadGaussian", "PythonArrowheadGaussian"]


class PythonArrowheadGaussian(IndependentBlocks, _marks.Blocks):
    """Per block, N(mu_b, S) over the root (the intercept) and the features given the root.

    Each block maps a feature to ``[a_j, k_j, c_j]`` (see the module docstring) and the root to
    ``[mu_b, S]``; absent features are ``[0, 0, initial_variance]``, an absent root ``[0,
    root_variance]`` (the intercept's prior variance; `initial_variance` unless given), stored
    once learned. Sums are exactly rounded (`math.fsum`), so the order of the features never
    changes a result. An update is computed in full before anything is written: either every
    weight it touches takes its new finite value, or none changes.
    """

    def __init__(self, initial_variance: float, root, root_variance: float | None = None):
        self.initial_variance = initial_variance
        self.root = root
        self.root_variance = initial_variance if root_variance is None else root_variance
        self.blocks: list[dict] = [{}]
        self._mark: _marks.Mark | None = None  # see `mark`

    # -- what changed since a mark (a changelog's records; both engines alike) ---------------

    def mark(self) -> None:
        """Remember every block's numbers as they are now, for `changed`.

        A mark is not part of the model: copies and pickles carry none."""
        self._mark = _marks.take(self.blocks)

    def changed(self) -> list[dict] | None:
        """Per block, ``{feature: (a_j, k_j, c_j)}`` and ``{root: (mu_b, S)}`` of the entries
        added since the last `mark` or whose numbers differ from it bit for bit, in the blocks'
        order; None without a mark, or when the blocks were laid out anew since (`add_block`,
        `lift`, `reorder`, `restore_layout`, `negate`, new `blocks`): then only the whole engine
        says what changed. `set_weights` writes it back into an engine that held the numbers of
        the mark. This engine compares every entry with the mark's copy; the compiled one notes
        the entries it writes after a mark, so that its `mark` and `changed` cost in proportion
        to them, with the same answer.

        >>> from river_cw import INTERCEPT
        >>> g = PythonArrowheadGaussian(1.0, INTERCEPT)
        >>> step = lambda m, v, w: (0.5, 1.0)  # a rule's (alpha, gamma)
        >>> g.learn({"a": 1.0, INTERCEPT: 1.0}, ((0, 1),), step, "project", 1.0)
        1
        >>> g.mark()
        >>> g.learn({"b": 1.0}, ((0, -1),), step, "project", 1.0)
        1
        >>> g.changed()  # b is new; a and the root, absent from x, keep their numbers
        [{'b': (-0.5, 0.0, 0.5)}]
        """
        return _marks.since(self._mark, self.blocks)

    def set_weights(self, changes: list[dict]) -> None:
        """Write per block ``{feature: (a_j, k_j, c_j)}`` and ``{root: (mu_b, S)}`` (what
        `changed` returned): an entry learned is overwritten, a new one appended in the order
        given. Checked in full before anything changes."""
        try:
            changes = list(changes)
        except TypeError:
            raise TypeError("changes must be a list of dicts") from None
        if len(changes) != len(self.blocks):
            raise ValueError(
                f"changes of {len(changes)} block(s) for an engine of {len(self.blocks)}"
            )
        planned = []
        for block, entries in zip(self.blocks, changes):
            if not isinstance(entries, dict):
                raise TypeError("changes must be a list of dicts")
            for f, numbers in entries.items():
                try:
                    numbers = list(numbers)
                except TypeError:
                    raise TypeError(_WEIGHT) from None
                if len(numbers) != (2 if f is self.root else 3):
                    raise ValueError(_WEIGHT)
                values = [_number(value) for value in numbers]
                planned.append((block, f, block.get(f), values))
        for block, f, w, numbers in planned:
            if w is None:
                block[f] = numbers
            else:
                w[:] = numbers

    def learn_native(self, x, y, w, class_index, lean, centre=None) -> int:
        """No compiled path: -1, the general one (`GaussianClassifier.learn_one`) serves."""
        return -1

    def block_views(self) -> tuple[list[dict], list[dict]]:
        """Per block, ``{feature: mean}`` and ``{feature: marginal variance}``, the root included:
        ``mu_j = a_j + k_j mu_b`` and ``Sigma_jj = c_j + k_j^2 S``."""
        means, variances = [], []
        for block in self.blocks:
            mu_b, s = block.get(self.root, (0.0, self.root_variance))
            means.append(
                {f: w[0] if f is self.root else w[0] + w[1] * mu_b for f, w in block.items()}
            )
            variances.append(
                {f: w[1] if f is self.root else w[2] + w[1] * w[1] * s for f, w in block.items()}
            )
        return means, variances

    @property
    def index(self) -> dict:
        """``(block, feature) -> row`` of `cov`, over the learned weights."""
        return {(b, f): i for i, (b, f) in enumerate(self._learned())}

    @property
    def cov(self) -> np.ndarray:
        """Sigma over the learned weights (rows as in `index`): per block ``S l l' + diag(c)``,
        with the loadings l (k_j; 1 for the root) and the c_j (0 for the root); 0 across
        blocks."""
        parts = []
        for block in self.blocks:
            _, s = block.get(self.root, (0.0, self.root_variance))
            loading = np.array([1.0 if f is self.root else w[1] for f, w in block.items()])
            spread = np.array([0.0 if f is self.root else w[2] for f, w in block.items()])
            parts.append(s * np.outer(loading, loading) + np.diag(spread))
        from scipy.linalg import block_diag  # scipy.linalg only where it is used

        return block_diag(*parts)

    def _learned(self) -> list:
        return [(b, f) for b, block in enumerate(self.blocks) for f in block]

    # -- the margin's sums ------------------------------------------------------------------

    def _sums(self, b: int, x: dict, keep: float = 1.0, rest: float = 0.0):
        """One pass over x for block b: ``(score, G, v_terms, seen, unseen, x_b, forgotten)``
        with ``score = mu . x``, ``G = x_b + sum_j k_j x_j`` (the root's coefficient in ``x .
        w``; times the sign, g), the terms ``c_j x_j^2`` of the features' variance, and x's
        learned and new features for `update`. Forgetting (``keep < 1``) relaxes the
        ``(a_j, k_j, c_j)`` it reads (`_forget`); `forgotten` is then ``(triples, kk, whole)``:
        the touched entries with their new triples, the terms ``k_j k_j'`` of the root's
        forgetting, and whether x touches every feature the block has learned (else None).
        Nothing is written here. Raises on a bad `x`."""
        prior, root = self.initial_variance, self.root
        block = self.blocks[b]
        get = block.get
        mu_b = get(root, (0.0, 0.0))[0]
        a_terms, k_terms, v_terms, seen, unseen = [], [], [], [], []
        triples, kk = [], []
        x_b = unknown = 0.0
        forgetting = keep != 1.0
        try:
            for f, xf in x.items():
                if f is root:
                    x_b = xf
                    continue
                w = get(f)
                if w is None:
                    unknown += xf  # touched so that bad values surface here too
                    x2 = xf * xf
                    if x2:  # a zero feature value teaches nothing: store nothing
                        v_terms.append(prior * x2)
                        unseen.append((f, xf))
                    continue
                a, k, c = w
                if forgetting and xf:
                    a, k, c = new = _forget(w, keep, rest, mu_b)
                    triples.append((w, new))
                    kk.append(w[1] * k)
                a_terms.append(a * xf)
                k_terms.append(k * xf)
                v_terms.append(c * (xf * xf))
                seen.append((w, xf, c))
            k_terms.append(x_b)
            g = fsum(k_terms)
            a_terms.append(g * mu_b)
            score = fsum(a_terms)
            ok = math.isfinite(score + unknown)
        except (TypeError, OverflowError, ValueError):  # ValueError: fsum of inf and -inf
            ok = False
        if not ok:
            _raise_bad_input(x)
        forgotten = None
        if forgetting:
            whole = len(triples) == len(block) - (root in block)
            forgotten = (triples, kk, whole)
        return score, g, v_terms, seen, unseen, x_b, forgotten

    def _root(self, b: int, x_b: float, keep: float = 1.0, rest: float = 0.0, kk=None):
        """``(mu_b, S)`` of block b's root, S forgotten when x holds the root and `kk` (the
        terms ``k_j k_j'`` of the features x touches, every feature the block has learned) is
        given: ``1/S <- keep/S + rest a / a_b + rest sum_j k_j k_j'`` (the module docstring)."""
        mu_b, s = self.blocks[b].get(self.root, (0.0, self.root_variance))
        if kk is not None and x_b:
            s = s / (
                keep + s * (rest * (self.initial_variance / self.root_variance) + rest * fsum(kk))
            )
        return mu_b, s

    def scores(self, x: dict) -> list[float]:
        """``mu_b . x`` for every block b; raises on a bad `x` (every value is touched)."""
        return [self._sums(b, x)[0] for b in range(len(self.blocks))]

    def score_variances(self, x: dict, blocks=None) -> list[float]:
        """The variance of every block's score, or of each block `blocks` lists
        (`selected_blocks`): ``G^2 S + sum_j c_j x_j^2``."""
        out = []
        for b in selected_blocks(blocks, len(self.blocks)):
            _, g, v_terms, _, _, x_b, _ = self._sums(b, x)
            _, s = self._root(b, x_b)
            v_terms.append(g * g * s)
            out.append(_total(v_terms))
        return out

    def margin(self, x: dict, pairs, keep: float = 1.0, rest: float = 0.0):
        """``m = mu . d``, ``v = d' Sigma d`` and the entries of `update` (no per-coordinate
        terms: the exact diagonal schemes are the diagonal engine's). With ``keep < 1`` the
        block is forgotten first, toward its prior (``rest = (1 - keep) / a``; the module
        docstring, "Forgetting"): each learned feature x touches by `_forget`, and the root's
        variance where x holds the root and touches every feature the block has learned,
        ``1/S <- keep/S + rest a / a_b + rest sum_j k_j k_j'``; written once x is known to be
        valid. Each pair names another block (the labels of a difference vector are distinct):
        ValueError otherwise."""
        check_pairs(pairs, len(self.blocks))
        m_terms, feature_terms, root_terms, entries, writes = [], [], [], [], []
        for b, sign in pairs:
            score, g, v_terms, seen, unseen, x_b, forgotten = self._sums(b, x, keep, rest)
            kk = forgotten[1] if forgotten is not None and forgotten[2] else None
            mu_b, s = self._root(b, x_b, keep, rest, kk)
            m_terms.append(sign * score)
            feature_terms += v_terms
            root_terms.append(g * g * s)
            entries.append((b, sign, g, mu_b, s, x_b, seen, unseen))
            if forgotten is not None:
                writes.append((b, forgotten[0], bool(x_b) and kk is not None, mu_b, s))
        m = fsum(m_terms)
        v = _total(feature_terms + root_terms)
        if not (math.isfinite(m) and math.isfinite(v)):
            _raise_bad_input(x)
        for b, triples, root_forgotten, mu_b, s in writes:
            for w, new in triples:
                w[:] = new
            if root_forgotten:
                self.blocks[b][self.root] = [mu_b, s]
        return m, v, None, (entries, feature_terms, root_terms)

    learn = _learn

    def update(self, entries: tuple, alpha: float, gamma: float, v: float, scheme: str) -> bool:
        """Apply one step (see the module docstring); `scheme` is "project" or "drop" (the
        conditional variances c_j). Every new value is computed first and written only if all
        are finite; returns whether the step was applied."""
        entries, feature_terms, root_terms = entries
        prior, root = self.initial_variance, self.root
        planned = []
        try:
            for i, (b, sign, g_abs, mu_b, s, x_b, seen, unseen) in enumerate(entries):
                others = feature_terms + root_terms[:i] + root_terms[i + 1 :]
                rho = gamma / (1.0 + gamma * _total(others))
                g = sign * g_abs
                mu_b = mu_b + alpha * (s * g)
                s = s / (1.0 + rho * root_terms[i])
                shift, tilt = alpha + rho * g * mu_b, rho * g_abs
                items = [(w, xf, c) for w, xf, c in seen]
                items += [(None, xf, prior) for _, xf in unseen]
                new = []
                for w, xf, c in items:
                    a, k = (0.0, 0.0) if w is None else (w[0], w[1])
                    cx = c * xf
                    if scheme == "project":
                        c_new = c / (1.0 + gamma * (xf * cx))
                    else:
                        c_new = c * max(0.0, 1.0 - rho * (xf * cx))
                    new.append([a + shift * (sign * cx), k - tilt * cx, c_new])
                values = [mu_b, s] + [value for triple in new for value in triple]
                if not all(map(math.isfinite, values)):
                    return False
                planned.append((b, x_b, [mu_b, s], items, new, unseen))
        except (OverflowError, ZeroDivisionError):
            return False
        for b, x_b, root_state, items, new, unseen in planned:
            block = self.blocks[b]
            if x_b or root in block:
                block[root] = root_state
            for (w, _, _), triple in zip(items, new):
                if w is not None:
                    w[:] = triple
            block.update(
                (f, triple) for (f, _), triple in zip(unseen, new[len(new) - len(unseen) :])
            )
        return True

    def __reduce__(self):
        return _restore_arrowhead, (
            self.initial_variance,
            self.root,
            self.root_variance,
            self.blocks,
        )


def _forget(w: list, keep: float, rest: float, mu_b: float) -> list:
    """A touched feature's ``[a_j, k_j, c_j]`` forgotten (the module docstring, "Forgetting"):
    ``1/c_j <- keep/c_j + rest`` (`river_cw._engines.gaussian.forget`), ``k_j/c_j <- keep
    k_j/c_j`` and its mean ``a_j + k_j mu_b`` kept."""
    a, k, c = w
    d = keep + rest * c
    k_new = keep * k / d
    return [a + (k - k_new) * mu_b, k_new, c / d]


_WEIGHT = "a weight is (a, k, c), the root's (mu_b, S)"  # what set_weights takes (both engines)


def _number(value) -> float:
    """A number of `set_weights`' changes as the compiled engine reads one: no text."""
    if isinstance(value, (str, bytes, bytearray)):
        raise TypeError(f"must be real number, not {type(value).__name__}")
    return float(value)


def _restore_arrowhead(initial_variance: float, root, root_variance: float, blocks: list[dict]):
    """Unpickle an arrowhead Gaussian into the active engine, whichever engine pickled it."""
    gaussian = ArrowheadGaussian(initial_variance, root, root_variance)
    gaussian.blocks = blocks
    return gaussian


# The arrowhead engine that serves: the compiled one where it is built, else the Python one. Its
# type is the Python engine's: the compiled engine has its interface (and numbers, bit for bit).
ArrowheadGaussian: type[PythonArrowheadGaussian] = PythonArrowheadGaussian
if engine.arrowhead is not None:
    engine.arrowhead.connect(raise_bad_input=_raise_bad_input)
    _Arrowhead: Any = engine.arrowhead.Arrowhead  # a compiled type: nothing a type checker reads

    class CompiledArrowheadGaussian(IndependentBlocks, _Arrowhead):
        """The compiled engine (`river_cw._engines._arrowhead`): `PythonArrowheadGaussian`'s interface
        and numbers, bit for bit; ``blocks`` returns copies."""

        scores_with_scale = _Arrowhead.scores_with_scale  # in one pass, not the mixin's two
        index = PythonArrowheadGaussian.index
        cov = PythonArrowheadGaussian.cov
        _learned = PythonArrowheadGaussian._learned
        __reduce__ = PythonArrowheadGaussian.__reduce__  # a pickle names no engine

    ArrowheadGaussian = CompiledArrowheadGaussian
