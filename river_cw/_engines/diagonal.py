"""The diagonal Gaussian engine: independent weights, each a mean and a variance.

It offers the three diagonal schemes of Crammer, Dredze and Pereira (JMLR 2012, section 6):
``project`` (their "KL": ``1/s_j <- 1/s_j + gamma d_j^2``), ``drop`` (their "L2": ``s_j <- s_j
- beta (s_j d_j)^2``), and, for the "exact" variants, any per-coordinate function ``s_j <-
shrink(s_j, d_j^2)`` a rule supplies (NHERD's `HerdingShrink`). The update form they share is
`river_cw._engines.gaussian`'s.

`PythonDiagonalGaussian` is the readable reference; `DiagonalGaussian` is the engine that
serves, the compiled one (`river_cw._engines._diagonal`) where it is built, with the same interface and
numbers, bit for bit. A pickle names neither: it unpickles into the engine that serves.
"""

from __future__ import annotations

import math
from math import fsum
from typing import Any

from .. import engine
from . import _marks
from .gaussian import (
    IndependentBlocks,
    _learn,
    _raise_bad_input,
    _total,
    check_pairs,
    forget,
    selected_blocks,
)

__all__ = ["DiagonalGaussian", "HerdingShrink", "PythonDiagonalGaussian"]


_SAFE = 1e300  # far enough from float64's limit for a step's rounding


