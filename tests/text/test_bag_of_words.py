"""river_cw.text.BagOfWords gives river's BagOfWords token counts, on every shared corpus and
on generated strings; the compiled path is taken exactly where it can keep that promise."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from river import checks, feature_extraction
from river.feature_extraction.vectorize import strip_accents_unicode

from river_cw import engine, text
from river_cw.text import BagOfWords
from tests.conftest import examples, read_jsonl

CORPORA = [
    "sms_spam_collection.jsonl.gz",
    "mdsd_sorted_acl_text.jsonl.gz",
    "20news_bydate_6groups.jsonl.gz",
    "reuters21578_modapte.jsonl.gz",
    "enron_spam_lbjava_subset.jsonl.gz",
]

compiled = pytest.mark.skipif(
    not text.COMPILED, reason="the river_cw._engines._text extension is not built"
)


def assert_same_counts(ours: dict, rivers: dict):
    assert ours == rivers
    assert list(ours) == list(rivers)  # first-occurrence order, as collections.Counter keeps it
    assert [(type(t), type(n)) for t, n in ours.items()] == [
        (type(t), type(n)) for t, n in rivers.items()
    ]


@pytest.mark.parametrize("name", CORPORA)
def test_every_text_of_every_corpus(name):
    ours, rivers = BagOfWords(on="text"), feature_extraction.BagOfWords(on="text")
    for x in read_jsonl(name):
        assert_same_counts(ours.transform_one(x), rivers.transform_one(x))


ASCII_PIECES = st.sampled_from(["-", "--", "_", " ", "\t", "\n", ".", "'", "a", "Z", "7", "x-y"])
# accents, a Unicode digit and space, ligatures, the Kelvin sign, superscripts, combining marks
# (and marks in two orders, which NFKD reorders), a Hangul syllable, an 18-character NFKD, the
# capital sigma (its lowercase depends on its neighbours) and the lunate sigma (whose NFKD is it)
UNICODE_PIECES = st.sampled_from(
    ["é", "ß", "İ", "٣", "\u00a0", "ﬁ", "\u212a", "²", "Ⅻ", "\u0301", "ǅ", "£"]
    + ["a\u0301\u0323", "a\u0323\u0301", "한", "\ufdfa", "Σ", "ς", "\u03f9", "ΑΣ"]
)
TEXTS = st.one_of(
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=127)),
    st.lists(ASCII_PIECES).map("".join),
    st.text(),  # any Unicode
    st.lists(st.one_of(ASCII_PIECES, UNICODE_PIECES)).map("".join),
    st.sampled_from(["", " ", "\n\t ", "-", "a", "a-", "-a-", "ab-", "a--b", "__", "_-_"]),
)


@settings(max_examples=examples(1000), deadline=None)
@given(TEXTS, st.booleans())
def test_generated_strings(s, lowercase):
    ours = BagOfWords(lowercase=lowercase).transform_one(s)
    assert_same_counts(ours, feature_extraction.BagOfWords(lowercase=lowercase).transform_one(s))


@settings(max_examples=examples(500), deadline=None)
@given(TEXTS, st.booleans(), st.booleans())
@compiled
def test_token_counts_hold_the_dicts_pairs(s, lowercase, strip_accents):
    """`count_tokens` holds the pairs of `count`'s dict, in its order; `as_dict()` is that dict,
    one per TokenCounts."""
    tokens = engine.text.count_tokens(s, lowercase, strip_accents)
    counts = engine.text.count(s, lowercase, strip_accents)
    assert len(tokens) == len(counts)
    assert_same_counts(tokens.as_dict(), counts)
    assert tokens.as_dict() is tokens.as_dict()


@given(st.lists(st.sampled_from(["the", "a", "bc", "the-end", "de"]), min_size=1))
def test_stop_words(words):
    s, stop = " ".join(words), {"the", "de"}
    rivers = feature_extraction.BagOfWords(stop_words=stop).transform_one(s)
    assert_same_counts(BagOfWords(stop_words=stop).transform_one(s), rivers)


@settings(max_examples=examples(2000), deadline=None)
@given(st.one_of(st.text(), st.lists(st.one_of(ASCII_PIECES, UNICODE_PIECES)).map("".join)))
@compiled
def test_accents_are_stripped_as_river_strips_them(s):
    """The C accent stripping (NFKD, combining characters dropped) is river's, on any text."""
    stripped = engine.text.strip_accents(s)
    assert stripped == strip_accents_unicode(s)
    assert type(stripped) is str


