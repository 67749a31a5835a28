"""Text features: `TextClassifier`, and river's `BagOfWords` with its token counting in C.

`BagOfWords` is river's `feature_extraction.BagOfWords` (same parameters, same output) whose
`transform_one` counts tokens in C (`river_cw._engines._text`) when the compiled extension is built and
the tokenizer is river's default (any `lowercase`, `strip_accents` and `stop_words`). ASCII text
is lowercased and counted at once; other text goes through river's preprocessing done in C (NFKD
accent stripping, `str.lower`) and its tokens are found with the character classes of Python's
`re` module, in the same call. Anything else (a `preprocessor`, a `tokenizer`, another pattern,
n-grams, a text that is not a `str`) runs river's code unchanged. `COMPILED` says whether the
extension is active (see `river_cw.engine`: `RIVER_CW_PURE_PYTHON=1` turns it off).

`TextClassifier(classifier, ...)` is ``BagOfWords(...) | classifier`` as one river classifier
with the same numbers.

Importing this module does not import `river.feature_extraction` (which loads most of river,
scipy.stats, scikit-learn and pandas): `BagOfWords` is imported from `river_cw._bag_of_words` when
it is first asked for, and `TextClassifier` counts tokens without it where the compiled path
applies.
"""

from __future__ import annotations

import typing

from river import base

from . import engine
from ._tokens import DEFAULT_PATTERN, TokenCounter
from .base import LinearClassifier, copied, reduce_by_state
from .gaussian_classifier import GaussianClassifier

COMPILED = engine.text is not None

if typing.TYPE_CHECKING:
    from ._bag_of_words import BagOfWords

__all__ = ["COMPILED", "BagOfWords", "TextClassifier"]  # BagOfWords: from __getattr__


def __getattr__(name: str):
    if name == "BagOfWords":  # river's subclass, with river.feature_extraction, at first use
        from ._bag_of_words import BagOfWords

        return BagOfWords
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_TEXT_OPTIONS = (
    "strip_accents",
    "lowercase",
    "preprocessor",
    "stop_words",
    "tokenizer_pattern",
    "tokenizer",
    "ngram_range",
)
"""The parameters of river's `BagOfWords` that say how a text is counted (all but `on`)."""

_STARTED_BY = frozenset(("classifier", *_TEXT_OPTIONS))
"""The parameters of `TextClassifier` that `_start` reads: setting one starts it anew."""


def _reads_token_counts(classifier) -> bool:
    """Whether `classifier` takes a text's token counts without their dict (a
    `river_cw._engines._text.TokenCounts`): a `GaussianClassifier` whose one-call paths read it as they
    read a dict and whose general path makes it the dict (`_features`), with the methods of its
    class (a subclass that overrides one is handed dicts)."""
    kind = type(classifier)
    return isinstance(classifier, GaussianClassifier) and all(
        getattr(kind, name) is getattr(GaussianClassifier, name)
        for name in ("learn_one", "predict_one", "predict_proba_one", "_native_score", "_features")
    )


