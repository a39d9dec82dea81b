"""``python -m statemine`` is the ``statemine`` command."""

from .launch import main

if __name__ == "__main__":  # not when a worker process (Dask's, multiprocessing's) imports it
    main(prog_name="statemine", process=True)
