"""`GaussianClassifier`, the class every Gaussian rule subclasses: N(mu, Sigma) over the weights,
one step of a rule at a time.

It holds the Gaussian in the engine its `covariance` names (the registry, `river_cw.covariances`)
and implements `LinearClassifier`'s hooks with it: an update forgets, takes the rule's step
``(m, v) -> (alpha, gamma)`` and records calibration's losses (`_update`). It shows the Gaussian
(`gaussian`, `set_gaussian`, `variances`, `covariances`) and gives the labels' probabilities
(`river_cw.probabilities`). That is the general path: it serves every input, under either engine.

The common cases run in one call of the compiled engine, with the general path's numbers. A rule
names its step in C (`_native_step`, `_native_exact_step`: river_cw/_engines/_steps.h and
river_cw/_engines/_exact.h). Then `learn_one` of a binary model with a known label runs in one
call of the compiled engine (the *lean* path, `_lean_spec`); `predict_one` and
`predict_proba_one` of a binary model score in one call of a compiled engine (`score_native`; the
full one's scores, not its variances), and `predict_many` and `predict_proba_many` run their
loops in one call of the diagonal or arrowhead engine (`score_rows`); `learn_many` runs its loop
in either's batch kernel (`learn_rows`, river_cw/_engines/_batch.h; the loops' Python side is
`river_cw._one_call`). The one-call paths read x as a dict or as a text's token counts without
their dict (`river_cw._engines._text.TokenCounts`, from `river_cw.text.TextClassifier`;
`_features` makes it the dict where they decline). Each path gives the general path's numbers,
bit for bit, and hands it every case it does not take (a new label, a value to name in an error,
calibration, forgetting; a new feature of the full covariance); under the pure-Python engine the
general path serves throughout. The glossary of these paths heads river_cw/_engines/_shell.h.
"""

from __future__ import annotations

import abc
import math
import sys
from array import array
from typing import Any, ClassVar

from . import _one_call, calibration, covariances, engine, flips, probabilities, surprise
from ._engines.gaussian import SKIPPED
from ._one_call import STALE, hyperparameters
from .base import INTERCEPT, LinearClassifier, without_intercept
from .batch import Rows
from .centring import Centring
from .covariances import COMPILED, COVARIANCES, Gaussian
from .labels import order_key, predicted_labels
from .probabilities import most_probable
from .validation import as_floats, is_real

__all__ = ["GaussianClassifier"]


class ScaledScores(list):
    """The block scores of an example with `scale`, the variance of the margin between the two
    best of them (`river_cw.probabilities.pairwise`'s, before the noise term), from the pass
    that scored it (the engines' ``scores_with_scale``): what `GaussianClassifier` learns a
    calibrating model of three labels or more by."""

    __slots__ = ("scale",)

    def __init__(self, scores: list[float], scale: float):
        super().__init__(scores)
        self.scale = scale


# the arrays the lean spec holds (`_calibration_spec`)
_LEAN_STATE = ("_temperature", "_flips", "_surprise", "_log_score")


