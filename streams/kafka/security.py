"""Connecting to a secured cluster: Kafka client properties, one parser, a translation per client.

A client properties file (``--kafka-config FILE``, as Kafka's own tools take) holds
``name=value`` lines with librdkafka's property names (blank lines and lines starting with ``#``
or ``!`` ignored); a variable ``RIVER_CW_KAFKA_<NAME>`` (the name upper-cased, dots as
underscores: ``RIVER_CW_KAFKA_SASL_PASSWORD``) overrides the file's value, so that secrets can
stay out of files and command lines alike:

====================================== ==========================================================
``security.protocol``                  PLAINTEXT (default), SSL, SASL_PLAINTEXT or SASL_SSL
``ssl.ca.location``                    CA certificate(s) to trust, PEM (default: the system's)
``ssl.certificate.location``           client certificate, PEM (mutual TLS)
``ssl.key.location``                   its private key, PEM
``ssl.key.password``                   the key's password (a secret)
``ssl.endpoint.identification.algorithm`` https (default: the broker's name is checked) or none
``sasl.mechanism``                     PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER
``sasl.username``                      for PLAIN and SCRAM
``sasl.password``                      for PLAIN and SCRAM (a secret)
``sasl.oauthbearer.token.provider``    OAUTHBEARER: ``module:function``, a function of no
                                       argument returning ``(token, expiry)``, the expiry in
                                       seconds since the epoch (river-cw's own name: librdkafka
                                       takes a callback in code)
``bootstrap.servers``                  where to connect (a ``--bootstrap-servers`` wins)
====================================== ==========================================================

Java's keystore properties (``ssl.truststore.location``, ``sasl.jaas.config``, ...) are refused
with their equivalent named. `ClientSecurity` holds the result: `librdkafka` and `kafka_python`
translate it for the two clients (`streams.kafka.client.KafkaSettings` applies them to every
client). Secrets are never shown: `repr` leaves them out.

>>> security = ClientSecurity.parse(
...     "security.protocol=SASL_SSL\\nsasl.mechanism=SCRAM-SHA-512\\n"
...     "sasl.username=river\\nsasl.password=hunter2\\n", "client.properties"
... )
>>> security
ClientSecurity(protocol='SASL_SSL', sasl_mechanism='SCRAM-SHA-512', sasl_username='river')
>>> security.kafka_python()["sasl_plain_password"], security.librdkafka()["sasl.password"]
('hunter2', 'hunter2')
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path

from kafka.net.sasl.oauth import AbstractTokenProvider

from streams.kafka.config import ENVIRONMENT_PREFIX

__all__ = ["ENVIRONMENT_PREFIX", "ClientSecurity"]

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")

# property -> field of ClientSecurity
PROPERTIES = {
    "security.protocol": "protocol",
    "ssl.ca.location": "ca_location",
    "ssl.certificate.location": "certificate_location",
    "ssl.key.location": "key_location",
    "ssl.key.password": "key_password",
    "ssl.endpoint.identification.algorithm": "endpoint_identification",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.username": "sasl_username",
    "sasl.password": "sasl_password",
    "sasl.oauthbearer.token.provider": "token_provider",
    "bootstrap.servers": "bootstrap_servers",
}
# what each client's configuration holds: texts, kafka-python's flags and defaults (None), and
# the token callbacks of OAUTHBEARER (librdkafka's takes its config string)
LibrdkafkaConfig = dict[str, str | Callable[[str], tuple[str, float]]]
KafkaPythonConfig = dict[str, str | bool | AbstractTokenProvider | None]

JAVA_NAMES = {
    "ssl.truststore.location": "ssl.ca.location (a PEM file)",
    "ssl.keystore.location": "ssl.certificate.location and ssl.key.location (PEM files)",
    "sasl.jaas.config": "sasl.username and sasl.password",
    "sasl.mechanisms": "sasl.mechanism",
}


@dataclass(frozen=True)
class ClientSecurity:
    """How the clients connect (see the module docstring for the property of each field).

    `token_provider`: for OAUTHBEARER, a function of no argument returning ``(token, expiry)``
    (seconds since the epoch), called whenever a client needs a token. `bootstrap_servers`:
    the file's ``bootstrap.servers``, if any (not applied here: `KafkaSettings` has its own).
    """

    protocol: str = "PLAINTEXT"
    ca_location: str | None = None
    certificate_location: str | None = None
    key_location: str | None = None
    key_password: str | None = field(default=None, repr=False)
    endpoint_identification: str = "https"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    token_provider: Callable[[], tuple[str, float]] | None = field(default=None, repr=False)
    bootstrap_servers: str | None = None

    def __post_init__(self):
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"security.protocol must be one of {PROTOCOLS}, got {self.protocol!r}")
        if self.endpoint_identification not in ("https", "none"):
            raise ValueError(
                "ssl.endpoint.identification.algorithm must be https or none, "
                f"got {self.endpoint_identification!r}"
            )
        sasl = self.protocol.startswith("SASL_")
        if sasl != (self.sasl_mechanism is not None):
            raise ValueError(
                f"security.protocol {self.protocol} "
                + ("needs a sasl.mechanism" if sasl else "takes no sasl.mechanism")
            )
        if sasl and self.sasl_mechanism not in MECHANISMS:
            raise ValueError(
                f"sasl.mechanism must be one of {MECHANISMS}, got {self.sasl_mechanism!r}"
            )
        if self.sasl_mechanism == "OAUTHBEARER":
            if self.token_provider is None:
                raise ValueError("sasl.mechanism OAUTHBEARER needs a token provider")
        elif sasl and (self.sasl_username is None or self.sasl_password is None):
            raise ValueError(f"sasl.mechanism {self.sasl_mechanism} needs a username and password")
        for name in ("ca_location", "certificate_location", "key_location"):
            path = getattr(self, name)
            if path is not None and not Path(path).is_file():
                raise ValueError(f"{_property(name)} {path}: no such file")
        if (self.certificate_location is None) != (self.key_location is None):
            raise ValueError("ssl.certificate.location and ssl.key.location go together")

    def __repr__(self) -> str:  # the fields that differ from the defaults, secrets never
        shown = [
            f"{f.name}={getattr(self, f.name)!r}"
            for f in fields(self)
            if f.repr and getattr(self, f.name) != f.default
        ]
        return f"ClientSecurity({', '.join(shown)})"

    @classmethod
    def parse(
        cls, text: str, where: str, environ: Mapping[str, str] | None = None
    ) -> ClientSecurity:
        """The properties of `text` (a properties file's content; `where` names it in errors),
        then those of `environ`'s ``RIVER_CW_KAFKA_*`` variables over them."""
        values: dict[str, str] = {}
        for number, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if not line or line.startswith(("#", "!")):
                continue
            name, sep, value = line.partition("=")
            if not sep:
                raise ValueError(f"{where}, line {number}: expected name=value, got {line!r}")
            values[_known(name.strip(), f"{where}, line {number}")] = value.strip()
        for variable, value in (environ or {}).items():
            if variable.startswith(ENVIRONMENT_PREFIX):
                name = variable[len(ENVIRONMENT_PREFIX) :].lower().replace("_", ".")
                values[_known(name, f"${variable}")] = value
        return cls.from_properties(values, where)

    @classmethod
    def load(
        cls, path: str | os.PathLike | None = None, environ: Mapping[str, str] = os.environ
    ) -> ClientSecurity:
        """The properties of the file at `path` (if any) and of the environment's variables."""
        text, where = "", "the environment"
        if path is not None:
            try:
                text, where = Path(path).read_text(encoding="utf-8"), str(path)
            except (OSError, UnicodeDecodeError) as error:
                raise ValueError(
                    f"cannot read the Kafka client properties {path}: {error}"
                ) from None
        return cls.parse(text, where, environ)

    @classmethod
    def from_properties(cls, values: Mapping[str, str], where: str) -> ClientSecurity:
        """From property names and values (`where` names their source in errors)."""
        kwargs: dict = {PROPERTIES[_known(name, where)]: value for name, value in values.items()}
        if "token_provider" in kwargs:
            kwargs["token_provider"] = _function(kwargs["token_provider"], where)
        try:
            return cls(**kwargs)
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None

    def librdkafka(self) -> LibrdkafkaConfig:
        """The properties for librdkafka (confluent-kafka); none for a plaintext connection."""
        if self.protocol == "PLAINTEXT":
            return {}
        config: LibrdkafkaConfig = {"security.protocol": self.protocol}
        if self.protocol in ("SSL", "SASL_SSL"):
            config["ssl.endpoint.identification.algorithm"] = self.endpoint_identification
            for name in ("ca_location", "certificate_location", "key_location", "key_password"):
                if getattr(self, name) is not None:
                    config[_property(name)] = getattr(self, name)
        if self.sasl_mechanism is not None:
            config["sasl.mechanism"] = self.sasl_mechanism
        if self.sasl_mechanism == "OAUTHBEARER":
            config["oauth_cb"] = lambda oauthbearer_config: self._token()
        elif self.sasl_mechanism is not None:
            config["sasl.username"], config["sasl.password"] = self._login()
        return config

    def kafka_python(self) -> KafkaPythonConfig:
        """The keyword arguments for kafka-python's clients; none for a plaintext connection."""
        if self.protocol == "PLAINTEXT":
            return {}
        config: KafkaPythonConfig = {"security_protocol": self.protocol}
        if self.protocol in ("SSL", "SASL_SSL"):
            config["ssl_check_hostname"] = self.endpoint_identification == "https"
            config["ssl_cafile"] = self.ca_location
            config["ssl_certfile"] = self.certificate_location
            config["ssl_keyfile"] = self.key_location
            config["ssl_password"] = self.key_password
        if self.sasl_mechanism is not None:
            config["sasl_mechanism"] = self.sasl_mechanism
        if self.sasl_mechanism == "OAUTHBEARER":
            config["sasl_oauth_token_provider"] = _TokenProvider(self._token)
        elif self.sasl_mechanism is not None:
            config["sasl_plain_username"], config["sasl_plain_password"] = self._login()
        return config

    def _token(self) -> tuple[str, float]:
        """A token and its expiry from `token_provider` (OAUTHBEARER only)."""
        if self.token_provider is None:
            raise RuntimeError(f"sasl.mechanism {self.sasl_mechanism} has no token provider")
        return self.token_provider()

    def _login(self) -> tuple[str, str]:
        """The username and password (PLAIN and SCRAM only)."""
        if self.sasl_username is None or self.sasl_password is None:
            raise RuntimeError(f"sasl.mechanism {self.sasl_mechanism} has no username and password")
        return self.sasl_username, self.sasl_password


class _TokenProvider(AbstractTokenProvider):
    """kafka-python's face of a token function."""

    def __init__(self, provider: Callable[[], tuple[str, float]]):
        super().__init__()
        self._provider = provider

    def token(self) -> str:
        return self._provider()[0]


def _property(name: str) -> str:
    return next(p for p, f in PROPERTIES.items() if f == name)


def _known(name: str, where: str) -> str:
    if name in PROPERTIES:
        return name
    hint = f" (give {JAVA_NAMES[name]})" if name in JAVA_NAMES else ""
    raise ValueError(
        f"{where}: unknown Kafka client property {name!r}{hint}; known: {', '.join(PROPERTIES)}"
    )


def _function(spec: str, where: str) -> Callable:
    module, _, name = spec.partition(":")
    try:
        function = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as error:
        raise ValueError(
            f"{where}: sasl.oauthbearer.token.provider {spec!r} is no module:function ({error})"
        ) from None
    if not callable(function):
        raise ValueError(f"{where}: sasl.oauthbearer.token.provider {spec!r} is not callable")
    return function
