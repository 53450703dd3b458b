"""``memoryLimit``: how much more memory (MB) a Python cell may take, enforced while it runs.

    --%python
    --%memoryLimit=2048        -- or for every cell: !python conf "memoryLimit=2048";

While the cell's code runs, the process's address-space limit (``RLIMIT_AS``) is set to what
the process uses at the start of the cell plus the limit, and put back afterwards. An allocation
past it fails at once with a ``MemoryError`` inside the cell, which the cell reports as its error
(naming the limit); the kernel or batch run goes on. Without a limit, a cell can still ask for
more than the machine has (``bytearray(10**13)``): that too is a ``MemoryError``, reported the
same way.

What it is and is not, honestly:

* it counts address space, not resident memory: mapping a file or starting threads (about 8 MB
  of stack each) counts too, so give it room;
* it is per process and lasts only while the cell runs: other threads of the process (Jupyter's,
  Ray's) share it for that time, so a cell that fills its allowance to the brim can make their
  allocations fail too; a cell that asks for too much in one go (the usual case: one big array)
  is refused before anything else notices;
* with ``runIn=executor`` it applies inside the Ray worker that runs the cell; it does not reach
  actors or tasks the cell starts (give those Ray's own ``memory=`` resources);
* Linux only (elsewhere the setting is refused with a clear error).
"""

from __future__ import annotations

import contextlib
import os
from typing import Iterator

from ..errors import MLSQLError

SETTING = "memoryLimit"


def parse_limit(value: str | None) -> int | None:
    """The limit in MB, or None when not set; a clear error for anything but a positive number."""
    if value is None or str(value).strip() == "":
        return None
    text = str(value).strip()
    if not text.isdigit() or int(text) < 1:
        raise MLSQLError(f"{SETTING} is a number of megabytes (a positive whole number), not {value!r}")
    try:
        import resource  # Unix only

        resource.RLIMIT_AS  # noqa: B018 - present on Linux and macOS, enforced on Linux
    except (ImportError, AttributeError):
        raise MLSQLError(f"{SETTING} needs Linux (an address-space limit); it is not available here") from None
    if not os.path.exists("/proc/self/statm"):
        raise MLSQLError(f"{SETTING} needs Linux (an address-space limit); it is not available here")
    return int(text)


def address_space() -> int:
    """Bytes of address space this process uses now (``VmSize``)."""
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[0])
    return pages * os.sysconf("SC_PAGE_SIZE")


@contextlib.contextmanager
def memory_limit(megabytes: int | None) -> Iterator[None]:
    """Allow at most ``megabytes`` more address space until the block ends (None: no limit)."""
    if megabytes is None:
        yield
        return
    import resource  # Unix only

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = address_space() + megabytes * 2**20
    for bound in (soft, hard):
        if bound != resource.RLIM_INFINITY:
            limit = min(limit, bound)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
