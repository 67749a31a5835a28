"""The compiled token counting behind `river_cw.text`: river's `BagOfWords` default tokenizer,
counted in C by `river_cw._engines._text` (`TokenCounter`, one call per text).

A module of its own, below both `river_cw.text` (`TextClassifier`) and
`river_cw._bag_of_words` (`BagOfWords`), which both count with it.
"""

from __future__ import annotations

import unicodedata

from . import engine

if engine.text is not None:  # river's accent stripping, done in C with unicodedata's functions
    engine.text.connect(normalize=unicodedata.normalize, combining=unicodedata.combining)
    # the type of a text's counts without their dict, which both Gaussian engines read
    for gaussian in (engine.diagonal, engine.arrowhead):
        gaussian.connect(token_counts=engine.text.TokenCounts)  # type: ignore[union-attr]

DEFAULT_PATTERN = r"(?u)\b\w[\w\-]+\b"
"""river's `BagOfWords` default `tokenizer_pattern` (tests/text/test_bag_of_words.py checks it is river's)."""


class TokenCounter:
    """The token counts of a text as river's `BagOfWords` gives them with its default tokenizer,
    counted in C by `river_cw._engines._text.count` (one call per text); `of` says where that applies.

    `token_counts` gives the same counts without the dict, for the compiled engines (see
    `TextClassifier`).

    The counts of the last text are kept, keyed by the identity of that exact `str`: predicting
    and then learning an example (river's `Pipeline` transforms it both times) counts its tokens
    once. Each call for that text hands out the same dict, which the caller must not change (a
    caller that hands it on copies it). The options are fixed: an owner whose options change
    makes a new counter. Its owner leaves it out of a pickle, and with it the last text of the
    stream.
    """

    def __init__(self, lowercase: bool, strip_accents: bool, stop_words):
        self.lowercase = lowercase
        self.strip_accents = strip_accents
        self.stop_words = stop_words
        self._last_text = self._last_counts = None
        self._last_tokens_text = self._last_tokens = None

    @classmethod
    def of(cls, preprocessor, tokenizer, tokenizer_pattern, ngram_range, **options):
        """The counter of river's `BagOfWords` with these parameters, or None where river's code
        must run (the extension is not active, or a parameter is not river's default)."""
        if (
            engine.text is not None
            and preprocessor is None
            and tokenizer is None
            and tokenizer_pattern == DEFAULT_PATTERN
            and tuple(ngram_range) == (1, 1)
        ):
            return cls(**options)
        return None

    def __call__(self, text) -> dict | None:
        """The token counts of `text`, not to be changed, or None when it is not an exact `str`
        (river's code then runs, and raises what it raises)."""
        if text is self._last_text:  # an exact str (or None at first, whose counts are None)
            return self._last_counts
        counts = engine.text.count(text, self.lowercase, self.strip_accents)  # type: ignore[union-attr]
        if counts is None:
            return None
        if self.stop_words:
            counts = {t: n for t, n in counts.items() if t not in self.stop_words}
        self._last_text, self._last_counts = text, counts
        return counts

    def token_counts(self, text):
        """The token counts of `text` without the dict, a `river_cw._engines._text.TokenCounts` (its
        ``as_dict()`` is `__call__`'s dict, not to be changed), kept for the last text as
        `__call__`'s; None when `text` is not an exact `str`, and with stop words (a
        `TokenCounts` holds every token)."""
        if text is self._last_tokens_text:
            return self._last_tokens
        if self.stop_words:
            return None
        tokens = engine.text.count_tokens(text, self.lowercase, self.strip_accents)  # type: ignore[union-attr]
        if tokens is not None:
            self._last_tokens_text, self._last_tokens = text, tokens
        return tokens
