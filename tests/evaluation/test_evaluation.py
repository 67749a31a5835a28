"""`streams.evaluate` from Python: progressive validation as river does it (the same sequence,
curves and delays), noise learned but never scored, records, outputs, tuning and results."""

import csv
import json
import math

import pytest
from river import base, datasets, linear_model, metrics
from river import evaluate as river_evaluate
from river import stream as river_stream

import river_cw
from streams.evaluate.noise import LabelNoise
from streams.evaluate.progressive import evaluate, iter_evaluate, iter_levels
from streams.evaluate.results import BASELINE, COLUMNS, Evaluation
from streams.evaluate.scoring import OneClass
from streams.evaluate.track import ModelError
from streams.evaluate.tuning import candidates, tune
from streams.models.specs import parse, prepare
from tests.support.bits import bits_of


class Probe(base.Classifier):
    """Records every call it gets; predicts the last label it learned."""

    def __init__(self, mutate: bool = False):
        self.mutate = mutate
        self.calls = []
        self.last = None

    @property
    def _multiclass(self):
        return True

    def learn_one(self, x, y):
        self.calls.append(("learn", dict(x), y))
        self.last = y
        if self.mutate:  # a badly behaved model must not change what the others see
            x.clear()

    def predict_one(self, x):
        self.calls.append(("predict", dict(x)))
        return self.last


class Oracle(base.Classifier):
    """Predicts the clean label, which the stream hides in x["truth"]."""

    def learn_one(self, x, y):
        pass

    def predict_one(self, x):
        return x["truth"]

    def predict_proba_one(self, x):
        return {x["truth"]: 1.0}


def labelled_stream(n=3_000, classes="abc", truth=False):
    """Labels in a fixed pseudo-random order; x["truth"] repeats the label if asked."""
    stream = []
    for i in range(n):
        y = classes[i * 7 % 11 % len(classes)]
        stream.append(({"i": i, "truth": y} if truth else {"i": i}, y))
    return stream


def test_every_model_sees_the_identical_sequence():
    stream = labelled_stream(500)
    probes = [Probe(), Probe(mutate=True), Probe()]
    models = {"p0": probes[0], "mutating": probes[1], "arow": river_cw.AROW(), "p2": probes[2]}
    evaluate(models, stream, noise=LabelNoise(0.3, classes="abc", seed=2), every=100)
    first = probes[0].calls
    assert len(first) == 2 * len(stream)
    assert probes[1].calls == first and probes[2].calls == first
    # each example is predicted before it is learned, in stream order
    assert [c[1]["i"] for c in first[0::2]] == list(range(500))
    assert all(
        predict[0] == "predict" and learn[0] == "learn" and predict[1] == learn[1]
        for predict, learn in zip(first[0::2], first[1::2])
    )


def test_noise_is_learned_but_never_scored():
    stream = labelled_stream(truth=True)
    probe = Probe()
    result = evaluate(
        {"oracle": Oracle(), "probe": probe},
        stream,
        noise=LabelNoise(0.4, classes="abc", seed=1),
        every=1000,
    )
    learned = [c[2] for c in probe.calls if c[0] == "learn"]
    flipped = sum(y != z for (_, y), z in zip(stream, learned))
    assert abs(flipped / len(stream) - 0.4) < 4 * math.sqrt(0.4 * 0.6 / len(stream))
    oracle = [r for r in result.records if r["model"] == "oracle"]
    assert [r["accuracy"] for r in oracle] == [1.0, 1.0, 1.0]
    assert oracle[-1]["log_loss"] == pytest.approx(0.0, abs=1e-12)
    assert result.summary[0]["flipped"] == flipped


def test_the_learning_curve_is_rivers_at_every_point():
    stream = list(datasets.Phishing())
    ours = evaluate({"arow": river_cw.AROW()}, stream, every=250, delay=30).records
    for metric, column in [(metrics.Accuracy(), "accuracy"), (metrics.CrossEntropy(), "log_loss")]:
        theirs = river_evaluate.iter_progressive_val_score(
            stream, river_cw.AROW(), metric, step=250, delay=30
        )
        assert [r[column] for r in ours] == [s[type(metric).__name__].get() for s in theirs]


