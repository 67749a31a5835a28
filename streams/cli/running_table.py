"""The progress `river-cw evaluate` prints while the models learn."""

from __future__ import annotations

import sys

from streams.evaluate.results import Evaluation

__all__ = ["RunningTable", "short_name"]

NOISE_WIDTH = 5  # the noise column, with several levels: "0%", "10%", "spam 30%, ham 5%"


class RunningTable:
    """A row at doubling intervals of the learning curve (its first point, then twice as many
    examples, four times ...), as Vowpal Wabbit prints.

    Each row gives the examples answered and, per model, the metric so far and, in parentheses,
    the accuracy since the previous row (so drift shows), both over the examples the model
    scored, by river's rules (`streams.evaluate.progressive`); "-" where it scored none. With
    several noise levels (run in the same pass), each point has a row per level, the level
    first; the columns are the models of the first level, in order (with `--tune`, each level's
    picks; the lines after the final table name them).
    """

    def __init__(self, names: list[str], metric: str, levels: int = 1):
        self.names = names
        self.metric = metric
        self.levels = levels
        self.widths = [max(13, len(short_name(name))) for name in names]
        self.next_step = 0
        self.last_step = 0
        self.previous: dict[tuple, tuple[int, int]] = {}  # model -> (scored, mistakes) at last row

    def start(self, description: str) -> None:
        self.next_step = self.last_step = 0
        self.previous = {}
        what = (
            "accuracy so far (since the previous row)"
            if self.metric == "Accuracy"
            else f"{self.metric} so far (accuracy since the previous row)"
        )
        self._print(f"Progressive validation on {description}: {what}")
        cells = [short_name(name).ljust(width) for name, width in zip(self.names, self.widths)]
        noise = ["noise".ljust(NOISE_WIDTH)] if self.levels > 1 else []
        self._print("  ".join(["examples".rjust(10), *noise, *cells]).rstrip())

    def update(self, partial: Evaluation) -> None:
        step = partial.records[-1]["step"]
        if step >= self.next_step:
            self._row(partial, step)
            self.next_step = 2 * step

    def finish(self, result: Evaluation) -> None:
        step = result.records[-1]["step"]
        if step != self.last_step:
            self._row(result, step)

    def _row(self, partial: Evaluation, step: int) -> None:
        latest = [r for r in partial.records if r["step"] == step]  # level by level
        size = len(self.names)
        for start in range(0, len(latest), size):
            cells = []
            for column, (record, width) in enumerate(
                zip(latest[start : start + size], self.widths)
            ):
                key = (record["noise"], column)
                last_scored, last_mistakes = self.previous.get(key, (0, 0))
                scored = record["scored"] - last_scored
                recent = 1.0 - (record["mistakes"] - last_mistakes) / scored if scored else None
                cells.append(f"{_cell(record['metric'])} ({_cell(recent)})".ljust(width))
                self.previous[key] = (record["scored"], record["mistakes"])
            noise = [latest[start]["noise"].ljust(NOISE_WIDTH)] if self.levels > 1 else []
            self._print("  ".join([f"{step:>10,}", *noise, *cells]).rstrip())
        self.last_step = step

    @staticmethod
    def _print(line: str) -> None:
        try:
            from tqdm.auto import tqdm
        except ImportError:  # no [progress] extra, so no progress bar to draw around
            print(line)
        else:
            tqdm.write(line)  # clears and redraws a progress bar around the line
        sys.stdout.flush()


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def short_name(name: str) -> str:
    """A model's column title: its spec without the module path, cut at 30 characters.

    >>> short_name("river.linear_model.PAClassifier(C=0.01)")
    'PAClassifier(C=0.01)'
    """
    head = name.split("(")[0]
    if "|" not in name and "." in head:
        name = head.rsplit(".", 1)[1] + name[len(head) :]
    return name if len(name) <= 30 else name[:27] + "..."
