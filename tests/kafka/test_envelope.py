"""`streams.kafka.envelope` alone: what verifies, what does not, rotation, keys from files and the
environment, and the commands' refusal to run without a key (no broker needed)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streams.cli.security import add_state_key_arguments, state_keys
from streams.kafka.envelope import ENVIRONMENT, MAGIC, TAG_BYTES, Forged, StateKeys
from tests.kafka.kafka_support import REPO

OLD = StateKeys([b"o" * 32])
NEW = StateKeys([b"n" * 32, b"o" * 32])  # rotated: the new key signs, the old one verifies
CONTEXT = "river-cw state 1|t.state|0|3"


def test_a_sealed_payload_opens_in_its_context_only():
    sealed = OLD.seal(CONTEXT, b"payload")
    assert OLD.open(CONTEXT, sealed) == b"payload"
    for elsewhere in (
        "river-cw state 1|t.state|1|3",  # another partition
        "river-cw state 1|t.state|0|4",  # another snapshot number
        "river-cw state 1|u.state|0|3",  # another topic
        "river-cw state 2|t.state|0|3",  # another format
    ):
        with pytest.raises(Forged, match="does not verify"):
            OLD.open(elsewhere, sealed)


@given(st.binary(max_size=64), st.data())
def test_any_change_to_an_envelope_is_refused(payload, data):
    sealed = OLD.seal(CONTEXT, payload)
    i = data.draw(st.integers(0, len(sealed) - 1))
    flipped = sealed[:i] + bytes([sealed[i] ^ 1 << data.draw(st.integers(0, 7))]) + sealed[i + 1 :]
    cut = sealed[: data.draw(st.integers(0, len(sealed) - 1))]
    for garbled in (flipped, cut, sealed + b"x"):
        with pytest.raises(Forged):
            OLD.open(CONTEXT, garbled)


def test_bytes_that_are_no_envelope_are_named():
    with pytest.raises(Forged, match="not a river-cw envelope"):
        OLD.open(CONTEXT, b"\x80\x05pickle")
    with pytest.raises(Forged, match="cut short"):
        OLD.open(CONTEXT, MAGIC + bytes(TAG_BYTES - 1))
    with pytest.raises(Forged, match="not a river-cw envelope"):
        OLD.open(CONTEXT, None)


def test_rotation_the_first_key_signs_every_key_verifies():
    assert NEW.open(CONTEXT, OLD.seal(CONTEXT, b"before")) == b"before"
    with pytest.raises(Forged):
        OLD.open(CONTEXT, NEW.seal(CONTEXT, b"after"))  # the old key alone cannot verify it


def test_insecure_keys_verify_nothing_and_keyed_readers_refuse_their_records():
    insecure = StateKeys.insecure()
    assert not insecure.secure and OLD.secure
    assert insecure.open("anywhere", OLD.seal(CONTEXT, b"x")) == b"x"
    with pytest.raises(Forged, match="unsigned"):
        OLD.open(CONTEXT, insecure.seal(CONTEXT, b"x"))
    with pytest.raises(Forged, match="not a river-cw envelope"):
        insecure.open(CONTEXT, b"raw bytes")  # still an envelope or nothing


def test_keys_are_never_shown():
    assert repr(NEW) == "StateKeys(2 keys)" and b"n" * 32 not in repr(NEW).encode()
    assert repr(StateKeys.insecure()) == "StateKeys.insecure()"


def test_key_files_and_the_environment(tmp_path):
    path = tmp_path / "state.key"
    path.write_text("# rotated on 2026-11-25\n" + "n" * 64 + "\n\n" + "o" * 32 + "\n")
    keys = StateKeys.from_file(path)
    assert repr(keys) == "StateKeys(2 keys)"
    assert keys.open(CONTEXT, OLD.seal(CONTEXT, b"old")) == b"old"
    assert StateKeys.from_environment({}) is None
    from_env = StateKeys.from_environment({ENVIRONMENT: "n" * 64 + "," + "o" * 32})
    assert from_env.open(CONTEXT, keys.seal(CONTEXT, b"new")) == b"new"
    path.write_text("short\n")
    with pytest.raises(ValueError, match=r"state key file .*state.key: state key 1 is shorter"):
        StateKeys.from_file(path)
    path.write_text("# nothing but a comment\n")
    with pytest.raises(ValueError, match="holds no state key; make one with: python3 -c"):
        StateKeys.from_file(path)
    with pytest.raises(ValueError, match="cannot read the state key file"):
        StateKeys.from_file(tmp_path / "missing.key")


def parsed(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_state_key_arguments(parser)
    return parser.parse_args(argv)


def test_the_commands_keys_come_from_the_file_then_the_environment_else_the_explicit_flag(
    tmp_path,
):
    path = tmp_path / "state.key"
    path.write_text("k" * 32)
    assert state_keys(parsed("--state-key-file", str(path)), {ENVIRONMENT: "e" * 32}).secure
    assert state_keys(parsed(), {ENVIRONMENT: "e" * 32}).secure
    assert not state_keys(parsed("--insecure-state"), {}).secure
    with pytest.raises(ValueError, match=r"no state key: give --state-key-file PATH or set \$"):
        state_keys(parsed(), {})
    with pytest.raises(SystemExit):  # one or the other
        parsed("--insecure-state", "--state-key-file", str(path))


@pytest.mark.parametrize(
    "argv", [["serve", "--topic", "t", "--model", "AROW()"], ["inspect", "--topic", "t"]]
)
def test_serve_and_inspect_refuse_to_run_without_a_key_and_say_how_to_make_one(argv):
    env = {name: value for name, value in os.environ.items() if name != ENVIRONMENT}
    done = subprocess.run(
        [sys.executable, "-m", "streams.cli", *argv],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert f"river-cw {argv[0]}: error: no state key" in done.stderr
    assert 'python3 -c "import secrets; print(secrets.token_hex(32))" > state.key' in done.stderr
