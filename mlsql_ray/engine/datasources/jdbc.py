"""Databases as Byzer users reach them: ``connect jdbc``, ``load jdbc.``, ``save … as jdbc.``.

Byzer talks JDBC from the JVM; we talk ADBC (Arrow Database Connectivity): the PostgreSQL driver
reads with ``COPY … TO STDOUT (FORMAT binary)`` and writes with ``COPY … FROM STDIN``, straight
into and out of Arrow record batches, so no row passes through Python. The driver is chosen from
the JDBC URL's scheme (``jdbc:postgresql:``, ``jdbc:sqlite:``); the JDBC ``driver`` class option
is accepted for compatibility and not needed.

A password lives only in the session's connection object: it is masked in ``repr``, never put
into a result, and scrubbed from every error message a driver raises. A password inside the URL
(``?password=…``, ``//user:…@host``) too: the URL is shown as ``masked_url``.
"""

from __future__ import annotations

import contextlib
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Iterator, Mapping
from urllib.parse import parse_qsl, quote, unquote, urlencode

import pyarrow as pa
import pyarrow.compute as pc
import sqlglot.errors
from sqlglot import exp

from ...errors import MLSQLError, first_line
from ...masking import mask, secrets_in
from ..result import Result
from ...options import Param, flag
from .base import DataSource

CONNECT_TIMEOUT_S = 5
#: options that describe the connection, not the read or write
CONNECTION_KEYS = ("url", "user", "password", "driver")
#: JDBC URL parameters that mean nothing to libpq (they are MySQL's or the JDBC driver's own)
_JDBC_ONLY_PARAMS = {"characterencoding", "zerodatetimebehavior", "tinyint1isbit", "usessl", "usecursorfetch",
                     "servertimezone", "useunicode", "rewritebatchedstatements", "allowpublickeyretrieval"}


@dataclass(frozen=True)
class Database:
    """Where to connect: a JDBC URL with its user and password (``connect`` options)."""

    url: str
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    options: Mapping[str, str] = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        return f"Database(url={self.masked_url!r}, user={self.user!r}, password={'***' if self.password else None})"

    @property
    def masked_url(self) -> str:
        """The URL as it may be shown: its password masked."""
        return mask(self.url)

    @property
    def kind(self) -> str:
        """The URL's database kind (``postgresql``, ``sqlite``, …)."""
        return url_kind(self.url)

    def scrub(self, text: str) -> str:
        """``text`` with the passwords (the option's and the URL's, plain and URL-encoded) replaced by
        ``***``, and any URL in it masked."""
        given = {self.password or "", *secrets_in(self.url)}
        for secret in sorted({form for s in given for form in (s, quote(s, safe=""), unquote(s))} - {""}, key=len,
                             reverse=True):
            text = text.replace(secret, "***")
        return mask(text)

    @contextlib.contextmanager
    def connect(self) -> Iterator:
        """An ADBC DB-API connection (not autocommitting: the caller commits), errors scrubbed."""
        try:
            connection = _open(self)
        except MLSQLError:
            raise
        except Exception as exc:  # noqa: BLE001 - every driver failure to connect is the user's setting
            raise MLSQLError(f"cannot connect to {self.masked_url}: {self.scrub(first_line(exc))}") from None
        try:
            yield connection
        finally:
            connection.close()


def url_kind(url: str) -> str:
    match = re.match(r"jdbc:([a-z0-9]+):", url, re.IGNORECASE)
    if not match:
        raise MLSQLError(f"expected a JDBC URL like jdbc:postgresql://HOST:PORT/DB or jdbc:sqlite:PATH, got {mask(url)!r}")
    return match.group(1).lower()


def database_from_options(options: Mapping[str, str], what: str) -> Database:
    """The connection a ``connect`` (or an inline ``load``/``save``) describes; a malformed URL
    fails here, at that statement."""
    if not options.get("url"):
        raise MLSQLError(f"{what} needs url=\"jdbc:postgresql://HOST:PORT/DB\" (or a connect alias)")
    url_kind(options["url"])
    rest = {k: v for k, v in options.items() if k not in CONNECTION_KEYS}
    return Database(options["url"], options.get("user"), options.get("password"), rest)


