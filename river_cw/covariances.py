"""The covariances a Gaussian model may keep, and what each one brings: the one registry.

A model's ``covariance`` names an entry of `COVARIANCES`. The entry says which engines hold
N(mu, Sigma) of that kind (the compiled one where it is built, and the pure-Python reference),
which diagonal schemes its update takes, how its Gaussians mix (`river_cw.combine`), whether it
keeps marks (so that a changelog writes only the weights that moved) and which one-call paths its
compiled engine has. The models, `river_cw.combine` and `streams.kafka`'s changelog ask the
entry; none of them compares names, tests engine types or probes attributes. A new covariance
joins the library, and the contract suite every covariance passes
(tests/models/test_covariance_contract.py), by joining `COVARIANCES`.

>>> from river_cw import AROW
>>> from river_cw.covariances import COVARIANCES, of
>>> sorted(COVARIANCES)
['arrowhead', 'diagonal', 'full']
>>> of(AROW()).name, of(AROW()).keeps_marks, of(AROW(covariance="full")).keeps_marks
('arrowhead', True, False)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from . import centring
from ._engines import combine_arrowhead, combine_diagonal, combine_full
from ._engines.arrowhead import ArrowheadGaussian, PythonArrowheadGaussian
from ._engines.diagonal import DiagonalGaussian, PythonDiagonalGaussian
from ._engines.full import FullGaussian, PythonFullGaussian
from .base import INTERCEPT

__all__ = ["COMPILED", "COVARIANCES", "Covariance", "Gaussian", "of", "with_marks"]

# N(mu, Sigma) as a model holds it (the compiled engines have their Python ones' interface)
Gaussian = PythonDiagonalGaussian | PythonArrowheadGaussian | PythonFullGaussian


@dataclass(frozen=True)
class Covariance:
    """What one covariance brings: its engines, its update's schemes, its mixer, its paths.

    Parameters
    ----------
    name
        The model's ``covariance`` that names it.
    serving
        The engine a new model holds: the compiled one where it is built, else `reference`.
    reference
        The pure-Python engine: the readable transcription, the same numbers bit for bit.
    start
        ``start(engine, initial_variance, initial_intercept_variance)``: the prior, held by
        `engine` (the intercept's own prior variance only where `intercept_prior`).
    mixer
        The module whose ``mix(gaussians, method, base, forgets)`` mixes Gaussians of this
        kind (`river_cw.combine`).
    schemes
        The diagonal schemes its update takes (the model's ``diagonal``); empty where the
        update is exact and ``diagonal`` is ignored.
    correlates
        Whether weights covary (`covariances` then lists every pair; the engines have
        ``index`` and ``cov``).
    intercept_prior
        Whether the intercept takes a prior variance of its own
        (``initial_intercept_variance``).
    keeps_marks
        Whether its engines keep marks (``mark``, ``changed``, ``set_weights``): a changelog
        then writes the weights that moved, and `river_cw.changes` keeps only those.
    only
        ``only(gaussian, blocks)``: an engine like `gaussian` holding only `blocks` (what
        `river_cw.changes` returns); None where weights cannot be held apart (all are kept).
    batch_kernel
        Whether its compiled engine learns mini-batches in one call (``learn_rows``).
    parts
        ``parts(gaussian)``: what the versioned state format (`river_cw.state`) writes of an
        engine, by name: numbers and keys, numpy arrays, and ``blocks`` (per block,
        ``{key: list of floats}``, in order); read, not copied.
    assemble
        ``assemble(parts)``: an engine of `serving` holding `parts` (the inverse of `parts`).
    shift
        ``shift(gaussian, delta)``: per block, the entries of `gaussian` in coordinates whose
        origin moved by `delta` (``{feature: offset}``; `river_cw.centring.shift`), what
        ``set_weights`` and `only` take, or None where a number would not be finite; None
        where the model learns its features as they are (no centring).

    Examples
    --------

    >>> from river_cw.covariances import COVARIANCES
    >>> arrowhead = COVARIANCES["arrowhead"]
    >>> arrowhead.schemes, arrowhead.correlates, arrowhead.keeps_marks
    (('project', 'drop'), True, True)
    >>> prior = arrowhead.start(arrowhead.reference, 1.0, 100.0)
    >>> type(prior).__name__, prior.block_views()
    ('PythonArrowheadGaussian', ([{}], [{}]))

    """

    name: str
    serving: type[Gaussian]
    reference: type[Gaussian]
    start: Callable[[Any, float, float | None], Gaussian]
    mixer: ModuleType
    schemes: tuple[str, ...]
    correlates: bool
    intercept_prior: bool
    keeps_marks: bool
    only: Callable | None
    batch_kernel: bool
    parts: Callable[[Any], dict]
    assemble: Callable[[dict], Gaussian]
    shift: Callable[[Any, dict], list[dict] | None] | None

    @property
    def engines(self) -> tuple[type[Gaussian], ...]:
        """The engines a model of this covariance may hold: `serving` first."""
        return tuple(dict.fromkeys((self.serving, self.reference)))

    def prior(self, initial_variance: float, initial_intercept_variance: float | None):
        """A new model's Gaussian: the prior, held by `serving`.

        Parameters
        ----------
        initial_variance
            The weights' prior variance.
        initial_intercept_variance
            The intercept's, where `intercept_prior` (None: `initial_variance`).
        """
        return self.start(self.serving, initial_variance, initial_intercept_variance)

    @property
    def compiled(self) -> bool:
        """Whether a new model's engine is compiled (its one-call paths serve)."""
        return self.serving is not self.reference

    def native_batch(self, gaussian) -> Any | None:
        """`gaussian` where it learns a mini-batch in one call (``learn_rows``), else None.

        Parameters
        ----------
        gaussian
            The engine a model holds.
        """
        return gaussian if self.batch_kernel and isinstance(gaussian, COMPILED) else None


def _diagonal(initial_variance: float, blocks: list[dict]):
    kept = DiagonalGaussian(initial_variance)
    kept.blocks = blocks
    kept.reset_bound()
    return kept


def _arrowhead(initial_variance: float, root, root_variance: float, blocks: list[dict]):
    kept = ArrowheadGaussian(initial_variance, root, root_variance)
    kept.blocks = blocks
    return kept


def _full(initial_variance: float, n_blocks: int, index: tuple, mean, chol):
    kept = FullGaussian(initial_variance)
    kept.rows = [{} for _ in range(n_blocks)]
    for b, f, i in index:
        kept.rows[b][f] = i
    kept.mean = np.array(mean, dtype=float)
    kept.chol = np.ascontiguousarray(chol, dtype=float)
    return kept


COVARIANCES: dict[str, Covariance] = {
    "arrowhead": Covariance(
        name="arrowhead",
        serving=ArrowheadGaussian,
        reference=PythonArrowheadGaussian,
        start=lambda engine, variance, intercept: engine(variance, INTERCEPT, intercept),
        mixer=combine_arrowhead,
        schemes=("project", "drop"),
        correlates=True,
        intercept_prior=True,
        keeps_marks=True,
        only=lambda g, blocks: _arrowhead(g.initial_variance, g.root, g.root_variance, blocks),
        batch_kernel=True,
        parts=lambda g: {
            "initial_variance": g.initial_variance,
            "root": g.root,
            "root_variance": g.root_variance,
            "blocks": g.blocks,
        },
        assemble=lambda parts: _arrowhead(**parts),
        shift=lambda g, delta: centring.shift(
            g.blocks, g.root, delta, g.initial_variance, g.root_variance
        ),
    ),
    "diagonal": Covariance(
        name="diagonal",
        serving=DiagonalGaussian,
        reference=PythonDiagonalGaussian,
        start=lambda engine, variance, intercept: engine(variance),
        mixer=combine_diagonal,
        schemes=("project", "drop", "exact"),
        correlates=False,
        intercept_prior=False,
        keeps_marks=True,
        only=lambda g, blocks: _diagonal(g.initial_variance, blocks),
        batch_kernel=True,
        parts=lambda g: {"initial_variance": g.initial_variance, "blocks": g.blocks},
        assemble=lambda parts: _diagonal(**parts),
        shift=None,
    ),
    "full": Covariance(
        name="full",
        serving=FullGaussian,
        reference=PythonFullGaussian,
        start=lambda engine, variance, intercept: engine(variance),
        mixer=combine_full,
        schemes=(),
        correlates=True,
        intercept_prior=False,
        keeps_marks=False,
        only=None,
        batch_kernel=False,
        parts=lambda g: {
            "initial_variance": g.initial_variance,
            "n_blocks": g.n_blocks,
            "index": tuple((b, f, i) for (b, f), i in g.index.items()),
            "mean": g.mean,
            "chol": g.chol,
        },
        assemble=lambda parts: _full(**parts),
        shift=None,
    ),
}
"""Every covariance, by the name a model's ``covariance`` gives."""

COMPILED: tuple[type[Any], ...] = tuple(
    kind.serving for kind in COVARIANCES.values() if kind.compiled
)
"""The compiled engines, whose one-call paths (``score_native``, ``score_rows``,
``learn_native``) serve: the hot paths ask ``isinstance(gaussian, COMPILED)`` (a model may also
hold a reference engine, `GaussianClassifier.set_gaussian`)."""


def of(model) -> Covariance:
    """The entry of a Gaussian model's covariance.

    Parameters
    ----------
    model
        A Gaussian classifier (`river_cw.AROW`, `CW`, `NHERD`, `SCW`, `SOP`).

    Examples
    --------

    >>> from river_cw import CW
    >>> from river_cw.covariances import of
    >>> of(CW(covariance="diagonal")).schemes
    ('project', 'drop', 'exact')

    """
    return COVARIANCES[model.covariance]


def with_marks(model):
    """The Gaussian classifier of `model` (itself, or a `river_cw.text.TextClassifier`'s
    classifier) whose engine keeps marks, or None (another model, a river pipeline, an engine
    that keeps none). A changelog writes that engine's weights that moved since its ``mark``
    (``changed``) and puts them back with ``set_weights``.

    Parameters
    ----------
    model
        Any model.

    Examples
    --------

    >>> from river_cw import AROW
    >>> from river_cw.covariances import with_marks
    >>> model = AROW()
    >>> model.learn_one({"a": 1.0}, True)
    >>> model.learn_one({"a": 1.0}, False)
    >>> with_marks(model).gaussian.mark()
    >>> model.learn_one({"b": 1.0}, True)  # b and the intercept (the arrowhead's root) move
    >>> sorted(model.gaussian.changed()[0], key=str)
    ['b', river_cw.INTERCEPT]
    >>> with_marks(AROW(covariance="full")) is None
    True

    """
    from .gaussian_classifier import GaussianClassifier  # models import this module
    from .text import TextClassifier

    # the types themselves: a river pipeline passes isinstance checks for its last step's
    if type(model) is TextClassifier:
        model = model.classifier
    if issubclass(type(model), GaussianClassifier) and of(model).keeps_marks:
        return model
    return None
