"""A child process that takes Ctrl-C as a command in a terminal's foreground does, whatever the
test run's own SIGINT: a child inherits an ignored SIGINT, and a run started in the background by
a shell without job control (``./test.sh > log &``) ignores it, so the processes the interrupt
tests start would rightly ignore the SIGINT they send."""

from __future__ import annotations

import signal
from pathlib import Path


def catches_sigint(pid: int) -> bool:
    """Whether process ``pid`` has a handler for SIGINT (Python's, which raises KeyboardInterrupt),
    and neither ignores nor blocks it: what a Ctrl-C needs to reach a run."""
    try:
        status = dict(line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":\t" in line)
    except OSError:
        return False
    bit = 1 << (signal.SIGINT - 1)
    return bool(int(status["SigCgt"], 16) & bit) and not int(status["SigIgn"], 16) & bit \
        and not int(status["SigBlk"], 16) & bit


def sigint_as_in_a_terminal() -> None:
    """``preexec_fn`` of a child: SIGINT at its default, unblocked, as a shell starts a command in the
    foreground (with SIGINT ignored, Python installs no handler and ``mlsql-ray run`` ignores Ctrl-C,
    as any background command does: an interrupted save then ran to its end, "saved", exit 0)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
