"""Side-by-side progressive validation: several models, one pass over one stream.

For each example every model first predicts, is scored against the clean label, and then
learns from the label (after noise, if any; `delay` examples later, if labels come late). All
models see the same examples in the same order with the same noisy labels; each gets its own
shallow copy of `x`, so no model can change what another sees. river's
`evaluate.progressive_val_score` runs one model per pass, so the loop is written here, with
river's metrics. `iter_evaluate` yields the results so far at every point of the learning
curve (to watch curves grow in a notebook); `evaluate` returns the last of them.

Conventions, per model:

* `metric` is the chosen river metric (accuracy by default) over every example, and
  `recent_metric` the same metric over the examples since the previous record: it shows drift
  that the running value averages away. A metric that needs probabilities (log loss, ROC AUC)
  is fed `predict_proba_one` and is None for models without it.
* `accuracy` and `mistakes` count every example; a model that has no answer yet
  (`predict_one` returns None) makes a mistake. (river's `progressive_val_score` skips
  such examples instead; on streams where every prediction is an answer both agree.)
  `recent_accuracy` is the accuracy since the previous record.
* `log_loss` is river's `CrossEntropy` over the examples where the model gave a non-empty
  distribution; a distribution that leaves out the true label counts as probability 0
  (clipped to 1e-15), where river's metric would count it as a perfect prediction.
  It is None for models without `predict_proba_one`.
* `seconds` is the time spent in `predict_one` and `learn_one` only, and `throughput` is
  examples per second of that time.

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

import collections
import csv
import dataclasses
import html
import json
import math
import time
import typing
from collections.abc import Iterable, Iterator, Mapping, Sequence

from river import base, compose, dummy, metrics

from river_cw.text import TextClassifier
from streams.evaluate.noise import LabelNoise

__all__ = [
    "BASELINE",
    "COLUMNS",
    "Evaluation",
    "OneClass",
    "evaluate",
    "iter_evaluate",
    "metric_name",
]

COLUMNS = (
    "noise",
    "model",
    "step",
    "metric",
    "recent_metric",
    "accuracy",
    "recent_accuracy",
    "log_loss",
    "mistakes",
    "flipped",
    "seconds",
    "throughput",
)

# the name of the majority-class baseline (river's PriorClassifier) when `baseline=True`
BASELINE = "majority class"


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


@dataclasses.dataclass(repr=False)
class Evaluation:
    """The result of `evaluate`: learning curves as tidy records, one per (noise, model, step).

    The last record of each (noise, model) is its final score; `summary` holds those.
    `metric` names the metric of the `metric` columns; `info` carries anything else worth
    saving with the results (e.g. tuned parameters). In a notebook a result shows as a table.

    Parameters
    ----------
    records
        One dict per (noise, model, step), with the keys of `COLUMNS`.
    info
        Anything else to save with the results (e.g. tuned parameters).
    metric
        The name of the metric of the ``metric`` columns.
    bigger_is_better
        Whether a bigger value of the metric is better.

    Examples
    --------

    >>> from river import datasets, linear_model
    >>> result = evaluate([linear_model.LogisticRegression()], datasets.Phishing(), every=500)
    >>> result
    Evaluation(Accuracy, 1 model, 1,250 examples)
    >>> [(r["step"], round(r["metric"], 3)) for r in result.records]
    [(500, 0.632), (1000, 0.704), (1250, 0.73)]

    """

    records: list[dict]
    info: dict = dataclasses.field(default_factory=dict)
    metric: str = "Accuracy"
    bigger_is_better: bool = True

    @classmethod
    def concat(cls, evaluations: Iterable[Evaluation]) -> Evaluation:
        """One result holding the records of several (e.g. one per noise level).

        Parameters
        ----------
        evaluations
            The results, in order; the first one names the metric.
        """
        evaluations = list(evaluations)
        records, info = [], {}
        for evaluation in evaluations:
            records += evaluation.records
            info.update(evaluation.info)
        first = evaluations[0] if evaluations else cls([])
        return cls(records, info, first.metric, first.bigger_is_better)

    @property
    def summary(self) -> list[dict]:
        last = {}
        for record in self.records:
            last[record["noise"], record["model"]] = record
        return list(last.values())

    def __repr__(self) -> str:
        models = {r["model"] for r in self.records}
        levels = {r["noise"] for r in self.records}
        steps = max((r["step"] for r in self.records), default=0)
        noise = f", {len(levels)} noise levels" if len(levels) > 1 else ""
        return (
            f"Evaluation({self.metric}, {len(models)} model{'s' * (len(models) != 1)}{noise}, "
            f"{steps:,} examples)"
        )

    def to_frame(self):
        """The records as a pandas DataFrame (needs pandas)."""
        import pandas as pd

        return pd.DataFrame(self.records, columns=list(COLUMNS))

    def _rows(self) -> tuple[list[str], list[list[str]]]:
        header = ["noise", "model", "examples", self.metric]
        header += ["accuracy"] if self.metric != "Accuracy" else []
        header += ["log loss", "mistakes", "examples/s"]
        rows = []
        for r in self.summary:
            row = [r["noise"], r["model"], f"{r['step']:,}", _number(r["metric"])]
            row += [f"{r['accuracy']:.4f}"] if self.metric != "Accuracy" else []
            row += [_number(r["log_loss"]), f"{r['mistakes']:,}", f"{r['throughput']:,.0f}"]
            rows.append(row)
        return header, rows

    def table(self, markdown: bool = False) -> str:
        """The final scores as an aligned text table, or a markdown one.

        Parameters
        ----------
        markdown
            A markdown table instead of aligned text.
        """
        header, rows = self._rows()
        left = {0, 1}
        widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

        def line(cells, sep=" | " if markdown else "  "):
            text = sep.join(
                c.ljust(w) if i in left else c.rjust(w)
                for i, (c, w) in enumerate(zip(cells, widths))
            )
            return f"| {text} |" if markdown else text

        rule = ["-" * w if i in left else "-" * (w - 1) + ":" for i, w in enumerate(widths)]
        return "\n".join([line(header), line(rule), *map(line, rows)])

    def _repr_html_(self) -> str:
        header, rows = self._rows()
        cells = "".join(f"<th>{html.escape(h)}</th>" for h in header)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows
        )
        caption = html.escape(self.info.get("data", repr(self)))
        return f"<table><caption>{caption}</caption><tr>{cells}</tr>{body}</table>"

    def to_csv(self, path) -> None:
        """Write every record (the learning curves) as CSV, with the columns of `COLUMNS`.

        Parameters
        ----------
        path
            The file to write.
        """
        with open(path, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=COLUMNS)
            writer.writeheader()
            writer.writerows(self.records)

    def to_json(self, path) -> None:
        """Write the metric, the final scores, every record and `info` as one JSON document.

        Parameters
        ----------
        path
            The file to write.
        """
        document = {
            "metric": self.metric,
            "summary": self.summary,
            "records": self.records,
            "info": self.info,
        }
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(document, fh, indent=1, default=str)

    def plot(
        self,
        path=None,
        *,
        ax=None,
        title: str | None = None,
        column: str = "metric",
        marks: Sequence[int] = (),
    ):
        """Draw the learning curves, one panel per noise level; return the matplotlib Figure.

        Parameters
        ----------
        path
            Also write the figure there (PNG, PDF or SVG, by its extension).
        ax
            Draw into these existing axes (one per noise level) instead of a new figure.
        title
            The figure's title.
        column
            ``"metric"`` (running), ``"recent_metric"`` (since the previous record),
            ``"accuracy"``, ``"recent_accuracy"`` or ``"log_loss"``.
        marks
            Positions to mark with a dashed line, such as a drift.
        """
        from streams.evaluate.plots import learning_curves

        return learning_curves(
            self.records,
            path,
            ax=ax,
            title=title,
            column=column,
            marks=marks,
            metric=self.metric,
            bigger_is_better=self.bigger_is_better,
            baseline=BASELINE,
        )


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


class _Track:
    """One model's state in the side-by-side run."""

    def __init__(self, name: str, model: base.Classifier, metric: metrics.base.Metric):
        self.name = name
        self.model = model
        self.metric = metric.clone()
        self.recent = metric.clone()
        self.log_loss = metrics.CrossEntropy()
        self.has_proba: bool | None = None
        self.n_scored = 0  # examples with a distribution, i.e. in the log loss
        self.n_recent_scored = 0
        self.mistakes = 0
        self.seconds = 0.0
        self._last = (0, 0)  # (step, mistakes) at the previous record

    def predict(self, x: dict, y) -> dict:
        """Predict and score one example; return the model's own copy of `x` for learning."""
        model = self.model
        x = x.copy()
        start = time.perf_counter()
        y_pred = model.predict_one(x)
        self.seconds += time.perf_counter() - start
        proba = self._proba(x, y)
        self.mistakes += y_pred != y
        if proba is not None:
            self.log_loss.update(y, proba)
            self.n_scored += 1
            self.n_recent_scored += 1
        for metric in (self.metric, self.recent):
            if metric.requires_labels:
                metric.update(y, y_pred)
            elif proba is not None:
                metric.update(y, proba)
        return x

    def learn(self, x: dict, y) -> None:
        start = time.perf_counter()
        self.model.learn_one(x, y)
        self.seconds += time.perf_counter() - start

    def _proba(self, x: dict, y) -> dict | None:
        """The predicted distribution with the true label filled in (0 if left out), if any."""
        if self.has_proba is False:
            return None
        try:
            proba = self.model.predict_proba_one(x)
        except NotImplementedError:
            self.has_proba = False
            return None
        self.has_proba = True
        return {**proba, y: proba.get(y, 0.0)} if proba else None

    def record(self, noise: str, step: int, flipped: int) -> dict:
        last_step, last_mistakes = self._last
        self._last = (step, self.mistakes)
        labels = self.metric.requires_labels
        record = {
            "noise": noise,
            "model": self.name,
            "step": step,
            "metric": self.metric.get() if labels or self.n_scored else None,
            "recent_metric": self.recent.get() if labels or self.n_recent_scored else None,
            "accuracy": (step - self.mistakes) / step,
            "recent_accuracy": 1.0 - (self.mistakes - last_mistakes) / (step - last_step),
            "log_loss": self.log_loss.get() if self.n_scored else None,
            "mistakes": self.mistakes,
            "flipped": flipped,
            "seconds": self.seconds,
            "throughput": step / self.seconds if self.seconds > 0 else math.inf,
        }
        self.recent = self.metric.clone()
        self.n_recent_scored = 0
        return record


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

    Every `every` examples (and at the end) it yields an `Evaluation` holding every record
    so far, so a notebook can redraw the curves as they grow; the last one is the result.

    Parameters
    ----------
    models
        Classifiers by name, or a list (named by their class, numbered if repeated).
    stream
        The (x, y) pairs; `y` is the clean label every model is scored against.
    noise
        Applied once per example to the label the models learn from.
    every
        Record the learning curve every `every` examples (and at the end).
    total
        The length of the stream, if known, for the progress bar.
    progress
        Show a `tqdm.auto` progress bar (a widget in a notebook, text on stderr in a
        terminal), after one second so short runs stay quiet; None shows it in a notebook
        or when stderr is a terminal.
    delay
        Labels arrive `delay` examples late, as with river's `progressive_val_score(delay=...)`:
        example t is learned just before example t + delay is predicted (so 0 and 1 score
        alike). When the stream ends, the examples still waiting are learned (the scores do
        not change).
    metric
        A river classification metric, e.g. `OneClass(metrics.F1(), "spam")` (the F1 of a class),
        `metrics.MCC()` or `metrics.CrossEntropy()` (default: accuracy); each model gets a
        fresh clone.
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
    if baseline:
        models = {BASELINE: dummy.PriorClassifier(), **models}
    tracks = [_Track(name, model, metric) for name, model in models.items()]
    noise_name = noise.name if noise is not None else "0%"

    def result() -> Evaluation:
        return Evaluation(list(records), {}, metric_name(metric), metric.bigger_is_better)

    records: list[dict] = []
    waiting: collections.deque = collections.deque()  # (due, each model's x, label), oldest first
    step = flipped = 0
    with _progress_bar(stream, total, progress) as bar:
        for x, y in bar:
            while waiting and waiting[0][0] <= step:  # labels due now come before the example
                _learn(tracks, *waiting.popleft()[1:])
            y_learn = noise(y) if noise is not None else y
            flipped += y_learn != y
            xs = [track.predict(x, y) for track in tracks]
            if delay:
                waiting.append((step + delay, xs, y_learn))
            else:
                _learn(tracks, xs, y_learn)
            step += 1
            if step % every == 0:
                records += [track.record(noise_name, step, flipped) for track in tracks]
                yield result()
    while waiting:
        _learn(tracks, *waiting.popleft()[1:])
    if step % every:
        records += [track.record(noise_name, step, flipped) for track in tracks]
        yield result()


def _learn(tracks: list[_Track], xs: list[dict], y) -> None:
    for track, x in zip(tracks, xs):
        track.learn(x, y)


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
    {'majority class': 0.554, 'AROW': 0.866, 'LogisticRegression': 0.73}

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
