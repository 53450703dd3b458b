"""Issue 14, item 9: ``register ScriptUDF`` with lang="python" (byzer-doc transform/udf/extend_udf/python_udf.md,
grammar/register.md) as DuckDB functions; Scala and Java refused."""

from __future__ import annotations

import pyarrow as pa
import pytest

from mlsql_ray import Session
from mlsql_ray.errors import MLSQLError

DATA = """set data='''
{"a":1}
{"a":1}
{"a":2}
{"a":1}
''';
load jsonStr.`data` as dataTable;
"""

# Byzer's Python UDAF example (byzer-lang docs/gitbook/zh/udf/python_udaf.md), unchanged: Jython imports included
SUM_UDAF = """set plusFun='''
from org.apache.spark.sql.expressions import MutableAggregationBuffer, UserDefinedAggregateFunction
from org.apache.spark.sql.types import DataTypes,StructType
from org.apache.spark.sql import Row
import java.lang.Long as l
import java.lang.Integer as i

class SumAggregation:

    def inputSchema(self):
        return StructType().add("a", DataTypes.LongType)

    def bufferSchema(self):
        return StructType().add("total", DataTypes.LongType)

    def dataType(self):
        return DataTypes.LongType

    def deterministic(self):
        return True

    def initialize(self,buffer):
        return buffer.update(i(0), l(0))

    def update(self,buffer, input):
        sum = buffer.getLong(i(0))
        newitem = input.getLong(i(0))
        buffer.update(i(0), l(sum + newitem))

    def merge(self,buffer1, buffer2):
        buffer1.update(i(0), l(buffer1.getLong(i(0)) + buffer2.getLong(i(0))))

    def evaluate(self,buffer):
        return buffer.getLong(i(0))
''';
load script.`plusFun` as scriptTable;
register ScriptUDF.`scriptTable` as plusFun options
className="SumAggregation"
and udfType="udaf"
and lang="python"
;
"""


def last(session: Session, text: str) -> pa.Table:
    return session.execute(text)[-1].table


def test_python_udf_md_example_echoes_a_map(session: Session):
    """python_udf.md: echoFun(map("a","b")) is { "a": "b" }, a map<string,string>."""
    table = last(session, """
REGISTER ScriptUDF.`` AS echoFun WHERE
and lang="python"
and dataType="map(string,string)"
and code='''
def apply(self,m):
    return m
 ''';
SELECT echoFun(map("a","b")) AS res as output;
""")
    assert table.schema.field("res").type == pa.map_(pa.string(), pa.string())
    assert table.column("res").to_pylist() == [[("a", "b")]]


def test_code_from_load_script_with_method_name_and_nested_data_type(session: Session):
    """register.md's pattern: code held by a variable, loaded with load script, named by
    ScriptUDF.`table`; methodName picks one of several functions; nested dataType as Byzer writes it."""
    table = last(session, """
set code='''
def apply(self, a, b):
    return a + b

def tags(self, s):
    return [{s: [s, s.upper()]}]
''';
load script.`code` as scriptTable;
register ScriptUDF.`scriptTable` as plusFun where lang="python" and dataType="double";
register ScriptUDF.`scriptTable` as tagFun where lang="python" and methodName="tags"
  and dataType="array(map(string,array(string)))";
""" + DATA + """
select plusFun(a, 2) as plus, tagFun("x") as tags from dataTable as output;
""")
    assert table.schema.field("plus").type == pa.float64()
    assert table.column("plus").to_pylist() == [3.0, 3.0, 4.0, 3.0]
    assert table.schema.field("tags").type == pa.list_(pa.map_(pa.string(), pa.list_(pa.string())))
    assert table.column("tags").to_pylist()[0] == [[("x", ["x", "X"])]]


def test_class_method_and_zero_argument_function_in_a_branch_condition(session: Session):
    """register.md: className + methodName; branch_statement.md: a registered function in !if."""
    table = last(session, """
register ScriptUDF.`` as helloFun where lang="python" and className="A" and methodName="hello" and code='''
class A:
    def hello(self, a):
        return "hello: " + a
''';
register ScriptUDF.`` as title where lang="python" and code='''
def apply(self):
    return "jack"
''';
!if ''' title() == "jack" ''';
   select helloFun("jack") as a as b;
!else;
   select "no" as a as b;
!fi;
select * from b as output;
""")
    assert table.to_pylist() == [{"a": "hello: jack"}]


