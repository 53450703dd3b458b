"""A train statement's columns as numpy, each checked: the features (numbers or lists of
numbers), the label, ALS's ids. Read where the rows are read: in the driver for a group fitted
there, on the GroupHost that fits a group (``runner.HostRows``), and on each worker of an algorithm
that reads its own partitions (``algs.keras_classifier.LabelledRows``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..arrays import matrix
from ..errors import MLSQLError


def features_of(table: pa.Table, column: str, what: str, dtype=np.float64) -> np.ndarray:
    """The feature column as a matrix of ``dtype``; a missing or non-numeric column is an error."""
    if column not in table.column_names:
        raise MLSQLError(f"{what} has no features column {column!r} (featuresCol; columns: {', '.join(table.column_names)})")
    kind = table.schema.field(column).type
    values = kind.value_type if hasattr(kind, "value_type") else kind
    if not _numeric(values):
        raise MLSQLError(f"features column {column!r} of {what} must hold numbers or lists of numbers "
                         f"(e.g. vec_dense(array(...))), not {kind}")
    data = table.column(column)
    if pa.types.is_decimal(values):  # SQL literals such as 5.1 are decimals
        data = data.cast(pa.list_(pa.float64()) if values is not kind else pa.float64())
    return matrix(data, dtype)


def _numeric(kind: pa.DataType) -> bool:
    return pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind) or pa.types.is_decimal(kind)


def labels_of(table: pa.Table, column: str, what: str, option: str = "labelCol") -> np.ndarray:
    if column not in table.column_names:
        raise MLSQLError(f"{what} has no label column {column!r} ({option}; columns: {', '.join(table.column_names)})")
    kind = table.schema.field(column).type
    if not _numeric(kind):
        raise MLSQLError(f"label column {column!r} of {what} must be numeric (as in Spark), not {kind}; "
                         "index strings first, e.g. with a CASE expression")
    if table.column(column).null_count:
        raise MLSQLError(f"label column {column!r} of {what} has nulls; fill or filter them first")
    return table.column(column).cast(pa.float64()).to_numpy()


def ids_of(table: pa.Table, column: str, what: str, option: str) -> np.ndarray:
    """An id column (ALS's userCol, itemCol) as float64: whole numbers in Spark's Integer range."""
    if column not in table.column_names:
        raise MLSQLError(f"{what} has no id column {column!r} ({option}; columns: {', '.join(table.column_names)})")
    kind = table.schema.field(column).type
    if not _numeric(kind) or pa.types.is_boolean(kind):
        raise MLSQLError(f"id column {column!r} ({option}) of {what} must hold whole numbers, not {kind}")
    if table.column(column).null_count:
        raise MLSQLError(f"id column {column!r} ({option}) of {what} has nulls; fill or filter them first")
    values = table.column(column).cast(pa.float64()).to_numpy()
    if np.any(values != np.floor(values)) or np.any(np.abs(values) > 2 ** 31 - 1):
        raise MLSQLError(f"id column {column!r} ({option}) of {what} must hold whole numbers in Integer range, "
                         "as Spark's ALS")
    return values
