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
curves grow in a notebook); `evaluate` returns the last of them. The columns of each record
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

A model that raises stops the run with a `ModelError` naming the model, the example and, for a
`TypeError` on an example with string values, the features that hold them.

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
import math
import pathlib
import sys
import time
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

import river
from river import base, compose, dummy, metrics

from river_cw.text import TextClassifier
from streams.evaluate.noise import LabelNoise
from streams.evaluate.results import BASELINE, Evaluation

__all__ = [
    "ModelError",
    "OneClass",
    "evaluate",
    "iter_evaluate",
    "metric_name",
]


class ModelError(ValueError):
    """A model raised on an example: the model, the example and the error, in one line."""


class OneClass(metrics.base.ClassificationMetric):
    """A binary river metric of one class against the others, for labels of any type.

    river 0.26's binary metrics (F1, MCC, Precision, ROCAUC ...) turn the labels into booleans
    (`y == pos_val`) and then look `pos_val` up in their confusion matrix of booleans, so with
    `pos_val="spam"` they score 0 whatever the predictions. Here each label becomes
    `y == label` first (a distribution, the probability of `label`), and the wrapped metric
    keeps `pos_val=True`.

    Parameters
    ----------
    metric
        A river binary metric (`metrics.F1()`, `metrics.MCC()`, `metrics.ROCAUC()` ...).
    label
        The class scored as the positive one.

    Examples
    --------

    >>> f1 = OneClass(metrics.F1(), "spam")
    >>> for y_true, y_pred in [("spam", "spam"), ("ham", "spam"), ("spam", "ham")]:
    ...     f1.update(y_true, y_pred)
    >>> f1.get()
    0.5

    """

    def __init__(self, metric: metrics.base.BinaryMetric, label: typing.Hashable):
        if not isinstance(metric, metrics.base.BinaryMetric):
            raise ValueError(f"{type(metric).__name__} is not a binary metric")
        self.metric = metric.clone({"pos_val": True})
        self.label = label

    def _binary(self, y_pred):
        if self.metric.requires_labels:
            return y_pred == self.label
        p = y_pred.get(self.label, 0.0) if isinstance(y_pred, dict) else y_pred
        return {True: p, False: 1.0 - p}

    def update(self, y_true, y_pred, w=1.0) -> None:
        """Add an observation to the metric (river's `Metric.update`).

        Parameters
        ----------
        y_true
            The true label.
        y_pred
            The predicted label, or ``{label: probability}`` for a metric of probabilities.
        w
            The observation's weight.
        """
        self.metric.update(y_true == self.label, self._binary(y_pred), w)

    def revert(self, y_true, y_pred, w=1.0) -> None:
        """Remove an observation from the metric (river's `Metric.revert`).

        Parameters
        ----------
        y_true
            The true label.
        y_pred
            The predicted label, or ``{label: probability}`` for a metric of probabilities.
        w
            The observation's weight.
        """
        self.metric.revert(y_true == self.label, self._binary(y_pred), w)

    def get(self) -> float:
        return self.metric.get()

    @property
    def bigger_is_better(self) -> bool:
        return self.metric.bigger_is_better

    @property
    def requires_labels(self) -> bool:
        return self.metric.requires_labels

    @property
    def works_with_weights(self) -> bool:
        return self.metric.works_with_weights


def metric_name(metric: metrics.base.Metric) -> str:
    """A short name for a river metric: its class, and the positive class of a binary one.

    Parameters
    ----------
    metric
        A river metric.

    Examples
    --------

    >>> metric_name(OneClass(metrics.F1(), "spam")), metric_name(metrics.CrossEntropy())
    ('F1 (spam)', 'CrossEntropy')
    """
    if isinstance(metric, OneClass):
        return f"{type(metric.metric).__name__} ({metric.label})"
    name = type(metric).__name__
    if isinstance(metric, metrics.base.BinaryMetric):
        name += f" ({metric.pos_val})"
    return name


def scored(y_pred) -> bool:
    """Whether river's progressive validation scores a prediction: neither None nor ``{}``."""
    return y_pred is not None and y_pred != {}


