"""Optional C extensions; without a compiler the install still succeeds and pure Python serves."""

import os

from setuptools import Extension, setup

# -O2, unless the build's CFLAGS name an optimisation level (-O0 for a debugger, the sanitized
# build's -O1): these arguments come last on the command line, where the last -O wins
OPTIMIZE = (
    [] if any(flag.startswith("-O") for flag in os.environ.get("CFLAGS", "").split()) else ["-O2"]
)
COMPILE_ARGS = [*OPTIMIZE, "-ffp-contract=off"]


def extension(name: str, *headers: str) -> Extension:
    """`river_cw._engines.<name>` from `river_cw/_engines/<name>.c`, optional, in the engines'
    float semantics."""
    return Extension(
        f"river_cw._engines.{name}",
        sources=[f"river_cw/_engines/{name}.c"],
        depends=[f"river_cw/_engines/{header}" for header in headers],
        extra_compile_args=COMPILE_ARGS,
        optional=True,
    )


setup(
    ext_modules=[
        extension("_text", "_inline.h", "_text_scan.h", "_text_count.h", "_token_counts.h"),
        extension(
            "_diagonal",
            "_inline.h",
            "_fsum.h",
            "_input.h",
            "_table.h",
            "_shell.h",
            "_token_counts.h",
            "_steps.h",
            "_calibration.h",
            "_exact.h",
            "_utilities.h",
            "_csr.h",
            "_batch.h",
        ),
        extension(
            "_full",
            "_inline.h",
            "_fsum.h",
            "_input.h",
            "_steps.h",
            "_calibration.h",
            "_token_counts.h",
        ),
        extension(
            "_rda", "_inline.h", "_fsum.h", "_input.h", "_table.h", "_shell.h", "_token_counts.h"
        ),
        extension(
            "_arrowhead",
            "_inline.h",
            "_fsum.h",
            "_input.h",
            "_table.h",
            "_shell.h",
            "_token_counts.h",
            "_steps.h",
            "_calibration.h",
            "_csr.h",
            "_batch.h",
        ),
    ]
)