def _open(db: Database):
    kind = db.kind
    if kind == "postgresql":
        import adbc_driver_postgresql.dbapi as driver  # a database's driver, loaded for that database only

        return driver.connect(_libpq_uri(db))
    if kind == "sqlite":
        import adbc_driver_sqlite.dbapi as driver  # a database's driver, loaded for that database only

        path = db.url.split(":", 2)[2]
        return driver.connect(path.removeprefix("//"))
    raise MLSQLError(f"jdbc:{kind} is not supported yet: mlsql-ray reaches PostgreSQL (jdbc:postgresql:) and "
                     f"SQLite (jdbc:sqlite:) through ADBC")


def _libpq_uri(db: Database) -> str:
    """``jdbc:postgresql://host:port/db?k=v`` → ``postgresql://user:password@host:port/db?k=v``."""
    rest = db.url.split(":", 1)[1]  # postgresql://host:port/db?...
    base, _, query = rest.partition("?")
    params = [(k, v) for k, v in parse_qsl(query) if k.lower() not in _JDBC_ONLY_PARAMS]
    user = dict(params).get("user") or db.user
    password = dict(params).get("password") or db.password
    params = [(k, v) for k, v in params if k not in ("user", "password")]
    if not any(k == "connect_timeout" for k, _ in params):
        params.append(("connect_timeout", str(CONNECT_TIMEOUT_S)))
    scheme, _, location = base.partition("://")
    credentials = ""
    if user:
        credentials = quote(user, safe="") + (":" + quote(password, safe="") if password else "") + "@"
    return f"{scheme}://{credentials}{location}?{urlencode(params)}"


# -- names ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Target:
    """A table in a database: ``schema`` may be None (the connection's default)."""

    database: Database
    table: str
    schema: str | None = None

    @property
    def node(self) -> exp.Table:
        """The table's (schema-qualified) name as a sqlglot tree."""
        return exp.table_(self.table, db=self.schema, quoted=True)

    def sql(self, dialect: str) -> str:
        return self.node.sql(dialect)

    @property
    def dialect(self) -> str:
        return "postgres" if self.database.kind == "postgresql" else self.database.kind

    @property
    def place(self) -> dict[str, str]:
        """How ADBC names the table's schema: SQLite calls it a catalog (``main``)."""
        if self.schema is None:
            return {}
        return {"catalog_name" if self.database.kind == "sqlite" else "db_schema_name": self.schema}

    @property
    def label(self) -> str:
        return f"{self.schema}.{self.table}" if self.schema else self.table


def target(path: str, options: Mapping[str, str], connections: Mapping[str, Database], what: str) -> Target:
    """``ALIAS.table``, ``ALIAS.schema.table`` (a ``connect`` alias), or ``db.table`` /
    ``db.schema.table`` with the connection in the statement's own options (the first part then
    names the database, as in Byzer, and the URL decides which one is used)."""
    parts = path.split(".")
    if len(parts) not in (2, 3) or not all(parts):
        raise MLSQLError(f"{what} jdbc.`{path}`: expected jdbc.`ALIAS.table` or jdbc.`ALIAS.schema.table`")
    first, *rest = parts
    if options.get("url"):
        database = database_from_options(options, f"{what} jdbc.`{path}`")
    elif first in connections:
        database = connections[first]
    else:
        known = ", ".join(sorted(connections)) or "none yet"
        raise MLSQLError(f"{what} jdbc.`{path}`: no connection named {first!r} (connect jdbc where url=... as {first}; "
                         f"connected: {known}), and no url option")
    return Target(database, rest[-1], rest[0] if len(rest) == 2 else None)


# -- reading ----------------------------------------------------------------------------------------

def read(where: Target, options: Mapping[str, str]) -> list[pa.Table]:
    """The table, or ``directQuery``'s result, as Arrow, in the parts it was read in: partitioned
    options read in parallel, one connection per partition; otherwise one part."""
    if options.get("directQuery"):
        return [_query(where.database, options["directQuery"])]
    predicates = partition_predicates(options, where.dialect)
    base = exp.select(exp.Star()).from_(where.node).sql(where.dialect)
    if not predicates:
        return [_query(where.database, base)]
    # a predicate is SQL in the database's own dialect (prePtnArray's as the user wrote it): passed as is,
    # since sqlglot's reading might change what it means to that database
    queries = [f"{base} WHERE {p}" for p in predicates]
    with ThreadPoolExecutor(max_workers=min(len(queries), 8), thread_name_prefix="mlsql-jdbc") as pool:
        return list(pool.map(lambda q: _query(where.database, q), queries))


def _query(db: Database, sql: str) -> pa.Table:
    with db.connect() as connection:
        cursor = connection.cursor()
        try:
            cursor.execute(sql)
            return numeric_as_decimal(cursor.fetch_arrow_table())
        except Exception as exc:  # noqa: BLE001 - the database's answer to the user's query or table
            raise MLSQLError(f"the database refused the read: {db.scrub(first_line(exc))}") from None
        finally:
            cursor.close()


