"""Everything statemine shows or writes for people, one module per kind of output:

* :mod:`.diagram` -- a state machine as DOT text, SVG/PNG through Graphviz (Figure 13)
* :mod:`.diff_diagram` -- a :class:`~statemine.compare.DiffResult` as a two-sided DOT diagram
* :mod:`.timeline` -- cwnd / throughput timelines of one trace (matplotlib)
* :mod:`.html_report` -- the self-contained HTML page of ``statemine report``
* :mod:`.out_files` -- the files ``infer --out`` and ``diff --out`` write (CSV, DOT, JSON, SVG)

How numbers are shown (percent, pp, ms) is :mod:`statemine.units`. Importing this package
imports none of its modules (the command line loads only what it needs).
"""
