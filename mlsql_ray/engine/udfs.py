"""``register ScriptUDF.`` as f where lang="python" and code='''...''';``: Byzer's script UDFs as DuckDB functions.

The code comes from the ``code`` option, or from a table loaded with ``load script.`VAR` as t;``
and named in the statement (``register ScriptUDF.`t` as f ...``; column ``content``). It runs only
here, because the user registered it as a function: that is what they asked for.

- ``udfType="udf"`` (default): the function named by ``methodName`` (default ``apply``), or that
  method of an instance of ``className``. As in Byzer (Jython), a first parameter named ``self`` of
  a plain function receives ``None``. Registered with DuckDB's ``create_function(type="arrow")``:
  DuckDB hands over a batch of rows as Arrow arrays, the Python function is called once per row, and
  the batch's results go back as one Arrow array of the declared ``dataType`` (Spark type names:
  ``string``, ``map(string,string)``, ``array(array(map(string,array(string))))``,
  ``map<string,int>``...; default ``string``, the return type of a Spark Python UDF that declares
  none). Spark hands nulls to the function, so do we. A function without parameters cannot be
  vectorised (no batch tells it the row count): it is a scalar DuckDB function.
- ``udfType="udaf"``: DuckDB has no Python aggregate API, so the aggregate is a DuckDB macro
  ``f(a, b) := __udaf_f(list(a), list(b))``: DuckDB collects each group's inputs into lists, and a
  scalar function over those lists runs the class's ``initialize(buffer)``, ``update(buffer, row)``
  per row, and ``evaluate(buffer)`` — Spark's ``UserDefinedAggregateFunction`` protocol, which
  Byzer's Python UDAFs implement. ``merge`` is never needed: a group is never split. The buffer and
  the row offer Spark's accessors (``get``, ``getLong``, ``getInt``, ``getDouble``, ``getString``...,
  and ``update(i, value)`` on the buffer). Byzer's examples import Spark and Java classes
  (``from org.apache.spark.sql.types import DataTypes, StructType``, ``import java.lang.Long as l``);
  those imports get the small stand-ins of ``_JVM_MODULES``, so the examples run unchanged. The
  number of inputs is ``len(inputSchema().fields)`` (default 1); the result type is ``dataType()``
  unless the ``dataType`` option says otherwise.
- ``lang="scala"`` (Byzer's default) and ``lang="java"`` need Byzer's JVM engine: refused.
"""

from __future__ import annotations

import builtins
import inspect
import re
import textwrap
import types
from collections.abc import Callable
from dataclasses import dataclass, field

import duckdb
import pyarrow as pa
from sqlglot import exp
from sqlglot.errors import ParseError

from ..errors import MLSQLError, first_line
from ..lang import ast
from ..ml.functions import SQLFunction
from ..ml.kinds import Kind, serve

JVM_LANGUAGES = ("scala", "java")
UDAF_PREFIX = "__udaf_"


@dataclass
class ScriptFunction(SQLFunction):
    """A registered script UDF, in the session's registry of functions (``ml.functions``) as the
    models' are: ``define`` makes it in DuckDB, a function (``udf``) or a macro over one (``udaf``)."""

    name: str
    udf_type: str
    duckdb_type: str
    define: Callable[[duckdb.DuckDBPyConnection], None]
    table: str = ""  # from no model table
    version: int = 0
    actors: list = field(default_factory=list)

    def create(self, con: duckdb.DuckDBPyConnection) -> None:
        self.define(con)

    def drop(self, con: duckdb.DuckDBPyConnection) -> None:
        if self.udf_type == "udaf":
            con.execute(f'DROP MACRO IF EXISTS "{self.name}"')
            con.remove_function(UDAF_PREFIX + self.name)
        else:
            con.remove_function(self.name)


