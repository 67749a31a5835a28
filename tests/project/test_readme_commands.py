"""Every shell and Python block of README.md, docs/getting-started.md and the Kafka guide
(docs/guide/kafka.md) runs as written, in order, in a temporary directory, as a reader runs them
in one terminal.

`Terminal` feeds the blocks' commands one at a time to one bash session (a Python block as
``python3 -`` reading the block), and each must exit with status 0. The runner adds only what a
reader does without writing it down:

- The blocks CI itself runs (`.ci/run`: the install with the main job, then the tests) are not
  run again here, which would recurse:
  `test_ci_runs_the_readmes_two_commands_and_lists_the_skips` holds them to be exactly what CI
  runs.
- A command that runs until it is stopped (`river-cw broker`, `river-cw serve` without
  `--idle-timeout`) runs in the background, as a reader who typed it without ``&`` would go on
  in another terminal. After starting one the runner waits until it is up, as a reader waits
  for it before typing on: the broker's topics exist; the server's state topic (and models
  topic, with mixing) exists. At the end it stops them with SIGTERM, the last started first, and
  each must have exited with status 0.
- Before `river-cw tail`, it waits until each server running has committed the whole of its
  topic, whatever sent the messages there (a Python block today, any command tomorrow); then
  `tail` must print one prediction for each message of the topic.

The session's environment is the test's without the variables a reader would not have set (the
tests' state keys and every other ``RIVER_CW_*``), with this interpreter first on ``PATH`` (its
``python3`` and ``river-cw``) and ``PYTHONPATH`` naming this checkout, as the README's editable
install does. The broker's port (9092, as the README gives it) must be free: the test fails at
once, naming it, where something else listens there; the tests' own brokers take free ports. Two
documents that start a broker on the same port take turns (a lock per port, held by file, so that
two xdist workers, or two runs of the suite, wait for each other rather than fail).
"""

from __future__ import annotations

import json
import os
import queue
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import file_lock, require_broker_package, unavailable

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = ["README.md", "docs/getting-started.md", "docs/guide/kafka.md"]
QUICKSTARTS = ["README.md", "docs/getting-started.md"]  # the documents showing the quickstart
ON_A_BROKER = {"README.md", "docs/guide/kafka.md"}  # slow: they start a broker and servers
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
RUN = {"sh", "python"}  # the blocks a reader runs
SHOWN = {"text"}  # the blocks that show what a command prints
BACKGROUND = re.compile(r"(?<![&|])&\s*$")
COMMAND_TIMEOUT = 300.0  # seconds, for any one command (the evaluations take a few)
READY_TIMEOUT = 120.0  # seconds, for a broker or server to come up or catch up
QUIET = 2.0  # seconds without a new message after which a topic is read to its end
FIRST_FETCH = 10.0  # seconds more for the first messages to come


@dataclass(frozen=True)
class Block:
    language: str
    text: str
    line: int  # of its opening fence, for messages

    def where(self, document: str) -> str:
        return f"{document}:{self.line}"


def blocks(document: str) -> list[Block]:
    """The fenced blocks of `document` (a path relative to the checkout), in order."""
    text = (ROOT / document).read_text(encoding="utf-8")
    return [Block(m[1], m[2], text.count("\n", 0, m.start()) + 1) for m in FENCE.finditer(text)]


