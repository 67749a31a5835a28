"""TLS for the Kafka tests: certificates made by `openssl`, and a TLS-terminating proxy.

`certificates(folder)` makes a CA and a certificate for 127.0.0.1 and localhost signed by it
(and a second CA, which a client told to trust it must refuse). `TlsProxy` accepts TLS on a free
127.0.0.1 port and relays each connection, in plaintext, to the broker's listener: a broker that
advertises the proxy's address is reached by its clients over TLS only.
"""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from streams.kafka.broker import free_port
from tests.conftest import unavailable


@dataclass(frozen=True)
class Certificates:
    ca: Path  # the CA that signed the server's certificate
    other_ca: Path  # a CA that signed nothing here
    certificate: Path  # the server's, for 127.0.0.1 and localhost
    key: Path


def certificates(folder: Path) -> Certificates:
    """A CA, a server certificate it signed, and another CA, in `folder` (PEM files)."""
    if shutil.which("openssl") is None:
        unavailable("the TLS tests make their certificates with the openssl command")

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    for name in ("ca", "other-ca"):
        openssl(
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-keyout", f"{name}.key", "-out", f"{name}.pem", "-subj", f"/CN=river-cw test {name}",
        )  # fmt: skip
    openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
        "-subj", "/CN=localhost",
    )  # fmt: skip
    (folder / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl(
        "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-days", "2", "-extfile", "san.ext", "-out", "server.pem",
    )  # fmt: skip
    return Certificates(
        folder / "ca.pem", folder / "other-ca.pem", folder / "server.pem", folder / "server.key"
    )


class TlsProxy:
    """TLS on 127.0.0.1:`port` (0: a free one) in front of the plaintext listener `target`
    (``host:port``), with `certificates`; `stop` closes it and every relayed connection."""

    def __init__(self, target: str, certificates: Certificates, port: int = 0):
        host, target_port = target.rsplit(":", 1)
        self.target = (host, int(target_port))
        self.port = port or free_port()
        self._context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._context.load_cert_chain(certificates.certificate, certificates.key)
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # stopped
                return
            threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    def _relay(self, client: socket.socket) -> None:
        try:
            secure = self._context.wrap_socket(client, server_side=True)
        except (ssl.SSLError, OSError):  # a client that does not speak TLS, or gave up
            client.close()
            return
        broker = socket.create_connection(self.target)
        with self._lock:
            if self._stopped:
                secure.close()
                broker.close()
                return
            self._sockets += [secure, broker]
        threading.Thread(target=_pump, args=(broker, secure), daemon=True).start()
        _pump(secure, broker)

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            sockets, self._sockets = self._sockets, []
        self._listener.close()
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy `source` to `sink` until either closes; then close both."""
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
