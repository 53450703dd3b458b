"""Tables as text for terminals (and, later, HTML for notebooks): a preview, never the whole table."""

from __future__ import annotations

import pyarrow as pa

MAX_CELL = 40


def cell_text(value, limit: int = MAX_CELL) -> str:
    """One value, short: long strings and lists are cut with an ellipsis."""
    if value is None:
        text = "null"
    elif isinstance(value, (bytes, bytearray)):
        text = f"<{len(value)} bytes>"
    elif isinstance(value, list):
        items = ", ".join(cell_text(v, 8) for v in value[:6])
        text = f"[{items}{', …' if len(value) > 6 else ''}] ({len(value)})" if len(value) > 6 else f"[{items}]"
    elif isinstance(value, float):
        text = f"{value:.6g}"
    else:
        text = str(value)
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_text(table: pa.Table, num_rows: int | None = None, max_rows: int = 20) -> str:
    """A boxed-free, aligned text table with a ``(N rows)`` footer."""
    total = table.num_rows if num_rows is None else num_rows
    shown = table.slice(0, max_rows)
    headers = [f"{f.name}" for f in shown.schema]
    types = [_short_type(f.type) for f in shown.schema]
    rows = [[cell_text(v) for v in row.values()] for row in shown.to_pylist()]
    widths = [max([len(h), len(t)] + [len(r[i]) for r in rows]) for i, (h, t) in enumerate(zip(headers, types))]

    def line(cells):
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()

    out = [line(headers), line(types), line(["-" * w for w in widths])]
    out += [line(r) for r in rows]
    more = f", first {shown.num_rows} shown" if total > shown.num_rows else ""
    out.append(f"({total} row{'s' if total != 1 else ''}{more})")
    return "\n".join(out)


def _short_type(t: pa.DataType) -> str:
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return f"list<{_short_type(t.value_type)}>"
    return str(t)
