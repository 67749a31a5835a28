"""The `river-cw` command: compare models on a stream, serve them on Kafka.

The command line is the only layer that imports both `streams.evaluate` and `streams.kafka`.
Each sub-command lives in its own module, which exposes `add_arguments(parser)` and
`run(args) -> int`; this file only wires them together. Only the module of the sub-command
being run is imported, so `river-cw serve` starts without loading what `evaluate` needs.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# sub-command -> (module, one-line help)
COMMANDS = {
    "evaluate": (
        "streams.cli.evaluate",
        "side-by-side progressive validation of models on a stream",
    ),
    "serve": ("streams.cli.serve", "serve and learn a model on a Kafka topic, with checkpoints"),
    "inspect": ("streams.cli.inspect", "show the model and state serve keeps for each partition"),
    "tail": ("streams.cli.tail", "print the predictions or dead letters serve committed"),
    "broker": ("streams.cli.broker", "run a local Kafka-compatible broker (Tansu) for demos"),
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with `only`, the arguments of that sub-command alone are loaded."""
    parser = argparse.ArgumentParser(prog="river-cw", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (module, help_) in COMMANDS.items():
        command = sub.add_parser(name, help=help_, description=help_)
        command.set_defaults(_module=module)
        if only in (None, name):
            importlib.import_module(module).add_arguments(command)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv[0] if argv and argv[0] in COMMANDS else None).parse_args(argv)
    return importlib.import_module(args._module).run(args)
