"""Atomic checkpoint files: a pickled state that is either the old one or the new one, never torn.

`save` writes a temporary file beside the target with a unique name (`.NAME.<random>.tmp`, so
writers of the same path, e.g. an evicted group member that has not noticed yet and the new
owner, never collide), fsyncs it, renames it over the target (`os.replace`, atomic on POSIX) and
fsyncs the directory so that the rename survives a power cut. A reader therefore sees one
complete checkpoint, the last one renamed, whatever happens. A temporary file left by a crash
is harmless (delete `.*.tmp` files at leisure).
Pickle runs code on load: read only checkpoints you wrote.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

FORMAT = "river-cw checkpoint 1"


class CheckpointError(RuntimeError):
    """A checkpoint file that cannot be read back."""


def save(path: str | os.PathLike, state: Any) -> None:
    """Atomically replace `path` by a pickle of `state`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(name)
    try:
        with open(fd, "wb") as fh:
            pickle.dump({"format": FORMAT, "state": state}, fh, protocol=pickle.HIGHEST_PROTOCOL)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def load(path: str | os.PathLike) -> Any | None:
    """The state saved at `path`, or None if there is no checkpoint there."""
    try:
        with open(path, "rb") as fh:
            payload = pickle.load(fh)
    except FileNotFoundError:
        return None
    except Exception as error:
        raise CheckpointError(f"checkpoint {path} is unreadable: {error!r}") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a {FORMAT!r} file")
    return payload["state"]
