"""Build of the compiled modules and of the package data that lives outside the package
in the repository (metadata and dependencies live in setup.cfg)."""

import shutil
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

#: Top-level folders of the repository shipped inside the package as
#: ``statemine/_data/<folder>`` and found at run time by ``statemine.resources.data_dir``.
#: Shipping another folder is one line here (and one in MANIFEST.in, for the sdist).
DATA_DIRS = (
    "instrument-patches",
    "examples/scenarios",
)


class BuildWithData(build_py):
    """``build_py`` that also copies :data:`DATA_DIRS` into the built package (not for an
    editable install: that one reads the checkout's folders, see statemine/resources.py)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        root = Path(__file__).resolve().parent
        for rel in DATA_DIRS:
            dest = Path(self.build_lib, "statemine", "_data", rel)
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(root / rel, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


setup(
    cmdclass={"build_py": BuildWithData},
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
        ),
        Extension(
            "statemine.parse.qlog._runscan",
            ["statemine/parse/qlog/_runscan.c"],
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra"],
        ),
        Extension(
            "statemine.infer.synoptic._walks",
            ["statemine/infer/synoptic/_walks.c"],
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra"],
        ),
    ],
)
