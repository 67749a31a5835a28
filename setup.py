"""The optional compiled engine (river_cw._diagonal); without a compiler pure Python serves."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "river_cw._diagonal",
            ["river_cw/_diagonal.c"],
            extra_compile_args=["-O2", "-ffp-contract=off"],
            optional=True,
        )
    ]
)
