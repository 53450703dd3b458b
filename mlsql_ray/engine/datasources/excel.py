"""``excel``: a sheet of an ``.xlsx`` workbook, read by fastexcel (Rust's calamine), written by
xlsxwriter (one workbook file, as spark-excel writes it).

As Byzer's Excel source (its copy of spark-excel) reads them: ``header`` must be given ("true":
the range's first row holds the column names), every value is a string unless
``inferSchema="true"``. ``sheetName`` picks the sheet; ``dataAddress`` is a sheet name, a range
(``B6:C7``) or both (``'comment2'!B6:C7``).
"""

from __future__ import annotations

import functools
import os
import re
import uuid
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import MLSQLError
from ...objectstore import ObjectPath
from .. import object_files
from ..result import Result
from ...options import Param, flag, get
from .base import DataSource

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


def _header(options: dict, what: str) -> bool:
    """``header``, which Byzer's Excel source requires (spark-excel's ``checkParameter``) and
    reads with Scala's ``toBoolean``: "true" or "false", in any case."""
    if get(options, "header") is None:
        raise MLSQLError(f'{what} needs header="true" or header="false": Byzer\'s Excel source requires it '
                         '(does the first row hold the column names?)')
    return flag(options, "header", False, what)


def _columns(first_row: list[str | None], header: bool) -> list[tuple[int, str]]:
    """(position, name) of the columns spark-excel makes from the range's first row: one per cell
    the row has (an empty cell gives no column), named by its text with ``header``, a blank text
    ``_cK`` and a repeated one the text followed by K, else ``_cK`` (K: the cell's place among the
    row's cells)."""
    cells = [(i, text) for i, text in enumerate(first_row) if text is not None]
    if not header:
        return [(i, f"_c{k}") for k, (i, _) in enumerate(cells)]
    texts = [text for _, text in cells]
    repeated = {text for text in texts if texts.count(text) > 1}
    return [(i, f"_c{k}" if text == "" else f"{text}{k}" if text in repeated else text)
            for k, (i, text) in enumerate(cells)]


def _load(session, s) -> None:
    """As spark-excel reads a sheet: the columns come from the range's first row (``_columns``),
    the rows below it (``header="true"``) or from it on (``"false"``); a row with no cell in those
    columns is no row (POI's row iterator skips rows that hold no cells)."""
    import fastexcel  # a Rust extension: loaded on first use

    location = session.location(s.path, s.options)
    if isinstance(location, ObjectPath):  # fetched whole into the session's staging folder
        path = object_files.fetch(location, "excel", session.staging())
    else:
        path = location
    if not path.is_file():
        raise MLSQLError(f"cannot load excel: no such file: {location}")
    header = _header(s.options, "load excel")
    infer = flag(s.options, "inferSchema", False)
    sheet, limits = _address(s.options.get("dataAddress", "A1"))
    sheet = s.options.get("sheetName") or sheet
    try:
        reader = fastexcel.read_excel(str(path))
    except Exception as exc:  # fastexcel's errors have no common public base class
        raise MLSQLError(f"cannot read {location} as an Excel workbook: {exc}") from exc
    if sheet is not None and sheet not in reader.sheet_names:
        raise MLSQLError(f"{location} has no sheet {sheet!r} (sheets: {', '.join(reader.sheet_names)})")
    sheet = sheet if sheet is not None else 0
    rows = limits.get("rows")
    skip = limits.get("skip_rows", 0)
    columns = limits.get("use_columns")
    first = reader.load_sheet(sheet, header_row=None, skip_rows=skip, n_rows=1, use_columns=columns,
                              dtypes="string").to_arrow()
    kept = _columns([c[0].as_py() if len(c) else None for c in first.columns], header)
    data = reader.load_sheet(
        sheet,
        header_row=skip if header else None,
        skip_rows=None if header else skip,
        n_rows=(rows - 1 if header else rows) if rows is not None else None,
        use_columns=columns,
        dtypes=None if infer else "string",
    ).to_arrow()
    data = pa.Table.from_batches([data])
    kept = [(i, name) for i, name in kept if i < data.num_columns]
    table = pa.table([data.column(i) for i, _ in kept], names=[name for _, name in kept])
    if table.num_columns:
        table = table.filter(pc.invert(functools.reduce(pc.and_kleene, [pc.is_null(c) for c in table.columns])))
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

    target = session.location(s.path, s.options)
    if target.exists() and s.mode in ("errorifexists", "append"):
        raise MLSQLError(f"{target} already exists; an Excel file can only be written whole (save overwrite)")
    if target.exists() and s.mode == "ignore":
        return Result(s, f"{s.path} exists; nothing written (mode ignore)")
    header = _header(s.options, "save ... as excel")
    sheet, _ = _address(s.options.get("dataAddress", "A1"))
    # written beside the target and renamed over it, or on object storage uploaded as one object
    on_store = isinstance(target, ObjectPath)
    path = session.staging() / uuid.uuid4().hex / target.name if on_store else target
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
        if on_store:
            object_files.upload(path, target, "excel")
    finally:
        staging.unlink(missing_ok=True)
        if on_store:
            path.unlink(missing_ok=True)
    return Result(s, f"saved {rows} rows of {s.table} to excel.`{s.path}` (mode {s.mode})", num_rows=rows)


SOURCE = DataSource(
    "excel", "a sheet of an .xlsx workbook", _load, _save,
    params=(
        Param("header", "", "required (as Byzer's): true if the first row holds the column names (load and save)"),
        Param("inferSchema", "false", "guess column types; otherwise every value is a string"),
        Param("sheetName", "", "the sheet to read (default: the first) or write (default: Sheet1)"),
        Param("dataAddress", "A1", "where the table starts: a sheet name, a cell range (B6:C7), or 'sheet'!B6:C7"),
        Param("comment", "", "accepted for Byzer's scripts (spark-excel's comment character); no row is skipped"),
        Param("dateFormat", "", "accepted for Byzer's scripts; a date cell is read as the workbook types it"),
        Param("maxRowsInMemory", "", "accepted for Byzer's scripts (spark-excel's streaming reader); the sheet is "
                                     "read whole"),
        Param("maxRowsPerSheet", "", "accepted for Byzer's scripts; every row of the sheet is read"),
    ),
)
