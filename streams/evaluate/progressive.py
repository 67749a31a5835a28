"""Side-by-side progressive validation: several models, one pass over one stream, river's numbers.

Every model is scored exactly as river's `evaluate.progressive_val_score` scores it alone, for
every metric and every `delay`, by the same rules, read from river's own code
(`river/evaluate/progressive_validation.py`) and driven by river's own `stream.simulate_qa`:

* each example is predicted when it arrives and learned `delay` examples later (example t is
  learned just before example t + delay is predicted, so delays 0 and 1 score alike); the labels
  still waiting when the stream ends are then learned, in order, and scored;
* a prediction that is None or ``{}`` (a model that has learned nothing yet, or every example
  predicted before its label arrives under a delay) is not scored at all;
* a metric that needs labels (`requires_labels`) is fed `predict_one`, any other
  `predict_proba_one`, unchanged (river's `CrossEntropy` adds nothing for a distribution that
  leaves the true label out: a label the model has never met).

`iter_evaluate` runs the models side by side: all see the same examples in the same order, each
through its own shallow copy of `x` (so that no model can change what another sees), and learn
the same labels, those of the stream or, with `noise`, the noisy ones, while every score is
against the clean label (a simulation river's function does not offer; without noise the numbers
are river's). It yields the results so far at every point of the learning curve (to watch
curves grow in a notebook); `evaluate` returns the last of them. It reads the stream once and
holds none of it: a stream of any length takes the same memory, and a curve keeps at most
`points` points (past them, every other is dropped and the resolution halves; a kept point's
"recent" columns cover the examples before it at the resolution of its time). `iter_levels`
runs several noise levels, each with its own models, in the same pass. The columns of each record
(`streams.evaluate.results.COLUMNS`), per model:

* `step`: the examples whose labels have arrived (river's step);
* `metric`: the chosen river metric over those examples, by the rules above; `recent_metric`
  the same since the previous record (drift shows there, averaged away in the running value);
* `accuracy`, `scored` and `mistakes`: river's `Accuracy` of `predict_one`, the examples it
  scored and those it got wrong (so ``accuracy = 1 - mistakes / scored``); `recent_accuracy`
  since the previous record (None when it scored nothing);
* `log_loss`: river's `CrossEntropy` of `predict_proba_one`; None for a model without
  probabilities;
* `flipped`: labels learned flipped by the noise; `seconds`: the time spent in the model's
  `predict_one`, `predict_proba_one` and `learn_one`; `throughput`: examples per second of it.

A model that raises stops the run with a `ModelError` (`streams.evaluate.track`) naming the
model, the example and, for a `TypeError` on an example with string values, the features that
hold them. What is scored, and with which metric, is `streams.evaluate.scoring`'s.

Examples
--------

>>> from river import linear_model
>>> stream = [({"a": float(i % 2)}, i % 2 == 1) for i in range(100)]
>>> result = evaluate({"LR": linear_model.LogisticRegression()}, stream, every=50)
>>> [(r["step"], r["accuracy"], r["mistakes"]) for r in result.records]
[(50, 0.94, 3), (100, 0.97, 3)]
>>> result
Evaluation(Accuracy, 1 model, 100 examples)

"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import pathlib
import sys
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

import river
from river import base, compose, dummy, metrics

from river_cw.text import TextClassifier
from streams.evaluate.noise import LabelNoise
from streams.evaluate.results import BASELINE, POINTS, Evaluation
from streams.evaluate.scoring import metric_name
from streams.evaluate.track import Track

__all__ = ["evaluate", "iter_evaluate", "iter_levels"]


def iter_evaluate(
    models: Mapping[str, base.Classifier] | Sequence[base.Classifier],
    stream: Iterable[tuple[dict, typing.Hashable]],
    noise: LabelNoise | None = None,
    every: int = 1000,
    total: int | None = None,
    progress: bool | None = None,
    delay: int = 0,
    metric: metrics.base.Metric | None = None,
    baseline: bool = False,
    points: int = POINTS,
    answers: bool = False,
) -> Iterator[Evaluation]:
    """Progressive validation of several models side by side, yielding the results so far.

    Every `every` examples answered (and at the end) it yields an `Evaluation` holding every
    record so far, so a notebook can redraw the curves as they grow; the last one is the result.
    Without `noise`, each model's numbers are those of river's ``progressive_val_score(stream,
    model, metric, delay=delay)`` (see the module docstring). `iter_levels` runs several noise
    levels in the same pass.

    Parameters
    ----------
    models
        Classifiers by name, or a list (named by their class, numbered if repeated).
    stream
        The (x, y) pairs, read once; `y` is the clean label every model is scored against.
    noise
        Applied once per example, in stream order, to the label the models learn from.
    every
        Record the learning curve every `every` examples answered (and at the end).
    total
        The length of the stream, if known, for the progress bar.
    progress
        Show a `tqdm.auto` progress bar (a widget in a notebook, text on stderr in a
        terminal), after one second so short runs stay quiet; None shows it in a notebook
        or when stderr is a terminal. Without tqdm (the ``[progress]`` extra) there is none.
    delay
        Labels arrive `delay` examples late, as river's `progressive_val_score(delay=...)` has
        them (`river.stream.simulate_qa`): example t is learned just before example t + delay
        is predicted, so 0 and 1 score alike.
    metric
        A river classification metric, e.g. `OneClass(metrics.F1(), "spam")` (the F1 of a class),
        `metrics.MCC()` or `metrics.CrossEntropy()` (default: accuracy); each model gets a
        fresh clone. A metric of probabilities refuses a model without `predict_proba_one`.
    baseline
        Add river's `dummy.PriorClassifier` (it predicts the majority class so far) as a
        model named `BASELINE`.
    points
        The most points a model's learning curve keeps (an even number): when a stream outgrows
        ``points * every`` examples, every other point is dropped and `every` doubles, so a
        stream of any length keeps a curve of bounded size.
    answers
        `stream` holds the questions and answers themselves, in river's `simulate_qa` form:
        ``(i, x, None)`` when example i arrives (every model predicts it) and ``(i, x, y)``
        when its label does (scored, then learned), in the order they happened, as labels
        arriving on their own give them (a Kafka labels topic); `delay` must then be 0. An
        example whose label never comes is predicted and never scored; each result's `info`
        then holds ``examples`` (the questions so far) and ``unlabelled`` (those not answered).

    Examples
    --------

    >>> from river import linear_model
    >>> stream = [({"a": float(i % 2)}, i % 2 == 1) for i in range(100)]
    >>> for result in iter_evaluate([linear_model.LogisticRegression()], stream, every=50):
    ...     print(result.records[-1]["step"], result.records[-1]["metric"])
    50 0.94
    100 0.97

    """
    return iter_levels(
        [(noise, models)], stream, every, total, progress, delay, metric, baseline, points, answers
    )


def iter_levels(
    levels: Sequence[
        tuple[LabelNoise | None, Mapping[str, base.Classifier] | Sequence[base.Classifier]]
    ],
    stream: Iterable[tuple[dict, typing.Hashable]],
    every: int = 1000,
    total: int | None = None,
    progress: bool | None = None,
    delay: int = 0,
    metric: metrics.base.Metric | None = None,
    baseline: bool = False,
    points: int = POINTS,
    answers: bool = False,
) -> Iterator[Evaluation]:
    """`iter_evaluate` for several noise levels at once, each with its own models, in one pass.

    Each example is predicted by every model of every level, then learned by each with its
    level's label; each level's numbers are those `iter_evaluate` gives its models alone with its
    noise. The records come level by level, in the order of `levels`, as
    `Evaluation.concat` of one run per level would hold them.

    Parameters
    ----------
    levels
        (noise, models) pairs: a `LabelNoise` or None, and the models as `iter_evaluate` takes
        them; every level's models are distinct objects.
    stream
        The (x, y) pairs, read once (with `answers`, river's questions and answers).
    every
        Record the learning curves every `every` examples answered (and at the end).
    total
        The length of the stream, if known, for the progress bar.
    progress
        Show a progress bar, as in `iter_evaluate`.
    delay
        Labels arrive `delay` examples late, as in `iter_evaluate`.
    metric
        A river classification metric (default: accuracy).
    baseline
        Add the majority class (river's `dummy.PriorClassifier`) to each level's models.
    points
        The most points a model's learning curve keeps, as in `iter_evaluate`.
    answers
        `stream` holds river's questions and answers as they happened, as in `iter_evaluate`;
        each level's noise is drawn as the labels arrive.

    Examples
    --------

    >>> from river import linear_model
    >>> stream = [({"a": float(i % 2)}, i % 2 == 1) for i in range(100)]
    >>> noisy = LabelNoise(0.2, classes=[False, True], seed=1)
    >>> levels = [(None, [linear_model.LogisticRegression()])]
    >>> levels.append((noisy, [linear_model.LogisticRegression()]))
    >>> result = list(iter_levels(levels, stream, every=100))[-1]
    >>> [(r["noise"], r["flipped"], r["metric"]) for r in result.records]
    [('0%', 0, 0.97), ('20%', 22, 0.51)]

    """
    if every < 1:
        raise ValueError(f"every must be >= 1, got {every!r}")
    if delay < 0:
        raise ValueError(f"delay must be >= 0, got {delay!r}")
    if answers and delay:
        raise ValueError("a stream of answers brings its own delays: delay must be 0")
    if points < 2 or points % 2:
        raise ValueError(f"points must be an even number >= 2, got {points!r}")
    metric = metric if metric is not None else metrics.Accuracy()
    if not isinstance(metric, metrics.base.ClassificationMetric):
        raise ValueError(f"{metric_name(metric)} is not a classification metric")
    if not levels:
        raise ValueError("no models to evaluate")
    named = []
    for noise, models in levels:
        models = models if isinstance(models, Mapping) else _name(models)
        if not models:
            raise ValueError("no models to evaluate")
        for name, model in models.items():
            if not metric.works_with(model):  # river's own check
                raise ValueError(f"{metric_name(metric)} does not work with {name}")
        if baseline:
            models = {BASELINE: dummy.PriorClassifier(), **models}
        named.append((noise, models))
    with _progress_bar(stream, total, progress) as bar:
        examples = iter(bar if bar is not stream and not bar.disable else stream)
        first = next(examples, None)
        if first is None:
            return
        runs = [
            _Level(noise, models, metric, first[1 if answers else 0]) for noise, models in named
        ]
        tracks = [track for run in runs for track in run.tracks]
        arrived = itertools.chain([first], examples)
        questions = _Questions(arrived, tracks) if answers else None
        labelled: Iterable[tuple[int, dict, typing.Hashable]]
        if questions is not None:
            labelled = questions
        elif delay:
            labelled = _delayed(arrived, tracks, delay)
        else:
            labelled = _at_once(arrived, tracks)
        step = 0
        for i, x, y in labelled:  # example i's label has arrived
            for run in runs:  # each model scores its prediction, then learns (a noisy label?)
                y_learn = run.noise(y) if run.noise is not None else y
                run.flipped += y_learn != y
                for track in run.tracks:
                    track.learn(i, x, y, y_learn)
            step += 1
            if step % every:
                continue
            if len(runs[0].curve) == points:  # keep every other point; `step` is no longer one
                for run in runs:
                    run.curve = run.curve[1::2]
                every *= 2
                continue
            for run in runs:
                run.write(step)
            yield _result(runs, metric, questions, step)
    if step % every:
        for run in runs:
            run.write(step)
    if step % every or questions is not None:  # questions may have come after the last point
        yield _result(runs, metric, questions, step)


class _Level:
    """One noise level of a side-by-side run: its noise, its models' tracks, its curves."""

    def __init__(self, noise: LabelNoise | None, models: Mapping, metric, x: dict):
        self.noise = noise
        self.name = noise.name if noise is not None else "0%"
        self.tracks = [Track(name, model, metric, x) for name, model in models.items()]
        self.flipped = 0
        self.curve: list[list[dict]] = []  # one list of records (a model each) per point

    def write(self, step: int) -> None:
        self.curve.append([track.record(self.name, step, self.flipped) for track in self.tracks])


def _at_once(stream, tracks: list[Track]):
    """(i, x, y) of every example i, predicted by every track just before: river's
    `simulate_qa` without a delay (each question, then its answer) without its bookkeeping."""
    for i, (x, y) in enumerate(stream):
        for track in tracks:
            track.predict(i, x)
        yield i, x, y


def _delayed(stream, tracks: list[Track], delay: int):
    """(i, x, y) of every example i when its label arrives, `delay` examples late, in river's
    `simulate_qa` order: every track predicts an example when it arrives, and example t is
    learned just before example t + delay is predicted."""
    for i, x, y in _simulate_qa()(stream, None, delay, copy=False):
        if y is None:  # a question: every model predicts the example as it arrives
            for track in tracks:
                track.predict(i, x)
        else:
            yield i, x, y


class _Questions:
    """The answers of a stream of river's questions and answers, as they come: every track
    predicts each question (``(i, x, None)``) when it arrives; `asked` counts them."""

    def __init__(self, events: Iterable[tuple], tracks: list[Track]):
        self.events = events
        self.tracks = tracks
        self.asked = 0

    def __iter__(self) -> Iterator[tuple[int, dict, typing.Hashable]]:
        waiting = self.tracks[0].pending  # the questions not answered yet, by example
        for i, x, y in self.events:
            if y is not None:
                if i not in waiting:
                    raise ValueError(f"example {i} answered before it was asked, or twice")
                yield i, x, y
                continue
            if i in waiting:
                raise ValueError(f"example {i} asked twice")
            self.asked += 1
            for track in self.tracks:
                track.predict(i, x)


def _result(runs: list[_Level], metric, questions: _Questions | None, step: int) -> Evaluation:
    records = [record for run in runs for point in run.curve for record in point]
    info = (
        {}
        if questions is None
        else {"examples": questions.asked, "unlabelled": questions.asked - step}
    )
    return Evaluation(records, info, metric_name(metric), metric.bigger_is_better)


def _simulate_qa() -> Callable[..., Iterator[tuple]]:
    """river's `stream.simulate_qa`, without the rest of `river.stream` where that is not
    imported yet: river/stream/__init__.py imports its readers, and with them scikit-learn,
    pandas and scipy.io (about 1 s of `river-cw evaluate`'s start; tests/project/test_startup.py), none
    of which progressive validation uses. Its module, river/stream/qa.py, imports `river.base`
    only; it is run here from river's own file, the code `progressive_val_score` runs."""
    stream = sys.modules.get("river.stream")
    if stream is not None:
        return stream.simulate_qa
    path = pathlib.Path(river.__file__).parent / "stream" / "qa.py"
    spec = importlib.util.spec_from_file_location("river.stream.qa", path)
    assert spec is not None and spec.loader is not None  # a file location always has both
    qa = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(qa)
    return qa.simulate_qa


def _progress_bar(stream, total: int | None, progress: bool | None):
    """A `tqdm.auto` bar: the notebook widget in Jupyter (when ipywidgets is installed); none,
    the stream as it is, without tqdm (the ``[progress]`` extra)."""
    try:
        from tqdm import auto, autonotebook  # auto first: it silences autonotebook's warning
    except ImportError:
        return contextlib.nullcontext(stream)

    notebook = autonotebook.tqdm.__module__ == "tqdm.notebook"
    disable = (not progress) if progress is not None else (False if notebook else None)
    return auto.tqdm(stream, total=total, disable=disable, delay=1.0, unit="ex", leave=False)


def evaluate(
    models: Mapping[str, base.Classifier] | Sequence[base.Classifier],
    stream: Iterable[tuple[dict, typing.Hashable]],
    noise: LabelNoise | None = None,
    every: int = 1000,
    total: int | None = None,
    progress: bool | None = None,
    delay: int = 0,
    metric: metrics.base.Metric | None = None,
    baseline: bool = False,
    points: int = POINTS,
    answers: bool = False,
) -> Evaluation:
    """Progressive validation of several models side by side, in one pass over `stream`.

    Each model predicts every example before it learns it, as river's `progressive_val_score`
    does, and the same examples reach every model in the same order. This is `iter_evaluate`'s
    last result.

    Parameters
    ----------
    models
        Classifiers by name, or a list (named by their class, numbered if repeated).
    stream
        The (x, y) pairs; `y` is the clean label every model is scored against.
    noise
        A `LabelNoise`, applied once per example to the label the models learn from.
    every
        Record the learning curve every `every` examples (and at the end).
    total
        The length of the stream, if known, for the progress bar.
    progress
        Show a progress bar; None shows it in a notebook or when stderr is a terminal.
    delay
        Labels arrive `delay` examples late, as with river's `progressive_val_score(delay=...)`.
    metric
        A river classification metric (default: accuracy), e.g. `OneClass(metrics.F1(), "spam")`.
    baseline
        Add the majority class (river's `dummy.PriorClassifier`) as a model named `BASELINE`.
    points
        The most points a model's learning curve keeps, as in `iter_evaluate`.
    answers
        `stream` holds river's questions and answers as they happened, as in `iter_evaluate`.

    Examples
    --------

    >>> from river import datasets, linear_model
    >>> import river_cw
    >>> result = evaluate(
    ...     {"AROW": river_cw.AROW(), "LogisticRegression": linear_model.LogisticRegression()},
    ...     datasets.Phishing(),
    ...     every=500,
    ...     baseline=True,
    ... )
    >>> {r["model"]: round(r["metric"], 3) for r in result.summary}
    {'majority class': 0.555, 'AROW': 0.896, 'LogisticRegression': 0.73}

    """
    result = Evaluation([])
    for result in iter_evaluate(  # noqa: B007 - the last one is the answer
        models, stream, noise, every, total, progress, delay, metric, baseline, points, answers
    ):
        pass
    return result


def _name(models: Sequence[base.Classifier]) -> dict[str, base.Classifier]:
    names: dict[str, base.Classifier] = {}
    for model in models:
        if isinstance(model, compose.Pipeline):
            stem = " | ".join(model.steps)
        elif isinstance(model, TextClassifier):
            stem = str(model)
        else:
            stem = type(model).__name__
        name = stem
        count = 1
        while name in names:
            count += 1
            name = f"{stem} #{count}"
        names[name] = model
    return names
