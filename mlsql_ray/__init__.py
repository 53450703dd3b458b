"""mlsql-ray: MLSQL (Byzer) notebooks and scripts on Arrow, DuckDB, Ray and Delta Lake."""

from .errors import InternalError, MLSQLError, MLSQLSyntaxError
from .lang import parse

__all__ = ["InternalError", "MLSQLError", "MLSQLSyntaxError", "Session", "parse"]
__version__ = "0.1.0"


def __getattr__(name):
    # Session pulls in DuckDB and pyarrow; `mlsql_ray.parse` alone should not pay for them.
    if name == "Session":
        from .engine import Session

        return Session
    raise AttributeError(f"module 'mlsql_ray' has no attribute {name!r}")
