"""Learning-curve figures (matplotlib; drawn off-screen with the Agg canvas, pyplot is not used).

`learning_curves` returns a `Figure` that shows itself in a notebook (it has `_repr_png_`,
so no `%matplotlib` magic is needed), or draws into axes you give it.
"""

from __future__ import annotations

import io
import pathlib
import textwrap
from collections.abc import Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

__all__ = ["FORMATS", "check_path", "learning_curves"]

FORMATS = (".png", ".pdf", ".svg")  # chosen by the file's extension

COLUMNS = {
    "metric": "{metric}",
    "recent_metric": "{metric} since the last point",
    "accuracy": "running accuracy",
    "recent_accuracy": "accuracy since the last point",
    "log_loss": "log loss",
}
# line styles and markers in turn, so that identical curves stay visible one over the other
STYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
MARKS_PER_CURVE = 8


class LearningCurves(Figure):
    """A matplotlib Figure that a notebook displays as a PNG without the inline backend."""

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png")
        return buffer.getvalue()


def check_path(path) -> str:
    """The figure format for `path` (`"png"`, `"pdf"` or `"svg"`), or `ValueError`.

    >>> check_path("curves.svg")
    'svg'
    """
    suffix = pathlib.Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(
            f"cannot tell the figure format of {str(path)!r}: name it *{', *'.join(FORMATS)}"
        )
    return suffix[1:]


def learning_curves(
    records: list[dict],
    path=None,
    *,
    ax=None,
    title: str | None = None,
    column: str = "metric",
    marks: Sequence[int] = (),
    metric: str = "Accuracy",
    bigger_is_better: bool = True,
    baseline: str = "majority class",
) -> Figure:
    """A metric against examples seen, one line per model, one panel per noise level.

    `records` are `Evaluation.records`; `column` is the record field to draw; `metric` names
    the metric of the `metric` columns; `marks` are positions to mark with a dashed line (e.g.
    a drift). The model named `baseline` is drawn in grey, and the y axis spans the curves
    (the baseline's too) after the first tenth of the stream, so it starts near the baseline
    rather than at the first points, scored after a handful of examples. The panels share the
    y axis so noise levels compare at a glance. The legend names each panel's models: one legend
    beside the panels, or, where they show different models (parameters tuned at each noise
    level), one under each panel. `path` writes the figure (PNG, PDF or SVG by extension); `ax`
    (one axes, or one per noise level) draws into an existing figure.
    """
    if not records:
        raise ValueError("no records to plot")
    if column not in COLUMNS:
        raise ValueError(f"column must be one of {sorted(COLUMNS)}, got {column!r}")
    fmt = check_path(path) if path is not None else None
    levels = list(dict.fromkeys(r["noise"] for r in records))
    # each panel's models in order of appearance: tuning may have picked other parameters at
    # each noise level, and each panel names the models that ran there
    panels = {
        level: list(dict.fromkeys(r["model"] for r in records if r["noise"] == level))
        for level in levels
    }
    shared_legend = all(models == panels[levels[0]] for models in panels.values())
    if ax is None:
        if shared_legend:  # with room for the legend on the right
            width, height = 3.5 + 3.6 * len(levels), 3.6
        else:  # with room for a legend under each panel
            width, height = 0.8 + 3.6 * len(levels), 3.8 + 0.15 * max(map(len, panels.values()))
        figure = LearningCurves(figsize=(width, height), dpi=110, layout="constrained")
        FigureCanvasAgg(figure)
        axes = list(figure.subplots(1, len(levels), sharey=True, squeeze=False)[0])
    else:
        axes = [ax] if hasattr(ax, "plot") else list(getattr(ax, "flat", ax))  # numpy arrays too
        if len(axes) != len(levels):
            raise ValueError(f"{len(levels)} noise levels need {len(levels)} axes, got {len(axes)}")
        figure = axes[0].figure
        width = figure.get_figwidth()
    shown = []  # the values the y axis must show: every curve after the first tenth
    warm_up = max(r["step"] for r in records) / 10
    for panel, level in zip(axes, levels):
        models = panels[level]
        others = [m for m in models if m != baseline]
        for model in models:
            curve = [
                r
                for r in records
                if r["noise"] == level and r["model"] == model and r[column] is not None
            ]
            if not curve:
                continue
            x, y = [r["step"] for r in curve], [r[column] for r in curve]
            if model == baseline:
                panel.plot(
                    x, y, color="grey", ls=":", lw=1.6, label=f"{model} (baseline)", zorder=1
                )
                shown += _settled(x, y, warm_up)
                continue
            i = others.index(model)
            spacing = max(1, len(x) // MARKS_PER_CURVE)
            panel.plot(
                x,
                y,
                label=model,
                lw=1.4,
                ls=STYLES[i % len(STYLES)],
                marker=MARKERS[i % len(MARKERS)],
                markersize=4,
                markevery=(i * spacing // max(len(others), 1) % spacing, spacing),
                zorder=2 + len(others) - i,
            )
            shown += _settled(x, y, warm_up)
        for mark in marks:
            panel.axvline(mark, color="grey", ls="--", lw=1)
        if len(levels) > 1:
            panel.set_title(f"label noise {level}", fontsize=10)
        panel.set_xlabel("examples seen")
        panel.grid(alpha=0.3)
    if shown:
        low, high = min(shown), max(shown)
        pad = 0.05 * (high - low) or 0.01
        for panel in axes:
            panel.set_ylim(low - pad, high + pad)
    axes[0].set_ylabel(COLUMNS[column].format(metric=metric))
    if ax is None and shared_legend:  # beside the panels, where it hides no curve
        figure.legend(*axes[0].get_legend_handles_labels(), loc="outside right center", fontsize=8)
    elif ax is None:  # under each panel, its own models
        for panel in axes:
            panel.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), fontsize=7)
    else:
        if column not in ("metric", "recent_metric"):
            bigger_is_better = column != "log_loss"
        axes[-1].legend(fontsize=8, loc="lower right" if bigger_is_better else "upper right")
    if title:
        figure.suptitle(textwrap.fill(title, int(width * 11)), fontsize=10)
    if path is not None:
        figure.savefig(path, format=fmt)
    return figure


def _settled(x: list[int], y: list[float], warm_up: float) -> list[float]:
    """The values after the warm-up, or all of them for a curve that ends within it."""
    return [value for step, value in zip(x, y) if step > warm_up] or y
