"""Ctrl-C while a request runs in a front end that lives on (the kernel, the ``%%mlsql`` magic).

A statement's Python code gets a KeyboardInterrupt as anywhere. A DuckDB query holds the main
thread in C code, where no Python signal handler runs until it returns: a watcher thread, woken
through the signal's wakeup fd, cancels the running query with ``interrupt()``; that query then
ends as a DuckDB error, which ``interrupted`` tells apart from a real failure. One mechanism for
every long-lived front end; the CLI, which ends on Ctrl-C, needs none of it.
"""

from __future__ import annotations

import signal
import socket
import threading


class Interrupts:
    """``with Interrupts() as interrupts: interrupts.connection = session.con; ...`` while a
    request runs; afterwards ``interrupts.interrupted`` says whether Ctrl-C came."""

    def __init__(self):
        self.connection = None
        self.interrupted = False
        self._reader, self._writer = socket.socketpair()
        self._reader.setblocking(True)
        self._writer.setblocking(False)
        self._done = False

    def __enter__(self) -> "Interrupts":
        self._old_handler = signal.signal(signal.SIGINT, self._on_sigint)
        self._old_wakeup = signal.set_wakeup_fd(self._writer.fileno(), warn_on_full_buffer=False)
        self._thread = threading.Thread(target=self._watch, name="mlsql-interrupt-watch", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        signal.set_wakeup_fd(self._old_wakeup)
        signal.signal(signal.SIGINT, self._old_handler)
        self._done = True
        try:
            self._writer.send(b"\0")  # wake the watcher so it ends
        except OSError:
            pass
        self._thread.join(timeout=1)
        self._reader.close()
        self._writer.close()

    def _on_sigint(self, signum, frame):
        self.interrupted = True
        raise KeyboardInterrupt

    def _watch(self) -> None:
        while True:
            try:
                data = self._reader.recv(64)
            except OSError:
                return
            if self._done or not data:
                return
            if signal.SIGINT in data:
                self.interrupted = True
                if self.connection is not None:
                    try:
                        self.connection.interrupt()
                    except Exception:  # noqa: BLE001 - nothing running, or already closed
                        pass