def test_udf_sees_nulls_and_maps_as_dicts(session: Session):
    """Spark calls a Python UDF with None for null and a dict for a map."""
    table = last(session, """
register ScriptUDF.`` as kindOf where lang="python" and code='''
def apply(self, v):
    return "null" if v is None else type(v).__name__ + ":" + ",".join(sorted(map(str, v)))
''';
select kindOf(map("k", 1)) as m, kindOf(cast(null as string)) as n, kindOf(array(2, 1)) as l as output;
""")
    assert table.to_pylist() == [{"m": "dict:k", "n": "null", "l": "list:1,2"}]


def test_python_udaf_of_byzer_docs_runs_unchanged(session: Session):
    """python_udaf.md: select a, plusFun(a) ... group by a — the sum per group, a bigint."""
    table = last(session, SUM_UDAF + DATA + "select a, plusFun(a) as res from dataTable group by a order by a as output;")
    assert table.schema.field("res").type == pa.int64()
    assert table.to_pylist() == [{"a": 1, "res": 3}, {"a": 2, "res": 2}]
    total = last(session, "select plusFun(a) as res from dataTable as total;")
    assert total.to_pylist() == [{"res": 5}]


def test_registering_a_name_again_replaces_the_function(session: Session):
    session.execute("""register ScriptUDF.`` as f where lang="python" and dataType="int" and code='''
def apply(self, x):
    return x + 1
''';""")
    session.execute("""register ScriptUDF.`` as f where lang="python" and dataType="string" and code='''
def apply(self, x):
    return "v" + str(x)
''';""")
    assert last(session, "select f(1) as r as t;").to_pylist() == [{"r": "v1"}]


@pytest.mark.parametrize("options, language", [
    ("lang=\"scala\" and udfType=\"udf\"", "scala"),
    ("lang=\"java\"", "java"),
    ("udfType=\"udf\"", "scala"),  # Byzer's default lang is scala
])
def test_scala_and_java_need_byzers_jvm_engine(session: Session, options: str, language: str):
    with pytest.raises(MLSQLError) as caught:
        session.execute(f"""select 1 as x as t;
register ScriptUDF.`` as plusFun where {options} and code='''def apply(a:Double,b:Double)={{ a + b }}''';""")
    assert caught.value.line == 2
    assert f"lang=\"{language}\" UDFs need Byzer's JVM engine" in caught.value.message


def test_wrong_return_type_and_bad_code_are_the_users_errors(session: Session):
    with pytest.raises(MLSQLError, match="does not compile"):
        session.execute("""register ScriptUDF.`` as f where lang="python" and code='''def apply(self:''';""")
    with pytest.raises(MLSQLError, match="defines no function apply"):
        session.execute("""register ScriptUDF.`` as f where lang="python" and code='''x = 1''';""")
    with pytest.raises(MLSQLError, match="is not a Spark type"):
        session.execute("""register ScriptUDF.`` as f where lang="python" and dataType="map(" and code='''
def apply(self, x):
    return x''';""")
    session.execute("""register ScriptUDF.`` as f where lang="python" and dataType="int" and code='''
def apply(self, x):
    return "not a number"''';""")
    with pytest.raises(MLSQLError, match="not of its dataType") as caught:
        session.execute("select 1 as a as t;\nselect f(a) as r from t as u;")
    assert caught.value.line == 2


def test_an_exception_inside_the_function_is_the_users_error_at_the_select(session: Session):
    session.execute("""register ScriptUDF.`` as ratio where lang="python" and dataType="double" and code='''
def apply(self, a, b):
    return a / b
''';""")
    assert last(session, "select ratio(1, 4) as r as ok;").to_pylist() == [{"r": 0.25}]
    with pytest.raises(MLSQLError, match=r"ratio\(1, 0\) raised ZeroDivisionError: division by zero") as caught:
        session.execute("select 1 as a as t;\nselect ratio(a, 0) as r from t as broken;")
    assert caught.value.line == 2
    assert "broken" not in session.catalog