def test_no_answer_is_not_scored_as_river_does():
    class Stubborn(base.Classifier):
        def learn_one(self, x, y):
            pass

        def predict_proba_one(self, x):
            return {"a": 1.0} if x["i"] else {}

    stream = [({"i": i}, "ab"[i % 2]) for i in range(10)]
    result = evaluate([Stubborn(), Probe()], stream, every=5)
    stubborn, probe = result.summary
    # no answer for example 0; "a" is wrong for the 5 odd ones among the 9 scored
    assert stubborn["model"] == "Stubborn"
    assert (stubborn["scored"], stubborn["mistakes"], stubborn["accuracy"]) == (9, 5, 4 / 9)
    # river's CrossEntropy adds nothing for a distribution without the true label
    assert (
        stubborn["log_loss"]
        == river_evaluate.progressive_val_score(stream, Stubborn(), metrics.CrossEntropy()).get()
    )
    # the probe answers None first, then the previous label: wrong on an alternating stream
    assert (probe["scored"], probe["mistakes"], probe["log_loss"]) == (9, 9, None)


def test_records_every_k_and_at_the_end_with_recent_accuracy():
    result = evaluate([Probe(), Probe()], labelled_stream(1050), every=500)
    assert [(r["model"], r["step"]) for r in result.records] == [
        ("Probe", 500),
        ("Probe #2", 500),
        ("Probe", 1000),
        ("Probe #2", 1000),
        ("Probe", 1050),
        ("Probe #2", 1050),
    ]
    last = result.records[-1]
    recent_mistakes = last["mistakes"] - result.records[-3]["mistakes"]
    assert last["recent_accuracy"] == pytest.approx(1 - recent_mistakes / 50)
    assert result.records[0]["scored"] == 499  # the first answer is None: not scored
    assert all(
        r["seconds"] > 0 and r["throughput"] == pytest.approx(r["step"] / r["seconds"])
        for r in result.records
    )


