"""Where things are: the warehouse, the Ray cluster and the SQL engine, resolved once from arguments and environment.

Every entry point (``Session(...)``, ``mlsql-ray run``, the kernel, ``models.load_model``,
training checkpoints) asks :func:`resolve`, so all of them honour the same variables in the same
order: an explicit argument, then the environment, then the default.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from .errors import MLSQLError
from .objectstore import ObjectPath, is_uri, storage_options

WAREHOUSE_ENV = "MLSQL_WAREHOUSE"
RAY_ADDRESS_ENV = "MLSQL_RAY_ADDRESS"
SQL_ENGINE_ENV = "MLSQL_SQL_ENGINE"
DEFAULT_WAREHOUSE = "warehouse"
#: what runs a script's selects: DuckDB in this process, or Daft over the session's Ray (docs/daft.md)
SQL_ENGINES = ("duckdb", "daft")
SQL_ENGINE_SETTING = "sql_engine"  # set sql_engine="daft" where type="conf"; (and the magic's %config)


@dataclass(frozen=True)
class Config:
    """``warehouse``: absolute root of the Delta tables, a local folder or an object store URI
    (``s3://bucket/prefix``, with the AWS environment's options). ``ray_address``: the Ray
    cluster to join (None: an embedded local Ray, started on first need). ``sql_engine``: one of
    ``SQL_ENGINES``."""

    warehouse: Path | ObjectPath
    ray_address: str | None
    sql_engine: str = "duckdb"


def resolve(warehouse: str | os.PathLike | None = None, ray_address: str | None = None,
            environ: Mapping[str, str] | None = None, sql_engine: str | None = None) -> Config:
    """Arguments win over ``$MLSQL_WAREHOUSE``/``$MLSQL_RAY_ADDRESS``/``$MLSQL_SQL_ENGINE``, which win
    over the defaults (``./warehouse``, embedded Ray, DuckDB). Empty strings count as not given."""
    env = os.environ if environ is None else environ
    given = warehouse or env.get(WAREHOUSE_ENV) or DEFAULT_WAREHOUSE
    if is_uri(given):
        root = given if isinstance(given, ObjectPath) else ObjectPath.parse(str(given), storage_options(environ=env))
    else:
        root = Path(given).expanduser().resolve()
    engine = sql_engine_named(sql_engine or env.get(SQL_ENGINE_ENV) or SQL_ENGINES[0])
    return Config(warehouse=root, ray_address=ray_address or env.get(RAY_ADDRESS_ENV) or None, sql_engine=engine)


def sql_engine_named(name: str) -> str:
    """One of ``SQL_ENGINES`` (any case), or the error that lists them."""
    if name.strip().lower() not in SQL_ENGINES:
        raise MLSQLError(f"unknown SQL engine {name!r}: expected one of {', '.join(SQL_ENGINES)} "
                         f"(--sql-engine, ${SQL_ENGINE_ENV}, Session(sql_engine=...), set sql_engine=... where type=\"conf\")")
    return name.strip().lower()


def warehouse(path: str | os.PathLike | None = None) -> Path | ObjectPath:
    """Just the warehouse root (for readers that never touch Ray)."""
    return resolve(warehouse=path).warehouse
