"""Plain file formats (parquet, csv, json lines, text): a reader and a writer each.

Readers return lazy DuckDB relations: naming a big file reads nothing, DuckDB scans it when a
query needs it. Writers stream the relation through DuckDB's COPY into a fresh folder that
replaces the target only once it is complete, so a failed save leaves the old files in place.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import duckdb
from sqlglot import exp

from ..errors import MLSQLError
from ..spark import sql_build
from ..options import flag
from .sql import duckdb_message

_LINE_END = r"(\r\n|\r|\n)"  # RE2 reads the escapes: SQL strings keep backslashes
_EXTENSIONS = {"parquet": ".parquet", "csv": ".csv", "json": ".json"}


def data_files(path: Path, fmt: str) -> list[str]:
    """The files a path stands for: itself, or every visible file below it (Spark's layout:
    skip ``_SUCCESS``, ``.crc`` and other names starting with ``_`` or ``.``)."""
    if not path.exists():
        raise MLSQLError(f"cannot load {fmt}: no such file or directory: {path}")
    if path.is_file():
        return [str(path)]
    found = []
    for root, dirs, names in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
        found.extend(os.path.join(root, n) for n in sorted(names) if not n.startswith((".", "_")))
    if not found:
        raise MLSQLError(f"cannot load {fmt}: {path} holds no data files")
    return found


def located(path: Path, fmt: str) -> tuple[list[str], bool]:
    """The data files under ``path`` and whether their folders are Hive partitions (``k=v``)."""
    files = data_files(path, fmt)
    hive = any("=" in part for f in files for part in Path(f).relative_to(path).parts[:-1]) if path.is_dir() else False
    return files, hive


def read_parquet(con: duckdb.DuckDBPyConnection, files: list[str], options: dict[str, str], hive: bool) -> duckdb.DuckDBPyRelation:
    return con.read_parquet(files, hive_partitioning=hive)


def quoted(name: str) -> str:
    """A column name as a DuckDB identifier."""
    return exp.to_identifier(name, quoted=True).sql("duckdb")


def read_json(con: duckdb.DuckDBPyConnection, files: list[str], options: dict[str, str], hive: bool) -> duckdb.DuckDBPyRelation:
    return json_as_spark(con.read_json(files, format="newline_delimited", hive_partitioning=hive))


def json_as_spark(relation: duckdb.DuckDBPyRelation) -> duckdb.DuckDBPyRelation:
    """A field whose values differ in type across the records (``1`` here, ``"str"`` there) is
    read by DuckDB as JSON, each value its JSON text (``"str"`` with its quotes); Spark makes it a
    string column holding each value as text: ``str`` for a string, ``1`` for a number, an
    object's or array's JSON. Such fields become that, in structs and lists too."""
    columns = [(_json_as_text(quoted(name), kind), name) for name, kind in zip(relation.columns, relation.types)]
    if all(text is None for text, _ in columns):
        return relation
    return relation.project(", ".join(f"{text or quoted(name)} AS {quoted(name)}" for text, name in columns))


def _json_as_text(value: str, kind: duckdb.DuckDBPyType) -> str | None:
    """SQL for ``value`` (of DuckDB type ``kind``) with its JSON parts as Spark's text; None when
    it holds no JSON."""
    if str(kind) == "JSON":
        return f"json_extract_string({value}, '$')"
    if kind.id == "list":
        inner = _json_as_text("x", kind.children[0][1])
        return None if inner is None else f"list_transform({value}, lambda x: {inner})"
    if kind.id == "struct":
        fields = [(name, f"{value}.{quoted(name)}", child) for name, child in kind.children]
        texts = [_json_as_text(field, child) for _, field, child in fields]
        if all(text is None for text in texts):
            return None
        packed = ", ".join(f"{quoted(name)} := {text or field}" for (name, field, _), text in zip(fields, texts))
        return f"CASE WHEN {value} IS NULL THEN NULL ELSE struct_pack({packed}) END"
    return None


def read_text(con: duckdb.DuckDBPyConnection, files: list[str], options: dict[str, str], hive: bool) -> duckdb.DuckDBPyRelation:
    """One row per line, as Spark's text source reads (Byzer's ``file``, ``value``): lines end at
    ``\\n``, ``\\r\\n`` or ``\\r``, the last line's end makes no empty row, an empty file has no rows.
    DuckDB refuses a file that is not UTF-8, naming it."""
    query = sql_build.shaped(
        "SELECT filename AS file, unnest(CASE WHEN content = '' THEN []::VARCHAR[] ELSE "
        "regexp_split_to_array(regexp_replace(content, $last_end, ''), $line_end) END) AS value FROM read_text($files)",
        last_end=exp.Literal.string(_LINE_END + "$"), line_end=exp.Literal.string(_LINE_END),
        files=exp.Array(expressions=[exp.Literal.string(f) for f in files]))
    return con.sql(query.sql("duckdb"))


def write(con: duckdb.DuckDBPyConnection, view: str, fmt: str, path: Path, mode: str,
          options: dict[str, str], partition_by: tuple[str, ...]) -> int | None:
    """Write the named table as a folder of part files. Returns rows written, None if ignored."""
    if path.exists() and mode == "errorifexists":
        raise MLSQLError(f"{path} already exists; use save overwrite or save append")
    if path.exists() and mode == "ignore":
        return None
    if path.is_file() and mode == "append":
        # A save is a folder of part files; swapping one in would drop the file's rows.
        raise MLSQLError(f"cannot append to {path}: it is a single file, not a folder of part files; "
                         "save to a folder, or load it and save overwrite the union")
    copy_options = {"FORMAT": exp.var(fmt)}
    if fmt == "csv":
        copy_options["HEADER"] = exp.Boolean(this=flag(options, "header", False))
        copy_options["DELIMITER"] = exp.Literal.string(options.get("sep", options.get("delimiter", ",")))
    staging = path.parent / f".{path.name}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        staging.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MLSQLError(f"cannot save as {fmt} to {path}: {exc.strerror}") from exc
    if partition_by:
        copy_options["PARTITION_BY"] = exp.Tuple(expressions=[sql_build.column(c) for c in partition_by])
        copy_options["FILENAME_PATTERN"] = exp.Literal.string("part-{uuid}")
        target = staging
    else:
        staging.mkdir()
        target = staging / f"part-{uuid.uuid4()}{_EXTENSIONS[fmt]}"
    sql = exp.Copy(this=sql_build.select_all(view).subquery(), kind=False, files=[exp.Literal.string(str(target))],
                   params=[exp.CopyParameter(this=exp.var(k), expression=v) for k, v in copy_options.items()]).sql("duckdb")
    try:
        rows = con.execute(sql).fetchone()[0]
        _publish(staging, path, append=mode == "append")
    except duckdb.Error as exc:
        raise MLSQLError(f"cannot save as {fmt} to {path}: {duckdb_message(exc, [])}") from exc
    except OSError as exc:  # moving the finished files into place: the user's folder, its permissions
        raise MLSQLError(f"cannot save as {fmt} to {path}: {exc.strerror}") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return rows


def _publish(staging: Path, path: Path, append: bool) -> None:
    """Move the finished files into place: add them (append) or swap the whole folder."""
    if append and path.is_dir():
        for src in sorted(staging.rglob("*")):
            if src.is_file():
                dst = path / src.relative_to(staging)
                dst.parent.mkdir(parents=True, exist_ok=True)
                os.replace(src, dst)
        return
    old = None
    if path.exists():
        old = path.parent / f".{path.name}.old-{uuid.uuid4().hex[:8]}"
        os.replace(path, old)
    os.replace(staging, path)
    if old is not None:
        shutil.rmtree(old) if old.is_dir() else old.unlink()