def test_outputs(tmp_path):
    models = {
        "AROW": prepare(parse("AROW()"), text=True),
        "PA": prepare(parse("linear_model.PAClassifier()"), text=True),
    }
    stream = [
        ({"text": t}, "spam" if "win" in t else "ham")
        for t in ["win cash now", "see you soon", "win a prize", "lunch?"] * 50
    ]
    result = Evaluation.concat(
        [
            evaluate(models, stream, noise=LabelNoise(p, classes=["ham", "spam"], seed=0), every=50)
            for p in (0.0, 0.2)
        ]
    )
    assert [(r["noise"], r["model"]) for r in result.summary] == [
        ("0%", "AROW"),
        ("0%", "PA"),
        ("20%", "AROW"),
        ("20%", "PA"),
    ]
    result.to_csv(tmp_path / "r.csv")
    with open(tmp_path / "r.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 16 and float(rows[-1]["accuracy"]) == result.records[-1]["accuracy"]

    result.to_json(tmp_path / "r.json")
    document = json.loads((tmp_path / "r.json").read_text())
    assert document["summary"] == result.summary and len(document["records"]) == 16

    table = result.table(markdown=True).splitlines()
    assert (
        len(table) == 6 and table[0].startswith("| noise | model") and table[1].startswith("| ---")
    )
    assert "200" in table[2] and "examples/s" not in table[0]  # a document holds no timing
    assert "examples/s" in result.table().splitlines()[0]

    result.plot(tmp_path / "r.png", title="toy", column="recent_accuracy", marks=[100])
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_to_frame_has_one_row_per_record_and_the_documented_columns():
    pytest.importorskip("pandas", reason="to_frame needs pandas, an optional dependency")
    result = evaluate([Probe()], labelled_stream(250), every=100)
    frame = result.to_frame()
    assert frame.shape == (3, len(COLUMNS)) and list(frame.columns) == list(COLUMNS)
    assert frame["step"].tolist() == [100, 200, 250]


def test_evaluate_rejects_bad_arguments():
    with pytest.raises(ValueError, match="no models"):
        evaluate({}, [])
    with pytest.raises(ValueError, match="every"):
        evaluate([Probe()], [], every=0)


def test_tune_keeps_the_most_accurate_candidate_of_the_grid():
    stream = list(datasets.Phishing())[:400]
    chosen, trial = tune(
        ["AROW()", "AROW(r=0.5)"],
        stream,
        lambda spec: prepare(parse(spec)),
        LabelNoise(0.1, classes=[True, False], seed=0),
    )
    scores = {r["model"]: r["accuracy"] for r in trial.summary}
    assert set(scores) == {
        "AROW(r=0.01)",
        "AROW(r=0.1)",
        "AROW(r=1.0)",
        "AROW(r=10.0)",
        "AROW(r=100.0)",
        "AROW(r=0.5)",
    }
    assert scores[chosen["AROW()"]] == max(scores[c] for c in candidates("AROW()"))
    assert chosen["AROW(r=0.5)"] == "AROW(r=0.5)"


def test_candidates():
    assert candidates("river.linear_model.PAClassifier(mode=2)") == [
        f"river.linear_model.PAClassifier(mode=2, C={c})" for c in (0.001, 0.01, 0.1, 1.0)
    ]
    assert len(candidates("SCW()")) == 6
    assert candidates("river.linear_model.Perceptron()") == ["river.linear_model.Perceptron()"]


@pytest.mark.parametrize("delay", [0, 1, 7, 200])
def test_delay_matches_river_progressive_val_score(delay):
    stream = list(datasets.Phishing())
    ours = evaluate({"lr": linear_model.LogisticRegression()}, stream, every=250, delay=delay)
    theirs = river_evaluate.iter_progressive_val_score(
        stream, linear_model.LogisticRegression(), metrics.Accuracy(), step=250, delay=delay or None
    )
    assert [r["accuracy"] for r in ours.records] == pytest.approx(
        [s["Accuracy"].get() for s in theirs], rel=1e-12
    )


def test_delayed_labels_are_all_learned_by_the_end():
    probe = Probe()
    evaluate([probe], labelled_stream(50), delay=20, every=10)
    learned = [c[1]["i"] for c in probe.calls if c[0] == "learn"]
    assert learned == list(range(50))
    # example 0 is learned just before example 20 is predicted
    order = [(c[0], c[1]["i"]) for c in probe.calls]
    assert order.index(("learn", 0)) == order.index(("predict", 20)) - 1


def test_iter_evaluate_yields_growing_results_and_ends_with_evaluates_result():
    stream = list(datasets.Phishing())[:500]
    partials = list(iter_evaluate([linear_model.LogisticRegression()], stream, every=100))
    assert [len(p.records) for p in partials] == [1, 2, 3, 4, 5]
    assert partials[2].records == partials[-1].records[:3]
    final = evaluate([linear_model.LogisticRegression()], stream, every=100)
    strip = [
        {k: v for k, v in r.items() if k not in ("seconds", "throughput")} for r in final.records
    ]
    assert strip == [
        {k: v for k, v in r.items() if k not in ("seconds", "throughput")}
        for r in partials[-1].records
    ]


def test_metric_f1_of_a_class_and_a_probability_metric():
    stream = labelled_stream(600, classes="ab", truth=True)
    result = evaluate(
        {"oracle": Oracle(), "probe": Probe()},
        stream,
        every=300,
        metric=OneClass(metrics.F1(), "b"),
    )
    assert result.metric == "F1 (b)"
    probe = [c for c in result.records if c["model"] == "probe"]
    expected = metrics.F1()
    last = None
    for _, y in stream:
        expected.update(y == "b", last == "b")  # river's F1 of True
        last = y
    assert probe[-1]["metric"] == pytest.approx(expected.get())
    assert [r["metric"] for r in result.records if r["model"] == "oracle"] == [1.0, 1.0]

    loss = evaluate([Oracle()], stream, every=300, metric=metrics.CrossEntropy())
    assert loss.metric == "CrossEntropy" and not loss.bigger_is_better
    assert loss.summary[0]["metric"] == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="CrossEntropy needs probabilities: probe gives none"):
        evaluate({"probe": Probe()}, stream, metric=metrics.CrossEntropy())
    with pytest.raises(ValueError, match="MAE is not a classification metric"):
        evaluate([Probe()], stream, metric=metrics.MAE())


