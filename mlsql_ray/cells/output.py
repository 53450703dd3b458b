"""What an executor cell prints, carried back by the cell's own task instead of Ray's log stream.

Ray forwards a worker's output by tailing its log file from another process, so the driver gets
it late and in pieces: of 100 000 lines a cell printed, about 500 came split mid-line and 1 121
after the next statement's output. A ``runIn=executor`` cell's task runs the code in a thread
with ``sys.stdout`` and ``sys.stderr`` writing into a queue, and yields what was written as it
comes, whole lines in the order they were written (a Ray generator task); the driver writes each
batch out as it arrives, so all of it is out before the statement ends.

Only what goes through ``sys.stdout``/``sys.stderr`` of the cell's process is carried: output
written to the file descriptors directly (C code, subprocesses) and the output of the tasks and
actors the cell starts still come through Ray's log stream.
"""

from __future__ import annotations

import io
import queue
import sys
import threading
import time
from collections.abc import Callable, Generator
from typing import TypeVar

from ..cluster import quiet

T = TypeVar("T")
BATCH_SECONDS = 0.1  # a batch goes out at least this often while the cell prints
BATCH_CHARS = 1 << 20  # ... or once it holds this much
PARTIAL_LINE_SECONDS = 0.5  # a line without its end goes out as it is after this long without output

Batch = list[tuple[str, str]]  # (stream name, text), in the order written


class _QueueWriter(io.TextIOBase):
    """A text stream whose writes go into ``pieces`` as (name, text)."""

    def __init__(self, name: str, pieces: queue.SimpleQueue):
        super().__init__()
        self.name = name
        self.pieces = pieces

    @property
    def encoding(self) -> str:
        return "utf-8"

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if text:
            self.pieces.put((self.name, text))
        return len(text)


class _Lines:
    """Pieces of text joined into whole lines, per stream; the lines of all streams in the order
    they were completed."""

    def __init__(self):
        self.partial: dict[str, str] = {}
        self.ready: Batch = []
        self.size = 0

    def add(self, name: str, text: str) -> None:
        text = self.partial.pop(name, "") + text
        cut = text.rfind("\n") + 1
        if cut:
            self._out(name, text[:cut])
        if cut < len(text):
            self.partial[name] = text[cut:]

    def flush_partial(self) -> None:
        for name in list(self.partial):
            self._out(name, self.partial.pop(name))

    def _out(self, name: str, text: str) -> None:
        self.ready.append((name, text))
        self.size += len(text)

    def take(self) -> Batch:
        batch, self.ready, self.size = self.ready, [], 0
        return batch


def captured(work: Callable[[], T]) -> Generator[Batch, None, T]:
    """Run ``work`` in a thread with this process's ``sys.stdout``/``sys.stderr`` captured;
    yield batches of what it writes as they fill, then return what it returned (or raise what it
    raised). The streams are given back when it ends."""
    pieces: queue.SimpleQueue = queue.SimpleQueue()
    outcome: dict = {}
    finished = object()

    def run() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # noqa: BLE001 - raised again in the generator
            outcome["error"] = exc
        finally:
            pieces.put(finished)

    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _QueueWriter("stdout", pieces), _QueueWriter("stderr", pieces)
    lines = _Lines()
    try:
        thread = threading.Thread(target=run, name="mlsql-executor-cell", daemon=True)
        thread.start()
        done = False
        while not done:
            try:
                piece = pieces.get(timeout=PARTIAL_LINE_SECONDS)
            except queue.Empty:
                lines.flush_partial()
            else:
                done = piece is finished
                if not done:
                    lines.add(*piece)
                    done = _drain(pieces, lines, finished)
            if done:
                lines.flush_partial()
            if lines.ready:
                yield lines.take()
        thread.join()
    finally:
        sys.stdout, sys.stderr = saved
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _drain(pieces: queue.SimpleQueue, lines: _Lines, finished: object) -> bool:
    """Add what arrives within ``BATCH_SECONDS`` (up to ``BATCH_CHARS``); whether ``finished`` came."""
    deadline = time.monotonic() + BATCH_SECONDS
    while lines.size < BATCH_CHARS:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        try:
            piece = pieces.get(timeout=left)
        except queue.Empty:
            return False
        if piece is finished:
            return True
        lines.add(*piece)
    return False


def write_out(batch: Batch) -> None:
    """Write a batch where this process's own prints go, leaving out the lines ``quiet`` drops."""
    streams = {"stdout": sys.stdout, "stderr": sys.stderr}
    for name, text in batch:
        kept = "".join(line for line in text.splitlines(keepends=True) if not quiet.is_noise(line))
        if kept:
            streams[name].write(kept)
    for stream in streams.values():
        stream.flush()