class GaussianClassifier(LinearClassifier):
    """A Gaussian N(mu, Sigma) over the weights, updated by a rule ``(m, v) -> (alpha, gamma)``.

    Every rule subclasses it, implementing
    `_step` (see `river_cw._engines.gaussian` for the shared update form); they may offer the ``"exact"``
    diagonal scheme by overriding `_exact_step`.

    Probabilities follow from the Gaussian margins of the scores (`river_cw.probabilities`):
    ``P(positive label) = Phi(m / sqrt(v))`` while binary, pairwise margins on one scale once
    multi-class, so that `predict_one` is the label of largest probability.

    Forgetting (``forgetting = f > 0``; the papers' models never forget). Every
    rule only adds precision, so after concept drift the variances stay small and the model
    barely moves (CW's reach 1e-193 on SEA). With forgetting, each example first relaxes the
    precision of the weights it touches toward the prior's, ``1/s_j <- (1 - f)/s_j + f/a``
    (``a`` = `initial_variance`), before its margin is computed; the means stay. This is
    directional forgetting (Kulhavy and Karny 1984; Kulhavy 1987): information is discounted
    only in the directions the data excite, here the coordinates of x, so the cost is that of
    the example (no pass over all features, which suits sparse text) and the variance of a
    weight never seen again does not wind up. Relaxing toward the prior rather than toward
    zero precision is the stabilised forgetting of Kulhavy and Zarrop (1993): a variance never
    exceeds ``a``. A weight touched k times in a row with no update regains variance as
    ``1/s_j -> 1/a`` geometrically, ``(1 - f)^k``; between updates the precision settles near
    ``gamma x_j^2 / f`` instead of growing without bound. With a sample weight w the example
    forgets w times: ``(1 - f)^w``. With ``covariance="full"``, ``Sigma^-1 <- S Sigma^-1 S +
    (f/a) E`` with ``S = diag(sqrt(1 - f))`` on the touched coordinates and E the identity there;
    with ``covariance="arrowhead"``, Kulhavy and Zarrop's ``Sigma^-1 <- (1 - f) Sigma^-1 + f
    Sigma0^-1`` (its precision is an arrowhead too) on the touched weights given the intercept,
    and on the whole label's block, the intercept's variance with it, where x touches the
    intercept and every weight of the label (every example of a dense stream); otherwise the
    intercept's variance stays, as the variances of the weights x does not touch hang on it
    (see `river_cw._engines.arrowhead`).
    The forgetting of a valid example is kept even when its step is not taken.

    Forgetting set by the model (``forgetting="auto"``, the default of AROW, NHERD and SCW;
    `river_cw.surprise`): the rate of each
    example's forgetting is read from the model's surprise, the excess of its mistakes over
    those its calibrated probabilities expected, beyond a control limit (ECDD's, Ross et al.
    2012): 0 while the model errs as it expects, so that on a stationary stream it is the model
    that never forgets, to the bit, and up to 0.05 when the concept moves away from it. The
    surprise is stepped on the margin the calibration's Newton step reads, before that step;
    the rate it gives holds from the next example on. Three floats of state. Without
    calibration there is no expectation to compare with, and ``"auto"`` never forgets. Once a
    binary model's features are centred (below), the surprise is read from its log score
    instead: its log loss against the entropy its own probabilities ``Phi(a' m / sqrt(v))``
    expect, with a temperature a' of their own, which weighs each mistake by the confidence it
    was made with (Seillier-Moiseiwitsch and Dawid 1993). It also reads the misfit of a linear
    boundary to a curved one, and so forgets now and then where nothing drifts (AROW on up to
    19% of a dense stationary stream's examples), at little cost in accuracy (at most 1.24
    points against the model that never forgets, on the streams of benchmarks/drift.py). Six
    floats more, for a model that may centre.

    The defaults (issue 30). Every rule's default covariance is ``"arrowhead"``
    (`river_cw._engines.arrowhead`): the diagonal plus the intercept's covariance with each weight, at the
    diagonal's cost per feature, so that raw, uncentred dense features are learned as well as by
    river's linear models and text as well as by the papers' diagonal models. AROW and NHERD
    default to ``diagonal="drop"`` and an intercept prior variance of 100 (a flat prior's
    stand-in); CW, SCW and SOP to ``"project"``, with which they keep their text results. The
    measurements behind them: benchmarks/README.md, "Dense data". The papers' models are
    ``covariance="full"``, or ``covariance="diagonal"`` with the paper's scheme, and
    ``learn_intercept=False``.

    Centred features (``centre=True``, the default; `river_cw.centring`). With the arrowhead
    covariance and an intercept, a model whose first 200 examples all have the same features
    moves to coordinates centred at their means, for good, by the change of coordinates that
    keeps every prediction; it then learns and scores ``x - m``, and shows its weights in the
    raw coordinates (`centre_`: the centre). Sparse input, whose examples differ in their
    features, is never centred.

    Calibration (``calibrate=True``, the default). The margins' own probabilities,
    ``Phi(m / sqrt(v))``, are overconfident: the variance v measures what the model does not
    know about its weights, not the noise of the labels, and it only shrinks (AROW on SMS: log
    loss 0.36, no better than the class frequencies; CW on raw a9a: 10). Calibrated, the margin's
    variance takes a noise term r (`margin_noise`, the variance of a margin's noise on the scale
    the rule's step aims at: 1 for AROW, CW, NHERD and SCW, whose steps aim at margin 1) and a
    temperature a scales the result, ``Phi(a m / sqrt(v + r))``; a is fitted online by one
    Newton step per example on the progressive log loss (`river_cw.calibration`), two floats of
    state, a few dozen nanoseconds per example. A temperature never changes `predict_one`; nor
    does the noise term (one scale for every pair, `river_cw.probabilities`). The step reads the
    margin the update computes (after the forgetting, where the model forgets) when binary, and
    the pairwise margins before the update when multi-class. A binary model's probabilities
    also allow a share eps of flipped labels (`flip_share`), ``eps + (1 - 2 eps) Phi(a m /
    sqrt(v + r))``, eps fitted online by EM from a prior of 0.003 (`river_cw.flips`): a label a
    stream flips at random no longer costs a confident model its full log loss (river's
    Hyperplane, which flips 5%: 0.317 to 0.293). ``calibrate=False`` gives the papers'
    probabilities, ``a = 1``, ``r = 0`` and ``eps = 0``.

    References: Kulhavy, R. and Karny, M., 1984. Tracking of slowly varying parameters by
    directional forgetting. IFAC Proceedings 17(2); Kulhavy, R. and Zarrop, M. B., 1993. On a
    general concept of forgetting. International Journal of Control 58(4), 905-924.
    """

    _diagonal_schemes: tuple[str, ...] = ("project", "drop", "exact")
    _PICKLE_DEFAULTS: ClassVar[dict] = {
        **LinearClassifier._PICKLE_DEFAULTS,
        "forgetting": 0.0,
        "calibrate": False,
        "_temperature": None,
        "_flips": None,
        "_surprise": None,
        "_log_score": None,
        "initial_intercept_variance": None,
        "centre": False,  # a model pickled before centring never centres
        "_centring": None,
    }

    def __init__(
        self,
        covariance: str,
        diagonal: str,
        initial_variance: float,
        learn_intercept: bool,
        forgetting: float | str = 0.0,
        calibrate: bool = True,
        initial_intercept_variance: float | None = None,
        centre: bool = True,
    ):
        super().__init__(learn_intercept)
        if not isinstance(calibrate, bool):
            raise ValueError(f"calibrate must be True or False, got {calibrate!r}")
        self.calibrate = calibrate
        self._temperature = array("d", (1.0, 1.0)) if calibrate else None  # [a, H]
        self._flips = flips.start() if calibrate else None  # [n, eps]: two labels' flips
        if forgetting != surprise.AUTO and not (
            is_real(forgetting) and 0.0 <= float(forgetting) < 1.0
        ):
            raise ValueError(f'forgetting must be in [0, 1) or "auto", got {forgetting!r}')
        self.forgetting = forgetting
        # [n, e, q_bar]: "auto" reads the calibrated probabilities; without them it never forgets
        self._surprise = surprise.start() if forgetting == surprise.AUTO and calibrate else None
        if covariance not in COVARIANCES:
            raise ValueError(f"covariance must be one of {tuple(COVARIANCES)}, got {covariance!r}")
        if diagonal not in self._diagonal_schemes:
            raise ValueError(
                f"diagonal must be one of {self._diagonal_schemes} for {type(self).__name__}, "
                f"got {diagonal!r}"
            )
        kind = COVARIANCES[covariance]
        if kind.schemes and diagonal not in kind.schemes:
            takers = [name for name, other in COVARIANCES.items() if diagonal in other.schemes]
            raise ValueError(
                f"covariance={covariance!r} takes diagonal={' or '.join(map(repr, kind.schemes))}; "
                f"diagonal={diagonal!r} needs covariance={' or '.join(map(repr, takers))}"
            )
        if not initial_variance > 0:
            raise ValueError(f"initial_variance must be positive, got {initial_variance!r}")
        if initial_intercept_variance is not None and (
            not is_real(initial_intercept_variance) or not 0 < initial_intercept_variance < math.inf
        ):
            raise ValueError(
                "initial_intercept_variance must be positive and finite (or None), got "
                f"{initial_intercept_variance!r}"
            )
        self.covariance = covariance
        self.diagonal = diagonal
        self.initial_variance = initial_variance
        self.initial_intercept_variance = initial_intercept_variance
        self._gaussian: Gaussian = kind.prior(initial_variance, initial_intercept_variance)
        self.n_skipped_updates = 0  # steps float64 could not express (see `_update`)
        if not isinstance(centre, bool):
            raise ValueError(f"centre must be True or False, got {centre!r}")
        self.centre = centre
        # deciding, then centred (`river_cw.centring`); None: the model learns x as it is
        self._centring = Centring() if centre and kind.shift and learn_intercept else None
        # [a', H', n, L, H, V]: once centred, "auto" reads the log score (`river_cw.surprise`)
        self._log_score = (
            surprise.start_log_score()
            if self._surprise is not None and self._centring is not None
            else None
        )

    @abc.abstractmethod
    def _step(self, m: float, v: float, w: float) -> tuple[float, float] | None:
        """``(alpha, gamma)`` for margin mean `m`, variance `v > 0` and sample weight ``w > 0``
        (``w == 1`` must give the paper's step bit for bit), or None for no update."""

    def _exact_step(self, m: float, v: float, u: list[float], w: float):
        """``(alpha, gamma, scheme)`` of the exact diagonal update, given the terms
        ``u_j = Sigma_jj d_j^2`` of v (see `DiagonalGaussian`)."""
        raise NotImplementedError

    # -- hooks of LinearClassifier ------------------------------------------------------------

    def _scores(self, x):
        return self._gaussian.scores(x)

    def _calibrates_pairs(self) -> bool:
        """Whether the calibration steps on the pairwise margins: a calibrating model of three
        labels or more (`calibration.multiclass_step`)."""
        return self._temperature is not None and len(self.classes_) > 2

    def _learning_scores(self, x):
        """The scores; where the calibration steps on the pairwise margins, with their scale from
        the same pass (`ScaledScores`), which the update's calibration reads."""
        if self._calibrates_pairs():
            return ScaledScores(*self._gaussian.scores_with_scale(x))
        return self._gaussian.scores(x)

    def _add_block(self):
        self._gaussian.add_block()

    def _lift(self):
        self._gaussian.lift()

    def _negate(self):
        self._gaussian.negate()

    def _layout(self):
        return self._gaussian.layout()

    def _restore_layout(self, layout):
        self._gaussian.restore_layout(layout)

    def _update(self, x, pairs, w, scores):
        """One step of the rule in the engine (`DiagonalGaussian.learn`): margin (after the
        forgetting), the calibration's Newton step on it (`_calibrated_step`; of three labels
        or more, on the scores before the update, `scores`), the rule's step with sample
        weight w, update; a step float64 cannot express is counted in `n_skipped_updates` and
        changes nothing."""
        keep, rest = 1.0, 0.0
        f = self._rate()
        if f:
            keep = 1.0 - f if w == 1.0 else (1.0 - f) ** w
            keep = max(keep, sys.float_info.min)  # a huge w forgets all but a trace
            rest = (1.0 - keep) / self.initial_variance
        step, scheme = self._rule()
        temperature = self._temperature
        if self._calibrates_pairs():
            outcome = self._gaussian.learn(x, pairs, step, scheme, w, keep, rest)  # validates x
            label = pairs[0][0]  # the block of the label: its pair's sign is +1
            multiclass_step = (
                engine.diagonal.multiclass_step  # type: ignore[union-attr]
                if isinstance(self._gaussian, COMPILED)
                else calibration.multiclass_step
            )
            v = scores.scale + self.margin_noise  # before the update: `_learning_scores`'
            multiclass_step(temperature, scores, v, label, w, self._surprise)
        else:
            if temperature is not None and len(self.classes_) == 2:
                step = self._calibrated_step(step, scheme)
            outcome = self._gaussian.learn(x, pairs, step, scheme, w, keep, rest)  # validates x
        if outcome == SKIPPED:
            self.n_skipped_updates += 1

    def _rate(self) -> float:
        """The forgetting of the example at hand: `forgetting`, or with ``"auto"`` the rate the
        surprise sets (`river_cw.surprise.rate`; 0 without calibration), read from the log
        score once a binary model is centred (`river_cw.surprise.log_score_rate`)."""
        if self._surprise is not None:
            if self._log_score is not None and self._centred and len(self.classes_) <= 2:
                return surprise.log_score_rate(self._log_score)
            return surprise.rate(self._surprise)
        return self._fixed_rate()

    def _fixed_rate(self) -> float:
        """`forgetting` where it is a number, 0 where the surprise sets it (``"auto"``)."""
        return 0.0 if self.forgetting == surprise.AUTO else float(self.forgetting)

    def _calibrated_step(self, step, scheme):
        """The rule's `step` preceded by the calibration's Newton step on its margin: the
        margin the engine computed, ``m = y mu . x`` and v, standardised with the noise term
        (``s = m / sqrt(v + r)``), as the compiled engines' lean paths take it; the surprise
        and the share of flipped labels (`river_cw.flips`) step before it, and the log score on
        ``m / sqrt(v)`` (its averages once centred)."""
        temperature, noise, state = self._temperature, self.margin_noise, self._surprise
        log_score, centred, flipped = self._log_score, self._centred, self._flips
        assert temperature is not None  # a calibrating model's step

        def calibrated(m, v, *rest):
            w = rest[-1]
            s = m / math.sqrt(v + noise)
            right = probabilities.normal_cdf(temperature[0] * s)  # the label's, Phi(a s)
            if state is not None:
                surprise.observe_binary(state, right, w)
            if flipped is not None:
                flips.observe(flipped, right, w)
            if log_score is not None:
                surprise.observe_log_score(log_score, m / math.sqrt(v), w, centred)
            calibration.newton_step(temperature, s, w)
            return step(m, v, *rest)

        return calibrated

    def _rule(self):
        """The rule's step and its scheme as the engines' `learn` takes them: ``(_exact_step,
        None)`` for an exact diagonal scheme, else ``(_step, diagonal)`` (a covariance without
        diagonal schemes, the full one, ignores it)."""
        if self.diagonal == "exact" and "exact" in covariances.of(self).schemes:
            return self._exact_step, None
        return self._step, self.diagonal

    def _weight_blocks(self):
        return self._raw_gaussian().block_views()[0]

    # -- public state -------------------------------------------------------------------------

    @property
    def gaussian(self):
        """The engine holding N(mu, Sigma) (`river_cw._engines.diagonal.DiagonalGaussian`,
        `river_cw._engines.arrowhead.ArrowheadGaussian` or `river_cw._engines.full.FullGaussian`), for reading:
        the model changes through `learn_one` and `set_gaussian`."""
        return self._gaussian

    def set_gaussian(self, gaussian, classes: list) -> None:
        """Hold `gaussian` as N(mu, Sigma); the model goes on learning from there.

        `river_cw.combine` builds merged models with it. Raises ValueError, changing nothing,
        when `gaussian`, its blocks or the labels' order don't fit.

        Parameters
        ----------
        gaussian
            An engine of the model's `covariance` (`river_cw._engines.diagonal`'s `DiagonalGaussian` or
            `PythonDiagonalGaussian`, `river_cw._engines.arrowhead`'s `ArrowheadGaussian` or
            `PythonArrowheadGaussian`, or `river_cw._engines.full.FullGaussian`); it is held, not copied.
        classes
            The labels of its weight blocks, in the order of `classes_`: one block for at most
            two labels, as ``[negative, positive]`` (see `positive_label`), else one per label.
        """
        engines = covariances.of(self).engines
        if not isinstance(gaussian, engines):
            raise ValueError(
                f"a model of covariance={self.covariance!r} holds a "
                f"{' or '.join(e.__name__ for e in engines)}, "
                f"got {type(gaussian).__name__}"
            )
        classes = list(classes)
        if len(set(classes)) != len(classes):
            raise ValueError(f"the labels must be distinct, got {classes!r}")
        if len(classes) == 2 and order_key(classes[1]) < order_key(classes[0]):
            raise ValueError(
                f"two labels go as [negative, positive], {classes[::-1]!r}, got {classes!r}"
            )
        blocks = len(gaussian.block_views()[0])
        if blocks != (1 if len(classes) <= 2 else len(classes)):
            raise ValueError(f"{blocks} weight block(s) cannot carry the labels {classes!r}")
        self._gaussian = gaussian
        self.classes_, self._class_index = classes, {c: i for i, c in enumerate(classes)}

    @property
    def variances(self) -> dict:
        """The (marginal) variances of the learned weights, laid out as `weights`; features
        never learned have variance `initial_variance`. A copy."""
        return self._by_label(without_intercept(self._raw_gaussian().block_views()[1]))

    @property
    def intercept_variance(self):
        """The variance of `intercept`, laid out as it: its prior until it is learned
        (`initial_intercept_variance` with the arrowhead covariance where given, else
        `initial_variance`), 0.0 without `learn_intercept` (the intercept is then fixed at 0)."""
        prior = 0.0
        if self.learn_intercept:
            prior = self.initial_variance
            if covariances.of(self).intercept_prior and self.initial_intercept_variance is not None:
                prior = self.initial_intercept_variance
        blocks = self._raw_gaussian().block_views()[1]
        return self._by_label([block.get(INTERCEPT, prior) for block in blocks])

    @property
    def covariances(self) -> dict:
        """The covariance matrix of the learned weights as ``{(f, g): Sigma_fg}``, a copy.

        Binary: keyed by pairs of feature names; multi-class: by pairs of ``(label, feature)``.
        ``covariance="full"`` gives every pair of learned weights (both orders; features of
        different labels correlate once a multi-class update has touched both); ``"arrowhead"``
        too (two weights of a label correlate through its intercept; labels are independent);
        ``"diagonal"`` only the pairs ``(f, f)``, whose value is `variances`' (every other
        covariance is 0). The intercept's row is named `INTERCEPT`. Features never learned are
        absent: independent of everything, variance `initial_variance`.
        (The constructor's `covariance` names the kind of matrix; this is the matrix.)
        """
        gaussian: Any = self._raw_gaussian()  # with `correlates`, an engine with `index` and `cov`
        if covariances.of(self).correlates:
            keys = [self._public_key(b, f) for b, f in gaussian.index]
            rows = gaussian.cov.tolist() if keys else []
            return {(k, g): value for k, row in zip(keys, rows) for g, value in zip(keys, row)}
        return {
            (self._public_key(b, f),) * 2: s
            for b, block in enumerate(gaussian.block_views()[1])
            for f, s in block.items()
        }

    def _public_key(self, block: int, feature):
        """The name of a weight in the public views: its feature, or ``(label, feature)``."""
        return feature if self.is_binary else (self.classes_[block], feature)

    # -- probabilities ------------------------------------------------------------------------

    @property
    def temperature(self) -> float:
        """a, the temperature of the probabilities: fitted online when calibrating (see above),
        else 1."""
        return 1.0 if self._temperature is None else self._temperature[0]

    @property
    def flip_share(self) -> float:
        """eps, the share of flipped labels a binary model's calibrated probabilities expect,
        ``eps + (1 - 2 eps) Phi(...)``, fitted online by EM from a prior of 0.003
        (`river_cw.flips`); 0 without calibration. Predictions do not depend on it."""
        return 0.0 if self._flips is None else self._flips[1]

    _MARGIN_NOISE: ClassVar[float] = 1.0  # the rule's noise term of a margin (see above)

    @property
    def margin_noise(self) -> float:
        """r, the noise term the calibrated probabilities add to a margin's variance,
        ``Phi(a m / sqrt(v + r))``: the rule's (1 for AROW, CW, NHERD and SCW, 0 for SOP) when
        calibrating, else 0."""
        return self._MARGIN_NOISE if self.calibrate else 0.0

    def predict_proba_one(self, x: dict) -> dict:  # type: ignore[override]  # no **kwargs, as river's own models
        """``{label: probability}`` from the Gaussian margins (`river_cw.probabilities`); empty
        before any label; certain of one label, unless it is a bool: then binary over both
        (`river_cw.labels.predicted_labels`).

        Parameters
        ----------
        x
            The features, ``{name: number}``.
        """
        native = self._native_score(x, True)  # as predict_one, with the score's variance
        if native is None:
            return self._general_predict_proba_one(self._in_coordinates(x))
        classes = self.classes_
        if len(classes) < 2:
            classes = predicted_labels(classes)
            if len(classes) < 2:
                return {c: 1.0 for c in classes}
        m, v = native
        return probabilities.binary(
            m, v + self.margin_noise, self.temperature, classes, self._flips
        )

    def _general_predict_proba_one(self, x: dict) -> dict:
        classes = predicted_labels(self.classes_)
        x = self._features(x)
        scores, v = self._gaussian.scores_with_scale(x)  # validates x, even before two labels
        if len(classes) < 2:
            return {c: 1.0 for c in classes}
        v += self.margin_noise
        if self.is_binary:
            return probabilities.binary(scores[0], v, self.temperature, classes, self._flips)
        if isinstance(self._gaussian, COMPILED):
            compiled = engine.diagonal.multiclass_probabilities  # type: ignore[union-attr]
            return dict(zip(classes, compiled(scores, v, self.temperature)))
        return probabilities.multiclass(
            probabilities.pairwise(scores, v), self.temperature, classes
        )

    # -- the compiled engine's one-call paths ---------------------------------------------------

    @property
    def _native_step(self) -> tuple[str, tuple] | None:
        """The rule's `_step` in C, ``(name, params)`` (see river_cw/_engines/_steps.h), or None: the
        compiled engine's lean `learn_one` then serves the common case in one call."""
        return None

    @property
    def _native_exact_step(self) -> tuple | None:
        """The rule's `_exact_step` in C for the lean `learn_one`, ``(step, scheme)``: a native
        step ``(name, params)`` (river_cw/_engines/_exact.h's `find_exact_step`, or a `_native_step` of
        river_cw/_engines/_steps.h) and the scheme its update takes, ``"project"`` or ``("herding", C)``
        (shrinking with C times the sample weight); or None."""
        return None

    def _native_step_of_step(self) -> tuple[str, tuple] | None:
        """`_native_step` where it is this model's `_step` in C: None for a subclass that
        overrides `_step` but not `_native_step` (its own step must run)."""
        return self._native_of("_step", "_native_step")

    def _native_of(self, method: str, native: str):
        """The attribute `native` where it is this model's `method` in C: None when a subclass
        overrides `method` but not `native`."""
        owners = [
            next(c for c in type(self).__mro__ if name in vars(c)) for name in (method, native)
        ]
        return getattr(self, native) if owners[0] is owners[1] else None

    def learn_one(self, x: dict, y, w: float = 1.0) -> None:
        """Learn the example `x` with label `y`.

        Bad input (a non-numeric, NaN or infinite value, a missing label, a bad `w`) raises
        TypeError or ValueError naming it, and leaves the model exactly as it was.

        Parameters
        ----------
        x
            The features, ``{name: number}``; a missing feature is 0.
        y
            The label: any hashable value; a new one makes a binary model multi-class.
        w
            The sample weight, a finite number >= 0 (each rule's class docstring says what it
            means); ``w=0`` validates `x` and `y` and changes nothing, ``w=1`` is the
            unweighted rule to the bit.

        """
        if self._centring is not None:  # deciding whether to centre, or centred
            self._learn_centring(x, y, w)
            return
        # The common case in one call of the compiled engine (`learn_native`: a binary
        # model, a known label, a float weight > 0; x read as `as_floats` reads it, margin,
        # the rule's C step, update): the general path's numbers. Any other case, and any x
        # it does not take as it is (to name a bad feature), goes the general way.
        lean = self._lean
        if lean is STALE:
            lean = self._lean = self._lean_spec()
        if lean is not None:  # none without a compiled engine (`_lean_spec`)
            outcome = self._gaussian.learn_native(x, y, w, self._class_index, lean)  # type: ignore[union-attr]
            if not outcome:  # learned (or nothing to learn)
                return
            if outcome == SKIPPED:
                self.n_skipped_updates += 1
                return
        LinearClassifier.learn_one(self, x, y, w)

    # -- centring (`river_cw.centring`) -------------------------------------------------------

    def _learn_centring(self, x, y, w) -> None:
        """`learn_one` of a model that centres. While it decides: `x` learned as it is, then
        counted (`_decide`). Centred: ``x - m``, in one call of the compiled engine where it
        can (`learn_native` subtracts the centre), else by the general path on
        `Centring.centred`'s dict, the same numbers."""
        centring: Centring = self._centring  # type: ignore[assignment]  # learn_one's check
        centre = centring.centre
        if centre is None:
            self._learned_as_it_is(
                centring, lambda: GaussianClassifier.learn_one(self, x, y, w), x, w
            )
            return
        if self._lean is STALE:
            self._lean = self._lean_spec()
        engine: Any = self._gaussian
        outcome = (
            -1
            if self._lean is None
            else engine.learn_native(x, y, w, self._class_index, self._lean, centre)
        )
        if outcome < 0:  # the general path's case
            LinearClassifier.learn_one(self, centring.centred(x), y, w)
        elif outcome == SKIPPED:
            self.n_skipped_updates += 1

    def _learned_as_it_is(self, centring: Centring, learn, x, w) -> None:
        """`learn()` with the deciding model's centring set aside (x learned as it is), then
        `x`, with sample weight `w`, counted (`_decide`)."""
        self._centring = None
        try:
            learn()
        finally:
            self._centring = centring
        self._decide(centring, x, w)

    def _decide(self, centring: Centring, x, w) -> None:
        """Count the example `x`, just learned with sample weight `w` (`Centring.observe`: a
        dict; any other input, a text's token counts, never centres; ``w=0`` learned
        nothing), and centre the model at the `river_cw.centring.WARM_UP`-th of a dense
        stream."""
        if not isinstance(x, dict):
            self._never_centre()
            return
        if w:
            decided = centring.observe(as_floats(x))
            if decided is None:
                self._never_centre()
            elif decided:
                self._centre(centring)

    def _centre(self, centring: Centring) -> None:
        """Move the model to coordinates centred at `centring`'s means, for good; or, where the
        means are all 0, the shift is not finite or the intercept's variance would exceed its
        prior, never centre."""
        means = centring.means
        assert means is not None, "deciding"
        gaussian: Any = self._gaussian
        shift = covariances.of(self).shift
        blocks = shift(gaussian, means) if any(means.values()) else None  # type: ignore[misc]
        if blocks is None or any(block[INTERCEPT][1] > gaussian.root_variance for block in blocks):
            self._never_centre()
            return
        gaussian.set_weights(blocks)
        centring.centre_at(means)

    def _never_centre(self) -> None:
        """The model learns its features as they are from now on: no centring, and its
        forgetting read from the 0-1 surprise alone."""
        self._centring = None
        self._log_score = None

    @property
    def _centred(self) -> bool:
        """Whether the model's features are centred (`centre_` not empty)."""
        centring = self._centring
        return centring is not None and centring.centre is not None

    @property
    def _centre_of_rows(self) -> dict | None:
        """The centre the batch kernel subtracts from dict rows (`Centring.centre`), or None."""
        return self._centring.centre if self._centred else None  # type: ignore[union-attr]

    @property
    def centre_(self) -> dict:
        """The point the model's features are centred at, ``{feature: mean}``: the means of its
        first `river_cw.centring.WARM_UP` examples where those all had the same features, and
        `centre` is True; else empty (the features as they are).
        The weights (`weights`, `variances`, ...) are shown in the raw coordinates either way."""
        centring = self._centring
        return {} if centring is None or centring.centre is None else dict(centring.centre)

    def _in_coordinates(self, x):
        """`x` in the model's coordinates: ``x - m`` where it centres (`Centring.centred`)."""
        centring = self._centring
        return x if centring is None or centring.centre is None else centring.centred(x)

    def _raw_gaussian(self):
        """The engine holding the Gaussian in the raw coordinates, for the views: the model's
        own, or where it centres, a copy shifted back (`river_cw.centring.shift`)."""
        centring = self._centring
        if centring is None or centring.centre is None:
            return self._gaussian
        return self._moved(self._gaussian, {f: -m for f, m in centring.centre.items()})

    def _moved(self, gaussian, delta: dict):
        """A copy of `gaussian` (this model's, or laid out for other labels) in coordinates whose
        origin moved by `delta` (`river_cw.centring.shift`); ValueError where a number would
        not be finite."""
        kind = covariances.of(self)
        blocks = kind.shift(gaussian, delta)  # type: ignore[misc]
        if blocks is None:
            raise ValueError("moving the model's coordinates overflows float64")
        return kind.only(gaussian, blocks)  # type: ignore[misc]

    def predict_one(self, x: dict):  # type: ignore[override]  # no **kwargs, as river's own models
        """`LinearClassifier.predict_one`: the label of largest `predict_proba_one`
        (`river_cw.probabilities.most_probable`), a binary model's score taken in one call of the
        compiled engine where it can (`_native_score`, inlined: the common case).

        Parameters
        ----------
        x
            The features, ``{name: number}``.
        """
        engine: Any = self._gaussian
        if isinstance(engine, COMPILED):
            intercept, centring = INTERCEPT if self.learn_intercept else None, self._centring
            if centring is None or centring.centre is None:
                score = engine.score_native(x, intercept, False)
            else:
                score = engine.score_native(x, intercept, False, centring.centre)
            if score is not None:
                classes = self.classes_
                if len(classes) == 2:  # `most_probable`'s binary case, inlined: the common case
                    return classes[1] if score > 0 else classes[0]
                return most_probable(predicted_labels(classes), (score,))
        labels = predicted_labels(self.classes_)
        return most_probable(labels, self._scores(self._features(self._in_coordinates(x))))

    def _predict_rows(self, rows: Rows) -> list:
        if self._centred and rows.csr is not None:  # each row centred by `predict_one`
            return super()._predict_rows(rows)
        scores = _one_call.score_rows(self, rows, False, self._centre_of_rows)
        if scores is None:
            return super()._predict_rows(rows)
        classes = predicted_labels(self.classes_)
        return [
            most_probable(classes, (score,)) if score is not None else self.predict_one(rows.row(i))
            for i, score in enumerate(scores)
        ]

    def _predict_proba_rows(self, rows: Rows) -> list[dict]:
        if (
            len(predicted_labels(self.classes_)) != 2
            or (self._centred and rows.csr is not None)  # each row centred by predict_proba_one
            or (probas := _one_call.score_rows(self, rows, True, self._centre_of_rows)) is None
        ):
            return super()._predict_proba_rows(rows)
        return [
            proba if proba is not None else self.predict_proba_one(rows.row(i))
            for i, proba in enumerate(probas)
        ]

    def _native_score(self, x: dict, variance: bool):
        """The compiled engine's score of a binary model, ``m`` or ``(m, v)`` with its
        variance (`score_native`, diagonal, arrowhead or full: x a dict of floats, ints and
        bools, or a `river_cw._engines._text.TokenCounts`), or None where the general path must serve."""
        engine: Any = self._gaussian
        if not isinstance(engine, COMPILED):
            return None
        intercept, centring = INTERCEPT if self.learn_intercept else None, self._centring
        if centring is None or centring.centre is None:
            return engine.score_native(x, intercept, variance)
        return engine.score_native(x, intercept, variance, centring.centre)  # x - m, in C

    _lean = STALE  # `_lean_spec`, built by the first learn_one after a hyperparameter is set

    def _lean_spec(self):
        """``(step, scheme, intercept, calibration)`` of the compiled engine's lean path, or None
        where the model needs the general one (a covariance with no compiled engine; a fixed
        forgetting, no native step of its own `_step`, or of its own `_exact_step` for the exact
        scheme). `calibration` is `_calibration_spec`'s: with ``forgetting="auto"`` the lean path
        takes the examples the surprise does not make forget, and on the arrowhead those it
        does too (forgotten as `_update` forgets them)."""
        if not covariances.of(self).compiled or self._fixed_rate():
            return None
        if self.diagonal == "exact":
            native = self._native_of("_exact_step", "_native_exact_step")
            if native is None:
                return None
            step, scheme = native
        else:
            step, scheme = self._native_step_of_step(), self.diagonal
        if step is None:
            return None
        return step, scheme, INTERCEPT if self.learn_intercept else None, self._calibration_spec()

    def _calibration_spec(self):
        """The compiled engines' calibration: ``(temperature, noise, surprise, log_score,
        flips)``, the surprise ``[n, e, q_bar]`` (an ``array('d')``, stepped in place) where the
        model sets its own forgetting, else None, the log score ``[a', H', n, L, H, V]`` where
        it reads that too once centred, else None, and the share of flipped labels ``[n, eps]``
        (`river_cw.flips`); or None (see `_lean_spec`)."""
        temperature = self._temperature
        if temperature is None:
            return None
        return temperature, self.margin_noise, self._surprise, self._log_score, self._flips

    def __setattr__(self, name: str, value) -> None:
        object.__setattr__(self, name, value)
        if name in _LEAN_STATE or name in hyperparameters(type(self)):  # the lean spec's
            object.__setattr__(self, "_lean", STALE)

    def __getstate__(self) -> dict:
        state = dict(vars(self))
        state.pop("_lean", None)  # derived from the hyperparameters
        return state

    def _learn_rows(self, rows, labels, weights):
        """The mini-batch loop in the compiled engine's batch kernel where it has one (the
        diagonal and arrowhead covariances; a calibrating model while it is binary:
        `river_cw._one_call.learn_rows`); while the model decides whether to centre, row by
        row (each in the kernel, as it would be learned in a batch), and once centred, dict
        rows in the kernel less the centre where the lean path serves the model, other rows by
        `learn_one`."""
        centring = self._centring
        if centring is not None and centring.centre is None:
            rows.check_names()
            first = 0
            while first < len(rows) and self._centring is centring and centring.centre is None:
                one = (
                    rows.slice(first, first + 1),
                    labels[first : first + 1],
                    weights[first : first + 1],
                )
                self._learned_as_it_is(
                    centring,
                    lambda: self._learn_rows_as_they_are(*one),
                    rows.row(first),
                    weights[first],
                )
                first += 1
            rows, labels, weights = rows.slice(first), labels[first:], weights[first:]
        if self._centring is not None:  # centred
            engine = covariances.of(self).native_batch(self._gaussian)
            if rows.csr is None and engine is not None and _one_call.lean(self) is not None:
                _one_call.learn_rows(self, engine, rows, labels, weights, self._centre_of_rows)
                return
            return super()._learn_rows(rows, labels, weights)  # each row by learn_one
        self._learn_rows_as_they_are(rows, labels, weights)

    def _learn_rows_as_they_are(self, rows, labels, weights):
        engine = covariances.of(self).native_batch(self._gaussian)
        if engine is None or not _one_call.kernel_calibrates(self):
            return super()._learn_rows(rows, labels, weights)
        _one_call.learn_rows(self, engine, rows, labels, weights)
