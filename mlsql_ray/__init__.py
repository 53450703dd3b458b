"""mlsql-ray: MLSQL (Byzer) notebooks and scripts on Arrow, DuckDB, Ray and Delta Lake."""

from .errors import InternalError, InterruptedAfterCommit, MLSQLError, MLSQLSyntaxError
from .lang import parse

__all__ = ["InternalError", "InterruptedAfterCommit", "MLSQLError", "MLSQLSyntaxError", "Session", "parse"]
__version__ = "0.1.0"


def __getattr__(name):
    # Session pulls in DuckDB and pyarrow; `mlsql_ray.parse` alone should not pay for them.
    if name == "Session":
        from .engine import Session  # see the comment above

        return Session
    raise AttributeError(f"module 'mlsql_ray' has no attribute {name!r}")


def load_ipython_extension(shell) -> None:
    """``%load_ext mlsql_ray``: the ``%mlsql`` and ``%%mlsql`` magics (see ``mlsql_ray.frontend.magic``)."""
    from .frontend.magic import load_ipython_extension as load  # IPython's magics, only for %load_ext

    load(shell)


def unload_ipython_extension(shell) -> None:
    from .frontend.magic import unload_ipython_extension as unload  # IPython's magics, only for %load_ext

    unload(shell)
