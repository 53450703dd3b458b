"""Byzer's API service request (its doc's ``ml/api_service/process.md``), read the one way both
places that answer it read it: ``mlsql-ray serve``'s ``/model/predict`` and a model served as a Ray
Serve deployment (``ml.deployments``). Parameters come from the query string and a form-encoded
or JSON object body; ``data`` is a JSON array that ``dataType`` says how to read. A request that
does not fit is a ``BadRequest``: the caller answers it with 400 and its text."""

from __future__ import annotations

import binascii
import json
import urllib.parse

import orjson
import pyarrow as pa

from ..spark import vectors as spark_vectors


class BadRequest(ValueError):
    """A request whose parameters or data cannot be read: answered 400 with this text."""


def parameters(query: dict[str, str], body: bytes, content_type: str) -> dict[str, str]:
    """The query string's parameters, then the body's (form-encoded, or a JSON object whose
    values that are not strings are kept as their JSON text)."""
    params = dict(query)
    if not body:
        return params
    kind = content_type.split(";")[0].strip().lower()
    try:
        if kind == "application/json":
            values = json.loads(body)
            if not isinstance(values, dict):
                raise BadRequest("a JSON body must be an object of parameters")
            params.update({k: v if isinstance(v, str) else json.dumps(v) for k, v in values.items()})
        else:
            params.update(form_fields(body))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRequest(f"the body is not {'JSON' if kind == 'application/json' else 'form-encoded UTF-8'}: {exc}") from exc
    return params


def form_fields(body: bytes) -> list[tuple[str, str]]:
    """``urllib.parse.parse_qsl(body.decode(), keep_blank_values=True)``, faster for long values:
    each field is percent-decoded in C (``_unquote``) instead of urllib's Python loop, which took
    14 % of the server's CPU for ``/model/predict`` of one MNIST row (784 numbers,
    ``bench/bench_service.py``). Raw bytes that are not UTF-8 raise UnicodeDecodeError, as
    decoding the body would."""
    return [(_unquote(name), _unquote(value))
            for name, _, value in (field.partition(b"=") for field in body.split(b"&") if field)]


#: a form's escapes as quoted-printable writes them: ``%2C`` as ``=2C``, ``+`` as a space
_PERCENT_AS_QP = bytes.maketrans(b"%+", b"= ")


def _unquote(raw: bytes) -> str:
    """``urllib.parse.unquote_plus``, by ``binascii.a2b_qp`` (quoted-printable's decoder, in C:
    10 µs for a row of 784 numbers against 22 by the ``unicode_escape`` codec and 100 by urllib).
    Its own marks (``=``, line ends) in the field, or a ``%`` that does not begin an escape of two
    hex digits (each escape shortens the field by two; a broken one by less), leave the field to
    urllib, and so do escapes that are not UTF-8."""
    if b"%" not in raw and b"+" not in raw:
        return raw.decode("utf-8")
    if b"=" not in raw and b"\n" not in raw and b"\r" not in raw:
        decoded = binascii.a2b_qp(raw.translate(_PERCENT_AS_QP))
        if len(raw) - len(decoded) == 2 * raw.count(b"%"):
            try:
                return decoded.decode("utf-8")
            except UnicodeDecodeError:
                pass
    return urllib.parse.unquote_plus(raw.decode("utf-8"))


def input_table(data_type: str, data: str) -> pa.Table:
    """``data`` as a table: ``dataType=row`` its objects (their keys the columns); ``vector`` an
    array of number arrays and ``string`` an array of strings, each as the column ``feature``."""
    try:
        values = _loads(data)
    except json.JSONDecodeError as exc:
        raise BadRequest(f"data is not JSON: {exc}") from exc
    if not isinstance(values, list) or not values:
        raise BadRequest("data must be a non-empty JSON array")
    try:
        if data_type == "row":
            if not all(isinstance(v, dict) for v in values):
                raise BadRequest("dataType=row takes a JSON array of objects")
            return pa.Table.from_pylist(values)
        if data_type == "vector":
            return pa.table({"feature": pa.array(values, spark_vectors.ARROW_TYPE)})
        if data_type == "string":
            return pa.table({"feature": pa.array([v if isinstance(v, str) else json.dumps(v) for v in values])})
    except BadRequest:
        raise
    except (pa.ArrowException, TypeError, ValueError) as exc:
        raise BadRequest(f"data does not fit dataType={data_type}: {exc}") from exc
    raise BadRequest(f"dataType must be row, vector or string, not {data_type!r}")


#: a text's digits as 9s, to find a run of LONG_NUMBER: an integer past 64 bits has at least 19 digits
_DIGITS = str.maketrans("0123456789", "9" * 10)
_LONG_NUMBER = "9" * 19


def _loads(data: str):
    """``json.loads(data)``, read by orjson when it can: a row of 784 numbers in 30 µs against 80-240
    (15 % of the server's time under ``/model/predict``'s load, ``bench/bench_service.py``). What
    orjson refuses (``NaN``, or not JSON at all) is json's to read or to word, and so is a text
    with a run of 19 digits (a look of 7 µs): orjson reads an integer past 64 bits as a double,
    json as the integer it is."""
    if _LONG_NUMBER not in data.translate(_DIGITS):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return json.loads(data)
