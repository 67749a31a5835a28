"""Checkpoint files: saved atomically, read back exactly, and a failed save leaves the old one."""

from __future__ import annotations

import pickle
import threading

import pytest

from river_cw import AROW
from streams.kafka import checkpoint


class Unpicklable:
    def __reduce__(self):
        raise RuntimeError("cannot pickle this")


def test_round_trip_and_missing(tmp_path):
    model = AROW()
    model.learn_one({"a": 1.0}, "yes")
    model.learn_one({"a": -1.0}, "no")
    path = tmp_path / "sub" / "t-0.ckpt"
    assert checkpoint.load(path) is None
    checkpoint.save(path, {"model": model, "offsets": {"t": 2}})
    state = checkpoint.load(path)
    assert state["offsets"] == {"t": 2}
    assert state["model"].predict_proba_one({"a": 0.3}) == model.predict_proba_one({"a": 0.3})
    assert [p.name for p in path.parent.iterdir()] == ["t-0.ckpt"]  # no temporary file left


def test_a_failed_save_keeps_the_previous_checkpoint(tmp_path):
    path = tmp_path / "t-0.ckpt"
    checkpoint.save(path, {"offsets": {"t": 10}})
    with pytest.raises(RuntimeError, match="cannot pickle this"):
        checkpoint.save(path, {"offsets": {"t": 20}, "model": Unpicklable()})
    assert checkpoint.load(path) == {"offsets": {"t": 10}}
    assert [p.name for p in tmp_path.iterdir()] == ["t-0.ckpt"]


def test_unreadable_files_are_named(tmp_path):
    torn = tmp_path / "torn.ckpt"
    torn.write_bytes(pickle.dumps({"format": checkpoint.FORMAT, "state": 1})[:-3])
    with pytest.raises(checkpoint.CheckpointError, match=f"checkpoint {torn} is unreadable"):
        checkpoint.load(torn)
    alien = tmp_path / "alien.ckpt"
    alien.write_bytes(pickle.dumps([1, 2]))
    with pytest.raises(checkpoint.CheckpointError, match="is not a 'river-cw checkpoint 1' file"):
        checkpoint.load(alien)


def test_concurrent_writers_of_one_path_never_fail_each_other(tmp_path):
    path = tmp_path / "t-0.ckpt"
    errors = []

    def write(writer: int) -> None:
        for i in range(40):
            try:
                checkpoint.save(path, {"writer": writer, "i": i, "payload": b"x" * 10_000})
            except Exception as error:
                errors.append(error)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert checkpoint.load(path)["i"] == 39
    assert [p.name for p in tmp_path.iterdir()] == ["t-0.ckpt"]
