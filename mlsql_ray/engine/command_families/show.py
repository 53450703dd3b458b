"""``!show ...``: what the session and this engine have — tables, data sources, ETs, functions,
jobs, resources, settings. Each subcommand is a path (``!show "et/params/NAME"`` or ``!show tables
from db``), matched against ``SUBCOMMANDS``, where ``*`` stands for a name."""

from __future__ import annotations

import os
from importlib.metadata import PackageNotFoundError, version
from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import MLSQLError
from ...masking import MASK, is_secret_name
from ...ml import deployments
from .. import datasources, ets
from ..datasources import jdbc
from ..kinds import FEATURE_ETS, KINDS
from ...storage import delta
from ..result import Result
from ...cells.runner import KNOWN_SETTINGS


def _strings(*names: str) -> pa.Schema:
    return pa.schema([(n, pa.string()) for n in names])


def _version(session, name=None) -> pa.Table:
    packages = ["mlsql-ray", "duckdb", "sqlglot", "pyarrow", "deltalake", "ray"]

    def installed(package: str) -> str:
        try:
            return version(package)
        except PackageNotFoundError:
            return "not installed"

    return pa.table({"name": packages, "version": [installed(p) for p in packages]})


def _spelling(pattern: tuple[str, ...]) -> str:
    """How a subcommand is written: ``!show tables from NAME``, ``!show "et/params/NAME"``."""
    words = ["NAME" if p == "*" else p for p in pattern]
    if len(words) == 1 or words[0] == "tables":
        return "!show " + " ".join(words)
    return f'!show "{"/".join(words)}"'


def _commands(session, name=None) -> pa.Table:
    return pa.table({"command": [_spelling(pattern) for pattern, _, _ in SUBCOMMANDS],
                     "description": [d for _, d, _ in SUBCOMMANDS]})


def _tables(session, name=None) -> pa.Table:
    return session.catalog.listing()


def _tables_from(session, db: str) -> pa.Table:
    """A ``connect`` alias: the tables that database has; otherwise a warehouse database."""
    if db in session.connections:
        return jdbc.tables(session.connections[db])
    tables = delta.list_tables(session.warehouse)
    return tables.filter(pc.equal(tables.column("db"), db))


def _functions(session, name=None) -> pa.Table:
    return session.con.sql(
        "SELECT function_name AS name, any_value(function_type) AS type, any_value(description) AS description "
        "FROM duckdb_functions() GROUP BY function_name ORDER BY name"
    ).to_arrow_table()


def _function(session, name: str) -> pa.Table:
    table = session.con.sql(
        "SELECT function_name AS name, function_type AS type, array_to_string(parameters, ', ') AS parameters, "
        "return_type, description, array_to_string(examples, '; ') AS examples "
        "FROM duckdb_functions() WHERE lower(function_name) = lower(?)", params=[name]).to_arrow_table()
    if table.num_rows == 0:
        raise MLSQLError(f"no function named {name} (!show functions lists them)")
    return table


def _jobs(session, name=None) -> pa.Table:
    return session.jobs.listing()


def _resource(session, name=None) -> pa.Table:
    """Byzer Notebook's shape: ``activeTasks`` (the session's jobs running beside this one) and
    ``totalCores`` first."""
    page = os.sysconf("SC_PAGE_SIZE")
    return pa.table({
        "activeTasks": [len(session.jobs.running()) - 1],
        "totalCores": [os.cpu_count()],
        "totalMemory": [page * os.sysconf("SC_PHYS_PAGES")],
        "availableMemory": [page * os.sysconf("SC_AVPHYS_PAGES")],
    })


def _conf_list(session, name=None) -> pa.Table:
    """The settings a script can give: Python cell settings (``!python conf``) and ``set ... where
    type="conf"`` values, each with its current value."""
    rows = [(f"python.{k}", session.python_conf.get(k, ""), d) for k, d in KNOWN_SETTINGS.items()]
    rows += [(k, MASK if is_secret_name(k) else v, "set with type=\"conf\"") for k, v in session.conf.items()]
    return pa.table({"name": [r[0] for r in rows], "value": [r[1] for r in rows], "description": [r[2] for r in rows]},
                    schema=_strings("name", "value", "description"))


def _et(session, name: str) -> pa.Table:
    """One ET, or one algorithm of ``train`` (Byzer's ETs include them): name, algType, doc; a name
    of neither is an unknown ET."""
    return (KINDS.find(name, "describe") or FEATURE_ETS).describe(name)


def _et_params(session, name: str) -> pa.Table:
    """An ET's options, or an algorithm's parameters (as ``load modelParams.`NAME``` lists both)."""
    return (KINDS.find(name, "params") or FEATURE_ETS).params(name)


SUBCOMMANDS: list[tuple[tuple[str, ...], str, Callable]] = [
    (("version",), "versions of this engine and its libraries", _version),
    (("commands",), "the !show subcommands", _commands),
    (("tables",), "the tables of this session", _tables),
    (("tables", "from", "*"), "the Delta tables of a warehouse database, or the tables of a connect alias", _tables_from),
    (("datasources",), "the formats load and save know", lambda session, name=None: datasources.listing()),
    (("datasources", "params", "*"), "a data source's options", lambda session, name: datasources.params(name)),
    (("et",), "the ETs run ... as NAME.`` knows", lambda session, name=None: ets.listing()),
    (("et", "params", "*"), "an ET's parameters", _et_params),
    (("et", "*"), "one ET", _et),
    (("functions",), "the SQL functions", _functions),
    (("function", "*"), "one SQL function: parameters, result type, description", _function),
    (("jobs",), "this session's running and recent statements (!kill ID stops a running one)", _jobs),
    (("resource",), "this machine's cores and memory", _resource),
    (("served",), "the models Ray Serve serves (register ... where serve=\"true\"): route, status, replicas",
     lambda session, name=None: deployments.listing()),
    (("conf", "list"), "the settings a script can give, with their values", _conf_list),
]


def _match(words: list[str]) -> tuple[Callable, str | None] | None:
    for pattern, _, handler in SUBCOMMANDS:
        if len(pattern) == len(words) and all(p == "*" or p == w.lower() for p, w in zip(pattern, words)):
            names = [w for p, w in zip(pattern, words) if p == "*"]
            return handler, names[0] if names else None
    return None


def _show(session, s) -> Result:
    words = [part for arg in s.args for part in arg.strip("/").split("/") if part]
    found = _match(words)
    if found is None:
        raise MLSQLError(f"!show {' '.join(s.args)}: unknown; !show commands lists what there is "
                         f"({'; '.join(_spelling(p) for p, _, _ in SUBCOMMANDS)})")
    handler, name = found
    table = handler(session, name)
    return Result(s, f"{table.num_rows} rows", table=table, num_rows=table.num_rows)


COMMANDS: dict[str, Callable] = {"show": _show}
