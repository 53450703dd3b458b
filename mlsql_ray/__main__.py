"""``python -m mlsql_ray``: the ``mlsql-ray`` command (mlsql_ray.frontend.cli)."""

from .frontend.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