def gives_probabilities(model: base.Classifier, x: dict) -> bool:
    """Whether `model` has `predict_proba_one`, asked of a fresh clone on `x` (river's base
    classifier raises `NotImplementedError` for models without it)."""
    try:
        model.clone().predict_proba_one(dict(x))
    except NotImplementedError:
        return False
    return True


class _Track:
    """One model's state in the side-by-side run."""

    def __init__(
        self, name: str, model: base.Classifier, metric: metrics.base.ClassificationMetric, x: dict
    ):
        """`x`, the first example, tells whether the model gives probabilities."""
        self.name = name
        self.model = model
        self.metric = metric.clone()
        self.recent = metric.clone()
        self.log_loss = metrics.CrossEntropy()
        with _named(name, 0, x):  # a model that cannot take the first example stops here
            self.has_proba = gives_probabilities(model, x)
        if not (metric.requires_labels or self.has_proba):
            raise ValueError(f"{metric_name(metric)} needs probabilities: {name} gives none")
        self.pending: dict[int, tuple] = {}  # example -> (predicted label, distribution)
        self.scored = self.mistakes = self.scored_proba = self.n_metric = self.n_recent = 0
        self.seconds = 0.0
        self._last = (0, 0)  # (scored, mistakes) at the previous record

    def ask(self, i: int, x: dict) -> None:
        """Predict example i (its label and its distribution) on arrival."""
        x = dict(x)
        start = time.perf_counter()
        with _named(self.name, i, x):
            label = self.model.predict_one(x)
            proba = self.model.predict_proba_one(x) if self.has_proba else None
        self.seconds += time.perf_counter() - start
        self.pending[i] = (label, proba)

    def answer(self, i: int, x: dict, y, y_learn) -> None:
        """Score example i's predictions against its label y, then learn it with `y_learn`."""
        label, proba = self.pending.pop(i)
        if scored(label):
            self.scored += 1
            self.mistakes += label != y
        if self.has_proba and scored(proba):
            self.log_loss.update(y, proba)
            self.scored_proba += 1
        y_pred = label if self.metric.requires_labels else proba
        if scored(y_pred):
            self.metric.update(y, y_pred)
            self.recent.update(y, y_pred)
            self.n_metric += 1
            self.n_recent += 1
        x = dict(x)
        start = time.perf_counter()
        with _named(self.name, i, x):
            self.model.learn_one(x, y_learn)
        self.seconds += time.perf_counter() - start

    def record(self, noise: str, step: int, flipped: int) -> dict:
        last_scored, last_mistakes = self._last
        self._last = (self.scored, self.mistakes)
        recent = self.scored - last_scored
        record = {
            "noise": noise,
            "model": self.name,
            "step": step,
            "metric": self.metric.get() if self.n_metric else None,
            "recent_metric": self.recent.get() if self.n_recent else None,
            "accuracy": (self.scored - self.mistakes) / self.scored if self.scored else None,
            "recent_accuracy": 1.0 - (self.mistakes - last_mistakes) / recent if recent else None,
            "log_loss": self.log_loss.get() if self.scored_proba else None,
            "scored": self.scored,
            "mistakes": self.mistakes,
            "flipped": flipped,
            "seconds": self.seconds,
            "throughput": step / self.seconds if self.seconds > 0 else math.inf,
        }
        self.recent, self.n_recent = self.metric.clone(), 0
        return record


