"""Real-time lab: real programs in two network namespaces joined by TUN devices, with the
path model of :mod:`statemine.lab.path` applied on a real clock (docs/realtime.md).

Everything created here is named with :data:`netns.PREFIX` (``sm-``) so a crashed run can
be cleaned up (:func:`netns.cleanup_leftovers`, ``statemine tcp cleanup``).
"""
