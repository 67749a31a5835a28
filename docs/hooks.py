"""mkdocs hooks: the notebooks of examples/ as pages, and the `river-cw` command's help.

The notebooks have one home, examples/ (the tests run them there); they join the site as
``examples/NAME.ipynb``, before mkdocs-jupyter looks for them. A line ``<!-- help: COMMAND -->``
in a page becomes that sub-command's ``--help``, so the reference cannot drift from the parser.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
HELP = re.compile(r"^<!-- help: (?P<command>[a-z]+) -->$", re.MULTILINE)


@event_priority(100)  # before mkdocs-jupyter turns .ipynb files into pages
def on_files(files, config):
    for notebook in sorted(EXAMPLES.glob("*.ipynb")):
        path = notebook.relative_to(ROOT).as_posix()
        files.append(File(path, str(ROOT), config["site_dir"], config["use_directory_urls"]))
    return files


def on_page_markdown(markdown, page, config, files):
    return HELP.sub(lambda match: _help(match["command"]), markdown)


def _help(command: str) -> str:
    from streams.cli import COMMANDS, build_parser

    if command not in COMMANDS:
        raise ValueError(f"{command!r} is not a river-cw command ({', '.join(COMMANDS)})")
    parser = build_parser(only=command)
    sub = next(a for a in parser._subparsers._group_actions if a.choices).choices[command]
    with _columns(80):  # what the content column shows without scrolling
        text = sub.format_help()
    return f"```text\n{text.rstrip()}\n```"


@contextlib.contextmanager
def _columns(width: int):
    """argparse wraps help to $COLUMNS: a fixed width, whatever terminal builds the site."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before
