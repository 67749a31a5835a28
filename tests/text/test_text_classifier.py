"""river_cw.text.TextClassifier is `BagOfWords(...) | classifier`, bit for bit: on the shared
corpora and on generated texts (non-ASCII included), with every option and classifier (full
covariance, VotedRDA, river's classifiers; this module runs under both engines, see
tests/engines/test_rerun_on_other_engine.py)."""

from __future__ import annotations

import functools
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from river import checks, feature_extraction, linear_model

import river_cw
from river_cw._engines import diagonal
from river_cw.text import BagOfWords, TextClassifier
from tests.conftest import examples, read_jsonl, shuffled
from tests.support.bits import bits_of, public_state
from tests.text.test_bag_of_words import CORPORA, TEXTS


def python_engine(model):
    """`model` on the pure-Python reference engine where it has a diagonal Gaussian."""
    if (
        isinstance(model, river_cw.gaussian_classifier.GaussianClassifier)
        and model.covariance == "diagonal"
    ):
        model.set_gaussian(diagonal.PythonDiagonalGaussian(model.initial_variance), model.classes_)
    return model


def assert_same_stream(make, examples, **options):
    """TextClassifier(make(), **options) against BagOfWords(**options) | make() on the
    pure-Python engine: every prediction, probability and the learned model."""
    ours = TextClassifier(make(), **options)
    theirs = BagOfWords(**options) | python_engine(make())
    for x, y in examples:
        assert ours.predict_one(x) == theirs.predict_one(x)
        assert bits_of(ours.predict_proba_one(x)) == bits_of(theirs.predict_proba_one(x))
        ours.learn_one(x, y)
        theirs.learn_one(x, y)
    assert public_state(ours.classifier) == public_state(theirs[-1])
    return ours


@pytest.mark.parametrize("name", CORPORA)
def test_every_shared_corpus(name):
    examples = [(x, y) for x, y in ((e, e.pop("label")) for e in read_jsonl(name))]
    examples = shuffled(examples)[:400]
    # the diagonal, against its pure-Python engine (the arrowhead's `covariances`, a dense
    # matrix over a corpus's vocabulary, would not fit in the comparison)
    assert_same_stream(lambda: river_cw.AROW(covariance="diagonal"), examples, on="text")


@settings(max_examples=examples(150), deadline=None)
@given(
    st.lists(st.tuples(TEXTS, st.sampled_from("abc")), max_size=20),
    st.booleans(),
    st.sampled_from([None, {"a", "the", "é-é"}]),
)
def test_generated_texts(stream, lowercase, stop_words):
    assert_same_stream(river_cw.AROW, stream, lowercase=lowercase, stop_words=stop_words)


WORDS = st.lists(st.sampled_from(["the", "A", "bc", "the-end", "déjà", "vu", "x_1"]), max_size=8)


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(st.tuples(WORDS.map(" ".join), st.booleans()), max_size=12))
@pytest.mark.parametrize(
    "make, options",
    [
        (lambda: river_cw.CW(covariance="diagonal", diagonal="exact"), {}),
        (lambda: river_cw.NHERD(learn_intercept=True), {"on": None}),
        (lambda: river_cw.SCW(covariance="diagonal"), {}),
        (river_cw.SOP, {"strip_accents": False}),
        (lambda: river_cw.AROW(forgetting=0.1), {}),
        (lambda: river_cw.AROW(forgetting=0.1, calibrate=True), {"stop_words": ["the"]}),
        (lambda: river_cw.AROW(covariance="full"), {}),
        (river_cw.VotedRDA, {}),
        (linear_model.PAClassifier, {}),
        (river_cw.SOP, {"ngram_range": (1, 2)}),
        (river_cw.SCW, {"tokenizer": str.split}),
        (river_cw.AROW, {"preprocessor": str.upper, "lowercase": False}),
    ],
)
def test_every_model_and_option(make, options, stream):
    assert_same_stream(make, stream, **options)


def test_a_dict_with_the_text_under_on_and_a_sample_weight():
    ours = TextClassifier(river_cw.AROW(), on="body")
    theirs = BagOfWords(on="body") | river_cw.AROW()
    for i, text in enumerate(["good movie", "bad movie", "good plot, GOOD cast", "bad bad"]):
        x, y = {"body": text, "other": 1.0}, text.startswith("good")
        ours.learn_one(x, y, w=0.5 + i)
        theirs.learn_one(x, y, w=0.5 + i)
    assert public_state(ours.classifier) == public_state(theirs[-1])
    with pytest.raises(KeyError):
        ours.predict_one({"text": "good"})


def test_pickles_forget_the_last_text_and_continue_alike():
    model = TextClassifier(river_cw.AROW(), on="text")
    stream = [({"text": t}, t.endswith("!")) for t in ["hi there!", "hello there", "go away!"]]
    for x, y in stream[:2]:
        model.learn_one(x, y)
    model.predict_one(stream[2][0])
    blob = pickle.dumps(model)
    assert b"go away" not in blob
    copy = pickle.loads(blob)
    model.learn_one(*stream[2])
    copy.learn_one(*stream[2])
    assert public_state(copy.classifier) == public_state(model.classifier)


