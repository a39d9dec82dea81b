"""Whether a process named in a leftover's name still runs (statemine.fileio.alive), the
one test that the staging files, the tracing instances and the lab's namespaces share:
a name is untrusted, so a pid too large for the kernel must not raise."""

from __future__ import annotations

import os
import subprocess
import sys

from statemine.fileio import alive
from statemine.tcp.netns import _stale


def test_this_process_is_alive_and_an_ended_one_is_not():
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert alive(os.getpid())
    assert not alive(int(done.stdout))


def test_a_pid_too_large_counts_as_alive_and_is_left_alone():
    """``sm-<pid>-...`` with a pid past the C int (a crafted name): ``os.kill`` raises
    OverflowError there, which once escaped ``statemine tcp cleanup``'s stale check."""
    huge = 10**30
    assert alive(huge)
    assert not _stale(f"sm-{huge}-veth0", all_=False)
    assert _stale(f"sm-{huge}-veth0", all_=True)