@compiled
def test_compiled_path_only_for_exact_str():
    class Text(str):
        pass

    count = engine.text.count
    assert count("Ab ab", True, True) == {"ab": 2}
    assert count("Ab ab", False, True) == {"Ab": 1, "ab": 1}
    assert count("Café CAFÉ au lait", True, True) == {"cafe": 2, "au": 1, "lait": 1}
    assert count("Café CAFÉ", True, False) == {"café": 2}
    assert count("Café CAFÉ", False, False) == {"Café": 1, "CAFÉ": 1}
    assert count(Text("ab"), True, True) is None
    assert count(None, True, True) is None
    assert engine.text.count_tokens(Text("ab"), True, True) is None
    with pytest.raises(TypeError, match=r"count_tokens\(text, lowercase, strip_accents\)"):
        engine.text.count_tokens("ab")


def test_the_default_pattern_is_rivers():
    assert feature_extraction.BagOfWords().tokenizer_pattern == text.DEFAULT_PATTERN


def test_importing_text_leaves_river_feature_extraction_alone():
    """river.feature_extraction loads most of river, scipy.stats, scikit-learn and pandas: the
    text classifier on its compiled path does without it (`river-cw evaluate` starts faster)."""
    code = (
        "import sys, river_cw\n"
        "from river_cw.text import TextClassifier\n"
        "model = TextClassifier(river_cw.AROW())\n"
        "model.learn_one('Déjà vu', True)\n"
        "print(model.predict_one('déjà'), 'river.feature_extraction' in sys.modules)\n"
    )
    compiled_path = "True False" if text.COMPILED else "True True"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == compiled_path.split()


@compiled
def test_other_options_go_through_river():
    assert BagOfWords()._counter is not None
    assert BagOfWords(ngram_range=(1, 2))._counter is None
    assert BagOfWords(tokenizer_pattern=r"\w+")._counter is None
    assert BagOfWords(preprocessor=str.upper)._counter is None
    assert BagOfWords(tokenizer=str.split)._counter is None
    s = "I love the smell of napalm in the morning"
    for params in [{"ngram_range": (1, 2)}, {"tokenizer_pattern": r"\w+"}]:
        rivers = feature_extraction.BagOfWords(**params).transform_one(s)
        assert_same_counts(BagOfWords(**params).transform_one(s), rivers)


def test_errors_are_rivers():
    with pytest.raises(KeyError):
        BagOfWords(on="text").transform_one({"body": "hello"})
    with pytest.raises(AttributeError):
        BagOfWords().transform_one(None)


def test_in_a_pipeline_and_river_checks():
    from river_cw import AROW

    model = BagOfWords(on="text") | AROW()
    model.learn_one({"text": "free prize now"}, True)
    assert model.predict_one({"text": "free prize"}) is True
    for check in checks.yield_checks(BagOfWords()):
        check(BagOfWords())


@compiled
def test_the_last_text_is_counted_once_and_handed_out_as_copies(monkeypatch):
    import pickle

    calls = []
    counts = {"free": 1, "now": 2}
    monkeypatch.setattr(engine.text, "count", lambda *a: calls.append(a) or dict(counts))
    bow, message = BagOfWords(on="text"), "free now now"
    first = bow.transform_one({"text": message})
    first["changed"] = 1  # a caller may change what it got
    assert bow.transform_one({"text": message}) == {"free": 1, "now": 2}
    assert len(calls) == 1  # predict, then learn: one count
    assert "free now" not in repr(pickle.loads(pickle.dumps(bow)).__dict__)
    bow.transform_one({"text": "".join(["free now ", "now"])})  # equal, another object
    assert len(calls) == 2
