"""``connect jdbc where ... as ALIAS;``: a database remembered by name."""

from __future__ import annotations

from ...errors import MLSQLError
from ...lang import ast
from ..datasources import jdbc
from ..result import Result


def run(session, s: ast.Connect) -> Result:
    """``connect jdbc where url=... and user=... and password=... as ALIAS;``: remembered for
    ``load jdbc.`ALIAS.table``` and ``save ... as jdbc.`ALIAS.table```; nothing is opened yet."""
    if s.format.lower() != "jdbc":
        raise MLSQLError(f"connect {s.format} is not supported (connect jdbc is)")
    if not s.alias:
        raise MLSQLError("connect jdbc needs a name: connect jdbc where url=\"...\" as ALIAS;")
    database = jdbc.database_from_options(s.options, "connect jdbc")
    session.connections[s.alias] = database
    return Result(s, f"connected {s.alias} to {database.masked_url}" + (f" as {database.user}" if database.user else ""))
