"""Whose session a request runs in, and where its files are.

Byzer's three ways: every owner in one shared session (the default), each owner in a session of
their own (``sessionPerUser``: their tables, variables and registered functions are theirs alone),
or a fresh session for the one request (``sessionPerRequest``). A session runs one request at a
time: a lease waits for it. With ``--home-root DIR`` an owner's home is ``DIR/<owner>`` and the
session's local paths are confined to it while the owner's request runs (``Session.home``).
"""

from __future__ import annotations

import contextlib
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from .asgi import Refused

if TYPE_CHECKING:  # the CLI's parser reads the service's limits without importing the engine
    from ..engine import Session  # the CLI's parser reads this module; the engine only when a session starts

#: what an owner may be called: a name, never a path (no ``/``, no ``..``), as a home folder's name
OWNER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}\Z")
SHARED = ""  # the key of the session every owner shares without sessionPerUser


def checked_owner(owner: str) -> str:
    if not OWNER_NAME.match(owner) or ".." in owner:
        raise Refused(400, f"owner {owner[:80]!r} is not a valid owner name: letters, digits and _ . @ - "
                           "(at most 64, not starting with . or -, no ..)")
    return owner


@dataclass
class _Held:
    session: Session
    lock: threading.Lock = field(default_factory=threading.Lock)


class Sessions:
    """The warm sessions: the shared one and one per owner, opened on first use with
    ``open_session(home)`` and closed with the service."""

    def __init__(self, open_session: Callable[[Path | None], Session], home_root: Path | None):
        self._open = open_session
        self.home_root = home_root.resolve() if home_root is not None else None
        self._held: dict[str, _Held] = {}
        self._lock = threading.Lock()

    def home(self, owner: str, prefix: str = "") -> Path | None:
        """The owner's home (made if missing), or the folder ``prefix`` names inside it
        (Byzer's ``defaultPathPrefix``); without ``--home-root``, ``prefix`` itself if given."""
        if self.home_root is None:
            return Path(prefix).resolve() if prefix else None
        home = self.home_root / checked_owner(owner)
        home.mkdir(parents=True, exist_ok=True)
        if not prefix:
            return home
        inner = (home / prefix).resolve()
        if not inner.is_relative_to(home.resolve()):
            raise Refused(403, f"defaultPathPrefix {prefix!r} is outside the home of {owner}")
        return inner

    @contextlib.contextmanager
    def lease(self, owner: str, per_user: bool, per_request: bool, prefix: str = "") -> Iterator[Session]:
        """The session the request runs in, for as long as it runs, confined to the owner's home."""
        home = self.home(owner, prefix)
        if per_request:
            with self._open(home) as session:
                yield session
            return
        held = self._session(owner if per_user else SHARED, home)
        with held.lock:
            held.session.home = home
            yield held.session

    def warm(self, owner: str, per_user: bool) -> Session | None:
        """The session a lease would give, if it is open already, without waiting for it: for
        what may run beside its request (``fast_predict``). On the event loop: one dict read
        (atomic), not the lock, which is held while a session opens."""
        held = self._held.get(owner if per_user else SHARED)
        return held.session if held is not None else None

    def _session(self, key: str, home: Path | None) -> _Held:
        with self._lock:
            if key not in self._held:
                self._held[key] = _Held(self._open(home))
            return self._held[key]

    def close(self) -> None:
        with self._lock:
            held, self._held = list(self._held.values()), {}
        for h in held:
            h.session.close()
