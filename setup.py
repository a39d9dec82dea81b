"""Build of the one compiled module (metadata and dependencies live in setup.cfg)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "statemine.parse._linescan",
            ["statemine/parse/_linescan.c"],
            extra_compile_args=[
                "-O2",
                "-std=c11",
                "-Wall",
                "-Wextra",
                "-Wno-missing-field-initializers",
            ],
        )
    ]
)