@contextlib.contextmanager
def _named(name: str, i: int, x: dict):
    """Turn what a model raises on example i into a `ModelError` saying who, where and why."""
    try:
        yield
    except Exception as error:
        strings = [f"{f!r}: {v!r}" for f, v in x.items() if isinstance(v, str)]
        hint = (
            f"; the example holds strings ({', '.join(strings[:5])}): a model of numbers needs "
            "an encoder first, e.g. 'river.preprocessing.OneHotEncoder() | ...'"
            if strings and isinstance(error, TypeError) and set(x) != {"text"}
            else ""
        )
        raise ModelError(
            f"model {name} failed on example {i + 1:,}: {type(error).__name__}: {error}{hint}"
        ) from error


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
) -> Iterator[Evaluation]:
    """Progressive validation of several models side by side, yielding the results so far.

    Every `every` examples answered (and at the end) it yields an `Evaluation` holding every
    record so far, so a notebook can redraw the curves as they grow; the last one is the result.
    Without `noise`, each model's numbers are those of river's ``progressive_val_score(stream,
    model, metric, delay=delay)`` (see the module docstring).

    Parameters
    ----------
    models
        Classifiers by name, or a list (named by their class, numbered if repeated).
    stream
        The (x, y) pairs; `y` is the clean label every model is scored against.
    noise
        Applied once per example, in stream order, to the label the models learn from.
    every
        Record the learning curve every `every` examples answered (and at the end).
    total
        The length of the stream, if known, for the progress bar.
    progress
        Show a `tqdm.auto` progress bar (a widget in a notebook, text on stderr in a
        terminal), after one second so short runs stay quiet; None shows it in a notebook
        or when stderr is a terminal.
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

    Examples
    --------

    >>> from river import linear_model
    >>> stream = [({"a": float(i % 2)}, i % 2 == 1) for i in range(100)]
    >>> for result in iter_evaluate([linear_model.LogisticRegression()], stream, every=50):
    ...     print(result.records[-1]["step"], result.records[-1]["metric"])
    50 0.94
    100 0.97

    """
    if every < 1:
        raise ValueError(f"every must be >= 1, got {every!r}")
    if delay < 0:
        raise ValueError(f"delay must be >= 0, got {delay!r}")
    if not isinstance(models, Mapping):
        models = _name(models)
    if not models:
        raise ValueError("no models to evaluate")
    metric = metric if metric is not None else metrics.Accuracy()
    if not isinstance(metric, metrics.base.ClassificationMetric):
        raise ValueError(f"{metric_name(metric)} is not a classification metric")
    for name, model in models.items():
        if not metric.works_with(model):  # river's own check
            raise ValueError(f"{metric_name(metric)} does not work with {name}")
    if baseline:
        models = {BASELINE: dummy.PriorClassifier(), **models}
    noise_name = noise.name if noise is not None else "0%"
    with _progress_bar(stream, total, progress) as bar:
        examples = iter(bar)
        first = next(examples, None)
        if first is None:
            return
        tracks = [_Track(name, model, metric, first[0]) for name, model in models.items()]
        arrivals = ((x, y, {"learn": noise(y) if noise else y}) for x, y in _chain(first, examples))
        records: list[dict] = []
        step = flipped = 0
        # river's annotation omits the third field (the keyword arguments) it passes on
        qa = _simulate_qa()(arrivals, None, delay or None, copy=False)
        for i, x, y, labels in qa:
            if y is None:  # a question: every model predicts the example as it arrives
                for track in tracks:
                    track.ask(i, x)
                continue
            for track in tracks:  # its label: scored, then learned (the noisy one, if any)
                track.answer(i, x, y, labels["learn"])
            step += 1
            flipped += labels["learn"] != y
            if step % every == 0:
                records += [track.record(noise_name, step, flipped) for track in tracks]
                yield Evaluation(list(records), {}, metric_name(metric), metric.bigger_is_better)
    if step % every:
        records += [track.record(noise_name, step, flipped) for track in tracks]
        yield Evaluation(list(records), {}, metric_name(metric), metric.bigger_is_better)


def _simulate_qa() -> Callable[..., Iterator[tuple]]:
    """river's `stream.simulate_qa`, without the rest of `river.stream` where that is not
    imported yet: river/stream/__init__.py imports its readers, and with them scikit-learn,
    pandas and scipy.io (about 1 s of `river-cw evaluate`'s start; tests/test_startup.py), none
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


def _chain(first, rest):
    yield first
    yield from rest


def _progress_bar(stream, total: int | None, progress: bool | None):
    """A `tqdm.auto` bar: the notebook widget in Jupyter (when ipywidgets is installed)."""
    from tqdm import auto, autonotebook  # auto first: it silences autonotebook's warning

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
    {'majority class': 0.555, 'AROW': 0.89, 'LogisticRegression': 0.73}

    """
    result = Evaluation([])
    for result in iter_evaluate(  # noqa: B007 - the last one is the answer
        models, stream, noise, every, total, progress, delay, metric, baseline
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
