"""Parsers: from log files to :class:`statemine.traces.TraceSet`."""
