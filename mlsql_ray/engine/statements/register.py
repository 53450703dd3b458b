"""``register FORMAT.`...` as f;`` and ``unregister``: SQL functions from models, fitted ETs and scripts;
with ``serve="true"`` the model is also a Ray Serve deployment (``ml.deployments``)."""

from __future__ import annotations

from ...errors import MLSQLError
from ...lang import ast
from ...ml import deployments
from ...ml.kinds import KERAS
from ...options import flag
from ..kinds import KINDS
from ..result import Result


def run(session, s: ast.Register) -> Result:
    """What FORMAT's kind registers (``engine.kinds``); a name no kind knows is refused as a model
    format (tf, keras). ``serve="true"``: then deployed, from the version just registered."""
    kind = KINDS.find(s.format, "register") or KERAS
    served = flag(dict(s.options), "serve", False)
    if served and KINDS.find(s.format, "loader") is None and kind is not KERAS:
        raise MLSQLError(f"serve=\"true\" deploys models that Ray actors serve (the built-in algorithms, "
                         f"tf/keras); {s.format} is not one")
    report = kind.register(session, s)
    if served:
        function = session.model_functions.functions[s.function.lower()]
        try:
            report += "; " + deployments.deploy(s.function, kind.loader(session, s, function.version), dict(s.options),
                                                 session.ray_link)
        except BaseException:  # the statement failed: its function goes too
            session.model_functions.remove(s.function)
            raise
    return Result(s, report, name=s.function)


def unregister(session, s: ast.Unregister) -> Result:
    """The function (or a model table's functions) gone, and a Ray Serve deployment of each."""
    removed = []
    if session.model_functions is not None:
        removed = [s.path] if session.model_functions.remove(s.path) else session.model_functions.remove_for_table(s.path)
    if not removed:
        raise MLSQLError(f"no function is registered as {s.path} or from a model table of that name")
    undeployed = [name for name in removed if deployments.undeploy(name)]
    also = f" (and the Ray Serve deployment of {', '.join(undeployed)})" if undeployed else ""
    return Result(s, f"unregistered {', '.join(removed)}{also}")