class PythonDiagonalGaussian(IndependentBlocks, _marks.Blocks):
    """Independent weights: each block maps a feature to ``[mean, variance]``.

    Absent features have mean 0 and the prior variance; they are stored only once learned.
    Sums are exactly rounded (`math.fsum`), so the order of the features never changes a result.
    Feature values arrive as Python floats (`river_cw.validation.as_floats`).

    An update is computed in full before anything is written (`update`): either every weight
    it touches takes its new finite value, or none changes.
    """

    def __init__(self, initial_variance: float):
        self.initial_variance = initial_variance
        self.blocks: list[dict] = [{}]
        self.mean_bound = 0.0  # an upper bound of every |mean| (see `update`)
        self._mark: _marks.Mark | None = None  # see `mark`

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if "mean_bound" not in state:  # pickled before the bound existed
            self.reset_bound()
        self.__dict__.setdefault("_mark", None)

    # -- what changed since a mark (a changelog's records; both engines alike) ---------------

    def mark(self) -> None:
        """Remember every weight's mean and variance as they are now, for `changed`.

        A mark is not part of the model: copies and pickles carry none."""
        self._mark = _marks.take(self.blocks)

    def changed(self) -> list[dict] | None:
        """Per block, ``{feature: (mean, variance)}`` of the weights added since the last `mark`
        or whose mean or variance differs from it bit for bit, in the blocks' order; None
        without a mark, or when the blocks were laid out anew since (`add_block`, `lift`,
        `reorder`, `restore_layout`, `negate`, new `blocks`): then only the whole engine says
        what changed. `set_weights` writes it back into an engine that held the weights of
        the mark. This engine compares every weight with the mark's copy; the compiled one notes
        the weights it writes after a mark, so that its `mark` and `changed` cost in proportion
        to them, with the same answer.

        >>> g = PythonDiagonalGaussian(1.0)
        >>> g.set_weights([{"a": (0.5, 0.25), "b": (0.0, 1.0)}])
        >>> g.mark()
        >>> g.set_weights([{"b": (-0.25, 0.5), "c": (1.0, 0.75)}])
        >>> g.changed()
        [{'b': (-0.25, 0.5), 'c': (1.0, 0.75)}]
        """
        return _marks.since(self._mark, self.blocks)

    def set_weights(self, changes: list[dict]) -> None:
        """Write per block ``{feature: (mean, variance)}`` (what `changed` returned): a weight
        learned is overwritten, a new one appended in the order given. Checked in full before
        anything changes."""
        if len(changes) != len(self.blocks):
            raise ValueError(
                f"changes of {len(changes)} block(s) for an engine of {len(self.blocks)}"
            )
        planned = []
        for block, weights in zip(self.blocks, changes):
            for f, pair in weights.items():
                if len(pair) != 2:
                    raise ValueError("a weight is a (mean, variance) pair")
                planned.append((block, f, block.get(f), float(pair[0]), float(pair[1])))
        bound = self.mean_bound
        for block, f, w, mean, variance in planned:
            if w is None:
                block[f] = [mean, variance]
            else:
                w[0], w[1] = mean, variance
            bound = max(bound, abs(mean))
        self.mean_bound = bound

    def reset_bound(self) -> None:
        """Set `mean_bound` to the largest |mean| (after the blocks were replaced)."""
        self.mean_bound = max(
            (abs(w[0]) for block in self.blocks for w in block.values()), default=0.0
        )

    def block_views(self) -> tuple[list[dict], list[dict]]:
        """Per block, ``{feature: mean}`` and ``{feature: variance}`` of the learned weights."""
        means = [{f: w[0] for f, w in block.items()} for block in self.blocks]
        variances = [{f: w[1] for f, w in block.items()} for block in self.blocks]
        return means, variances

    def scores(self, x: dict) -> list[float]:
        """``mu_b . x`` for every block b; raises on a bad `x` (every value is touched)."""
        scores = []
        for block in self.blocks:
            get = block.get
            terms = []
            unseen = 0.0
            try:
                for f, xf in x.items():
                    w = get(f)
                    if w is None:
                        unseen += xf  # touched so that bad values surface here too
                    else:
                        terms.append(w[0] * xf)
                score = fsum(terms)
                ok = math.isfinite(score + unseen)
            except (TypeError, OverflowError):
                ok = False
            if not ok:
                _raise_bad_input(x)
            scores.append(score)
        return scores

    def score_variances(self, x: dict, blocks=None) -> list[float]:
        """``x' Sigma_b x`` for every block b, or each block `blocks` lists (`selected_blocks`)."""
        prior = self.initial_variance
        out = []
        for b in selected_blocks(blocks, len(self.blocks)):
            get = self.blocks[b].get
            terms = []
            for f, xf in x.items():
                w = get(f)
                terms.append((prior if w is None else w[1]) * xf * xf)
            out.append(_total(terms))
        return out

    def margin(
        self, x: dict, pairs, keep: float = 1.0, rest: float = 0.0
    ) -> tuple[float, float, list, list]:
        """One pass over d: ``m = mu . d``, ``v = d' Sigma d``, the terms ``u_j = s_j d_j^2`` of
        v, and d's entries for `update`. Raises on a bad `x` (every value is touched).

        With ``keep < 1`` the learned variances of d's features (non-zero values) are forgotten
        first (`forget`): the margin uses the forgotten ones, written once x is known to be
        valid. Each pair names another block (the labels of a difference vector are distinct):
        ValueError otherwise."""
        check_pairs(pairs, len(self.blocks))
        prior = self.initial_variance
        m = 0.0
        u: list[float] = []  # the terms u_j of v
        entries: list[tuple] = []  # per pair: (block, sign, seen, unseen)
        add_u = u.append
        forgetting = keep != 1.0
        try:
            for b, sign in pairs:
                get = self.blocks[b].get
                m_terms: list[float] = []
                seen: list[tuple[list[float], float]] = []  # (the weight's [mean, variance], x_f)
                unseen: list[tuple] = []  # (feature, x_f)
                add_m, add_seen = m_terms.append, seen.append
                for f, xf in x.items():
                    w = get(f)
                    x2 = xf * xf
                    if w is None:
                        if x2:  # a zero feature value teaches nothing: store nothing
                            add_u(prior * x2)
                            unseen.append((f, xf))
                    else:
                        add_m(w[0] * xf)
                        add_u((forget(w[1], keep, rest) if forgetting else w[1]) * x2)
                        add_seen((w, xf))
                m += sign * fsum(m_terms)
                entries.append((b, sign, seen, unseen))
            v = fsum(u)
            ok = math.isfinite(m) and math.isfinite(v)
        except (TypeError, OverflowError):
            ok = False
        if not ok:
            _raise_bad_input(x)
        if forgetting:  # a zero value is no direction of d: its weight is not touched
            for _, _, seen, _ in entries:
                for w, xf in seen:
                    if xf:
                        w[1] = forget(w[1], keep, rest)
        return m, v, u, entries

    learn = _learn

    def learn_native(self, x, y, w, class_index, lean) -> int:
        """The compiled engine's one-call `learn` with the rule's step in C; this engine has
        none: -1, the general path (`GaussianClassifier.learn_one`) serves."""
        return -1

    def update(self, entries: list, alpha: float, gamma: float, v: float, scheme) -> bool:
        """Apply one step; `scheme` is "project", "drop" or a function ``(s_j, d_j^2) -> s_j``.

        Per weight, with ``a = alpha * sign``: the mean becomes ``mu_j + (a * s_j) * x_j`` and
        the variance ``s_j / (1 + gamma * (x_j * x_j * s_j))`` (project),
        ``s_j * max(0, 1 - beta * (x_j * x_j * s_j))`` with ``beta = gamma / (1 + gamma v)``
        (drop) or ``scheme(s_j, x_j * x_j)``. Variances stay in ``[0, s_j]``.

        Either every touched weight takes its new finite value or none changes; returns whether
        the step was applied (False: float64 cannot express it). Since ``s_j <= a0`` (the prior
        variance) and ``s_j x_j^2 <= v``, no mean moves by more than ``|alpha| sqrt(a0 v)``; the
        engine keeps `mean_bound`, an upper bound of every ``|mu_j|``, so while the bound and the
        step are far from float64's limit (always, but on adversarial input) the built-in
        schemes write in place in one pass, and otherwise all values are computed first.
        """
        step_bound = abs(alpha) * math.sqrt(self.initial_variance * v)
        if isinstance(scheme, str) and self.mean_bound + step_bound < _SAFE:
            rate = gamma / (1.0 + gamma * v) if scheme == "drop" else gamma
            self._apply(entries, alpha, rate, scheme)
            self.mean_bound += step_bound
            return True
        return self._apply_checked(entries, alpha, gamma, v, scheme)

    def _apply(self, entries: list, alpha: float, rate: float, scheme: str) -> None:
        """The built-in schemes in place (see `update`); `rate` is gamma (project) or beta."""
        prior = self.initial_variance
        for b, sign, seen, unseen in entries:
            if unseen:
                block = self.blocks[b]
                seen.extend((block.setdefault(f, [0.0, prior]), xf) for f, xf in unseen)
            a = alpha * sign  # d_j = sign x_j and d_j^2 = x_j^2
            if scheme == "project":
                for w, xf in seen:
                    s = w[1]
                    w[0] += a * s * xf
                    w[1] = s / (1.0 + rate * (xf * xf * s))
            else:
                for w, xf in seen:
                    s = w[1]
                    w[0] += a * s * xf
                    w[1] = s * max(0.0, 1.0 - rate * (xf * xf * s))

    def _apply_checked(self, entries: list, alpha: float, gamma: float, v: float, scheme) -> bool:
        """`update` computing every new value before writing any (see `update`)."""
        prior = self.initial_variance
        beta = gamma / (1.0 + gamma * v)
        planned = []
        try:
            for b, sign, seen, unseen in entries:
                fresh = [(f, [0.0, prior]) for f, _ in unseen]
                items = seen + [(w, xf) for (_, w), (_, xf) in zip(fresh, unseen)]
                a = alpha * sign
                means = [w[0] + a * w[1] * xf for w, xf in items]
                if scheme == "project":
                    variances = [w[1] / (1.0 + gamma * (xf * xf * w[1])) for w, xf in items]
                elif scheme == "drop":
                    variances = [w[1] * max(0.0, 1.0 - beta * (xf * xf * w[1])) for w, xf in items]
                else:
                    variances = [scheme(w[1], xf * xf) for w, xf in items]
                if not (math.isfinite(sum(means)) and math.isfinite(sum(variances))):
                    return False
                planned.append((b, fresh, items, means, variances))
        except (OverflowError, ZeroDivisionError):
            return False
        for b, fresh, items, means, variances in planned:
            for (w, _), mean, variance in zip(items, means, variances):
                w[0] = mean
                w[1] = variance
            self.blocks[b].update(fresh)
            self.mean_bound = max(self.mean_bound, max(map(abs, means), default=0.0))
        return True

    def __reduce__(self):
        return _restore_diagonal, (self.initial_variance, self.blocks)