class ScriptUDFs(Kind):
    """``ScriptUDF`` as a kind of model (``ml.kinds``): it only registers."""

    ANSWERS = frozenset({"register"})

    def matches(self, fmt: str) -> bool:
        return fmt.lower() == "scriptudf"

    def register(self, session, s: ast.Register) -> str:
        """Run the code, find the function, create the DuckDB function (or macro) named
        ``s.function``; what to report."""
        options = {k.lower(): v for k, v in s.options.items()}
        language = options.get("lang", "scala").strip().lower()
        if language in JVM_LANGUAGES:
            default = " (scala is Byzer's default lang)" if "lang" not in options else ""
            raise MLSQLError(f"lang=\"{language}\" UDFs need Byzer's JVM engine, which mlsql-ray does not have{default}; "
                             f"write {s.function} in Python with lang=\"python\"")
        if language != "python":
            raise MLSQLError(f"ScriptUDF supports lang=\"python\" (scala and java need Byzer's JVM engine), not {language!r}")
        udf_type = options.get("udftype", "udf").strip().lower()
        if udf_type not in _CREATORS:
            raise MLSQLError(f"udfType must be udf or udaf, not {udf_type!r}")
        namespace = _run_code(_code(session, s, options), s.function)
        function = _CREATORS[udf_type](session.con, s.function, namespace, options)
        serve(session, [function])
        return f"registered {s.function}: a Python {udf_type} returning {function.duckdb_type}"


SCRIPT_UDF = ScriptUDFs()


# -- the code ------------------------------------------------------------------------------------

def _code(session, s: ast.Register, options: dict[str, str]) -> str:
    """The ``code`` option, else the ``content`` of the table named in the statement."""
    if "code" in options:
        return options["code"]
    if not s.path:
        raise MLSQLError("register ScriptUDF needs the code: code='''...''', or a table from load script.`VAR` "
                         "named as ScriptUDF.`TABLE`")
    table = session.catalog.arrow(s.path)
    if "content" not in table.column_names or table.num_rows == 0:
        raise MLSQLError(f"{s.path} holds no code: ScriptUDF.`{s.path}` reads the column content of a table "
                         f"from load script.`VAR` as {s.path};")
    return table.column("content")[0].as_py()


def _run_code(code: str, function: str) -> dict:
    """Execute the UDF's module code; imports of Spark/Java classes get stand-ins."""
    namespace = {"__builtins__": {**vars(builtins), "__import__": _import}, "__name__": f"udf_{function}"}
    try:
        exec(compile(_dedent(code), f"<ScriptUDF {function}>", "exec"), namespace)  # noqa: S102 - the user registered this code to run
    except SyntaxError as exc:
        raise MLSQLError(f"the Python code of {function} does not compile: {exc.msg} (code line {exc.lineno})") from exc
    except Exception as exc:  # the user's code failed while defining itself: their error to see
        raise MLSQLError(f"the Python code of {function} failed while loading: {type(exc).__name__}: {exc}") from exc
    return namespace


def _dedent(code: str) -> str:
    """Byzer's examples indent the code as a whole inside ''' (and start it on the next line)."""
    return textwrap.dedent(code.strip("\n"))


def _member(namespace: dict, options: dict[str, str], function: str, default_method: str):
    """``methodName`` (default ``default_method``) of ``className`` (an instance), or a top-level function."""
    class_name = options.get("classname")
    method = options.get("methodname", default_method)
    if class_name:
        cls = namespace.get(class_name)
        if not isinstance(cls, type):
            raise MLSQLError(f"the code of {function} defines no class {class_name}")
        instance = _instance(cls, function)
        return instance if method is None else _attribute(instance, method, f"class {class_name}", function)
    if method is None:
        classes = [v for v in namespace.values() if isinstance(v, type) and v.__module__ == f"udf_{function}"]
        if len(classes) != 1:
            raise MLSQLError(f"the code of {function} should define one class (or name it with className=\"...\")")
        return _instance(classes[0], function)
    target = namespace.get(method)
    if not callable(target):
        raise MLSQLError(f"the code of {function} defines no function {method} (name another with methodName=\"...\")")
    return target


def _instance(cls: type, function: str):
    try:
        return cls()
    except Exception as exc:  # the user's class failed to construct: their error to see
        raise MLSQLError(f"the class {cls.__name__} of {function} cannot be created: {type(exc).__name__}: {exc}") from exc


def _attribute(instance, name: str, where: str, function: str):
    target = getattr(instance, name, None)
    if not callable(target):
        raise MLSQLError(f"{where} in the code of {function} has no method {name}")
    return target


# -- types ---------------------------------------------------------------------------------------

_COMPLEX_OPEN = re.compile(r"\b(array|map|struct)\s*\($", re.IGNORECASE)


def _spark_type_text(text: str) -> str:
    """Byzer writes ``map(string,array(string))``; Spark DDL writes ``map<string,array<string>>``."""
    out: list[str] = []
    stack: list[bool] = []
    for char in text:
        if char == "(":
            complex_type = bool(_COMPLEX_OPEN.search("".join(out) + char))
            stack.append(complex_type)
            out.append("<" if complex_type else char)
        elif char == ")":
            out.append(">" if stack and stack.pop() else char)
        else:
            out.append(char)
    return "".join(out)