class Spying:
    """`river_cw._engines._text.count` (or `count_tokens`) that keeps the dict of each count it hands out
    (a `TokenCounts`' `as_dict()`), with a copy of it as it was."""

    def __init__(self, count):
        self.count, self.handed = count, []

    def __call__(self, *args):
        counts = self.count(*args)
        as_dict = counts if isinstance(counts, dict) else counts.as_dict()
        self.handed.append((as_dict, list(as_dict.items())))
        return counts


@pytest.mark.skipif(
    not river_cw.text.COMPILED, reason="the river_cw._engines._text extension is not built"
)
@pytest.mark.parametrize("engine", ["compiled", "python"])
@pytest.mark.parametrize(
    "make, options, without_dicts",
    [
        (river_cw.AROW, {"on": "text"}, True),
        (lambda: river_cw.NHERD(learn_intercept=False), {}, True),
        (
            lambda: river_cw.CW(covariance="diagonal", diagonal="exact"),
            {"on": "text", "stop_words": {"the"}},
            False,
        ),
        (river_cw.VotedRDA, {"on": "text"}, False),
    ],
)
def test_the_last_counts_are_read_by_predict_and_learn_and_never_changed(
    monkeypatch, engine, make, options, without_dicts
):
    """Predicting and then learning a text (also a text given twice in a row, with different
    labels) counts it once, and river-cw's classifier reads those counts as they are, on either
    engine, before and after a pickle: the numbers are river's BagOfWords' to the bit, and every
    dict it was handed is as it was counted. A Gaussian model without stop words is handed the
    counts without their dict (`count_tokens`), which its engine reads as it reads the dict."""
    spies = {
        name: Spying(getattr(river_cw.engine.text, name)) for name in ("count", "count_tokens")
    }
    for name, spy in spies.items():
        monkeypatch.setattr(river_cw.engine.text, name, spy)
    texts = ["the good movie", "the bad movie, the bad cast", "good cast, a plot"]
    texts = [texts[0], texts[1], texts[1], texts[2], texts[2], texts[0]]  # two given twice
    labels = [True, False, True, True, False, False]
    stream = [(t if options.get("on") is None else {"text": t}, y) for t, y in zip(texts, labels)]
    classifier = make() if engine == "compiled" else python_engine(make())
    ours = TextClassifier(classifier, **options)
    theirs = feature_extraction.BagOfWords(**options) | python_engine(make())
    for i, (x, y) in enumerate(stream):
        if i == 4:  # between the two of the third text: the copy counts it again
            ours = pickle.loads(pickle.dumps(ours))
        assert ours.predict_one(x) == theirs.predict_one(x)
        assert bits_of(ours.predict_proba_one(x)) == bits_of(theirs.predict_proba_one(x))
        ours.learn_one(x, y)
        theirs.learn_one(x, y)
    assert public_state(ours.classifier) == public_state(theirs[-1])
    used = spies["count_tokens" if without_dicts else "count"].handed
    assert len(used) == 5  # the second text once, the third twice (the pickle)
    assert not spies["count" if without_dicts else "count_tokens"].handed
    for counts, as_counted in used:
        assert list(counts.items()) == as_counted


def test_other_classifiers_get_their_own_counts():
    """A classifier that is not river-cw's may change the dict it is given: it gets a copy."""

    class Marking(linear_model.PAClassifier):
        def predict_proba_one(self, x):
            x["marked by predict"] = 1.0
            return super().predict_proba_one(x)

    ours = TextClassifier(Marking(), on="text")
    theirs = feature_extraction.BagOfWords(on="text") | Marking()
    for text, y in [("good movie", True), ("bad movie", False), ("good cast", True)]:
        assert ours.predict_one({"text": text}) == theirs.predict_one({"text": text})
        ours.learn_one({"text": text}, y)
        theirs.learn_one({"text": text}, y)
    assert ours.classifier.weights == theirs[-1].weights
    assert "marked by predict" not in ours.classifier.weights


def test_an_option_set_later_counts_the_next_text():
    model = TextClassifier(river_cw.AROW())
    model.predict_one("Good movie")
    model.lowercase = False
    model.learn_one("Good movie", True)
    assert list(model.classifier.weights) == ["Good", "movie"]


def test_river_checks_that_apply():
    """river's checks without its datasets (numeric dicts, which a text classifier does not
    take; the streams above are this class's dataset checks)."""
    for params in TextClassifier._unit_test_params():
        model = TextClassifier(**params)
        for check in checks.yield_checks(model):
            if isinstance(check, functools.partial) or "dataset" in check.__code__.co_varnames:
                continue
            check(model.clone())


