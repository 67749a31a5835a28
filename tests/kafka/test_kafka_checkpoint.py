"""Checkpoint files: saved atomically, read back exactly, a failed save leaves the old one, and
a file that is no checkpoint of this version (a pickle of an earlier one) is refused by name."""

from __future__ import annotations

import pickle
import threading

import pytest

from river_cw import AROW
from streams.kafka import checkpoint
from streams.kafka.learner import PartitionState


class Unpicklable:
    def __reduce__(self):
        raise RuntimeError("cannot pickle this")


def partition_state(model=None, **fields) -> PartitionState:
    return PartitionState("t", 0, AROW() if model is None else model, **fields)


def test_round_trip_and_missing(tmp_path):
    model = AROW()
    model.learn_one({"a": 1.0}, "yes")
    model.learn_one({"a": -1.0}, "no")
    path = tmp_path / "sub" / "t-0.ckpt"
    assert checkpoint.load(path) is None
    checkpoint.save(path, partition_state(model, offsets={"t": 2}), state_offset=7)
    saved = checkpoint.load(path)
    assert saved["state_offset"] == 7 and saved["state"].offsets == {"t": 2}
    restored = saved["state"].model
    assert restored.predict_proba_one({"a": 0.3}) == model.predict_proba_one({"a": 0.3})
    assert [p.name for p in path.parent.iterdir()] == ["t-0.ckpt"]  # no temporary file left


def test_a_failed_save_keeps_the_previous_checkpoint(tmp_path):
    path = tmp_path / "t-0.ckpt"
    checkpoint.save(path, partition_state(offsets={"t": 10}))
    with pytest.raises(RuntimeError, match=r"cannot pickle this"):  # a model only a pickle holds
        checkpoint.save(path, partition_state(Unpicklable(), offsets={"t": 20}))
    assert checkpoint.load(path)["state"].offsets == {"t": 10}
    assert [p.name for p in tmp_path.iterdir()] == ["t-0.ckpt"]


def test_unreadable_files_are_named(tmp_path):
    path = tmp_path / "t-0.ckpt"
    checkpoint.save(path, partition_state())
    torn = tmp_path / "torn.ckpt"
    torn.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(checkpoint.CheckpointError, match=rf"checkpoint {torn} is unreadable"):
        checkpoint.load(torn)
    old = tmp_path / "old.ckpt"  # what earlier versions wrote
    old.write_bytes(pickle.dumps({"format": "river-cw checkpoint 1", "state": 1}))
    with pytest.raises(checkpoint.CheckpointError, match=r"earlier river-cw.*delete it"):
        checkpoint.load(old)
    alien = tmp_path / "alien.ckpt"
    alien.write_bytes(b"[1, 2]")
    with pytest.raises(checkpoint.CheckpointError, match=r"not a 'river-cw checkpoint 2' file"):
        checkpoint.load(alien)


def test_concurrent_writers_of_one_path_never_fail_each_other(tmp_path):
    path = tmp_path / "t-0.ckpt"
    errors = []

    def write(writer: int) -> None:
        for i in range(40):
            try:
                checkpoint.save(path, partition_state(offsets={"t": i}), writer=writer)
            except Exception as error:
                errors.append(error)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert checkpoint.load(path)["state"].offsets == {"t": 39}
    assert [p.name for p in tmp_path.iterdir()] == ["t-0.ckpt"]
