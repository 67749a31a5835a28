"""Atomic checkpoint files: a partition's state that is either the old one or the new one, never torn.

`save` writes a temporary file beside the target with a unique name (`.NAME.<random>.tmp`, so
writers of the same path, e.g. an evicted group member that has not noticed yet and the new
owner, never collide), fsyncs it, renames it over the target (`os.replace`, atomic on POSIX) and
fsyncs the directory so that the rename survives a power cut. A reader therefore sees one
complete checkpoint, the last one renamed, whatever happens. A temporary file left by a crash
is harmless (delete `.*.tmp` files at leisure).

A checkpoint is the line ``river-cw checkpoint 2``, a line of JSON (what goes with the state:
`save`'s `meta`) and the state's bytes (`streams.kafka.state_codec`: its models in river-cw's
versioned format, so that a later version reads them). A checkpoint of an earlier version (a
pickle) is refused by name: it is a cache, delete it. A model the format does not describe is
held as a pickle: read only checkpoints you wrote.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from streams.kafka import state_codec
from streams.kafka.learner import PartitionState

FORMAT = "river-cw checkpoint 2"


class CheckpointError(RuntimeError):
    """A checkpoint file that cannot be read back."""


def save(path: str | os.PathLike, state: PartitionState, **meta) -> None:
    """Atomically replace `path` by a checkpoint of `state` with `meta` (JSON values)."""
    data = FORMAT.encode() + b"\n" + json.dumps(meta).encode() + b"\n" + state_codec.encode(state)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(name)
    try:
        with open(fd, "wb") as fh:
            fh.write(data)
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


def load(path: str | os.PathLike) -> dict | None:
    """``{"state": the PartitionState, **meta}`` saved at `path`, or None if there is no
    checkpoint there; `CheckpointError` naming the file if it cannot be read."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise CheckpointError(f"checkpoint {path} is unreadable: {error!r}") from None
    first, _, rest = data.partition(b"\n")
    if first != FORMAT.encode():
        if data.startswith(b"\x80"):  # a pickle: river-cw checkpoint 1
            raise CheckpointError(
                f"checkpoint {path} is unreadable: written by an earlier river-cw (a pickle); "
                "delete it (a cache: the state topic holds the state)"
            )
        raise CheckpointError(f"checkpoint {path} is unreadable: not a {FORMAT!r} file")
    line, _, payload = rest.partition(b"\n")
    try:
        meta = json.loads(line)
        state = state_codec.decode(payload).state()
    except Exception as error:  # a pickled model's load may raise anything
        raise CheckpointError(f"checkpoint {path} is unreadable: {error}") from None
    return {"state": state, **meta}
