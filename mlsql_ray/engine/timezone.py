"""The session time zone (``set spark.sql.session.timeZone = "..." where type="conf";``): the zone
Spark shows timestamps in and reads wall times in. DuckDB's ``TimeZone`` setting does the same for
TIMESTAMPTZ, which stands for Spark's TIMESTAMP (``spark.datetimes``), so the engine keeps the
two equal on the session's connection and on every worker's (``Session.connection_setup``)."""

from __future__ import annotations

import re
import zoneinfo

import duckdb

from ..errors import MLSQLError

SESSION_TIME_ZONE = "spark.sql.session.timeZone"

_OFFSET = re.compile(r"(?:UTC|GMT|UT)?([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?")
_SHORT_IDS = {"EST": "-05:00", "MST": "-07:00", "HST": "-10:00"}
"""java.time's ZoneId.SHORT_IDS that are fixed offsets (the others name regions ICU knows)."""


def duckdb_zone(spark_zone: str) -> str:
    """Spark's zone id (a region, ``Z``/``UTC``, an offset such as ``+08:00`` or ``GMT+8``) as a name
    both DuckDB (ICU) and Python's zoneinfo know, which Arrow's timestamps carry."""
    text = _SHORT_IDS.get(spark_zone.strip(), spark_zone.strip())
    if text.upper() in ("Z", "UTC", "GMT", "UT"):
        return "UTC"
    offset = _OFFSET.fullmatch(text)
    if offset:
        sign, hours, minutes, seconds = offset.groups()
        if int(hours) > 18 or int(minutes or 0) > 59 or int(seconds or 0) > 59:
            raise _bad(spark_zone)
        if int(minutes or 0) or int(seconds or 0):
            raise MLSQLError(f"{SESSION_TIME_ZONE}: the offset {spark_zone!r} has minutes, which only a region id can "
                             f"stand for here (e.g. Asia/Kolkata for +05:30)")
        hours_east = int(hours) * (-1 if sign == "-" else 1)
        return "UTC" if hours_east == 0 else f"Etc/GMT{-hours_east:+d}"
    try:
        zoneinfo.ZoneInfo(text)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise _bad(spark_zone) from exc
    return text


def _bad(spark_zone: str) -> MLSQLError:
    return MLSQLError(f"{SESSION_TIME_ZONE}: {spark_zone!r} is not a time zone (use a region id such as "
                      f"America/Los_Angeles, or an offset such as +08:00)")


def set_statement(zone: str) -> str:
    return "SET TimeZone = '" + zone.replace("'", "''") + "'"


def apply(con: duckdb.DuckDBPyConnection, spark_zone: str) -> str:
    """Make ``spark_zone`` the connection's time zone; the statement that does it."""
    statement = set_statement(duckdb_zone(spark_zone))
    try:
        con.execute(statement)
    except duckdb.Error as exc:
        raise _bad(spark_zone) from exc
    return statement


def current(con: duckdb.DuckDBPyConnection) -> str:
    """The connection's time zone (a new connection's is the machine's)."""
    return con.execute("SELECT current_setting('TimeZone')").fetchall()[0][0]
