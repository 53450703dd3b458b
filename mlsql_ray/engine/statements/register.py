"""``register FORMAT.`...` as f;`` and ``unregister``: SQL functions from models, fitted ETs and scripts."""

from __future__ import annotations

from ...errors import MLSQLError
from ...lang import ast
from ...ml.kinds import KERAS
from ..kinds import KINDS
from ..result import Result


def run(session, s: ast.Register) -> Result:
    """What FORMAT's kind registers (``engine.kinds``); a name no kind knows is refused as a model
    format (tf, keras)."""
    return Result(s, (KINDS.find(s.format, "register") or KERAS).register(session, s), name=s.function)


def unregister(session, s: ast.Unregister) -> Result:
    removed = []
    if session.model_functions is not None:
        removed = [s.path] if session.model_functions.remove(s.path) else session.model_functions.remove_for_table(s.path)
    if not removed:
        raise MLSQLError(f"no function is registered as {s.path} or from a model table of that name")
    return Result(s, f"unregistered {', '.join(removed)}")
