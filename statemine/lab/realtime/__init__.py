"""Real-time lab: real programs in two network namespaces joined by TUN devices, with the
path model of :mod:`statemine.lab.path` applied on a real clock (docs/realtime.md).

Everything created here is named with :data:`netns.PREFIX` (``sm-``) and the owning
process's pid: namespaces ``sm-<pid>-c`` / ``sm-<pid>-s``, TUN devices ``sm-<pid>-tc`` /
``sm-<pid>-ts`` (inside the namespaces); the kernel's events go to ``statemine tcp
record``'s tracing instance ``statemine-<pid>``. After a SIGKILL, :func:`statemine.tcp.cleanup`
(``statemine tcp cleanup``) removes what a dead run left.
"""