class TextClassifier(base.Classifier):
    """A classifier of texts: ``BagOfWords(...) | classifier`` as one river classifier.

    A text (a `str`, or a dict holding it under `on`) is turned into river's `BagOfWords` token
    counts, with the bag-of-words parameters given here (river's names and defaults), and the
    wrapped `classifier` predicts and learns from them. Predictions, probabilities and the
    learned model are those of ``river_cw.text.BagOfWords(...) | classifier``, bit for bit; the
    classifier stays public (`classifier`), with its `weights`, `variances` and the rest.

    The tokens are counted in C where `river_cw.text.BagOfWords` counts them so (`river_cw._tokens.TokenCounter`,
    without building a `BagOfWords`), else by a `BagOfWords`; predicting and then learning the
    same text object counts its tokens once. river-cw's classifiers, which never change the
    features they are given, read the same counts in both calls; any other gets its own copy.
    A Gaussian model (AROW, CW, ...) on the compiled engine reads the counts without their
    dict where it serves the text in one call (a binary model, a known label: see
    `river_cw.gaussian_classifier`), with the same numbers; the dict is built where it does not.

    Parameters
    ----------
    classifier
        The classifier of the token counts (any river classifier).
    on
        The key of the text in a dict input; None takes the input itself as the text.
    strip_accents
        Strip accents (``"Déjà"`` counts as ``"deja"``).
    lowercase
        Lowercase the text before it is tokenized.
    preprocessor
        A function applied to the text before it is tokenized; None applies none.
    stop_words
        Tokens to leave out of the counts.
    tokenizer_pattern
        The regular expression of a token; river's default takes runs of two or more word
        characters or hyphens.
    tokenizer
        A function from a text to its tokens, used instead of `tokenizer_pattern`.
    ngram_range
        ``(min_n, max_n)``: count the n-grams of these lengths; ``(1, 2)`` adds each pair of
        consecutive tokens as a tuple. ``(1, 1)`` counts single tokens.

    Examples
    --------

    >>> import river_cw
    >>> from river_cw.text import TextClassifier

    >>> model = TextClassifier(river_cw.AROW(), on="text")
    >>> model.learn_one({"text": "Win a FREE prize now"}, "spam")
    >>> model.learn_one({"text": "See you at lunch"}, "ham")
    >>> model.predict_one({"text": "a free lunch prize"})
    'spam'
    >>> model.classifier.positive_label  # "spam" > "ham", whichever came first
    'spam'
    >>> round(model.classifier.weights["free"], 3)  # binary: the score of the positive label
    0.2

    It drops into a pipeline like any river classifier; with `on=None` it takes the text itself:

    >>> from river import compose
    >>> pipeline = compose.FuncTransformer(str.strip) | TextClassifier(river_cw.AROW())
    >>> pipeline.learn_one("  good movie ", True)
    >>> pipeline.predict_proba_one(" good ")  # a bool's other value is known before it is met
    {True: 0.7143132076334284, False: 0.28568679236657163}

    """

    def __init__(
        self,
        classifier: base.Classifier,
        on: str | None = None,
        strip_accents=True,
        lowercase=True,
        preprocessor=None,
        stop_words: set[str] | None = None,
        tokenizer_pattern=DEFAULT_PATTERN,
        tokenizer=None,
        ngram_range=(1, 1),
    ):
        self.classifier = classifier
        self.on = on
        self.strip_accents = strip_accents
        self.lowercase = lowercase
        self.preprocessor = preprocessor
        self.stop_words = stop_words
        self.tokenizer_pattern = tokenizer_pattern
        self.tokenizer = tokenizer
        self.ngram_range = ngram_range
        self._start()

    def _start(self) -> None:
        """The token counting of the bag-of-words parameters: the compiled counter, and river's
        code (a `BagOfWords`, built at its first use) for what the counter does not take; and
        whether the classifier may read the counter's own counts (river-cw's never change x)."""
        options = {name: getattr(self, name) for name in _TEXT_OPTIONS}
        self._counter = TokenCounter.of(**options)
        self._bag_of_words: BagOfWords | None = None
        self._shares_counts = isinstance(self.classifier, LinearClassifier)
        self._reads_tokens = (
            self._counter is not None
            and not self.stop_words  # see TokenCounter.token_counts
            and _reads_token_counts(self.classifier)
        )

    def __setattr__(self, name: str, value) -> None:
        object.__setattr__(self, name, value)
        if name in _STARTED_BY and "_counter" in self.__dict__:  # set after __init__
            self._start()

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("_counter", "_bag_of_words")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._start()

    def __reduce_ex__(self, protocol):
        return reduce_by_state(self, protocol)

    def __copy__(self):
        return copied(self, None)

    def __deepcopy__(self, memo: dict):
        return copied(self, memo)

    def _counts(self, x):
        """The token counts of the text `x` (a dict holding it under `on`, or the text): a dict,
        or without the dict where the classifier takes that (`_reads_tokens`)."""
        text = x if self.on is None else x[self.on]
        if self._counter is not None:
            counts = self._counter.token_counts(text) if self._reads_tokens else self._counter(text)
            if counts is not None:
                return counts if self._shares_counts else dict(counts)
        if not isinstance(text, str):  # river's BagOfWords would raise an AttributeError
            field = "the text" if self.on is None else f"the text field {self.on!r}"
            raise TypeError(f"{field} must be a str, got {type(text).__name__}: {text!r:.60}")
        if self._bag_of_words is None:
            from ._bag_of_words import BagOfWords

            options = {name: getattr(self, name) for name in ("on", *_TEXT_OPTIONS)}
            self._bag_of_words = BagOfWords(**options)
        return self._bag_of_words.transform_one(x)

    @classmethod
    def _unit_test_params(cls):
        from .arow import AROW

        yield {"classifier": AROW()}
        yield {"classifier": AROW(), "on": "text", "stop_words": {"the"}}

    def __str__(self):
        return f"{type(self).__name__}({self.classifier})"

    def _more_tags(self):
        return {base.tags.TEXT_INPUT}

    @property
    def _multiclass(self):
        return self.classifier._multiclass

    def learn_one(self, x, y, **params) -> None:
        """Learn the text `x` with label `y`.

        Parameters
        ----------
        x
            A text, or a dict holding it under `on`.
        y
            Its label.
        **params
            Passed to the classifier's `learn_one` (e.g. a sample weight ``w``).
        """
        self.classifier.learn_one(self._counts(x), y, **params)

    def predict_one(self, x, **params):
        """The classifier's prediction for the text `x`.

        Parameters
        ----------
        x
            A text, or a dict holding it under `on`.
        **params
            Passed to the classifier's `predict_one`.
        """
        return self.classifier.predict_one(self._counts(x), **params)

    def predict_proba_one(self, x, **params) -> dict:
        """The classifier's probabilities for the text `x`, ``{label: probability}``.

        Parameters
        ----------
        x
            A text, or a dict holding it under `on`.
        **params
            Passed to the classifier's `predict_proba_one`.
        """
        return self.classifier.predict_proba_one(self._counts(x), **params)
