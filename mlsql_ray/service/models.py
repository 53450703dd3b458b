"""The functions scripts ``register``ed, kept in the warehouse (``_service/registered.json``) so a
restarted server registers them again before it answers: a model is a Delta table, its function
only a name in a session, which a restart would otherwise lose. Kept per session key (an owner
with ``sessionPerUser``, else the shared session), as the statement's parts."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from ..lang import ast

FILE = Path("_service") / "registered.json"


class RegisteredModels:
    def __init__(self, warehouse: Path | None):
        self.path = warehouse / FILE if warehouse is not None else None  # None: a warehouse on object storage
        self._lock = threading.Lock()

    def entries(self) -> list[dict]:
        if self.path is None or not self.path.exists():
            return []
        return json.loads(self.path.read_text())

    def note(self, owner: str, per_user: bool, statements: list[ast.Statement], variables: dict[str, str]) -> None:
        """Remember the ``register``s of a script that ran, forget what it ``unregister``ed
        (``${}`` resolved with the session's ``variables``, as they ran)."""
        changes = [s.substituted(variables) for s in statements if isinstance(s, (ast.Register, ast.Unregister))]
        if self.path is None or not changes:
            return
        with self._lock:
            entries = self.entries()
            for s in changes:
                gone = {s.function.lower()} if isinstance(s, ast.Register) else {s.path.lower()}  # a function or a model
                entries = [e for e in entries if not (e["owner"] == owner and e["perUser"] == per_user
                                                      and gone & {e["function"].lower(), e["path"].lower()})]
                if isinstance(s, ast.Register):
                    entries.append({"owner": owner, "perUser": per_user, "format": s.format, "path": s.path,
                                    "function": s.function, "options": dict(s.options)})
            self.path.parent.mkdir(parents=True, exist_ok=True)
            scratch = self.path.with_suffix(".tmp")
            scratch.write_text(json.dumps(entries, indent=1))
            scratch.replace(self.path)  # atomic: a crash leaves the old list or the new one


def statement(entry: dict) -> ast.Register:
    """The ``register`` an entry remembers."""
    return ast.Register(entry["format"], entry["path"], entry["function"], entry["options"])