def commands(block: Block) -> list[str]:
    """The commands of a block as a reader enters them: a shell block's lines (a line ending in
    a backslash continued on the next; blank lines and comments left out), or the whole of a
    Python block given to ``python3``."""
    if block.language == "python":
        end = f"END_OF_BLOCK_{uuid.uuid4().hex}"
        return [f"python3 - <<'{end}'\n{block.text}{end}"]
    joined = block.text.replace("\\\n", " ")
    lines = [line.strip() for line in joined.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def ci_commands() -> list[str]:
    """The commands `.ci/run` runs, in order."""
    script = (ROOT / ".ci" / "run").read_text().splitlines()
    return [line for line in script if line and not line.startswith(("#", "set ", "cd "))]


def run_by_ci(block: Block) -> bool:
    return block.language == "sh" and block.text.strip() in ci_commands()


def test_ci_runs_the_readmes_two_commands_and_lists_the_skips():
    """The README's two commands (install with the main job, then the tests) are what CI runs,
    and getting-started shows the same two; the install is the one a newcomer runs the tests
    with (`[dev]`)."""
    readme = [b.text.strip() for b in blocks("README.md") if b.language == "sh"]
    install, tests = readme[0], next(b for b in readme if "pytest" in b)
    assert ci_commands() == [install, tests]
    assert install == 'pip install -e ".[dev]" && river-cw evaluate'
    assert "-rs" in tests.split()
    started = [b.text.strip() for b in blocks("docs/getting-started.md") if run_by_ci(b)]
    assert started == [install, tests]


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_block_is_run_or_shows_output(document):
    assert {b.language for b in blocks(document)} <= RUN | SHOWN


@pytest.mark.parametrize("document", QUICKSTARTS)
def test_the_quickstart_shown_is_examples_quickstart(document):
    """The README and getting-started say "this is `examples/quickstart.py`", the script
    tests/project/test_examples.py runs and checks."""
    script = (ROOT / "examples" / "quickstart.py").read_text(encoding="utf-8")
    code = script.split('"""', 2)[2].lstrip("\n")  # after its docstring
    assert code in [b.text for b in blocks(document) if b.language == "python"]


# --- the runner ----------------------------------------------------------------------------


class Terminal:
    """One bash session fed one command at a time, as a reader types them: its directory,
    variables and background jobs last from one command to the next. Its standard input is
    empty (the commands come through a pipe of their own), its output and errors go to
    `output`; `close` kills whatever it started that is still running."""

    def __init__(self, cwd: Path, env: dict[str, str]):
        self.mark = f"--- end of command {uuid.uuid4().hex}, status"
        reading, self._commands = os.pipe()
        loop = (
            f'while IFS= read -r -d "" command <&{reading}; do eval "$command"; '
            f'printf "\\n{self.mark} %d\\n" "$?"; done'
        )
        self.process = subprocess.Popen(
            ["bash", "--noprofile", "--norc", "-c", loop],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            pass_fds=(reading,),
            start_new_session=True,  # its own process group, which `close` ends
            text=True,
        )
        os.close(reading)
        self._lines: queue.Queue[str | None] = queue.Queue()
        self.output: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def run(self, command: str, timeout: float = COMMAND_TIMEOUT) -> tuple[int, str]:
        """Run `command`; its exit status and what it (and any background job meanwhile)
        printed."""
        os.write(self._commands, command.encode() + b"\0")
        printed: list[str] = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(
                    f"{command!r} did not finish within {timeout:.0f} s; it printed:\n"
                    + "".join(printed)[-4000:]
                ) from None
            if line is None:
                raise AssertionError(f"the shell exited during {command!r}:\n" + "".join(printed))
            self.output.append(line)
            if line.startswith(self.mark):
                return int(line.split()[-1]), "".join(printed)[:-1]  # the mark's newline
            printed.append(line)

    def close(self) -> None:
        os.close(self._commands)  # the shell reads no more commands and exits
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)  # what it started and left running
        except ProcessLookupError:
            pass
        self.process.wait()


def option(argv: list[str], name: str, default: str | None = None) -> str | None:
    """The value of the option `name` in `argv` (``--name value`` or ``--name=value``)."""
    for i, word in enumerate(argv):
        if word == name and i + 1 < len(argv):
            return argv[i + 1]
        if word.startswith(name + "="):
            return word.split("=", 1)[1]
    return default


def options(argv: list[str], name: str) -> list[str]:
    return [argv[i + 1] for i, word in enumerate(argv[:-1]) if word == name]


def words(command: str) -> list[str]:
    """The words of a shell command (not a Python block), its trailing ``&`` left out."""
    if command.startswith("python3 - <<"):
        return ["python3"]
    return shlex.split(BACKGROUND.sub("", command), comments=True)


def runs_until_stopped(argv: list[str]) -> bool:
    return argv[:2] == ["river-cw", "broker"] or (
        argv[:2] == ["river-cw", "serve"] and "--idle-timeout" not in argv
    )


def bootstrap(argv: list[str]) -> str:
    if argv[1] == "broker":
        return f"{option(argv, '--host', '127.0.0.1')}:{option(argv, '--port', '9092')}"
    assert "--kafka-config" not in argv, "the runner reads plaintext brokers only"
    return option(argv, "--bootstrap-servers", "127.0.0.1:9092") or ""


def port_is_free(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, int(port)))
        except OSError:
            return False
        return True