def result_types(con: duckdb.DuckDBPyConnection, spark_type: str, function: str) -> tuple[str, pa.DataType]:
    """A Spark type name as DuckDB spells it (through sqlglot's DataType) and as Arrow holds it."""
    try:
        data_type = exp.DataType.build(_spark_type_text(spark_type.strip()), dialect="spark")
        duck_type = data_type.sql("duckdb")
        probe = exp.select(exp.cast(exp.null(), data_type).as_("v"))
        arrow_type = con.sql(probe.sql("duckdb")).to_arrow_table().schema.field(0).type
    except (ParseError, ValueError, duckdb.Error) as exc:
        raise MLSQLError(f"dataType=\"{spark_type}\" of {function} is not a Spark type ({first_line(exc)})") from exc
    return duck_type, arrow_type


def _to_python(arrow_type: pa.DataType) -> Callable:
    """Arrow → the Python values a Spark Python UDF sees: maps as dicts (Arrow gives pairs)."""
    if pa.types.is_map(arrow_type):
        key, item = _to_python(arrow_type.key_type), _to_python(arrow_type.item_type)
        return lambda v: None if v is None else {key(k): item(x) for k, x in v}
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type) or pa.types.is_fixed_size_list(arrow_type):
        item = _to_python(arrow_type.value_type)
        return lambda v: None if v is None else [item(x) for x in v]
    if pa.types.is_struct(arrow_type):
        fields = {f.name: _to_python(f.type) for f in arrow_type}
        return lambda v: None if v is None else {k: fields[k](x) for k, x in v.items()}
    return lambda v: v


def _column_values(column) -> list:
    return [_to_python(column.type)(v) for v in column.to_pylist()]


def _results(values: list, arrow_type: pa.DataType, function: str) -> pa.Array:
    try:
        return pa.array(values, type=arrow_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"{function} returned values that are not of its dataType {arrow_type}: {exc}") from exc


# -- udf -----------------------------------------------------------------------------------------

def _create_udf(con, name: str, namespace: dict, options: dict[str, str]) -> ScriptFunction:
    target = _member(namespace, options, name, "apply")
    duck_type, arrow_type = result_types(con, options.get("datatype", "string"), name)
    call, arity = _without_self(target)

    def batch(*columns):
        rows = zip(*(_column_values(c) for c in columns))
        return _results([_guarded(name, call, *row) for row in rows], arrow_type, name)

    def define(con) -> None:
        if arity == 0:
            con.create_function(name, lambda: _results([_guarded(name, call)], arrow_type, name)[0].as_py(), [],
                                duck_type, side_effects=True)
        else:
            con.create_function(name, batch, None, duck_type, type="arrow", null_handling="special")

    return ScriptFunction(name, "udf", duck_type, define)


def _guarded(function: str, call: Callable, *args):
    """Call the user's code; what it raises names the function and its arguments (DuckDB reports
    the message of what a Python function raises)."""
    try:
        return call(*args)
    except Exception as exc:  # the user's code failed on these values: their error to see
        shown = ", ".join(repr(a) for a in args if not isinstance(a, SparkRow))[:200]
        raise ValueError(f"{function}({shown}) raised {type(exc).__name__}: {exc}") from exc


def _without_self(target: Callable) -> tuple[Callable, int | None]:
    """The function to call and its number of parameters (None: any number). Byzer's Python UDFs
    are written ``def apply(self, m)`` even at top level: there ``self`` gets None."""
    try:
        parameters = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        return target, None
    arity = None if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters) else len(parameters)
    if inspect.isfunction(target) and parameters and parameters[0].name == "self":
        return (lambda *args: target(None, *args)), None if arity is None else arity - 1
    return target, arity


# -- udaf ----------------------------------------------------------------------------------------

class SparkRow:
    """The read side of Spark's ``Row``, as a Python UDAF's ``update(buffer, input)`` uses it."""

    def __init__(self, values: list):
        self.values = values

    def get(self, i: int):
        return self.values[i]

    getLong = getInt = getShort = getDouble = getFloat = getString = getBoolean = getAs = get

    def size(self) -> int:
        return len(self.values)

    length = size


class AggregationBuffer(SparkRow):
    """Spark's ``MutableAggregationBuffer``: a row that ``update(i, value)`` writes (growing as needed)."""

    def update(self, i: int, value) -> None:
        self.values.extend([None] * (i + 1 - len(self.values)))
        self.values[i] = value


