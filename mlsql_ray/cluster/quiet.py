"""Quiet by default: other libraries' start-up chatter stays out of the user's terminal and cells.

TensorFlow and absl print C++ log lines when TensorFlow loads (``oneDNN custom operations are
on…``, ``All log messages before absl::InitializeLog()…``) whatever ``TF_CPP_MIN_LOG_LEVEL``
says, in the driver and in every Ray worker; Ray adds a one-time hint about its log
deduplication, Ray Tune its tables and a TensorBoard hint, the raylet a paragraph on every worker
that dies under a task (the task's own error says so). None of it is the user's output.

Two filters drop the lines matching ``NOISE`` and pass everything else through, so a worker's
``print()`` still reaches the cell and our own progress the terminal:
- ``quiet_ray()`` wraps Ray's handler of the workers' output (Ray's driver-side log stream) and
  the printer of the error messages the raylet publishes;
- ``filtered_stderr()`` sits on this process's file descriptor 2, where C++ code writes.
``set_verbose(True)`` (``--verbose``, ``!python conf "verbose=true"``) lets everything through.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import select
import sys
import threading

from .ray_internals import wrap_error_printer, wrap_print_logs

NOISE_PATTERNS = (
    r"All log messages before absl::InitializeLog\(\) is called",
    r"^\s*[IW]\d{4} [\d:.]+\s+\d+ [\w./-]+:\d+\]",  # absl/glog info and warning lines (TensorFlow, XLA, gRPC)
    r"oneDNN custom operations are on",
    r"This TensorFlow binary is optimized to use available CPU instructions",
    r"^To enable the following instructions: .* rebuild TensorFlow",
    r"^WARNING:absl:",
    r"Ray deduplicates logs by default",
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+\s+INFO \w+\.py:\d+ -- ",  # Ray's own Python info lines
    r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ [IW] \d+ \d+\] ",  # Ray's C++ info and warning lines
    r"tensorboard --logdir",
    # the raylet's account of a worker that died under a task: the task's error says it to the user
    r"^A worker died or was killed while executing a task by an unexpected system error",
)
NOISE = re.compile("|".join(NOISE_PATTERNS))
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_state = {"verbose": False}


def set_verbose(verbose: bool) -> None:
    """Let every line through (True) or drop the known noise (False, the default)."""
    _state["verbose"] = verbose
    for name in ("ray.tune", "ray.train", "ray.air"):
        logging.getLogger(name).setLevel(logging.NOTSET if verbose else logging.WARNING)


def is_noise(line: str) -> bool:
    return not _state["verbose"] and NOISE.search(_ANSI.sub("", line)) is not None


def quiet_ray() -> None:
    """Drop noise from the workers' output and the raylet's error messages Ray forwards to this
    driver (idempotent: called on every use of the Ray connection, so a Ray someone else started
    is covered too).

    Ray prints that output through its ``ray_print_logs`` handler and those messages through
    ``print_to_stdstream``, which are wrapped here (``ray_internals.wrap_print_logs``,
    ``wrap_error_printer``: Ray offers no public filter, only all or nothing with
    ``log_to_driver``). Ray's deduplication hint is printed only while Ray's
    ``log_once("log_dedup_warning")`` is unused: using it up keeps the hint away."""
    from ray.util.debug import log_once  # heavy: Ray

    if not _state["verbose"]:
        log_once("log_dedup_warning")
    set_verbose(_state["verbose"])  # Tune's loggers
    wrap_print_logs(_filtered)
    wrap_error_printer(_filtered)


def _filtered(handler):
    """``handler(data, ...)`` for Ray's ``{"lines": [...], ...}`` records, without the noise lines."""
    if getattr(handler, "mlsql_quiet", False):
        return handler

    @functools.wraps(handler)
    def handle(data: dict, *args, **kwargs) -> None:
        lines = [line for line in data.get("lines", ()) if not is_noise(line)]
        if lines:
            handler(dict(data, lines=lines), *args, **kwargs)

    handle.mlsql_quiet = True
    return handle


def _forward(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


@contextlib.contextmanager
def filtered_stderr():
    """Send this process's file descriptor 2 (and so its subprocesses' and C++ code's stderr)
    through a thread that drops noise lines. A partial line is passed on once nothing more
    arrives for a moment, so prompts and progress without a newline still show."""
    try:
        target = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # stderr is no file here (e.g. captured): nothing to filter
        yield
        return
    sys.stderr.flush()
    saved = os.dup(target)
    read_end, write_end = os.pipe()
    os.dup2(write_end, target)
    os.close(write_end)
    stop = threading.Event()

    def pump() -> None:
        pending = b""
        while True:
            if select.select([read_end], [], [], 0.1)[0]:
                chunk = os.read(read_end, 65536)
                if not chunk:  # every writer has gone
                    break
                *lines, pending = (pending + chunk).split(b"\n")
                _forward(saved, b"".join(line + b"\n" for line in lines if not is_noise(line.decode(errors="replace"))))
            elif pending:  # a quiet moment: pass the partial line on as it is
                _forward(saved, b"" if is_noise(pending.decode(errors="replace")) else pending)
                pending = b""
            elif stop.is_set():
                break
        os.close(read_end)

    thread = threading.Thread(target=pump, name="mlsql-quiet-stderr", daemon=True)
    thread.start()
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, target)  # the pipe's last writer here is gone; children may still hold it
        stop.set()
        thread.join(timeout=2)
        if not thread.is_alive():  # else it still writes there: the descriptor goes with the process
            os.close(saved)
