"""Side-by-side progressive validation: several models, one pass over one stream.

For each example every model first predicts, is scored against the clean label, and then
learns from the label (after noise, if any). All models see the same examples in the same
order with the same noisy labels; each gets its own shallow copy of `x`, so no model can
change what another sees. river's `evaluate.progressive_val_score` runs one model per
pass, so the loop is written here, with river's metrics.

Conventions, per model:

* `accuracy` and `mistakes` count every example; a model that has no answer yet
  (`predict_one` returns None) makes a mistake. (river's `progressive_val_score` skips
  such examples instead; on streams where every prediction is an answer both agree.)
* `log_loss` is river's `CrossEntropy` over the examples where the model gave a non-empty
  distribution; a distribution that leaves out the true label counts as probability 0
  (clipped to 1e-15), where river's metric would count it as a perfect prediction.
  It is None for models without `predict_proba_one`.
* `recent_accuracy` is the accuracy since the previous record (over the last `every`
  examples): it shows drift that the running `accuracy` averages away.
* `seconds` is the time spent in `predict_one` and `learn_one` only, and `throughput` is
  examples per second of that time.

>>> from river import linear_model
>>> stream = [({"a": float(i % 2)}, i % 2 == 1) for i in range(100)]
>>> result = evaluate({"LR": linear_model.LogisticRegression()}, stream, every=50)
>>> [(r["step"], r["accuracy"], r["mistakes"]) for r in result.records]
[(50, 0.94, 3), (100, 0.97, 3)]

"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import time
import typing
from collections.abc import Iterable, Mapping, Sequence

import tqdm
from river import base, compose, metrics

from streams.noise import LabelNoise

__all__ = ["COLUMNS", "Evaluation", "evaluate"]

COLUMNS = (
    "noise",
    "model",
    "step",
    "accuracy",
    "recent_accuracy",
    "log_loss",
    "mistakes",
    "flipped",
    "seconds",
    "throughput",
)


@dataclasses.dataclass
class Evaluation:
    """The result of `evaluate`: learning curves as tidy records, one per (noise, model, step).

    The last record of each (noise, model) is its final score; `summary` holds those.
    `info` carries anything else worth saving with the results (e.g. tuned parameters).
    """

    records: list[dict]
    info: dict = dataclasses.field(default_factory=dict)

    @classmethod
    def concat(cls, evaluations: Iterable[Evaluation]) -> Evaluation:
        records, info = [], {}
        for evaluation in evaluations:
            records += evaluation.records
            info.update(evaluation.info)
        return cls(records, info)

    @property
    def summary(self) -> list[dict]:
        last = {}
        for record in self.records:
            last[record["noise"], record["model"]] = record
        return list(last.values())

    def to_frame(self):
        """The records as a pandas DataFrame (needs pandas)."""
        import pandas as pd

        return pd.DataFrame(self.records, columns=list(COLUMNS))

    def table(self, markdown: bool = False) -> str:
        """The final scores as an aligned text table, or a markdown one."""
        header = ["noise", "model", "examples", "accuracy", "log loss", "mistakes", "examples/s"]
        rows = [
            [
                r["noise"],
                r["model"],
                f"{r['step']:,}",
                f"{r['accuracy']:.4f}",
                "-" if r["log_loss"] is None else f"{r['log_loss']:.4f}",
                f"{r['mistakes']:,}",
                f"{r['throughput']:,.0f}",
            ]
            for r in self.summary
        ]
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

    def to_csv(self, path) -> None:
        with open(path, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=COLUMNS)
            writer.writeheader()
            writer.writerows(self.records)

    def to_json(self, path) -> None:
        document = {"summary": self.summary, "records": self.records, "info": self.info}
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(document, fh, indent=1, default=str)

    def plot(
        self, path, title: str | None = None, metric: str = "accuracy", marks: Sequence[int] = ()
    ) -> None:
        """Draw the learning curves to a PNG, one panel per noise level.

        `metric` is `"accuracy"` (running) or `"recent_accuracy"` (since the previous record);
        `marks` are positions to mark with a dashed line, such as a drift.
        """
        from streams.plots import learning_curves

        learning_curves(self.records, path, title, metric, marks)


class _Track:
    """One model's state in the side-by-side run."""

    def __init__(self, name: str, model: base.Classifier):
        self.name = name
        self.model = model
        self.accuracy = metrics.Accuracy()
        self.log_loss = metrics.CrossEntropy()
        self.has_proba: bool | None = None
        self.n_scored = 0  # examples with a distribution, i.e. in the log loss
        self.mistakes = 0
        self.seconds = 0.0
        self._last = (0, 0)  # (step, mistakes) at the previous record

    def step(self, x: dict, y, y_learn) -> None:
        model = self.model
        x = x.copy()
        start = time.perf_counter()
        y_pred = model.predict_one(x)
        self.seconds += time.perf_counter() - start
        self._score_proba(x, y)
        start = time.perf_counter()
        model.learn_one(x, y_learn)
        self.seconds += time.perf_counter() - start
        self.accuracy.update(y, y_pred)
        self.mistakes += y_pred != y

    def _score_proba(self, x: dict, y) -> None:
        if self.has_proba is False:
            return
        try:
            proba = self.model.predict_proba_one(x)
        except NotImplementedError:
            self.has_proba = False
            return
        self.has_proba = True
        if proba:
            self.log_loss.update(y, {**proba, y: proba.get(y, 0.0)})
            self.n_scored += 1

    def record(self, noise: str, step: int, flipped: int) -> dict:
        last_step, last_mistakes = self._last
        self._last = (step, self.mistakes)
        return {
            "noise": noise,
            "model": self.name,
            "step": step,
            "accuracy": self.accuracy.get(),
            "recent_accuracy": 1.0 - (self.mistakes - last_mistakes) / (step - last_step),
            "log_loss": self.log_loss.get() if self.n_scored else None,
            "mistakes": self.mistakes,
            "flipped": flipped,
            "seconds": self.seconds,
            "throughput": step / self.seconds if self.seconds > 0 else math.inf,
        }


