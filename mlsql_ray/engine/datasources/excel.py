"""``excel``: a sheet of an ``.xlsx`` workbook, read by fastexcel (Rust's calamine), written by
xlsxwriter (one workbook file, as spark-excel writes it).

Spark-excel's defaults: the first row holds the column names (``header="true"``), every value is
a string unless ``inferSchema="true"``. ``sheetName`` picks the sheet; ``dataAddress`` is a sheet
name, a range (``B6:C7``) or both (``'comment2'!B6:C7``).
"""

from __future__ import annotations

import os
import re
import uuid
from decimal import Decimal

import pyarrow as pa

from ...errors import MLSQLError
from ..files import truthy
from ..result import Result
from .base import DataSource, Param

_ADDRESS = re.compile(r"^(?:'?(?P<sheet>[^'!]+)'?!)?(?P<c1>[A-Z]+)(?P<r1>\d+)(?::(?P<c2>[A-Z]+)(?P<r2>\d+))?$")


def _address(text: str) -> tuple[str | None, dict]:
    """(sheet, fastexcel range arguments) for a ``dataAddress``: a bare word is a sheet name."""
    match = _ADDRESS.match(text.strip())
    if match is None:
        return text.strip().strip("'"), {}
    first_row = int(match["r1"]) - 1
    limits: dict = {"skip_rows": first_row}
    if match["c2"]:
        limits["use_columns"] = f"{match['c1']}:{match['c2']}"
        limits["rows"] = int(match["r2"]) - first_row
    else:
        limits["use_columns"] = f"{match['c1']}:"
    return match["sheet"], limits


def _load(session, s) -> None:
    import fastexcel  # a Rust extension: loaded on first use

    path = session._path(s.path)
    if not path.is_file():
        raise MLSQLError(f"cannot load excel: no such file: {path}")
    header = truthy(s.options.get("header"), True)
    infer = truthy(s.options.get("inferSchema"), False)
    sheet, limits = _address(s.options.get("dataAddress", "A1"))
    sheet = s.options.get("sheetName") or sheet
    try:
        reader = fastexcel.read_excel(str(path))
    except Exception as exc:  # fastexcel's errors have no common public base class
        raise MLSQLError(f"cannot read {path} as an Excel workbook: {exc}") from exc
    if sheet is not None and sheet not in reader.sheet_names:
        raise MLSQLError(f"{path} has no sheet {sheet!r} (sheets: {', '.join(reader.sheet_names)})")
    rows = limits.get("rows")
    skip = limits.get("skip_rows", 0)
    data = reader.load_sheet(
        sheet if sheet is not None else 0,
        header_row=skip if header else None,
        skip_rows=None if header else (skip or None),
        n_rows=(rows - 1 if header else rows) if rows is not None else None,
        use_columns=limits.get("use_columns"),
        dtypes=None if infer else "string",
    ).to_arrow()
    table = pa.Table.from_batches([data])
    if not header:  # spark-excel names header-less columns _c0, _c1, ...
        table = table.rename_columns([f"_c{i}" for i in range(table.num_columns)])
    session.catalog.add_arrow(s.table, table, f"excel.`{s.path}`")


def _cell(value):
    """A value xlsxwriter can write: numbers, text, booleans and dates as they are, the rest as text."""
    if value is None or isinstance(value, (int, float, str, bool)) or hasattr(value, "isoformat"):
        return value
    if isinstance(value, Decimal):
        return float(value)
    return str(value)


def _save(session, s) -> Result:
    import xlsxwriter  # loaded on first use

    path = session._path(s.path)
    if path.exists() and s.mode in ("errorifexists", "append"):
        raise MLSQLError(f"{path} already exists; an Excel file can only be written whole (save overwrite)")
    if path.exists() and s.mode == "ignore":
        return Result(s, f"{s.path} exists; nothing written (mode ignore)")
    header = truthy(s.options.get("header"), True)
    sheet, _ = _address(s.options.get("dataAddress", "A1"))
    staging = path.parent / f".{path.name}.tmp-{uuid.uuid4().hex[:8]}.xlsx"
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = 0
    book = xlsxwriter.Workbook(str(staging), {"constant_memory": True, "remove_timezone": True,
                                              "default_date_format": "yyyy-mm-dd hh:mm:ss"})
    try:
        worksheet = book.add_worksheet(s.options.get("sheetName") or sheet)
        reader = session.catalog.reader(s.table)
        try:
            if header:
                worksheet.write_row(0, 0, reader.schema.names)
            for batch in reader:
                for row in batch.to_pylist():
                    worksheet.write_row(rows + header, 0, [_cell(v) for v in row.values()])
                    rows += 1
        finally:
            reader.close()
        book.close()
        os.replace(staging, path)
    finally:
        staging.unlink(missing_ok=True)
    return Result(s, f"saved {rows} rows of {s.table} to excel.`{s.path}` (mode {s.mode})", num_rows=rows)


SOURCE = DataSource(
    "excel", "a sheet of an .xlsx workbook", _load, _save,
    params=(
        Param("header", "true", "the first row holds the column names (load and save)"),
        Param("inferSchema", "false", "guess column types; otherwise every value is a string"),
        Param("sheetName", "", "the sheet to read (default: the first) or write (default: Sheet1)"),
        Param("dataAddress", "A1", "where the table starts: a sheet name, a cell range (B6:C7), or 'sheet'!B6:C7"),
    ),
)
