"""Where `river-cw evaluate` writes its results: the figure, CSV, JSON and markdown files.

`check` fails on a path that cannot be written before the run starts, rather than after it;
`write` writes every output the options ask for; `tuned` says, one line per noise level, which
parameters `--tune` picked, and `mixing` which sharded models met rounds that could not be mixed
(both printed, and in the markdown).
"""

from __future__ import annotations

import argparse
import os
import pathlib

from streams.evaluate.results import Evaluation

# matplotlib is imported by `streams.evaluate.plots` only where a figure is asked for
# (tests/project/test_startup.py).

__all__ = ["check", "marks", "mixing", "tuned", "write"]

OPTIONS = ("plot", "csv", "json", "markdown")


def check(args: argparse.Namespace) -> None:
    """Fail before the run on an output path that cannot be written (or a bad figure type)."""
    if args.plot:
        from streams.evaluate import plots

        plots.check_path(args.plot)
    for option in OPTIONS:
        path = getattr(args, option)
        if path is None:
            continue
        path = pathlib.Path(path)
        folder = path.parent
        if path.is_dir():
            raise ValueError(f"--{option} {str(path)!r} is a directory")
        if not folder.is_dir():
            raise ValueError(f"--{option} {str(path)!r}: no directory {str(folder)!r}")
        if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
            raise ValueError(f"--{option} {str(path)!r}: not writable")


def write(result: Evaluation, args: argparse.Namespace) -> None:
    """Write the outputs the options ask for: `--plot`, `--csv`, `--json`, `--markdown`."""
    if args.plot:
        column = "recent_metric" if args.drift else "metric"
        result.plot(
            args.plot,
            title=args.title or result.info["data"],
            column=column,
            marks=marks(result.info),
        )
    if args.csv:
        result.to_csv(args.csv)
    if args.json:
        result.to_json(args.json)
    if args.markdown:
        lines = [
            f"{result.info['data']}; {result.info['examples']:,} examples.",
            "",
            result.table(markdown=True),
        ]
        notes = tuned(result.info) + mixing(result.info)
        if notes:
            lines += ["", *(f"- {line}" for line in notes)]
        with open(args.markdown, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")


def marks(info: dict) -> list[int]:
    """Where the plot marks the drift: its position among the examples scored (after the
    tuning prefix, if any)."""
    position = info["drift_at"]
    if position is None or position <= info.get("tune_size", 0):
        return []
    return [position - info.get("tune_size", 0)]


def tuned(info: dict) -> list[str]:
    """One line per noise level saying which parameters the tuner picked."""
    lines = []
    for level, chosen in info.get("tuned", {}).items():
        picks = ", ".join(f"{spec} -> {pick}" for spec, pick in chosen.items())
        lines.append(f"tuned on the first {info['tune_size']:,} examples at noise {level}: {picks}")
    return lines


def mixing(info: dict) -> list[str]:
    """One line per sharded model (and noise level) that met rounds it could not mix
    (`streams.evaluate.sharded`: skipped, each shard keeping its model)."""
    levels = info.get("mixing", {})
    lines = []
    for level, models in levels.items():
        at = f" at noise {level}" if len(levels) > 1 else ""
        for name, counts in models.items():
            if counts["failed"]:
                lines.append(
                    f"{name}{at}: {counts['failed']:,} of {counts['rounds']:,} rounds could not "
                    "be mixed and were skipped (each shard kept its model)"
                )
    return lines
