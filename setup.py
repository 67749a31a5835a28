"""Optional C extensions; without a compiler the install still succeeds and pure Python serves."""

from setuptools import Extension, setup

COMPILE_ARGS = ["-O2", "-ffp-contract=off"]

setup(
    ext_modules=[
        Extension(
            "river_cw._text",
            sources=["river_cw/_text.c"],
            depends=["river_cw/_text_scan.h"],
            extra_compile_args=COMPILE_ARGS,
            optional=True,
        ),
        Extension(
            "river_cw._diagonal",
            sources=["river_cw/_diagonal.c"],
            depends=["river_cw/_fsum.h"],
            extra_compile_args=COMPILE_ARGS,
            optional=True,
        ),
        Extension(
            "river_cw._rda",
            sources=["river_cw/_rda.c"],
            depends=["river_cw/_fsum.h"],
            extra_compile_args=COMPILE_ARGS,
            optional=True,
        ),
    ]
)
