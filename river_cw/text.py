"""Text features: river's `BagOfWords` with its token counting in C.

`BagOfWords` is river's `feature_extraction.BagOfWords` (same parameters, same output) whose
`transform_one` counts tokens in C (`river_cw._text`) when the compiled extension is built and
the tokenizer is river's default (any `lowercase`, `strip_accents` and `stop_words`). ASCII text
is lowercased and counted in C at once; other text first goes through river's own preprocessing
functions (NFKD accent stripping, `str.lower`), and C then counts its tokens with the character
classes of Python's `re` module. Anything else (a `preprocessor`, a `tokenizer`, another
pattern, n-grams, a text that is not a `str`) runs river's code unchanged. `COMPILED` says
whether the extension is active; `RIVER_CW_PURE_PYTHON=1` turns it off.
"""

from __future__ import annotations

import os

from river import feature_extraction
from river.feature_extraction.vectorize import strip_accents_unicode

try:
    if os.environ.get("RIVER_CW_PURE_PYTHON") == "1":
        raise ImportError("RIVER_CW_PURE_PYTHON=1")
    from ._text import count_ascii, count_preprocessed
except ImportError:
    count_ascii = count_preprocessed = None

COMPILED = count_ascii is not None

__all__ = ["COMPILED", "BagOfWords"]

_DEFAULT_PATTERN = feature_extraction.BagOfWords().tokenizer_pattern


class BagOfWords(feature_extraction.BagOfWords):
    """Counts tokens in texts: river's `feature_extraction.BagOfWords`, faster on ASCII text.

    The parameters and the output are river's (see `river.feature_extraction.BagOfWords`). With
    `preprocessor`, `tokenizer`, a `tokenizer_pattern` other than the default, or n-grams other
    than unigrams, every text goes through river's code; so does a text that is not a `str`.

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
        self._compiled = (
            COMPILED
            and preprocessor is None
            and tokenizer is None
            and tokenizer_pattern == _DEFAULT_PATTERN
            and tuple(ngram_range) == (1, 1)
        )

    def transform_one(self, x):
        if self._compiled:
            text = x if self.on is None else x[self.on]
            counts = count_ascii(text, self.lowercase)
            if counts is None and type(text) is str:
                if self.strip_accents:
                    text = strip_accents_unicode(text)
                if self.lowercase:
                    text = text.lower()
                counts = count_preprocessed(text)
            if counts is not None:
                if self.stop_words:
                    return {t: n for t, n in counts.items() if t not in self.stop_words}
                return counts
        return super().transform_one(x)