def numeric_as_decimal(table: pa.Table) -> pa.Table:
    """PostgreSQL's driver hands ``numeric`` over as text (an opaque extension type over
    strings); Spark's JDBC reader, and so Byzer, gives decimals. A ``numeric(p, s)`` column
    becomes ``decimal128(p, s)``; a bare ``numeric`` gets the precision and scale its values need,
    and stays text when no decimal holds them (``NaN``, more than 38 digits)."""
    for index, column_field in enumerate(table.schema):
        meta = column_field.metadata or {}
        if meta.get(b"POSTGRESQL:type") != b"numeric":
            continue
        column = table.column(index)
        if isinstance(column_field.type, pa.BaseExtensionType):
            column = pa.chunked_array([chunk.storage for chunk in column.chunks], column_field.type.storage_type)
        if not pa.types.is_string(column.type):
            continue
        typmod = int(meta.get(b"POSTGRESQL:typmod", b"-1"))
        if typmod >= 4:
            whole_and_scale, scale = (typmod - 4) >> 16, (typmod - 4) & 0xFFFF
            whole = whole_and_scale - scale
        else:
            unsigned = pc.utf8_ltrim(column, characters="-")
            digits, point = pc.utf8_length(unsigned), pc.find_substring(unsigned, ".")
            has_point = pc.greater_equal(point, 0)
            scale = pc.max(pc.if_else(has_point, pc.subtract(pc.subtract(digits, point), 1), 0)).as_py() or 0
            whole = pc.max(pc.if_else(has_point, point, digits)).as_py() or 1
        if whole + scale > 38 or pc.any(pc.match_substring(column, "N")).as_py():
            table = table.set_column(index, pa.field(column_field.name, pa.string(), metadata=meta), column)
            continue
        decimal = pa.decimal128(max(whole + scale, 1), scale)
        table = table.set_column(index, pa.field(column_field.name, decimal, metadata=meta), column.cast(decimal))
    return table


def partition_predicates(options: Mapping[str, str], dialect: str) -> list[str]:
    """``prePtnArray`` as given, or Spark's stride split of ``partitionColumn`` between
    ``lowerBound`` and ``upperBound`` into ``numPartitions`` (the bounds only set the stride:
    the first and last partitions are open-ended, and NULLs go to the first)."""
    if options.get("prePtnArray"):
        delimiter = options.get("prePtnDelimiter", ",").replace("\\", "")
        return [p.strip() for p in options["prePtnArray"].split(delimiter) if p.strip()]
    keys = ("partitionColumn", "lowerBound", "upperBound", "numPartitions")
    given = [k for k in keys if options.get(k)]
    if not given:
        return []
    if len(given) != len(keys):
        missing = [k for k in keys if k not in given]
        raise MLSQLError(f"partitioned reads need all of {', '.join(keys)}; missing {', '.join(missing)}")
    try:
        lower, upper, count = int(options["lowerBound"]), int(options["upperBound"]), int(options["numPartitions"])
    except ValueError as exc:
        raise MLSQLError(f"lowerBound, upperBound and numPartitions must be integers: {exc}") from None
    if count < 1 or lower > upper:
        raise MLSQLError(f"numPartitions must be at least 1 and lowerBound at most upperBound "
                         f"(got {count}, {lower}, {upper})")
    column = exp.column(options["partitionColumn"], quoted=True).sql(dialect)
    if count == 1 or upper - lower < count:
        count = max(1, min(count, upper - lower)) if upper > lower else 1
    if count == 1:
        return []
    stride = upper // count - lower // count
    predicates, value = [], lower
    for index in range(count):
        low = f"{column} >= {value}" if index else None
        value += stride
        high = f"{column} < {value}" if index != count - 1 else None
        if low is None:
            predicates.append(f"{high} OR {column} IS NULL")
        elif high is None:
            predicates.append(low)
        else:
            predicates.append(f"{low} AND {high}")
    return predicates


