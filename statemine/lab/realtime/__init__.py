"""Real-time lab: real programs in two network namespaces joined by TUN devices, with the
path model of :mod:`statemine.lab.path` applied on a real clock (docs/realtime.md).

Everything created here is named with :data:`netns.PREFIX` (``sm-``) so a crashed run can
be cleaned up (:func:`cleanup`, ``statemine tcp cleanup``). Names: namespaces
``sm-<pid>-c`` / ``sm-<pid>-s``, TUN devices ``sm-<pid>-tc`` / ``sm-<pid>-ts`` (inside the
namespaces), tracing instances ``statemine-<pid>``; ``<pid>`` is the owning process.
"""

from __future__ import annotations


def cleanup(all_: bool = False) -> list[str]:
    """Remove what real-time runs of processes that no longer exist left behind (after a
    SIGKILL): namespaces (their TUN devices go with them) and tracing instances; with
    ``all_`` every one, running or not. Returns what was removed."""
    from . import netns, tracing

    return netns.cleanup_leftovers(all_) + tracing.cleanup_leftovers(all_)