def test_recent_metric_covers_the_examples_since_the_previous_record():
    # the probe repeats the previous label: right on runs, wrong on every change
    stream = [({"i": i}, "a" if i < 100 else "ab"[i % 2]) for i in range(200)]
    result = evaluate([Probe()], stream, every=100)
    assert [r["recent_metric"] for r in result.records] == [1.0, 0.01]  # example 0: None
    assert [r["recent_accuracy"] for r in result.records] == pytest.approx([1.0, 0.01])
    assert result.records[-1]["metric"] == 100 / 199


def test_baseline_is_rivers_prior_classifier():
    stream = [({"i": i}, "b" if i % 3 == 2 else "a") for i in range(300)]
    result = evaluate([Probe()], stream, every=300, baseline=True)
    baseline = result.summary[0]
    assert baseline["model"] == BASELINE
    # the majority class "a" so far, from the second example on (the first is not scored)
    assert baseline["mistakes"] == sum(y == "b" for _, y in stream[1:])
    assert baseline["scored"] == len(stream) - 1


def test_results_show_in_notebooks_and_plot_returns_a_figure(tmp_path):
    from matplotlib.figure import Figure

    stream = [({"text": t}, "spam" if "win" in t else "ham") for t in ["win now", "hi there"] * 60]
    models = {"AROW": prepare(parse("AROW()"), text=True), "CW": prepare(parse("CW()"), text=True)}
    result = evaluate(models, stream, every=10, baseline=True)
    assert repr(result) == "Evaluation(Accuracy, 3 models, 120 examples)"
    page = result._repr_html_()
    assert (
        page.startswith("<table>") and "<td>AROW</td>" in page and "<td>majority class</td>" in page
    )

    figure = result.plot(title="toy")
    assert isinstance(figure, Figure) and figure._repr_png_()[:4] == b"\x89PNG"
    (ax,) = figure.axes
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == {"AROW", "CW", "majority class (baseline)"}
    styles = {(line.get_linestyle(), line.get_marker()) for line in lines.values()}
    assert len(styles) == 3  # identical curves stay apart
    line = lines["majority class (baseline)"]
    settled = [y for x, y in zip(line.get_xdata(), line.get_ydata()) if x > 12]  # a tenth in
    bottom, top = ax.get_ylim()
    assert min(settled) - 0.1 * (top - bottom) < bottom <= min(settled)

    other = Figure()
    drawn = result.plot(ax=other.subplots(), column="recent_accuracy")
    assert drawn is other and len(other.axes[0].get_lines()) == 3
    with pytest.raises(ValueError, match="1 noise levels need 1 axes, got 2"):
        result.plot(ax=other.subplots(1, 2))

    for suffix, magic in [(".png", b"\x89PNG"), (".pdf", b"%PDF"), (".svg", b"<?xml")]:
        result.plot(tmp_path / f"r{suffix}")
        assert (tmp_path / f"r{suffix}").read_bytes().startswith(magic)
    with pytest.raises(ValueError, match="cannot tell the figure format"):
        result.plot(tmp_path / "r.jpg")


