"""Authenticated envelopes: bytes read back from a topic are unpickled only if the server wrote them.

Anyone who can produce to a topic can write any bytes to it, and unpickling runs code. So every
part of the state (a snapshot or a commit's changes) and every mixing contribution is sealed:
``seal(context, payload)`` prefixes the payload with an HMAC-SHA256 tag over the payload *and
its context*, a string naming where the record belongs (its format, topic, partition, part and
commit number, or round). `open` recomputes the tag for the context the reader expects and
compares it with `hmac.compare_digest` before the payload leaves this module: a record forged
without the key, altered, cut short, or valid but copied to another partition, topic, part or
commit number raises `Forged`, and its bytes are never unpickled.

An envelope is ``MAGIC`` (4 bytes, the format version) + the 32-byte tag + the payload. The tag
covers ``MAGIC``, the context's length and the context, then the payload. Keys rotate: `StateKeys`
holds the accepted keys, the first one signs; to rotate, put the new key first and keep the old
one until every partition's state has a snapshot written under the new one (the changes after a
snapshot are read with it) and every contribution was written again under the new one.

>>> keys = StateKeys([b"0123456789abcdef0123456789abcdef"])
>>> sealed = keys.seal("river-cw state 2|sms.state|0|0/changes/3|changes|7", b"payload")
>>> keys.open("river-cw state 2|sms.state|0|0/changes/3|changes|7", sealed)
b'payload'
>>> keys.open("river-cw state 2|sms.state|0|0/changes/4|changes|8", sealed)  # the next commit
Traceback (most recent call last):
...
streams.kafka.envelope.Forged: the tag does not verify under the state keys
>>> StateKeys.insecure().open("anywhere", sealed)  # --insecure-state: nothing is checked
b'payload'
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = ["ENVIRONMENT", "KEY_HINT", "Forged", "StateKeys"]

MAGIC = b"RCW\x01"
TAG_BYTES = hashlib.sha256().digest_size
MIN_KEY_BYTES = 32
ENVIRONMENT = "RIVER_CW_STATE_KEYS"  # comma-separated keys, the first one signs
KEY_HINT = (
    'make one with: python3 -c "import secrets; print(secrets.token_hex(32))" > state.key && '
    "chmod 600 state.key"
)
_UNSIGNED = bytes(TAG_BYTES)  # the tag an insecure server writes


class Forged(ValueError):
    """Bytes that are no envelope, or whose tag does not verify in the context expected."""


class StateKeys:
    """The HMAC-SHA256 keys of the state and models topics: each accepted, the first signs.

    Keys are bytes of at least 32 bytes (e.g. 64 hex digits). `StateKeys.insecure()` has none:
    it seals with an empty tag and opens without checking (``serve --insecure-state``). Keys are
    never shown (`repr` counts them).
    """

    __slots__ = ("_keys",)

    def __init__(self, keys: Iterable[bytes]):
        keys = tuple(keys)
        for i, key in enumerate(keys):
            if not isinstance(key, bytes) or len(key) < MIN_KEY_BYTES:
                raise ValueError(
                    f"state key {i + 1} is shorter than {MIN_KEY_BYTES} bytes; {KEY_HINT}"
                )
        self._keys = keys

    @classmethod
    def insecure(cls) -> StateKeys:
        """No key: records are sealed unsigned and opened unchecked."""
        return cls(())

    @classmethod
    def parse(cls, text: str, where: str) -> StateKeys:
        """The keys of `text`, one per line or comma-separated (blank lines and lines starting
        with ``#`` ignored), the first one signing; `where` names their source in errors."""
        lines = (line.strip() for line in text.splitlines())
        keys = [
            key.strip().encode()
            for line in lines
            if line and not line.startswith("#")
            for key in line.split(",")
            if key.strip()
        ]
        if not keys:
            raise ValueError(f"{where} holds no state key; {KEY_HINT}")
        try:
            return cls(keys)
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> StateKeys:
        """The keys of a key file (`parse`); `ValueError` naming the file if it is unreadable."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise ValueError(f"cannot read the state key file {path}: {error}") from None
        return cls.parse(text, f"state key file {path}")

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> StateKeys | None:
        """The keys of the ``RIVER_CW_STATE_KEYS`` variable, or None when it is unset."""
        text = environ.get(ENVIRONMENT)
        return None if text is None else cls.parse(text, f"${ENVIRONMENT}")

    @property
    def secure(self) -> bool:
        return bool(self._keys)

    def __repr__(self) -> str:
        return f"StateKeys({len(self._keys)} keys)" if self._keys else "StateKeys.insecure()"

    def seal(self, context: str, payload: bytes) -> bytes:
        """`payload` in an envelope bound to `context`, signed by the first key."""
        tag = _tag(self._keys[0], context, payload) if self._keys else _UNSIGNED
        return MAGIC + tag + payload

    def open(self, context: str, sealed: bytes) -> bytes:
        """The payload of `sealed` if its tag verifies in `context` under one of the keys
        (any envelope without keys); `Forged` otherwise."""
        if not isinstance(sealed, bytes) or not sealed.startswith(MAGIC):
            raise Forged("not a river-cw envelope")
        if len(sealed) < len(MAGIC) + TAG_BYTES:
            raise Forged("the envelope is cut short")
        start = len(MAGIC) + TAG_BYTES
        tag, payload = sealed[len(MAGIC) : start], sealed[start:]
        if not self._keys:
            return payload
        # every key compared, so that the time taken does not tell which one matched
        matches = [hmac.compare_digest(tag, _tag(key, context, payload)) for key in self._keys]
        if any(matches):
            return payload
        if tag == _UNSIGNED:
            raise Forged("the record is unsigned (written by a server without a state key)")
        raise Forged("the tag does not verify under the state keys")


def _tag(key: bytes, context: str, payload: bytes) -> bytes:
    text = context.encode()
    mac = hmac.new(key, MAGIC + len(text).to_bytes(4, "big") + text, hashlib.sha256)
    mac.update(payload)
    return mac.digest()
