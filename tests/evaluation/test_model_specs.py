"""`streams.models.specs`: model specs such as ``"AROW(r=0.1)"`` parsed into models, and fitted
to a stream's labels and texts (`prepare`, `BinaryLabels`)."""

import pytest
from river import compose, feature_extraction, linear_model, multiclass, optim, preprocessing

import river_cw
from river_cw.text import TextClassifier
from streams.models.labels import BinaryLabels
from streams.models.specs import classifier_of, parse, prepare


@pytest.mark.parametrize(
    "spec, cls, params",
    [
        ("AROW(r=0.1)", river_cw.AROW, {"r": 0.1}),
        ("AROW", river_cw.AROW, {"r": 1.0}),
        ("CW(confidence=0.8, variant='var')", river_cw.CW, {"confidence": 0.8, "variant": "var"}),
        ("river.linear_model.PAClassifier(C=0.01)", linear_model.PAClassifier, {"C": 0.01}),
        (
            "linear_model.PAClassifier(C=1e-3, mode=2)",
            linear_model.PAClassifier,
            {"C": 0.001, "mode": 2},
        ),
        ("river_cw.NHERD(C=2)", river_cw.NHERD, {"C": 2}),
    ],
)
def test_parse(spec, cls, params):
    model = parse(spec)
    assert type(model) is cls
    assert {k: getattr(model, k) for k in params} == params


def test_parse_nested_calls_and_pipelines():
    model = parse(
        "preprocessing.StandardScaler() | linear_model.LogisticRegression(optimizer=optim.SGD(.05))"
    )
    assert isinstance(model, compose.Pipeline)
    scaler, lr = model.steps.values()
    assert isinstance(scaler, preprocessing.StandardScaler)
    assert isinstance(lr.optimizer, optim.SGD) and lr.optimizer.learning_rate == 0.05


@pytest.mark.parametrize(
    "spec, message",
    [
        ("AROW(", "cannot parse"),
        ("Nope()", "river_cw has no such class"),
        ("river.linear_model.Nope()", "unknown model"),
        ("river.stream.iter_csv('/etc/passwd')", "not a river estimator class"),
        ("os.system('ls')", "unknown model"),
        ("__import__('os').system('ls')", "not a class name"),
        ("AROW(r=x)", "not a literal or a call"),
        ("AROW(r=open('f'))", "river_cw has no such class"),
        ("AROW(**{'r': 1})", r"\*\*kwargs"),
        ("AROW(r=-1)", "r must be positive"),
        ("AROW(q=1)", "unexpected keyword"),
        ("lambda: AROW()", "expected a class call"),
        ("[AROW()]", "expected a class call"),
    ],
)
def test_parse_rejects_with_a_clear_message(spec, message):
    with pytest.raises(ValueError, match=message):
        parse(spec)


def test_prepare_wraps_text_and_fits_binary_only_models_to_the_labels():
    text_pa = prepare(linear_model.PAClassifier(), text=True)  # labels unknown: one-vs-rest
    assert isinstance(text_pa, TextClassifier) and text_pa.on == "text"
    assert isinstance(text_pa.classifier, multiclass.OneVsRestClassifier)
    assert classifier_of(text_pa) is text_pa.classifier
    pa = linear_model.PAClassifier()
    assert prepare(pa, labels=[True, False]) is pa  # river's own case
    two = prepare(pa, labels=["spam", "ham"])
    assert isinstance(two, BinaryLabels) and (two.negative, two.positive) == ("ham", "spam")
    assert isinstance(prepare(pa, labels="abc"), multiclass.OneVsRestClassifier)
    arow = river_cw.AROW()
    assert prepare(arow, labels=["spam", "ham"]) is arow  # takes any labels
    pipeline = feature_extraction.TFIDF(on="text") | river_cw.AROW()
    assert prepare(pipeline, text=True) is pipeline
    scaled = preprocessing.StandardScaler() | linear_model.LogisticRegression()
    fitted = prepare(scaled, text=True, labels=["+1", "-1"])  # the whole pipeline, no text
    assert isinstance(fitted, BinaryLabels) and fitted.classifier is scaled
    assert fitted.positive == "+1"
    with pytest.raises(ValueError, match="not a classifier"):
        prepare(preprocessing.StandardScaler())
    with pytest.raises(ValueError, match="not a classifier"):
        prepare(preprocessing.StandardScaler() | preprocessing.MinMaxScaler())


def test_binary_labels_answer_in_the_streams_labels():
    model = BinaryLabels(linear_model.LogisticRegression(), ["-1", "+1"])
    for _ in range(20):
        model.learn_one({"a": 1.0}, "+1")
        model.learn_one({"a": -1.0}, "-1")
    assert model.predict_one({"a": 2.0}) == "+1" and model.predict_one({"a": -2.0}) == "-1"
    proba = model.predict_proba_one({"a": 2.0})
    bare = model.classifier.predict_proba_one({"a": 2.0})
    assert proba == {"-1": bare[False], "+1": bare[True]}
    with pytest.raises(ValueError, match="label '0' is neither '-1' nor '\\+1'"):
        model.learn_one({"a": 1.0}, "0")


def test_prepared_text_model_learns_string_labels():
    model = prepare(parse("linear_model.PAClassifier()"), text=True)
    for _ in range(3):
        model.learn_one({"text": "win cash now"}, "spam")
        model.learn_one({"text": "see you at lunch"}, "ham")
    assert model.predict_one({"text": "cash prize"}) == "spam"


def test_binary_labels_passes_rivers_estimator_checks():
    from river import checks

    for params in BinaryLabels._unit_test_params():
        checks.check_estimator(BinaryLabels(**params))


def test_the_classifier_of_a_pipeline_is_its_last_step():
    classifier = river_cw.AROW()
    for pipeline in (
        feature_extraction.BagOfWords(on="text") | classifier,
        feature_extraction.BagOfWords(on="text") | preprocessing.MaxAbsScaler() | classifier,
    ):
        assert classifier_of(pipeline) is classifier
    assert classifier_of(classifier) is classifier
