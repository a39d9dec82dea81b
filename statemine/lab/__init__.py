"""The lab: real, instrumented QUIC implementations run in virtual time over an emulated
path, producing statemine traces (``statemine lab run``; docs/lab.md).

Modules: :mod:`.path` (the path model), :mod:`.scenario` (TOML grids), :mod:`.grid`
(running a grid: parallel, resumable, results table and manifest), :mod:`.runners`
(one runner per implementation), :mod:`.findings` (the paper's findings measured on a
grid's traces).
"""
