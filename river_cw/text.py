"""Text features: river's `BagOfWords` with its token counting in C, and `TextClassifier`.

`BagOfWords` is river's `feature_extraction.BagOfWords` (same parameters, same output) whose
`transform_one` counts tokens in C (`river_cw._text`) when the compiled extension is built and
the tokenizer is river's default (any `lowercase`, `strip_accents` and `stop_words`). ASCII text
is lowercased and counted in C at once; other text first goes through river's own preprocessing
functions (NFKD accent stripping, `str.lower`), and C then counts its tokens with the character
classes of Python's `re` module. Anything else (a `preprocessor`, a `tokenizer`, another
pattern, n-grams, a text that is not a `str`) runs river's code unchanged. `COMPILED` says
whether the extension is active (see `river_cw.engine`: `RIVER_CW_PURE_PYTHON=1` turns it off).

`TextClassifier(classifier, ...)` is ``BagOfWords(...) | classifier`` as one river classifier
with the same numbers.
"""

from __future__ import annotations

import inspect

from river import base, feature_extraction
from river.feature_extraction.vectorize import strip_accents_unicode

from . import engine

COMPILED = engine.text is not None
if engine.text is not None:
    count_ascii, count_preprocessed = engine.text.count_ascii, engine.text.count_preprocessed

__all__ = ["COMPILED", "BagOfWords", "TextClassifier"]

_DEFAULT_PATTERN = feature_extraction.BagOfWords().tokenizer_pattern


class BagOfWords(feature_extraction.BagOfWords):
    """Counts tokens in texts: river's `feature_extraction.BagOfWords`, faster on ASCII text.

    The parameters and the output are river's (see `river.feature_extraction.BagOfWords`). With
    `preprocessor`, `tokenizer`, a `tokenizer_pattern` other than the default, or n-grams other
    than unigrams, every text goes through river's code; so does a text that is not a `str`.

    Parameters
    ----------
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

    >>> from river_cw.text import BagOfWords

    >>> bow = BagOfWords(on="text")
    >>> bow.transform_one({"text": "Is this the first document? This one-off is."})
    {'is': 2, 'this': 2, 'the': 1, 'first': 1, 'document': 1, 'one-off': 1}

    Non-ASCII text gets river's accent stripping:

    >>> BagOfWords().transform_one("Déjà vu, déjà VU")
    {'deja': 2, 'vu': 2}

    """

    def __init__(
        self,
        on: str | None = None,
        strip_accents=True,
        lowercase=True,
        preprocessor=None,
        stop_words: set[str] | None = None,
        tokenizer_pattern=_DEFAULT_PATTERN,
        tokenizer=None,
        ngram_range=(1, 1),
    ):
        super().__init__(
            on=on,
            strip_accents=strip_accents,
            lowercase=lowercase,
            preprocessor=preprocessor,
            stop_words=stop_words,
            tokenizer_pattern=tokenizer_pattern,
            tokenizer=tokenizer,
            ngram_range=ngram_range,
        )
        self._last = (None, None)  # the last text and its counts (see `_counts`)
        self._compiled = (
            COMPILED
            and preprocessor is None
            and tokenizer is None
            and tokenizer_pattern == _DEFAULT_PATTERN
            and tuple(ngram_range) == (1, 1)
        )

    def transform_one(self, x):
        """The token counts of the text `x`, ``{token: count}``.

        Parameters
        ----------
        x
            A text, or a dict holding it under `on`.
        """
        if self._compiled:
            counts = self._counts(x if self.on is None else x[self.on])
            if counts is not None:
                if self.stop_words:
                    return {t: n for t, n in counts.items() if t not in self.stop_words}
                return counts
        return super().transform_one(x)

    def _counts(self, text) -> dict | None:
        """The token counts of `text` (a copy: the caller may change it), or None when the
        compiled path does not apply. The counts of the last text are kept: a pipeline that
        predicts and then learns an example (river's `Pipeline` transforms it both times)
        counts its tokens once."""
        last_text, last_counts = self._last
        if text is last_text and type(text) is str:
            return dict(last_counts)
        counts = count_ascii(text, self.lowercase)
        if counts is None and type(text) is str:
            preprocessed = strip_accents_unicode(text) if self.strip_accents else text
            counts = count_preprocessed(preprocessed.lower() if self.lowercase else preprocessed)
        if counts is not None:
            self._last = (text, counts)
            return dict(counts)
        return None

    def __getstate__(self):
        return {**self.__dict__, "_last": (None, None)}  # no text of the stream in a pickle


_TEXT_OPTIONS = tuple(inspect.signature(BagOfWords).parameters)  # TextClassifier's too


class TextClassifier(base.Classifier):
    """A classifier of texts: ``BagOfWords(...) | classifier`` as one river classifier.

    A text (a `str`, or a dict holding it under `on`) is turned into river's `BagOfWords` token
    counts, with the bag-of-words parameters given here (river's names and defaults), and the
    wrapped `classifier` predicts and learns from them. Predictions, probabilities and the
    learned model are those of ``river_cw.text.BagOfWords(...) | classifier``, bit for bit; the
    classifier stays public (`classifier`), with its `weights`, `variances` and the rest.

    The tokens are counted by `river_cw.text.BagOfWords` (in C where it can); predicting and
    then learning the same text object counts its tokens once.

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
    0.167

    It drops into a pipeline like any river classifier; with `on=None` it takes the text itself:

    >>> from river import compose
    >>> pipeline = compose.FuncTransformer(str.strip) | TextClassifier(river_cw.AROW())
    >>> pipeline.learn_one("  good movie ", True)
    >>> pipeline.predict_proba_one(" good ")
    {True: 1.0}

    """

    def __init__(
        self,
        classifier: base.Classifier,
        on: str | None = None,
        strip_accents=True,
        lowercase=True,
        preprocessor=None,
        stop_words: set[str] | None = None,
        tokenizer_pattern=_DEFAULT_PATTERN,
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
        self._bag_of_words = BagOfWords(**{name: getattr(self, name) for name in _TEXT_OPTIONS})

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
        self.classifier.learn_one(self._bag_of_words.transform_one(x), y, **params)

    def predict_one(self, x, **params):
        """The classifier's prediction for the text `x`.

        Parameters
        ----------
        x
            A text, or a dict holding it under `on`.
        **params
            Passed to the classifier's `predict_one`.
        """
        return self.classifier.predict_one(self._bag_of_words.transform_one(x), **params)

    def predict_proba_one(self, x, **params) -> dict:
        """The classifier's probabilities for the text `x`, ``{label: probability}``.

        Parameters
        ----------
        x
            A text, or a dict holding it under `on`.
        **params
            Passed to the classifier's `predict_proba_one`.
        """
        return self.classifier.predict_proba_one(self._bag_of_words.transform_one(x), **params)
