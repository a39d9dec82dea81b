"""``python -m statemine`` is the ``statemine`` command."""

from .cli import main

main(prog_name="statemine")