def topics(address: str) -> set[str]:
    """The topics of the broker at `address`, none while it does not answer."""
    from kafka import KafkaConsumer
    from kafka.errors import KafkaError

    try:
        consumer = KafkaConsumer(bootstrap_servers=address, request_timeout_ms=5000)
    except KafkaError:
        return set()
    try:
        return set(consumer.topics())
    finally:
        consumer.close()


def ready(argv: list[str]) -> Callable[[], bool]:
    """Whether the broker or server `argv` is up: the topics the broker creates, or the server's
    state topic (and models topic, with mixing), exist."""
    address = bootstrap(argv)
    if argv[1] == "broker":
        wanted = {spec.split(":")[0] for spec in options(argv, "--topic")}
    else:
        topic = option(argv, "--topic")
        wanted = {option(argv, "--state-topic", f"{topic}.state")}
        if option(argv, "--mix", "off") != "off":
            wanted.add(option(argv, "--models-topic", f"{topic}.models"))
    return lambda: wanted <= topics(address)


@dataclass(frozen=True)
class Messages:
    ids: list[str]  # as the server normalises them, strings
    ends: dict[int, int]  # per partition, the offset after its last message


def messages(address: str, topic: str) -> Messages:
    """The messages on `topic`, read until none comes for `QUIET` seconds (their sender has
    flushed them; the first may take `FIRST_FETCH` more), not up to `end_offsets`: Tansu's
    ListOffsets understates a partition's end (`streams.kafka.client.log_reaches`)."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=address, enable_auto_commit=False)
    try:
        partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic)]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        ends = {tp.partition: consumer.position(tp) for tp in partitions}  # connected by now
        ids: list[str] = []
        last = time.monotonic() + FIRST_FETCH  # a first fetch may take longer on a busy machine
        while time.monotonic() - last < QUIET:
            for tp, records in consumer.poll(timeout_ms=200).items():
                ids += [str(json.loads(r.value)["id"]) for r in records]
                ends[tp.partition] = records[-1].offset + 1
                last = time.monotonic()
        return Messages(ids, ends)
    finally:
        consumer.close()


def committed(argv: list[str], sent: Messages) -> bool:
    """Whether the group of the server `argv` has committed every message `sent`."""
    from kafka import KafkaConsumer, TopicPartition

    topic, group = option(argv, "--topic"), option(argv, "--group-id")
    assert group is not None, f"the runner follows servers by their group: {shlex.join(argv)}"
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap(argv), group_id=group, enable_auto_commit=False
    )
    try:
        return all(
            (consumer.committed(TopicPartition(topic, p)) or 0) >= end
            for p, end in sent.ends.items()
        )
    finally:
        consumer.close()


def json_object(line: str) -> dict:
    """`line` read as a JSON object, or an empty one (a line of another kind)."""
    try:
        value = json.loads(line)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def check_tail(argv: list[str], printed: str, sent: Messages, where: str) -> None:
    """`tail` printed one prediction for each message `sent` to its topic."""
    predictions = [p for p in map(json_object, printed.splitlines()) if "prediction" in p]
    assert sorted(p["id"] for p in predictions) == sorted(sent.ids), (
        f"{where}: tail printed {len(predictions)} predictions for the {len(sent.ids)} messages "
        f"of {option(argv, '--topic')!r}:\n{printed[-2000:]}"
    )


def reader_environment() -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("RIVER_CW_") and name != "PYTHONPATH"
    }
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = str(ROOT)
    return env


@dataclass(frozen=True)
class Job:
    pid: int
    argv: list[str]

    def __str__(self) -> str:
        return shlex.join(self.argv)


class Reader:
    """A reader at a terminal, running the blocks of a document in order (see the module's
    docstring)."""

    def __init__(self, document: str, terminal: Terminal, cwd: Path):
        self.document = document
        self.terminal = terminal
        self.cwd = cwd
        self.jobs: list[Job] = []  # the background jobs, in the order they started

    def run(self, command: str, where: str) -> None:
        argv = words(command)
        tail = argv[:2] == ["river-cw", "tail"] and "--dead-letters" not in argv
        if tail:
            sent = self.caught_up(argv, where)
        background = bool(BACKGROUND.search(command))
        if runs_until_stopped(argv) and not background:
            command, background = command + " &", True
        status, printed = self.terminal.run(command)
        assert status == 0, f"{where}: {command!r} exited with {status}:\n{printed[-4000:]}"
        if background:
            found = re.search(r"^job (\d+)$", self.terminal.run('echo "job $!"')[1], re.MULTILINE)
            assert found is not None
            self.jobs.append(job := Job(int(found[1]), argv))
            if runs_until_stopped(argv):
                self.wait_for(job, ready(argv), "it is up")
        if tail:
            check_tail(argv, printed, sent, where)

    def caught_up(self, tail: list[str], where: str) -> Messages:
        """The messages on the topic of `tail`, once every server of that topic committed them."""
        topic = option(tail, "--topic")
        sent = messages(bootstrap(tail), topic)
        assert sent.ids, f"{where}: no message reached {topic!r} before `river-cw tail`"
        for job in self.jobs:
            if job.argv[1] == "serve" and option(job.argv, "--topic") == topic:
                self.wait_for(
                    job, lambda job=job: committed(job.argv, sent), "it committed every message"
                )
        return sent

    def wait_for(self, job: Job, condition: Callable[[], bool], what: str) -> None:
        """Until `condition()` holds, while `job` runs."""
        deadline = time.monotonic() + READY_TIMEOUT
        while not condition():
            if self.terminal.run(f"kill -0 {job.pid} 2> /dev/null")[0] != 0:
                status = self.terminal.run(f"wait {job.pid}")[0]
                raise AssertionError(
                    f"{self.document}: `{job}` exited with {status} before {what}:\n"
                    + "".join(self.terminal.output)[-3000:]
                    + "".join(self.logs(job))
                )
            assert time.monotonic() < deadline, f"`{job}`: not within {READY_TIMEOUT} s: {what}"
            time.sleep(0.25)

    def logs(self, job: Job):
        """What `job` wrote to the files it redirects its output or errors to."""
        for i, word in enumerate(job.argv[:-1]):
            if word in (">", "2>", "&>", ">>", "2>>"):
                path = self.cwd / job.argv[i + 1]
                if path.is_file():
                    yield f"\n{job.argv[i + 1]}:\n" + path.read_text(errors="replace")[-3000:]

    def stop(self) -> None:
        """Stop the background jobs, the last started first (SIGTERM, or Ctrl-C for a
        reader); each must have exited with status 0."""
        statuses = [
            (str(job), self.terminal.run(f"kill -TERM {job.pid} 2> /dev/null; wait {job.pid}")[0])
            for job in reversed(self.jobs)
        ]
        assert all(status == 0 for _, status in statuses), (
            f"{self.document}: exit statuses {statuses}:\n" + "".join(self.terminal.output)[-6000:]
        )


def run_as_written(document: str, cwd: Path) -> None:
    """Run the blocks of `document` in order in one terminal in `cwd`."""
    steps = [
        (block.where(document), command)
        for block in blocks(document)
        if block.language in RUN and not run_by_ci(block)
        for command in commands(block)
    ]
    programs = [words(command) for _, command in steps]
    if any(argv[:1] == ["river-cw"] and argv[1] != "evaluate" for argv in programs):
        pytest.importorskip("kafka", reason="the serving blocks need the [kafka] extra")
    brokers = [argv for argv in programs if argv[:2] == ["river-cw", "broker"]]
    if brokers:
        require_broker_package()
    env = reader_environment()
    if shutil.which("river-cw", path=env["PATH"]) is None:
        unavailable(f"no river-cw command beside {sys.executable}: the project is not installed")
    with ExitStack() as turns:
        for address in sorted({bootstrap(argv) for argv in brokers}):
            turns.enter_context(port_turn(address))
        for argv in brokers:
            if not port_is_free(bootstrap(argv)):
                pytest.fail(
                    f"{bootstrap(argv)} is in use: {document}'s `{shlex.join(argv)}` cannot start "
                    "there (stop what listens there)",
                    pytrace=False,
                )
        terminal = Terminal(cwd, env)
        try:
            reader = Reader(document, terminal, cwd)
            for where, command in steps:
                reader.run(command, where)
            reader.stop()
        finally:
            terminal.close()


def port_turn(address: str):
    """This document's turn at the broker port of `address`: every process of the machine
    running these tests takes it before starting its broker there and lets go once its broker
    stopped."""
    return file_lock(
        Path(tempfile.gettempdir()) / f"river-cw-readme-{address.replace(':', '-')}.lock"
    )


@pytest.mark.parametrize(
    "document",
    [
        pytest.param(d, marks=[pytest.mark.slow, pytest.mark.kafka]) if d in ON_A_BROKER else d
        for d in DOCUMENTS
    ],
)
def test_every_block_runs_as_written_in_order(document, tmp_path):
    run_as_written(document, tmp_path)
