"""Issue 14, item 6 (templates): Velocity's #set/#foreach/#if in SQL and ${template.get(...)}
(byzer-doc grammar/select.md, grammar/template.md)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from mlsql_ray import Session
from mlsql_ray.lang.templates import render
from mlsql_ray.errors import MLSQLError

MOCK = 'select "" as features, 1 as label as mockData;\n'  # select.md's mock table: label is an int


def test_select_md_foreach_example(session: Session):
    """select.md: the #foreach expands to one SUM per column, as if written by hand (label = '' is
    NULL for the int label, as in Spark)."""
    table = session.execute(MOCK + """
select
#set($colums=["features","label"])
#foreach( $column in $colums )
    SUM( case when `$column` is null or `$column`='' then 1 else 0 end ) as $column,
#end
 1 as a from mockData as output;
""")[-1].table
    assert table.column_names == ["features", "label", "a"]
    assert [f.type for f in table.schema] == [pa.int64(), pa.int64(), pa.int32()]  # Spark: bigint, bigint, int
    assert table.to_pylist() == [{"features": 1, "label": 0, "a": 1}]


def test_select_md_template_get_example(session: Session):
    """select.md: ${template.get("sum_tpl","label")} is the variable's text with {0} filled in."""
    table = session.execute(MOCK + """
set sum_tpl = '''
SUM( case when `{0}` is null or `{0}`='' then 1 else 0 end ) as {0}
''';

select ${template.get("sum_tpl","label")},
${template.get("sum_tpl","features")}
from mockData as output;
""")[-1].table
    assert table.to_pylist() == [{"label": 0, "features": 1}]


@pytest.mark.parametrize("template, expected", [
    ("#set($n = 3)#if($n > 2 && $n != 5)big#elseif($n == 2)two#{else}small#end", "big"),
    ("#set($n = 2)#if($n gt 2)big#elseif($n eq 2)two#{else}small#end", "two"),
    ("#if(!$missing)none#end", "none"),
    ("#foreach($i in [1..4])$i#if($foreach.hasNext),#end#end", "1,2,3,4"),
    ("#foreach($i in [3..1])$velocityCount:$i #end", "1:3 2:2 3:1 "),
    ("#set($cols = ['a', 'b'])$cols.size() $cols.get(1).toUpperCase()", "2 B"),
    ("#set($p = 'x')#set($q = \"${p}y$p\")$q", "xyx"),
    ("#set($a = 7 / 2 + 10 % 4 * 2)$a", "7"),
    ("where name rlike '^a$' and cost > $limit and x = '$!nothing'", "where name rlike '^a$' and cost > $limit and x = ''"),
    ("a\n  #foreach($c in ['x'])\n  $c\n  #end\nb", "a\n  x\nb"),  # directive lines vanish whole
])
def test_directives_and_expressions(template: str, expected: str):
    assert render(template) == expected


@pytest.mark.parametrize("template, message", [
    ("#foreach($i in [1, 2])$i", "has no #end"),
    ("#if(true)x", "has no #end"),
    ("x#end", "#end without an opening"),
    ("#set($a = 1", "unclosed"),
    ("#set($b = 'x')#set($a = $b.getClass())", "no method getClass"),
    ("#set($a = __import__)", "unknown word"),
    ("#foreach($i in [1..1000000])#end", "at most 100000 apart"),
])
def test_no_code_runs_and_mistakes_are_clear(template: str, message: str):
    with pytest.raises(MLSQLError, match=message):
        render(template)


def test_a_template_error_points_at_the_statement(session: Session):
    with pytest.raises(MLSQLError, match="has no #end") as caught:
        session.execute("select 1 as a as t;\nselect\n#foreach($c in ['a'])\n$c from t as u;")
    assert (caught.value.line, caught.value.column) == (2, 1)