def evaluate(
    models: Mapping[str, base.Classifier] | Sequence[base.Classifier],
    stream: Iterable[tuple[dict, typing.Hashable]],
    noise: LabelNoise | None = None,
    every: int = 1000,
    total: int | None = None,
    progress: bool | None = None,
) -> Evaluation:
    """Progressive validation of several models side by side, in one pass over `stream`.

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
        Show a tqdm progress bar on stderr (after one second, so short runs stay quiet);
        None shows it only when stderr is a terminal.

    """
    if every < 1:
        raise ValueError(f"every must be >= 1, got {every!r}")
    if not isinstance(models, Mapping):
        models = _name(models)
    if not models:
        raise ValueError("no models to evaluate")
    tracks = [_Track(name, model) for name, model in models.items()]
    noise_name = noise.name if noise is not None else "0%"
    records: list[dict] = []
    step = flipped = 0
    bar = tqdm.tqdm(
        stream,
        total=total,
        disable=None if progress is None else not progress,
        delay=1.0,
        unit="ex",
        leave=False,
    )
    for x, y in bar:
        y_learn = noise(y) if noise is not None else y
        flipped += y_learn != y
        for track in tracks:
            track.step(x, y, y_learn)
        step += 1
        if step % every == 0:
            records += [track.record(noise_name, step, flipped) for track in tracks]
    if step % every:
        records += [track.record(noise_name, step, flipped) for track in tracks]
    return Evaluation(records)


def _name(models: Sequence[base.Classifier]) -> dict[str, base.Classifier]:
    names: dict[str, base.Classifier] = {}
    for model in models:
        stem = (
            " | ".join(model.steps) if isinstance(model, compose.Pipeline) else type(model).__name__
        )
        name = stem
        count = 1
        while name in names:
            count += 1
            name = f"{stem} #{count}"
        names[name] = model
    return names
