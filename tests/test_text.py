"""river_cw.text.BagOfWords gives river's BagOfWords token counts, on every shared corpus and
on generated strings; the compiled path is taken exactly where it can keep that promise."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from river import checks, feature_extraction

from river_cw import text
from river_cw.text import BagOfWords

from .conftest import read_jsonl

CORPORA = [
    "sms_spam_collection.jsonl.gz",
    "mdsd_sorted_acl_text.jsonl.gz",
    "20news_bydate_6groups.jsonl.gz",
    "reuters21578_modapte.jsonl.gz",
    "enron_spam_lbjava_subset.jsonl.gz",
]

compiled = pytest.mark.skipif(not text.COMPILED, reason="the river_cw._text extension is not built")


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
UNICODE_PIECES = st.sampled_from(
    ["é", "ß", "İ", "٣", "\u00a0", "ﬁ", "\u212a", "²", "Ⅻ", "\u0301", "ǅ", "£"]
)
TEXTS = st.one_of(
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=127)),
    st.lists(ASCII_PIECES).map("".join),
    st.text(),  # any Unicode
    st.lists(st.one_of(ASCII_PIECES, UNICODE_PIECES)).map("".join),
    st.sampled_from(["", " ", "\n\t ", "-", "a", "a-", "-a-", "ab-", "a--b", "__", "_-_"]),
)


@settings(max_examples=1000, deadline=None)
@given(TEXTS, st.booleans())
def test_generated_strings(s, lowercase):
    ours = BagOfWords(lowercase=lowercase).transform_one(s)
    assert_same_counts(ours, feature_extraction.BagOfWords(lowercase=lowercase).transform_one(s))


@given(st.lists(st.sampled_from(["the", "a", "bc", "the-end", "de"]), min_size=1))
def test_stop_words(words):
    s, stop = " ".join(words), {"the", "de"}
    rivers = feature_extraction.BagOfWords(stop_words=stop).transform_one(s)
    assert_same_counts(BagOfWords(stop_words=stop).transform_one(s), rivers)


@compiled
def test_compiled_path_only_for_exact_str():
    class Text(str):
        pass

    assert text.count_ascii("Ab ab", True) == {"ab": 2}
    assert text.count_ascii("Ab ab", False) == {"Ab": 1, "ab": 1}
    assert text.count_ascii("café au lait", True) is None
    assert text.count_ascii(Text("ab"), True) is None
    assert text.count_ascii(None, True) is None
    assert text.count_preprocessed("déjà-vu déjà-vu ab") == {"déjà-vu": 2, "ab": 1}
    assert text.count_preprocessed(Text("ab")) is None


@compiled
def test_other_options_go_through_river():
    assert BagOfWords()._compiled
    assert not BagOfWords(ngram_range=(1, 2))._compiled
    assert not BagOfWords(tokenizer_pattern=r"\w+")._compiled
    assert not BagOfWords(preprocessor=str.upper)._compiled
    assert not BagOfWords(tokenizer=str.split)._compiled
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
    monkeypatch.setattr(text, "count_ascii", lambda *a: calls.append(a) or {"free": 1, "now": 2})
    bow, message = BagOfWords(on="text"), "free now now"
    first = bow.transform_one({"text": message})
    first["changed"] = 1  # a caller may change what it got
    assert bow.transform_one({"text": message}) == {"free": 1, "now": 2}
    assert len(calls) == 1  # predict, then learn: one count
    assert "free now" not in repr(pickle.loads(pickle.dumps(bow)).__dict__)
    bow.transform_one({"text": "".join(["free now ", "now"])})  # equal, another object
    assert len(calls) == 2
