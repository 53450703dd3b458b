"""What ``TfIdfInPlace`` and ``Word2VecInPlace`` share: the words of a text column.

Byzer cuts Chinese text with the ansj segmenter and its dictionaries (``dicPaths``); there is no
such segmenter here, so by default a text's words are its runs of letters and digits, with each
CJK ideograph a word of its own ("MLSQL是好的语言" → MLSQL 是 好 的 语 言). ``split="x"`` cuts at
x instead, and ``split=""`` (as in Byzer) into single characters, spaces left out. The words of
the file ``stopWordPath`` names (one a line) are dropped. These settings, the stop words
themselves rather than their file, are part of the saved state, so ``register`` and ``predict``
cut new text exactly as ``train`` did.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import MLSQLError
from ...options import Param
from . import fitted
from .base import Call

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_WORD = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+")

PARAMS = (
    Param("inputCol", "", "the text column"),
    Param("split", "", "cut words at this string (\"\": single characters); not given: letter/digit runs "
                       "and single CJK ideographs"),
    Param("stopWordPath", "", "a file of words to leave out, one a line"),
    Param("ignoreNature", "true", "accepted for Byzer's scripts: words carry no part of speech here"),
    Param("dicPaths", "", "accepted for Byzer's scripts: the ansj segmenter's dictionaries; there is no such "
                          "segmenter here, so words are cut as above"),
)


def settings(call: Call, et: str) -> dict:
    """How train cuts words, as the state keeps it."""
    return {"split": call.options.get("split"), "stopWords": sorted(set(call.lines("stopWordPath", et)))}


def words(settings: dict, text: str) -> list[str]:
    split = settings["split"]
    if split is None:
        found = _WORD.findall(text)
    elif split == "":
        found = [c for c in text if not c.isspace()]
    else:
        found = [w for w in text.split(split) if w.strip()]
    stop = settings["stopWords"]
    return [w for w in found if w not in stop] if stop else found


def column_texts(table: pa.Table, column: str, table_name: str, et: str) -> list[str]:
    """The texts of a string column that has no nulls."""
    values = fitted.column_of(table, column, table_name, et)
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        raise MLSQLError(f"{et}: inputCol {column!r} must hold text, not {values.type}")
    if values.null_count:
        raise MLSQLError(f"{et}: inputCol {column!r} of {table_name} has nulls; fill or filter them first")
    return values.to_pylist()


def argument_texts(values: pa.Array) -> list[str]:
    """A registered function's argument as texts."""
    if values.null_count:
        raise MLSQLError("an input row is null")
    return pc.cast(values, pa.string()).to_pylist()


def no_words(et: str, column: str, table_name: str) -> MLSQLError:
    return MLSQLError(f"{et}: the texts of {column!r} in {table_name} hold no words to learn from")


def vectors_array(rows: np.ndarray) -> pa.Array:
    """rows × values as a column of DOUBLE[] lists (without a Python list per row)."""
    flat = pa.array(rows.astype(np.float64, copy=False).reshape(-1))
    width = rows.shape[1] if rows.ndim == 2 else 0
    return pa.ListArray.from_arrays(pa.array(np.arange(len(rows) + 1) * width, pa.int32()), flat)
