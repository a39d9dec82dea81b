"""Statistics of a trace store on Dask (dask.distributed): the cluster (:mod:`.cluster`),
the map over data files and the exact reduce (:mod:`.storestats`), and running them
(:mod:`.run`). Needs ``pip install 'statemine[dask]'``."""
