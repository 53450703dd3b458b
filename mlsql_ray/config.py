"""Where things are: the warehouse and the Ray cluster, resolved once from arguments and environment.

Every entry point (``Session(...)``, ``mlsql-ray run``, the kernel, ``models.load_model``,
training checkpoints) asks :func:`resolve`, so all of them honour the same variables in the same
order: an explicit argument, then the environment, then the default.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from .objectstore import ObjectPath, is_uri, storage_options

WAREHOUSE_ENV = "MLSQL_WAREHOUSE"
RAY_ADDRESS_ENV = "MLSQL_RAY_ADDRESS"
DEFAULT_WAREHOUSE = "warehouse"


@dataclass(frozen=True)
class Config:
    """``warehouse``: absolute root of the Delta tables, a local folder or an object store URI
    (``s3://bucket/prefix``, with the AWS environment's options). ``ray_address``: the Ray
    cluster to join (None: an embedded local Ray, started on first need)."""

    warehouse: Path | ObjectPath
    ray_address: str | None


def resolve(warehouse: str | os.PathLike | None = None, ray_address: str | None = None,
            environ: Mapping[str, str] | None = None) -> Config:
    """Arguments win over ``$MLSQL_WAREHOUSE``/``$MLSQL_RAY_ADDRESS``, which win over the defaults
    (``./warehouse``, embedded Ray). Empty strings count as not given."""
    env = os.environ if environ is None else environ
    given = warehouse or env.get(WAREHOUSE_ENV) or DEFAULT_WAREHOUSE
    if is_uri(given):
        root = given if isinstance(given, ObjectPath) else ObjectPath.parse(str(given), storage_options(environ=env))
    else:
        root = Path(given).expanduser().resolve()
    return Config(warehouse=root, ray_address=ray_address or env.get(RAY_ADDRESS_ENV) or None)


def warehouse(path: str | os.PathLike | None = None) -> Path | ObjectPath:
    """Just the warehouse root (for readers that never touch Ray)."""
    return resolve(warehouse=path).warehouse