class HerdingShrink:
    """NHERD's exact diagonal variance step ``s_j <- s_j / (1 + C d_j^2 s_j)^2`` (Crammer and
    Lee 2010), as a scheme of `DiagonalGaussian.update`; the compiled engine runs it natively."""

    __slots__ = ("C",)

    def __init__(self, C: float):
        self.C = C

    def __call__(self, s: float, d2: float) -> float:  # an overflowing square gives 0, no error
        q = 1.0 + self.C * d2 * s
        return s / (q * q)


def _restore_diagonal(initial_variance: float, blocks: list[dict]):
    """Unpickle a diagonal Gaussian into the active engine, whichever engine pickled it."""
    gaussian = DiagonalGaussian(initial_variance)
    gaussian.blocks = blocks
    gaussian.reset_bound()
    return gaussian


# The diagonal engine that serves: the compiled one where it is built, else the Python one. Its
# type is the Python engine's: the compiled engine has its interface (and numbers, bit for bit).
DiagonalGaussian: type[PythonDiagonalGaussian] = PythonDiagonalGaussian
if engine.diagonal is not None:
    engine.diagonal.connect(raise_bad_input=_raise_bad_input, herding_shrink=HerdingShrink)
    _Diagonal: Any = engine.diagonal.Diagonal  # a compiled type: nothing a type checker reads

    class CompiledDiagonalGaussian(IndependentBlocks, _Diagonal):
        """The compiled engine (`river_cw._engines._diagonal`): `PythonDiagonalGaussian`'s interface
        and numbers, bit for bit; ``blocks`` returns copies."""

        __reduce__ = PythonDiagonalGaussian.__reduce__  # a pickle names no engine

    DiagonalGaussian = CompiledDiagonalGaussian
