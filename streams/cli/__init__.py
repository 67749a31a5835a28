"""The `river-cw` command: compare models on a stream, serve them on Kafka.

The command line is the only layer that imports both `streams.evaluate` and `streams.kafka`.
Each sub-command lives in its own module, which exposes `add_arguments(parser)` and
`run(args) -> int`; this file only wires them together. Only the module of the sub-command
being run is imported (none for `river-cw --help`), so `river-cw serve` starts without loading
what `evaluate` needs.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys

# sub-command -> (module, one-line help)
COMMANDS = {
    "evaluate": (
        "streams.cli.evaluate",
        "side-by-side progressive validation of models on a stream",
    ),
    "produce": (
        "streams.cli.produce",
        "replay a stream (files, SMS, synthetic drift) onto a Kafka topic",
    ),
    "serve": ("streams.cli.serve", "serve and learn a model on a Kafka topic, with checkpoints"),
    "inspect": ("streams.cli.inspect", "show the model and state serve keeps for each partition"),
    "tail": ("streams.cli.tail", "print the predictions or dead letters serve committed"),
    "broker": ("streams.cli.broker", "run a local Kafka-compatible broker (Tansu) for demos"),
}

DEFERRED = {"evaluate": ("scipy.stats", "scipy.integrate")}
"""Per sub-command, modules its dependencies import but seldom use, loaded at their first use
rather than at startup (`defer`): river.metrics imports scipy.stats for its geometric mean and
scipy.integrate for ROC AUC, about 0.5 s of the 0.9 s `river-cw evaluate` took to start."""


def defer(names) -> None:
    """Make each module of `names` not imported yet load at the first use of one of its
    attributes (`importlib.util.LazyLoader`), the module an attribute of its package as an import
    makes it: ``from scipy import stats`` binds it without loading it. An ``import`` statement of
    it loads it at once, as does everything else that reads it, so nothing behaves differently,
    only later. For single-threaded commands: before Python 3.13 the loader is not thread-safe.
    """
    for name in names:
        if name in sys.modules:
            continue
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            continue
        spec.loader = importlib.util.LazyLoader(spec.loader)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        package, _, attribute = name.rpartition(".")
        if package:
            setattr(sys.modules[package], attribute, module)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser, with the arguments of the sub-command `only` (its module is imported); the
    others are named with their one-line help, which is all `river-cw --help` shows."""
    parser = argparse.ArgumentParser(prog="river-cw", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (module, help_) in COMMANDS.items():
        command = sub.add_parser(name, help=help_, description=help_)
        command.set_defaults(_module=module)
        if name == only:
            importlib.import_module(module).add_arguments(command)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run `river-cw` on `argv`; a sub-command whose extra is not installed (`streams.cli.extras`)
    stops with one line saying which to install, and exit status 2."""
    argv = sys.argv[1:] if argv is None else argv
    command = argv[0] if argv and argv[0] in COMMANDS else None
    try:
        args = build_parser(command).parse_args(argv)
        defer(DEFERRED.get(args.command, ()))
        return importlib.import_module(args._module).run(args)
    except Exception as error:
        from streams.cli.extras import MissingExtra, extra_of, message  # only when it is needed

        missing = error if isinstance(error, MissingExtra) else None
        if isinstance(error, ImportError):
            missing = extra_of(error)
        if missing is None or command is None:
            raise
        print(message(command, missing), file=sys.stderr)
        return 2