def test_combine_and_changes_mix_the_classifier():
    start = TextClassifier(river_cw.AROW(), on="text")
    start.learn_one({"text": "good movie"}, True)
    start.learn_one({"text": "bad movie"}, False)
    members = [pickle.loads(pickle.dumps(start)) for _ in range(2)]
    members[0].learn_one({"text": "good plot"}, True)
    members[1].learn_one({"text": "bad cast"}, False)
    mixed = river_cw.combine(members, base=start)
    expected = river_cw.combine([m.classifier for m in members], base=start.classifier)
    assert isinstance(mixed, TextClassifier) and mixed.on == "text"
    assert public_state(mixed.classifier) == public_state(expected)
    delta = river_cw.changes(members[0], start)
    assert sorted(delta.classifier.weights) == ["good", "plot"]
    assert public_state(river_cw.combine([delta], base=start).classifier) == public_state(
        members[0].classifier
    )
    with pytest.raises(ValueError, match="other text options"):
        river_cw.combine([start, TextClassifier(river_cw.AROW(), on="body")])
    with pytest.raises(ValueError, match="not"):
        river_cw.combine([start, start.classifier])


@pytest.mark.parametrize("text", [None, 123, 1.5, b"free prize", ["free", "prize"]])
@pytest.mark.parametrize("on", ["text", None])
def test_a_text_that_is_not_a_str_raises_a_type_error_naming_its_field(text, on):
    """Not a str (river's BagOfWords raises an AttributeError from deep inside): a TypeError
    naming the field, from learn, predict and proba alike, and the model as it was."""
    model = TextClassifier(river_cw.AROW(), on=on)
    model.learn_one({"text": "free prize now"} if on else "free prize now", True)
    model.learn_one({"text": "see you at lunch"} if on else "see you at lunch", False)
    before = public_state(model.classifier)
    x = {"text": text} if on else text
    field = "the text field 'text'" if on else "the text"
    for call in (
        lambda: model.learn_one(x, False),
        lambda: model.predict_one(x),
        lambda: model.predict_proba_one(x),
    ):
        with pytest.raises(TypeError, match=f"^{field} must be a str, got {type(text).__name__}"):
            call()
    assert public_state(model.classifier) == before


POOL = ["good movie", "bad movie bad cast", "good cast", "a plot", "", "good good plot"]
BETWEEN = ["nothing", "proba", "another text", "intercept", "scores", "set weights"]


# the models that keep a prediction's pass: the default (arrowhead); the diagonal engine's rules,
# with an exact scheme (its step reads the pass's coordinates) and NHERD's herding shrink
KEEPERS = {
    "arrowhead": (river_cw.AROW, {}),
    "diagonal": (river_cw.AROW, {"covariance": "diagonal"}),
    "cw var exact": (
        river_cw.CW,
        {"covariance": "diagonal", "variant": "var", "diagonal": "exact"},
    ),
    "nherd exact": (river_cw.NHERD, {"covariance": "diagonal", "diagonal": "exact", "C": 0.1}),
    "scw drop": (river_cw.SCW, {"covariance": "diagonal", "variant": "II", "diagonal": "drop"}),
}


@pytest.mark.skipif(
    not river_cw.text.COMPILED, reason="the river_cw._engines._text extension is not built"
)
@pytest.mark.parametrize("keeper", list(KEEPERS))
@settings(max_examples=examples(100), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, len(POOL) - 1),
            st.sampled_from(BETWEEN),
            st.integers(0, len(POOL) - 1),
            st.booleans(),
            st.booleans(),
        ),
        max_size=12,
    )
)
def test_learning_after_predicting_the_same_counts_is_learning_them_afresh(keeper, rounds):
    """The compiled engines keep the pass of a prediction of a text's counts (a `TokenCounts`)
    for learning the same counts next: whatever comes between (a probability, another text
    predicted, the intercept switched, the general path's scores, a weight written, a label that
    turns the binary model), and whether the text learned is the one predicted, every number
    is that of the same model handed the counts' dicts, which it reads afresh each time."""
    rule, params = KEEPERS[keeper]
    tokens = [river_cw.engine.text.count_tokens(t, True, True) for t in POOL]
    ours, theirs = rule(**params), rule(**params)
    # a weight's numbers: (mean, variance), or the arrowhead's three
    weight = (0.25, 0.75) if params.get("covariance") == "diagonal" else (0.25, -0.5, 0.75)

    def same(call, k):
        """call(model, text k) of both models: the same outcome, to the bit."""
        outcomes = call(ours, tokens[k]), call(theirs, dict(tokens[k].as_dict()))
        assert bits_of(outcomes[0]) == bits_of(outcomes[1])

    for k, between, other, again, spam in rounds:
        same(lambda m, x: m.predict_one(x), k)
        if between == "proba":
            same(lambda m, x: m.predict_proba_one(x), k)
        elif between == "another text":
            same(lambda m, x: m.predict_one(x), other)
        elif between == "intercept":
            ours.learn_intercept = theirs.learn_intercept = not ours.learn_intercept
        elif between == "scores":
            same(lambda m, x: m._scores({"plot": 2.0}), k)
        elif between == "set weights":  # a feature of the pool's texts, known or new
            same(lambda m, x: m.gaussian.set_weights([{"plot": weight}]), k)
        # "spam" after "ham": the binary model negated (`positive_label`)
        same(lambda m, x: m.learn_one(x, "spam" if spam else "ham"), k if again else other)
        assert public_state(ours) == public_state(theirs)
