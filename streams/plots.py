"""Learning-curve figures (matplotlib, drawn off-screen with the Agg canvas; pyplot is not used)."""

from __future__ import annotations

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

__all__ = ["learning_curves"]


def learning_curves(records: list[dict], path, title: str | None = None) -> None:
    """Running accuracy against examples seen, one line per model, one panel per noise level.

    `records` are `Evaluation.records`. The panels share the y axis so noise levels compare
    at a glance.
    """
    if not records:
        raise ValueError("no records to plot")
    levels = list(dict.fromkeys(r["noise"] for r in records))
    models = list(dict.fromkeys(r["model"] for r in records))
    figure = Figure(figsize=(0.5 + 3.6 * len(levels), 3.4), dpi=110, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(1, len(levels), sharey=True, squeeze=False)[0]
    for ax, level in zip(axes, levels):
        for model in models:
            curve = [r for r in records if r["noise"] == level and r["model"] == model]
            ax.plot([r["step"] for r in curve], [r["accuracy"] for r in curve], label=model, lw=1.4)
        ax.set_title(f"label noise {level}" if len(levels) > 1 else (title or ""), fontsize=10)
        ax.set_xlabel("examples seen")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("running accuracy")
    axes[-1].legend(fontsize=8, loc="lower right")
    if title and len(levels) > 1:
        figure.suptitle(title, fontsize=11)
    figure.savefig(path, format="png")