def tables(db: Database) -> pa.Table:
    """The tables a connection sees: columns ``schema``, ``table``."""
    with db.connect() as connection:
        try:
            objects = connection.adbc_get_objects(depth="tables").read_all().to_pylist()
        except Exception as exc:  # noqa: BLE001
            raise MLSQLError(f"cannot list the tables of {db.masked_url}: {db.scrub(first_line(exc))}") from None
    rows = []
    for catalog in objects:
        for schema in catalog.get("catalog_db_schemas") or []:
            if schema["db_schema_name"] in ("information_schema", "pg_catalog"):
                continue
            for table in schema.get("db_schema_tables") or []:
                rows.append((schema["db_schema_name"] or "", table["table_name"]))
    rows.sort()
    return pa.table({"schema": [r[0] for r in rows], "table": [r[1] for r in rows]})


def completions(connections: Mapping[str, Database], typed: str) -> list[str]:
    """What ``jdbc.`typed`` can go on with: ``ALIAS.`` for each connection, then, once an alias
    and a dot are typed, that database's tables (``ALIAS.schema.table``; ``public`` tables also
    as ``ALIAS.table``). The database is asked only then, and a failure offers nothing."""
    alias, dot, _ = typed.partition(".")
    if not dot or alias not in connections:
        return [f"{name}." for name in sorted(connections)]
    try:
        listing = tables(connections[alias]).to_pydict()
    except MLSQLError:
        return []
    names = []
    for schema, table in zip(listing["schema"], listing["table"]):
        if schema in ("public", "main", ""):
            names.append(f"{alias}.{table}")
        if schema:
            names.append(f"{alias}.{schema}.{table}")
    return names


# -- writing ----------------------------------------------------------------------------------------

SAVE_MODES = ("append", "overwrite", "errorifexists", "ignore")


def write(where: Target, data: pa.RecordBatchReader, mode: str, options: Mapping[str, str]) -> int | None:
    """Save ``data`` (streamed batch by batch) in one transaction: a failure leaves the table as
    it was. Returns the rows written, or None when ``ignore`` found the table there."""
    db, dialect = where.database, where.dialect
    id_cols = [c.strip() for c in (options.get("idCol") or options.get("idCols") or "").split(",") if c.strip()]
    missing = [c for c in id_cols if c not in data.schema.names]
    if missing:
        raise MLSQLError(f"idCol {missing[0]!r} is not a column of the saved table (columns: {', '.join(data.schema.names)})")
    with db.connect() as connection:
        try:
            exists = _exists(connection, where)
            if exists and mode == "errorifexists":
                raise MLSQLError(f"table {where.label} already exists in {db.masked_url} (save overwrite or append to replace or add)")
            if exists and mode == "ignore":
                return None
            cursor = connection.cursor()
            if not exists:
                _create(cursor, where, data, options.get("createTableColumnTypes"))
            elif mode == "overwrite":
                if flag(options, "truncate", False):
                    emptied = exp.TruncateTable(expressions=[where.node]) if dialect == "postgres" else exp.delete(where.node)
                    cursor.execute(emptied.sql(dialect))
                else:
                    cursor.execute(exp.Drop(tables=[where.node], kind="TABLE").sql(dialect))
                    _create(cursor, where, data, options.get("createTableColumnTypes"))
            if exists and mode == "append" and id_cols:
                written = _upsert(cursor, where, data, id_cols)
            else:
                written = cursor.adbc_ingest(where.table, data, mode="append", **where.place)
            cursor.close()
            connection.commit()
        except MLSQLError:
            connection.rollback()
            raise
        except Exception as exc:  # noqa: BLE001 - the database's answer: nothing was committed
            with contextlib.suppress(Exception):
                connection.rollback()
            raise MLSQLError(f"the database refused the save to {where.label}; nothing was written: "
                             f"{db.scrub(first_line(exc))}") from None
    return written


def _exists(connection, where: Target) -> bool:
    try:
        place = where.place
        connection.adbc_get_table_schema(where.table, catalog_filter=place.get("catalog_name"),
                                         db_schema_filter=place.get("db_schema_name"))
        return True
    except Exception:  # noqa: BLE001 - ADBC says "not found" by raising
        connection.rollback()  # a failed catalog lookup aborts PostgreSQL's transaction
        return False


