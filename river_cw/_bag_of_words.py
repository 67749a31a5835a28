"""`river_cw.text.BagOfWords`: river's `feature_extraction.BagOfWords`, its counting compiled.

A module of its own so that `river_cw.text` imports `river.feature_extraction` (most of river,
scipy.stats, scikit-learn and pandas) only when a `BagOfWords` is asked for.
"""

from __future__ import annotations

from river import feature_extraction

from ._tokens import DEFAULT_PATTERN, TokenCounter


class BagOfWords(feature_extraction.BagOfWords):
    """Counts tokens in texts: river's `feature_extraction.BagOfWords`, counted in C.

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
        tokenizer_pattern=DEFAULT_PATTERN,
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
        self._start()

    def _start(self) -> None:
        """The compiled counter of these parameters (`river_cw._tokens.TokenCounter`), or None."""
        self._counter = TokenCounter.of(
            self.preprocessor,
            self.tokenizer,
            self.tokenizer_pattern,
            self.ngram_range,
            lowercase=self.lowercase,
            strip_accents=self.strip_accents,
            stop_words=self.stop_words,
        )

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_counter"}  # no text in a pickle

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._start()

    def transform_one(self, x):
        """The token counts of the text `x`, ``{token: count}``.

        Parameters
        ----------
        x
            A text, or a dict holding it under `on`.
        """
        if self._counter is not None:
            counts = self._counter(x if self.on is None else x[self.on])
            if counts is not None:
                return dict(counts)  # the counter's own is not to be changed
        return super().transform_one(x)