def _create_udaf(con, name: str, namespace: dict, options: dict[str, str]) -> ScriptFunction:
    aggregator = _member(namespace, options, name, None)
    for method in ("initialize", "update", "evaluate"):
        _attribute(aggregator, method, "the aggregation class", name)
    declared = options.get("datatype") or _schema_call(aggregator, "dataType")
    duck_type, arrow_type = result_types(con, declared or "string", name)
    input_schema = _schema_call(aggregator, "inputSchema")
    arity = len(input_schema.fields) if isinstance(input_schema, StructType) and input_schema.fields else 1

    def batch(*columns):
        results = []
        for groups in zip(*(_column_values(c) for c in columns)):
            buffer = AggregationBuffer([])
            _guarded(name, aggregator.initialize, buffer)
            for row in zip(*(group or [] for group in groups)):
                _guarded(name, aggregator.update, buffer, SparkRow(list(row)))
            results.append(_guarded(name, aggregator.evaluate, buffer))
        return _results(results, arrow_type, name)

    helper = UDAF_PREFIX + name
    parameters = [f"a{i}" for i in range(arity)]
    lists = ", ".join(f"list({p})" for p in parameters)

    def define(con) -> None:
        con.create_function(helper, batch, None, duck_type, type="arrow", null_handling="special")
        con.execute(f'CREATE OR REPLACE MACRO "{name}"({", ".join(parameters)}) AS "{helper}"({lists})')

    return ScriptFunction(name, "udaf", duck_type, define)


def _schema_call(aggregator, method: str):
    """``dataType()``/``inputSchema()`` if the class defines them (Byzer's examples do)."""
    member = getattr(aggregator, method, None)
    return member() if callable(member) else None


_CREATORS: dict[str, Callable[..., ScriptFunction]] = {"udf": _create_udf, "udaf": _create_udaf}


# -- stand-ins for the Spark and Java classes Byzer's (Jython) UDAF examples import ---------------------

class StructType:
    """``StructType().add("a", DataTypes.LongType)``: only the field names and types are kept."""

    def __init__(self, fields: tuple = ()):
        self.fields = list(fields)

    def add(self, name: str, data_type: str, *_) -> StructType:
        return StructType((*self.fields, (name, data_type)))


class DataTypes:
    """Spark's type constants as the Spark type names ``result_types`` reads."""

    StringType, BinaryType, BooleanType, DateType, TimestampType = "string", "binary", "boolean", "date", "timestamp"
    ByteType, ShortType, IntegerType, LongType = "tinyint", "smallint", "int", "bigint"
    FloatType, DoubleType = "float", "double"


def _module(name: str, **members) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(members)
    return module


_JVM_MODULES = {
    "org.apache.spark.sql.expressions": _module("org.apache.spark.sql.expressions", MutableAggregationBuffer=AggregationBuffer,
                                                UserDefinedAggregateFunction=object),
    "org.apache.spark.sql.types": _module("org.apache.spark.sql.types", DataTypes=DataTypes, StructType=StructType),
    "org.apache.spark.sql": _module("org.apache.spark.sql", Row=SparkRow),
    "java.lang": _module("java.lang", Long=int, Integer=int, Short=int, Double=float, Float=float, String=str,
                         Boolean=bool),
}
_JVM_ROOTS = {name.split(".")[0] for name in _JVM_MODULES}


def _import(name, globals=None, locals=None, fromlist=(), level=0):  # __import__'s own signature
    """``import`` inside UDF code: the Spark/Java names Byzer's examples use get stand-ins, the rest is Python's."""
    if name.split(".")[0] in _JVM_ROOTS:
        if fromlist:
            if name not in _JVM_MODULES:
                raise ImportError(f"mlsql-ray has no stand-in for {name} (it offers {', '.join(sorted(_JVM_MODULES))})")
            return _JVM_MODULES[name]
        return _Package(name.split(".")[0])  # ``import java.lang.Long as l`` walks java → lang → Long
    return builtins.__import__(name, globals, locals, fromlist, level)


class _Package:
    """A package prefix of ``_JVM_MODULES`` (``java``, ``org.apache``...), walked by ``import a.b.C as x``."""

    def __init__(self, path: str):
        self._path = path

    def __getattr__(self, part: str):
        name = f"{self._path}.{part}"
        return _JVM_MODULES.get(name) or _Package(name)