def _create(cursor, where: Target, data: pa.RecordBatchReader, column_types: str | None) -> None:
    """Create the table from the data's Arrow schema (ADBC's type mapping), then apply
    ``createTableColumnTypes`` (``"name VARCHAR(64), note TEXT"``) where given."""
    cursor.adbc_ingest(where.table, data.schema.empty_table(), mode="create", **where.place)
    if not column_types:
        return
    if where.dialect != "postgres":
        raise MLSQLError("createTableColumnTypes is supported for PostgreSQL tables")
    for spec in _split_top_level(column_types):
        column, _, sql_type = spec.strip().partition(" ")
        if column not in data.schema.names or not sql_type.strip():
            raise MLSQLError(f"createTableColumnTypes: {spec.strip()!r} does not name a column of the table and a type")
        try:
            data_type = exp.DataType.build(sql_type.strip(), dialect="postgres", udt=True)
        except sqlglot.errors.ParseError as exc:
            raise MLSQLError(f"createTableColumnTypes: {spec.strip()!r} has a type that is not SQL ({exc})") from None
        changed = exp.AlterColumn(this=exp.to_identifier(column, quoted=True), dtype=data_type)
        cursor.execute(exp.Alter(this=where.node, kind="TABLE", actions=[changed]).sql("postgres"))


def _split_top_level(text: str) -> list[str]:
    """Split on commas outside parentheses (``NUMERIC(10, 2)`` stays whole)."""
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    return [p for p in parts + [current] if p.strip()]


def _upsert(cursor, where: Target, data: pa.RecordBatchReader, id_cols: list[str]) -> int:
    """Rows whose ``idCol`` values exist replace them, the rest are added: through a temporary
    table, a delete of the matching rows and an insert (no unique index needed). Returns the
    rows saved."""
    dialect = where.dialect
    staging = f"mlsql_upsert_{where.table}"[:60]
    written = cursor.adbc_ingest(staging, data, mode="create", temporary=True)
    table, stage = where.node, exp.table_(staging, quoted=True)
    match = exp.and_(*(exp.column(n, table=stage.this, quoted=True).eq(exp.column(n, table=table.this, db=table.args.get("db"),
                                                                                  quoted=True)) for n in id_cols))
    cursor.execute(exp.delete(table, where=exp.Exists(this=exp.select("1").from_(stage).where(match))).sql(dialect))
    columns = [exp.to_identifier(n, quoted=True) for n in data.schema.names]
    cursor.execute(exp.insert(exp.select(*map(exp.column, columns)).from_(stage), table, columns=columns).sql(dialect))
    cursor.execute(exp.Drop(tables=[stage], kind="TABLE").sql(dialect))
    return written


# -- the data source --------------------------------------------------------------------------------

def _load(session, s) -> None:
    where = target(s.path, s.options, session.connections, "load")
    parts = read(where, s.options)
    # a partitioned read's parts become a Python cell's data servers as they are
    session.catalog.add_arrow(s.table, pa.concat_tables(parts), f"jdbc.`{s.path}`",
                              partitions=tuple(p.num_rows for p in parts) if len(parts) > 1 else ())


def _save(session, s) -> Result:
    where = target(s.path, s.options, session.connections, "save")
    reader = session.catalog.reader(s.table)
    try:
        rows = write(where, reader, s.mode, s.options)
    finally:
        reader.close()  # an unread stream keeps DuckDB busy: no other query could run
    if rows is None:
        return Result(s, f"jdbc.`{s.path}` exists; nothing written (mode ignore)")
    return Result(s, f"saved {rows} rows of {s.table} to jdbc.`{s.path}` (mode {s.mode})", num_rows=rows)


SOURCE = DataSource(
    "jdbc", "tables of a PostgreSQL or SQLite database (connect jdbc ... as ALIAS; jdbc.`ALIAS.[schema.]table`), "
            "through ADBC", _load, _save,
    (
        Param("url", "", "jdbc:postgresql://HOST:PORT/DB or jdbc:sqlite:PATH (or a connect alias in the path)"),
        Param("user", "", "database user"),
        Param("password", "", "database password (never shown; pass it with --set)"),
        Param("driver", "", "the JDBC driver class: accepted, not needed"),
        Param("directQuery", "", "load: this SQL runs in the database"),
        Param("partitionColumn", "", "load: numeric column to split the read on (with lowerBound, upperBound, numPartitions)"),
        Param("lowerBound", "", "load: the stride's lower bound (rows below it are read too)"),
        Param("upperBound", "", "load: the stride's upper bound (rows above it are read too)"),
        Param("numPartitions", "", "load: parallel reads, one connection each"),
        Param("prePtnArray", "", "load: predicates, one partition each"),
        Param("prePtnDelimiter", ",", "load: separator of prePtnArray"),
        Param("idCol", "", "save append: replace rows with these key columns (comma-separated)"),
        Param("truncate", "false", "save overwrite: truncate the table instead of dropping it"),
        Param("createTableColumnTypes", "", "save: column types of a new table, e.g. \"name CHAR(64)\" (PostgreSQL)"),
    ),
)
