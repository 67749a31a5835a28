"""The result of a progressive validation: learning curves as tidy records, tables, files, plots.

One record per (noise level, model, step) with the columns of `COLUMNS` (see
`streams.evaluate.progressive` for what each one counts); the last record of each (noise, model)
is its final score.
"""

from __future__ import annotations

import csv
import dataclasses
import html
import json
from collections.abc import Iterable, Sequence

__all__ = ["BASELINE", "COLUMNS", "POINTS", "Evaluation"]

COLUMNS = (
    "noise",
    "model",
    "step",
    "metric",
    "recent_metric",
    "accuracy",
    "recent_accuracy",
    "log_loss",
    "scored",
    "mistakes",
    "flipped",
    "seconds",
    "throughput",
)

# the name of the majority-class baseline (river's PriorClassifier) of `iter_evaluate(baseline=True)`
BASELINE = "majority class"

# the most points a learning curve keeps per model (`iter_evaluate`'s `points`)
POINTS = 1000


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
    >>> from streams.evaluate.progressive import evaluate
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

    def _rows(self, timing: bool = True) -> tuple[list[str], list[list[str]]]:
        header = ["noise", "model", "examples", self.metric]
        header += ["accuracy"] if self.metric != "Accuracy" else []
        header += ["log loss", "mistakes"] + (["examples/s"] if timing else [])
        rows = []
        for r in self.summary:
            row = [r["noise"], r["model"], f"{r['step']:,}", _number(r["metric"])]
            row += [_number(r["accuracy"])] if self.metric != "Accuracy" else []
            row += [_number(r["log_loss"]), f"{r['mistakes']:,}"]
            row += [f"{r['throughput']:,.0f}"] if timing else []
            rows.append(row)
        return header, rows

    def table(self, markdown: bool = False) -> str:
        """The final scores as an aligned text table, or a markdown one.

        Parameters
        ----------
        markdown
            A markdown table instead of aligned text, for documents: it leaves out the
            throughput (a machine's load, not the run's result), so that a rerun writes the same
            file.
        """
        header, rows = self._rows(timing=not markdown)
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