def test_tune_by_a_loss_keeps_the_smallest():
    stream = list(datasets.Phishing())[:300]
    chosen, trial = tune(
        ["AROW()"], stream, lambda spec: prepare(parse(spec)), None, metrics.CrossEntropy()
    )
    losses = {r["model"]: r["metric"] for r in trial.summary}
    assert losses[chosen["AROW()"]] == min(losses.values())
    assert losses[chosen["AROW()"]] < max(losses.values())


def test_a_model_that_raises_is_named_with_the_example_and_its_strings():
    stream = [({"size": 1.0, "color": "red"}, "a"), ({"size": 2.0, "color": "blue"}, "b")]
    with pytest.raises(
        ModelError,
        match=r"model AROW failed on example 1: TypeError: feature "
        r"'color' has a non-numeric value: 'red' \(str\); the example holds strings "
        r"\('color': 'red'\).*OneHotEncoder",
    ):
        evaluate({"AROW": river_cw.AROW()}, stream)
    with pytest.raises(ModelError, match="model LR failed on example 1: TypeError"):
        evaluate({"LR": linear_model.LogisticRegression()}, stream)


class Distributions(base.Classifier):
    """Answers a fixed sequence of distributions (clamped, missing the label, of int keys ...)
    and the label of largest probability."""

    def __init__(self, answers):
        self.answers = answers
        self.n = 0

    def learn_one(self, x, y):
        self.n += 1

    def predict_proba_one(self, x):
        return self.answers[self.n % len(self.answers)]


def test_the_running_counts_are_rivers_accuracy_and_cross_entropy_to_the_bit():
    """The tracks keep river's Accuracy and CrossEntropy as the numbers they amount to
    (`streams.evaluate.track`): the same bits as river's objects, record by record, clamped
    probabilities, labels missing from the distribution and an empty answer included."""
    answers = [
        {"a": 0.7, "b": 0.3},
        {"a": 1.0, "b": 0.0},
        {"a": 0.0, "b": 1.0},
        {"b": 1.0},
        {},
        {"a": 1e-300, "b": 1.0 - 1e-17},
        {"a": 0.5, "b": 0.5},
        {"a": 1, "b": 0},
    ]
    stream = [({"i": i}, "ab"[i * 5 % 7 % 2]) for i in range(500)]
    ours = evaluate([Distributions(answers)], stream, every=7).records
    model, accuracy, loss = Distributions(answers), metrics.Accuracy(), metrics.CrossEntropy()
    recent = metrics.Accuracy()
    theirs = []
    for i, (x, y) in enumerate(stream):
        proba, label = model.predict_proba_one(x), model.predict_one(x)
        if label is not None:
            accuracy.update(y, label)
            recent.update(y, label)
        if proba:
            loss.update(y, proba)
        model.learn_one(x, y)
        if (i + 1) % 7 == 0 or i + 1 == len(stream):
            theirs.append((accuracy.get(), recent.get(), loss.get()))
            recent = metrics.Accuracy()
    assert [bits_of((r["metric"], r["recent_metric"], r["log_loss"])) for r in ours] == [
        bits_of(numbers) for numbers in theirs
    ]


def test_noise_levels_in_one_pass_are_the_runs_of_each_level_alone():
    stream = labelled_stream(900)
    rates = [0.0, 0.2, {"a": 0.5}]

    def noise(rate):
        return LabelNoise(rate, classes="abc", seed=3)

    together = list(
        iter_levels(
            [(noise(r), [river_cw.AROW(), Probe()]) for r in rates],
            (({"i": float(x["i"] % 5)}, y) for x, y in stream),
            every=200,
            delay=4,
            baseline=True,
        )
    )[-1]
    alone = Evaluation.concat(
        evaluate(
            [river_cw.AROW(), Probe()],
            [({"i": float(x["i"] % 5)}, y) for x, y in stream],
            noise(r),
            every=200,
            delay=4,
            baseline=True,
        )
        for r in rates
    )
    timeless = [
        {k: v for k, v in r.items() if k not in ("seconds", "throughput")} for r in alone.records
    ]
    assert [
        bits_of({k: v for k, v in r.items() if k not in ("seconds", "throughput")})
        for r in together.records
    ] == [bits_of(r) for r in timeless]


