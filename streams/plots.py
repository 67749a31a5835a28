"""Learning-curve figures (matplotlib, drawn off-screen with the Agg canvas; pyplot is not used)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

__all__ = ["learning_curves"]


LABELS = {"accuracy": "running accuracy", "recent_accuracy": "accuracy since the last point"}


def learning_curves(
    records: list[dict],
    path,
    title: str | None = None,
    metric: str = "accuracy",
    marks: Sequence[int] = (),
) -> None:
    """Accuracy against examples seen, one line per model, one panel per noise level.

    `records` are `Evaluation.records`; `metric` is `"accuracy"` (running) or
    `"recent_accuracy"`; `marks` are positions to mark with a dashed line (e.g. a drift).
    The panels share the y axis so noise levels compare at a glance.
    """
    if not records:
        raise ValueError("no records to plot")
    if metric not in LABELS:
        raise ValueError(f"metric must be one of {sorted(LABELS)}, got {metric!r}")
    levels = list(dict.fromkeys(r["noise"] for r in records))
    models = list(dict.fromkeys(r["model"] for r in records))
    width = 1.5 + 3.6 * len(levels)
    figure = Figure(figsize=(width, 3.6), dpi=110, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(1, len(levels), sharey=True, squeeze=False)[0]
    for ax, level in zip(axes, levels):
        for model in models:
            curve = [r for r in records if r["noise"] == level and r["model"] == model]
            ax.plot([r["step"] for r in curve], [r[metric] for r in curve], label=model, lw=1.4)
        for mark in marks:
            ax.axvline(mark, color="grey", ls="--", lw=1)
        if len(levels) > 1:
            ax.set_title(f"label noise {level}", fontsize=10)
        ax.set_xlabel("examples seen")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(LABELS[metric])
    axes[-1].legend(fontsize=8, loc="lower right")
    if title:
        figure.suptitle(textwrap.fill(title, int(width * 11)), fontsize=10)
    figure.savefig(path, format="png")
