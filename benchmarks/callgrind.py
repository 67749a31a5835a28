"""Counting a child process's instructions with valgrind's callgrind, part by part: the one
runner of benchmarks/instructions.py and benchmarks/batch.py.

The child starts with instrumentation off (``--instr-atstart=no``): Python's start-up and the
imports (river.linear_model alone pulls in scipy.stats: about 40 s of CPU under full
instrumentation, against 10 s without) run at the speed of an uninstrumented valgrind. Once set
up, the child calls `start_counting`, which has ``callgrind_control`` switch instrumentation on
for its own process and waits, running, until it has (valgrind takes the command between two
blocks of the running program). From then on callgrind dumps its counters before each call of
`time.process_time` (``--dump-before``), the child's markers around each pass: part 1 runs from
`start_counting` to the first marker, then one part per pass and one between passes. Counting
starts after the imports either way; instructions counted are the same with instrumentation
switched on late, since callgrind counts the instructions executed, not a simulated time.

The child copies and fills memory with glibc's vector loops (`STEADY_COPIES`). Above a few KB,
glibc's memcpy and memset use ``rep movsb`` and ``rep stosb``, which callgrind counts once per
byte: a feature table's growth (`realloc` moving its entries: some 150 KB over 300 SMS texts)
then read as 8% of a learning pass (of whose time it takes about 3%), and the count moved by up
to 15 per feature between runs of one build with the heap's layout (whether a growth is made in
place or copies depends on what lies after the entries). A vector loop counts about one
instruction per 10 bytes (1% of that pass) and the counts repeat within one per feature.
"""

from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

# glibc's tunables for the child: memcpy and memset never take `rep movsb` / `rep stosb`
STEADY_COPIES = (
    "glibc.cpu.x86_rep_movsb_threshold=0xffffffffffffffff:"
    "glibc.cpu.x86_rep_stosb_threshold=0xffffffffffffffff"
)


def counts(argv: list[str], env: dict) -> list[int]:
    """The instructions of each part of `argv` (Python arguments of a child that calls
    `start_counting`), run by this interpreter under callgrind."""
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--instr-atstart=no",
                "--dump-before=time_process_time",
                f"--callgrind-out-file={out}/cg.out",
                sys.executable,
                *argv,
            ],
            capture_output=True,
            text=True,
            check=True,
            # the same hash seed every run: features land in the same slots, so counts repeat;
            # copies counted by their vector loops (see the module docstring)
            env={"PYTHONHASHSEED": "0", "GLIBC_TUNABLES": STEADY_COPIES, **os.environ, **env},
        )
        parts = sorted(glob.glob(f"{out}/cg.out.*"), key=lambda p: int(p.rsplit(".", 1)[1]))
        return [
            int(re.search(r"^summary: (\d+)", Path(p).read_text(), re.M).group(1)) for p in parts
        ]


def start_counting() -> None:
    """Switch callgrind's instrumentation on for this process (see the module docstring)."""
    control = subprocess.Popen(
        ["callgrind_control", "--instr=on", str(os.getpid())],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    while control.poll() is None:  # busy: valgrind reads the command while this process runs
        pass
    said = control.stdout.read() if control.stdout else ""
    if control.returncode != 0:
        raise SystemExit(f"callgrind_control could not switch instrumentation on: {said}")