def test_a_curve_keeps_at_most_its_points_whatever_the_length():
    stream = labelled_stream(1000)
    result = evaluate([Probe()], stream, every=10, points=8)
    # 80 examples fill 8 points; at the next, every other is dropped and `every` doubles, at 180
    # again (every 40), at 360 (80) and at 720 (160); the end is a point of its own
    steps = [r["step"] for r in result.records]
    assert steps == [160, 320, 480, 640, 800, 960, 1000]
    full = {r["step"]: r for r in evaluate([Probe()], stream, every=10).records}
    assert all(
        (r["metric"], r["scored"], r["mistakes"])
        == (full[r["step"]]["metric"], full[r["step"]]["scored"], full[r["step"]]["mistakes"])
        for r in result.records
    )
    with pytest.raises(ValueError, match="points must be an even number >= 2, got 7"):
        evaluate([Probe()], stream, points=7)


def timeless(records: list[dict]) -> list:
    """The records' bits, without the time the models took (not the same twice)."""
    return [
        bits_of({k: v for k, v in r.items() if k not in ("seconds", "throughput")}) for r in records
    ]


def test_answers_as_they_happened_score_as_that_delay_with_every_noise_level():
    """A stream of river's questions and answers (a labels topic's) scores, level by level, as
    the (x, y) stream with the delay those answers had, to the bit."""
    stream = [({"i": float(x["i"] % 5)}, y) for x, y in labelled_stream(600)]
    events = list(river_stream.simulate_qa(stream, None, 9))

    def run(source, **kw):
        levels = [
            (LabelNoise(rate, classes="abc", seed=3), [river_cw.AROW(), Probe()])
            for rate in (0.0, 0.2)
        ]
        return list(iter_levels(levels, source, every=100, baseline=True, **kw))[-1]

    answered, delayed = run(events, answers=True), run(stream, delay=9)
    assert timeless(answered.records) == timeless(delayed.records)
    assert answered.info == {"examples": 600, "unlabelled": 0}


class Learned(base.Classifier):
    """Predicts how many labels it has learned so far (so it shows when it was asked)."""

    def __init__(self):
        self.learned = []

    def learn_one(self, x, y):
        self.learned.append(x["i"])

    def predict_one(self, x):
        return len(self.learned)


def test_answers_come_in_any_order_and_examples_never_answered_are_counted_not_scored():
    model = Learned()
    asked = [(i, {"i": i}, None) for i in range(50)]
    answers = [(i, {"i": i}, 0) for i in range(48, -1, -2)]  # the even ones, last first
    results = list(iter_evaluate([model], asked + answers, every=10, answers=True))
    assert model.learned == list(range(48, -1, -2))
    final = results[-1]
    assert final.info == {"examples": 50, "unlabelled": 25}
    # each example was predicted on arrival, before any label came: 0 learned, right each time
    assert [(r["step"], r["scored"], r["mistakes"]) for r in final.records] == [
        (10, 10, 0),
        (20, 20, 0),
        (25, 25, 0),
    ]
    questions_after = asked[:3] + [(0, {"i": 0}, 0)] + asked[3:]
    last = list(iter_evaluate([Learned()], questions_after, every=100, answers=True))[-1]
    assert last.info == {"examples": 50, "unlabelled": 49}  # counted after the last answer
    with pytest.raises(ValueError, match="example 3 answered before it was asked, or twice"):
        evaluate([Learned()], asked[:3] + [(3, {"i": 3}, 0)], answers=True)
    with pytest.raises(ValueError, match="example 1 asked twice"):
        evaluate([Learned()], asked[:2] + asked[1:2], answers=True)
    with pytest.raises(ValueError, match="brings its own delays: delay must be 0"):
        evaluate([Learned()], asked, answers=True, delay=3)
