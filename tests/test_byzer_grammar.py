"""Byzer's grammar built-ins, with the examples of ``byzer-doc/grammar/`` as tests.

Branches (``branch_statement.md``), assertions (``assert.md`` and the mlsql-assert plugin), macros
(``macro.md``), the ``date`` variable and ``mode="compile"`` (``set.md``), and the leniencies of
byzer-lang's ``DSLSQL.g4``. Each test runs the doc's script on a real Session and checks the
result the doc gives; test tables are built with ``select`` so that nothing else is needed.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pytest

from mlsql_ray import MLSQLError, MLSQLSyntaxError, Session, lang
from mlsql_ray.lang import ast, datevars

Q = "'''"  # Byzer's block-string quote, kept out of the Python literals for readability


def run(session: Session, text: str):
    return session.execute(text.replace("QQQ", Q))


def column(session: Session, table: str, name: str) -> list:
    return session.table(table).column(name).to_pylist()


# -- branches: grammar/branch_statement.md ----------------------------------------------------

BASIC_IF = """
set a = "{value}";
!if QQQ split(:a,",")[0] == "jack" QQQ;
   select 1 as a as b;
!else;
   select 2 as a as b;
!fi;

select * from b as output;
"""


@pytest.mark.parametrize("value, expected", [("wow,jack", 2), ("jack,wow", 1)])
def test_if_else_takes_the_branch_the_condition_picks(session, value, expected):
    run(session, BASIC_IF.format(value=value))
    assert column(session, "output", "a") == [expected]


def test_if_is_parsed_into_one_statement_with_its_branches():
    statements = lang.parse(BASIC_IF.format(value="x").replace("QQQ", Q))
    assert [type(s) for s in statements] == [ast.Set, ast.If, ast.Select]
    branches = statements[1].branches
    assert [b.condition for b in branches] == [' split(:a,",")[0] == "jack" ', None]
    assert [[s.table for s in b.statements] for b in branches] == [["b"], ["b"]]
    assert (statements[1].line, branches[1].line) == (3, 5)


NESTED = """
set a="jack,2";

!if QQQ select split(:a,",")[0] as :name, split(:a,",")[1] as :num;
:name == "jack" and :num == 3
QQQ;
    select 0 as a as b;
!elif QQQ select split(:a,",")[1] as :num; :num==2 QQQ;
    !if QQQ 2==1 QQQ;
       select 1.1 as a as b;
    !else;
       select 1.2 as a as b;
    !fi;
!else;
  select 2 as a as b;
!fi;


select * from b as output;
"""


def test_nested_branches_and_select_assignments(session):
    run(session, NESTED)
    assert column(session, "output", "a") == [Decimal("1.2")]


def test_condition_variables_reach_nested_conditions_and_the_branch_body(session):
    run(session, """
set name = "jack";
!if QQQselect concat(:name,"dj") as :newname ;:name == "jack" QQQ;
    !if QQQ :newname == "jackdj" QQQ;
       select "${newname}" as a as b;
    !else;
       select "2" as a as b;
    !fi;
!else;
   select "3" as a as b;
!fi;

select * from b as output;
""")
    assert column(session, "output", "a") == ["jackdj"]
    assert "newname" not in session.variables  # declared for the !if … !fi only


@pytest.mark.parametrize("prefix, expected", [("", 2), ('set a = "jack,";\n', 1)])
def test_default_param_yields_to_an_earlier_set(session, prefix, expected):
    run(session, prefix + """
set a = "wow,jack" where type="defaultParam";
!if QQQ split(:a,",")[0] == "jack" QQQ;
   select 1 as a as b;
!else;
   select 2 as a as b;
!fi;

select * from b as output;
""")
    assert column(session, "output", "a") == [expected]


def test_statements_of_the_branch_not_taken_never_run(session, tmp_path):
    out = tmp_path / "never"
    run(session, f"""
select 1 as a as t;
!if QQQ 2==1 QQQ;
   save t as parquet.`{out}`;
   select * from no_such_table as broken;
   select "${{undefined_variable}}" as x as y;
!else;
!fi;
""")
    assert not out.exists()
    assert "broken" not in session.catalog.names()


def test_then_and_elif_chain(session):
    run(session, """
set n = "3";
!if QQQ :n == 1 QQQ;
!then;
   select "one" as w as b;
!elif QQQ :n == 2 QQQ;
   select "two" as w as b;
!elif QQQ cast(:n as int) > 2 and length(:n) = 1 QQQ;
   select "many" as w as b;
!fi;
""")
    assert column(session, "b", "w") == ["many"]


def test_no_branch_taken_without_else_runs_nothing(session):
    run(session, 'set n = "9"; !if QQQ :n == 1 QQQ; select 1 as a as b; !fi;')
    assert "b" not in session.catalog.names()


def test_an_open_if_is_incomplete_input_for_the_console():
    from mlsql_ray.kernel.assist import is_complete

    assert is_complete('!if "1==1";\nselect 1 as a as b;') == {"status": "incomplete", "indent": ""}
    assert is_complete('!if "1==1";\nselect 1 as a as b;\n!fi;') == {"status": "complete"}
    assert is_complete('!fi;')["status"] == "invalid"


@pytest.mark.parametrize("script, line, col, message", [
    ('select 1 as a as t;\n!if "1==1";\nselect 1 as a as b;', 2, 1, "this !if has no matching !fi"),
    ('select 1 as a as t;\n  !fi;', 2, 3, "!fi without an open !if"),
    ('!if "1==1";\n!else;\n!elif "2==2";\n!fi;', 3, 1, "!elif after !else: the !else branch must come last"),
    ('!if "1==1";\n!else;\n!else;\n!fi;', 3, 1, "a second !else in the same !if"),
    ('!if;\n!fi;', 1, 1, "!if needs a condition, like !if ''' :x == \"1\" ''';"),
    ('!if "1==1";\nselect 1 as a as b;\n!then;\n!fi;', 3, 1, "!then may only come right after !if or !elif"),
])
def test_unbalanced_branches_are_syntax_errors_before_anything_runs(session, tmp_path, script, line, col, message):
    out = tmp_path / "out"
    with pytest.raises(MLSQLSyntaxError) as info:
        session.execute(f"select 1 as a as first; save first as parquet.`{out}`;\n" + script)
    assert (info.value.line, info.value.column, info.value.message) == (line + 1, col, message)
    assert not out.exists()


def test_an_error_in_an_elif_condition_points_at_the_elif(session):
    with pytest.raises(MLSQLError) as info:
        run(session, '!if QQQ 1 == 2 QQQ;\n  select 1 as a as b;\n  !elif QQQ :missing == 1 QQQ;\n!fi;')
    assert (info.value.line, info.value.column) == (3, 3)
    assert "undefined variable :missing" in info.value.message


def test_a_condition_must_be_boolean(session):
    with pytest.raises(MLSQLError, match="must be true or false"):
        run(session, "!if QQQ 1 + 1 QQQ;\n!fi;")


# -- assertions: grammar/assert.md and the mlsql-assert plugin ------------------------------------

def test_assert_passes_on_a_non_empty_table_and_the_script_goes_on(session, tmp_path):
    out = tmp_path / "visual_data_0"
    run(session, f"""
select * from values (1997, 3), (1998, 4) as t(Year, v) as vega_datasets;
select count(*) as v from vega_datasets as vega_datasets_count;
!assert vega_datasets_count
QQQ :v>0 QQQ
"数据集不能为空";

save overwrite vega_datasets as parquet.`{out}`;
""")
    assert out.exists()


def test_a_failing_assert_stops_the_script_with_its_message_and_position(session, tmp_path):
    out = tmp_path / "visual_data_0"
    with pytest.raises(MLSQLError) as info:
        run(session, f"""select 1 as v where 1 = 0 as vega_datasets;
select count(*) as v from vega_datasets as vega_datasets_count;
  !assert vega_datasets_count
QQQ :v>0 QQQ
"数据集不能为空";
save overwrite vega_datasets as parquet.`{out}`;
""")
    assert (info.value.message, info.value.line, info.value.column) == ("数据集不能为空", 3, 3)
    assert not out.exists()


def test_assert_compares_two_variables_of_an_assert_table(session):
    script = """
select * from values (1997, 1), ({year}, 2) as t(Year, v) as vega_datasets;
set vega_datasets_count = `select count(*) as v from vega_datasets` where type="sql" ;
set vega_datasets_distinct_count = `select count(distinct Year) as distinct_v from vega_datasets` where type="sql" ;

select ${{vega_datasets_count}} as vega_datasets_count, ${{vega_datasets_distinct_count}} as vega_datasets_distinct_count as assertTable;

!assert assertTable
QQQ :vega_datasets_count == :vega_datasets_distinct_count QQQ
"Year 字段不能有重复";
"""
    run(session, script.format(year=1998))
    with pytest.raises(MLSQLError, match="^8:1: Year 字段不能有重复$"):
        run(session, script.format(year=1997))


def test_assert_checks_every_row_and_a_null_fails(session):
    run(session, "select * from values (1), (2), (3) as t(v) as three;")
    run(session, '!assert three QQQ :v >= 1 QQQ "all positive";')
    with pytest.raises(MLSQLError, match="some below two"):
        run(session, '!assert three QQQ :v >= 2 QQQ "some below two";')
    run(session, "select * from values (1), (null) as t(v) as with_null;")
    with pytest.raises(MLSQLError, match="no nulls"):
        run(session, '!assert with_null QQQ :v >= 1 QQQ "no nulls";')


def test_assert_model_status_as_in_the_plugin_doc(session):
    run(session, 'select "status" as name, "success" as value as result;')
    run(session, '!assert result QQQ:value=="success"QQQ  "all model status should be success";')
    run(session, 'select "status" as name, "failed" as value as result;')
    with pytest.raises(MLSQLError, match="^1:1: all model status should be success$"):
        run(session, '!assert result QQQ:value=="success"QQQ  "all model status should be success";')


def test_assert_that_a_variable_is_set(session):
    script = '!assert inputTable in __set__  QQQ inputTable is missing. Try set inputTable="" QQQ;'
    with pytest.raises(MLSQLError) as info:
        run(session, script)
    assert info.value.message == 'inputTable is missing. Try set inputTable=""'
    run(session, 'set inputTable="abc" where scope="session";\n' + script)
    run(session, '!assert __set__ QQQ :inputTable == "abc" QQQ "wrong input";')
    with pytest.raises(MLSQLError, match="wrong input"):
        run(session, '!assert __set__ QQQ :inputTable == "xyz" QQQ "wrong input";')


TABLE1 = """select * from values
  (120, 100, 260, "B group"), (160, 100, 260, "C group"), (170, 100, 260, "C group"),
  (150, 100, 260, "B group"), (110, 100, null, "A group"), (130, null, null, "A group"),
  (140, 200, null, "A group")
  as t(x, y, z, dataType) as table1;"""


@pytest.fixture
def table1(session):
    """The table of assert.md (its jsonStr rows, built with select)."""
    run(session, TABLE1)
    return session


def result_rows(results) -> list[tuple]:
    table = results[-1].table
    return sorted(tuple(row.values()) for row in table.to_pylist())


def test_assert_not_null_returns_the_rows_with_nulls(table1):
    results = run(table1, "!assertNotNull table1 'z';")
    assert result_rows(results) == [(110, 100, None, "A group"), (130, None, None, "A group"), (140, 200, None, "A group")]
    assert results[-1].table.column_names == ["x", "y", "z", "dataType"]


def test_assert_not_null_throw(table1):
    with pytest.raises(MLSQLError, match="^1:1: Assert Failed: 'table1' dirty count: 3$"):
        run(table1, "!assertNotNullThrow table1 'z';")
    run(table1, "!assertNotNullThrow table1 'x,dataType';")


def test_assert_unique_key_lists_each_repeating_column(table1):
    assert result_rows(run(table1, '!assertUniqueKey table1 "z";')) == [("z",)]
    results = run(table1, '!assertUniqueKey table1 "x,y,dataType";')
    assert results[-1].table.to_pylist() == [{"ConflictKey": "y"}, {"ConflictKey": "dataType"}]
    assert run(table1, '!assertUniqueKey table1 "x";')[-1].table.num_rows == 0


def test_assert_unique_key_throw(table1):
    with pytest.raises(MLSQLError, match="^1:1: Assert Failed: conflict key: y,dataType$"):
        run(table1, '!assertUniqueKeyThrow table1 "x,y,dataType";')
    run(table1, '!assertUniqueKeyThrow table1 "x";')


def test_assert_unique_keys_returns_the_rows_whose_combined_key_repeats(table1):
    results = run(table1, '!assertUniqueKeys table1 "dataType,y";')
    assert result_rows(results) == [(120, 100, 260, "B group"), (150, 100, 260, "B group"),
                                    (160, 100, 260, "C group"), (170, 100, 260, "C group")]
    assert results[-1].table.column_names == ["x", "y", "z", "dataType"]


def test_assert_unique_keys_throw(table1):
    with pytest.raises(MLSQLError, match="^1:1: Assert Failed: conflict key: z,y$"):
        run(table1, '!assertUniqueKeysThrow table1 "z,y";')
    run(table1, '!assertUniqueKeysThrow table1 "x,y";')


def test_assert_condition_returns_the_rows_that_fail_it(table1):
    assert len(result_rows(run(table1, '!assertCondition table1 "x > 180";'))) == 7
    assert result_rows(run(table1, '!assertCondition table1 "y < 150";')) == [(130, None, None, "A group"), (140, 200, None, "A group")]


def test_assert_condition_throw(table1):
    with pytest.raises(MLSQLError, match="^1:1: Assert Failed: 'table1' dirty count: 7$"):
        run(table1, '!assertConditionThrow table1 "x > 180";')
    run(table1, '!assertConditionThrow table1 "x >= 110";')


# -- macros: grammar/macro.md -------------------------------------------------------------------

@pytest.fixture
def hello_csv(tmp_path) -> Path:
    path = tmp_path / "hello world.csv"
    path.write_text("hello,n\nworld,1\nbyzer,2\n")
    return path


def test_macro_with_positional_parameters(session, hello_csv):
    run(session, f"""
set loadCsv = QQQ
load csv.`{{0}}`
where header="true"
as {{1}}
QQQ;

!loadCsv "{hello_csv}" helloTable;
select hello from helloTable as output;
""")
    assert column(session, "output", "hello") == ["world", "byzer"]


def test_macro_with_named_parameters(session, hello_csv):
    run(session, f"""
set loadCsv = QQQ
load csv.`${{path}}`
where header="true"
as ${{tableName}}
QQQ;

!loadCsv _ -path "{hello_csv}" -tableName helloTable;
select hello from helloTable as output;
""")
    assert column(session, "output", "hello") == ["world", "byzer"]


def test_macro_fills_bare_braces_in_order_and_later_definitions_win(session):
    run(session, "set pair = QQQselect '{}' as first, '{}' as second as {}QQQ;\n!pair a b t1;")
    assert session.table("t1").to_pylist() == [{"first": "a", "second": "b"}]
    run(session, "set pair = QQQselect '{1}' as first, '{0}' as second as t2QQQ;\n!pair a b;")
    assert session.table("t2").to_pylist() == [{"first": "b", "second": "a"}]


def test_macro_body_may_not_call_commands(session):
    with pytest.raises(MLSQLError) as info:
        run(session, "set hello = QQQ\n!hdfs -ls /;\nselect 1 as a as output\nQQQ;\n\n  !hello;")
    assert (info.value.line, info.value.column) == (6, 3)
    assert "a macro body cannot call commands or macros" in info.value.message


def test_an_error_inside_a_macro_points_at_the_call(session):
    with pytest.raises(MLSQLError) as info:
        run(session, "set broken = QQQselect * from missing_table as xQQQ;\nselect 1 as a as t;\n !broken;")
    assert (info.value.line, info.value.column) == (3, 2)
    assert "missing_table" in info.value.message
    with pytest.raises(MLSQLError) as info:
        run(session, "set broken = QQQload csv.`x` broken_tableQQQ;\n!broken;")
    assert info.value.line == 2 and "in macro !broken (line 1 of its body)" in info.value.message


def test_an_unknown_macro_is_an_unknown_command(session):
    with pytest.raises(MLSQLError, match="unknown command !nothingHere"):
        run(session, "!nothingHere a b;")


# -- variables: grammar/set.md ------------------------------------------------------------------

NOW = dt.datetime(2024, 3, 31, 7, 5, 9, 123000, tzinfo=dt.timezone(dt.timedelta(hours=8)))


@pytest.mark.parametrize("expression, expected", [
    ('date.toString("yyyyMMdd")', "20240331"),
    ('date.plusDays(-1).toString("yyyy-MM-dd")', "2024-03-30"),
    ('date.minusMonths(1).toString("yyyy-MM-dd")', "2024-02-29"),  # clipped to the month's end, as Joda does
    ('date.plusYears(1).plusMonths(-1).toString("yy/M/d")', "25/2/28"),
    ("date.toString('yyyy-MM-dd HH:mm:ss.SSS Z')", "2024-03-31 07:05:09.123 +0800"),
    ('date.toString("EEE, dd MMM yyyy hh a \'o\'\'clock\'")', "Sun, 31 Mar 2024 07 AM o'clock"),
    ("date.withTimeAtStartOfDay().plusHours(36).toString(\"yyyyMMddHH\")", "2024040112"),
    ("date.getDayOfWeek()", "7"),
    ("date.getMonthOfYear()", "3"),
    ("date", "2024-03-31T07:05:09.123+08:00"),
])
def test_date_variable_methods(expression, expected):
    assert datevars.evaluate(expression, NOW) == expected


@pytest.mark.parametrize("expression, message", [
    ("date.__class__", "date has no method __class__()"),
    ('date.toString(__import__("os"))', "date method arguments are numbers or quoted text"),
    ("date.plusDays()", "date.plusDays() takes 1 argument, got 0"),
    ('date.toString("yyyy-qq")', "date pattern letter 'q' is not supported"),
    ("date.plusDays(1", "missing ')'"),
])
def test_date_expressions_are_read_not_evaluated(expression, message):
    with pytest.raises(MLSQLError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        datevars.evaluate(expression, NOW)


def test_date_variable_in_a_script(session):
    before = dt.date.today()
    run(session, """
set jack=QQQ
 hello today is:${date.toString("yyyyMMdd")}
QQQ;
select "${jack}" as title, "${date.plusDays(-1).toString('yyyy-MM-dd')}" as yesterday as output;
""")
    after = dt.date.today()
    [row] = session.table("output").to_pylist()
    assert row["title"] in {f"\n hello today is:{d:%Y%m%d}\n" for d in (before, after)}
    assert row["yesterday"] in {f"{d - dt.timedelta(days=1):%Y-%m-%d}" for d in (before, after)}


def test_compile_mode_sql_is_evaluated_before_the_script_runs(session):
    with pytest.raises(MLSQLError) as info:
        run(session, 'select "foo" as foo as foo_table;\n  set hello=`select foo from foo_table` where type="sql" and mode="compile";')
    assert (info.value.line, info.value.column) == (2, 3)
    assert "foo_table" not in session.catalog.names()  # the error came before the first statement ran


def test_runtime_mode_sql_sees_the_tables_made_before_it(session):
    for mode in ("", ' and mode="runtime"'):
        run(session, f'select "foo" as foo as foo_table;\nset hello=`select foo from foo_table` where type="sql"{mode};\n'
                     'select "${hello}" as name as output;')
        assert column(session, "output", "name") == ["foo"]


def test_compile_mode_value_is_kept_when_the_statement_is_reached(session):
    run(session, 'set hello=`select 1 as foo ` where type="sql" and mode="compile";\nselect "${hello}" as v as output;')
    assert column(session, "output", "v") == ["1"]


def test_set_mode_must_be_compile_or_runtime():
    with pytest.raises(MLSQLSyntaxError, match="set mode must be compile or runtime, not 'later'"):
        lang.parse('set a=`select 1` where type="sql" and mode="later";')


def test_a_text_value_may_name_a_variable_set_later(session):
    """As with Byzer's templates, ${x} in a text value that is not set yet stays as written, and
    is resolved when the value is used."""
    run(session, 'set greeting = QQQhello ${who}QQQ where scope="session";')
    assert session.variables["greeting"] == "hello ${who}"
    with pytest.raises(MLSQLError, match="undefined variable \\$\\{who\\}"):
        run(session, 'select "${greeting}" as x as t;')
    run(session, 'set who = "world" where scope="session";\nselect "${greeting}" as x as t;')
    assert column(session, "t", "x") == ["hello world"]
    run(session, '!if QQQ :greeting == "hello world" QQQ;\n select "yes" as x as t;\n!fi;')
    assert column(session, "t", "x") == ["yes"]
    with pytest.raises(MLSQLError, match="more than 32 levels deep"):
        run(session, 'set loop = QQQ${loop}!QQQ;\nselect "${loop}" as x as t;')


def test_a_variable_lasts_one_request_unless_its_scope_is_session(session):
    """set.md: the default lifetime is the request (a script run, one notebook cell); scope="session"
    keeps it across requests. A request variable hiding a session one gives it back when the
    request ends; a session set of a request variable keeps it."""
    run(session, 'set hello = "world";\nselect "hello ${hello}" as title as output;')
    assert column(session, "output", "title") == ["hello world"]
    with pytest.raises(MLSQLError, match=r"undefined variable \$\{hello\}"):
        run(session, 'select "hello ${hello}" as title as output;')
    run(session, 'set hello = "abc" where scope="session";')
    run(session, 'set hello = "just now";\nselect "${hello}" as v as inside;')
    assert column(session, "inside", "v") == ["just now"]
    run(session, 'select "${hello}" as v as after;')
    assert column(session, "after", "v") == ["abc"]
    run(session, 'set kept = "1";\nset kept = "2" where scope="session";')
    run(session, 'select "${kept}" as v as later;')
    assert column(session, "later", "v") == ["2"]


def test_a_macro_lasts_one_request_unless_its_scope_is_session(session):
    """outline.md: besides variables, macros are request-scoped by default (a macro is a variable)."""
    run(session, 'set greet = QQQselect "hi {}" as g as greeting;QQQ;\n!greet bob;')
    assert column(session, "greeting", "g") == ["hi bob"]
    with pytest.raises(MLSQLError, match="greet"):
        run(session, "!greet alice;")
    run(session, 'set greet = QQQselect "hi {}" as g as greeting;QQQ where scope="session";')
    run(session, "!greet alice;")
    assert column(session, "greeting", "g") == ["hi alice"]


# -- DSLSQL.g4 leniencies -----------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ('register ScriptUDF.`` as f where and lang="java" and code=QQQxQQQ;',
     ast.Register(format="ScriptUDF", path="", function="f", options={"lang": "java", "code": "x"})),
    ('load csv.`p` where and header="true" as t;', ast.Load(format="csv", path="p", table="t", options={"header": "true"})),
    ('load csv.`p` and header="true" and sep=";" as t;',
     ast.Load(format="csv", path="p", table="t", options={"header": "true", "sep": ";"})),
    ('connect jdbc options and url="u" as db;', ast.Connect(format="jdbc", options={"url": "u"}, alias="db")),
    ('train t as KMeans.`/tmp/m` where k="2" as first as second;',
     ast.Train(verb="train", table="t", format="KMeans", path="/tmp/m", options={"k": "2"}, output="second")),
])
def test_byzer_grammar_leniencies(text, expected):
    assert lang.parse(text.replace("QQQ", Q)) == [expected]


def test_a_leading_and_runs(session, hello_csv):
    run(session, f'load csv.`{hello_csv}` where and header="true" as t;')
    assert column(session, "t", "hello") == ["world", "byzer"]


# -- more of the docs' forms ---------------------------------------------------------------------

def test_macro_argument_may_be_an_unquoted_path(session, tmp_path):
    path = tmp_path / "hello_world.csv"
    path.write_text("hello\nworld\n")
    run(session, f'set loadCsv = QQQload csv.`{{0}}` where header="true" as {{1}}QQQ;\n!loadCsv {path} helloTable;')
    assert column(session, "helloTable", "hello") == ["world"]


def test_a_variable_in_a_condition_is_only_ever_text(session):
    run(session, """
set a = "x' or 1=1 or 'y";
!if QQQ :a == "x" QQQ;
   select "injected" as r as b;
!else;
   select "text" as r as b;
!fi;
""")
    assert column(session, "b", "r") == ["text"]


def test_set_doc_examples(session):
    run(session, """
set hello="world";
select "hello ${hello}" as title
as output;
select "hello William" as title
as `${hello}`;
set stamp=QQQ${date.toString("yyyy")}QQQ;
set date="a user's date";
select "${date}" as d, "${stamp}" as y as dates;
""")
    assert column(session, "output", "title") == ["hello world"]
    assert column(session, "world", "title") == ["hello William"]
    [row] = session.table("dates").to_pylist()
    assert row["d"] == "a user's date"  # a variable the user sets wins over the built-in
    assert row["y"] in {str(dt.date.today().year), str(dt.date.today().year - 1)}


def test_macro_all_arguments_as_a_json_list():
    from mlsql_ray.engine.macros import expand

    assert expand("select '{:all}' as args as t", ["-ls", "/tmp", "a b"]) == 'select \'["-ls", "/tmp", "a b"]\' as args as t'
    assert expand("{} {} {5}|{0}", ["x"]) == "x  |x"  # a missing argument is empty text, as in Byzer


def test_a_malformed_condition_is_the_users_error_at_its_statement(session):
    with pytest.raises(MLSQLError) as info:
        run(session, "select 1 as v as t;\n!assert t QQQ :v > QQQ \"m\";")
    assert (info.value.line, info.value.message) == (2, "cannot read the condition ''' :v > ''': Required keyword: 'expression' missing for GT")


def test_assert_condition_reads_colon_names_as_columns(table1):
    assert len(result_rows(run(table1, '!assertCondition table1 ":x >= 150";'))) == 4


def test_a_condition_calls_a_function_registered_earlier(session):
    """branch_statement.md §5 registers title() as a Scala UDF; here it is a function the session's
    DuckDB connection knows, as registered UDFs are: conditions reach it like any select does."""
    session.con.create_function("title", lambda: "jack", [], "VARCHAR")
    run(session, """
!if QQQ title() == "jack" QQQ;
   select 1 as a as b;
!else;
   select 2 as a as b;
!fi;

select * from b as output;
""")
    assert column(session, "output", "a") == [1]


def test_table_name_cache_off_forgets_the_tables_of_each_run(session):
    """branch_statement.md §6: with the switch off, a table from an earlier run cannot stand in
    for the one an untaken branch would have defined."""
    script = """
set __table_name_cache__ = "false";
!if QQQ {condition} QQQ;
   select 1 as a as b;
!else;
!fi;

select * from b as output;
"""
    results = run(session, script.format(condition="1==1"))
    assert results[-1].table.to_pylist() == [{"a": 1}]
    assert "b" not in session.catalog.names() and "output" not in session.catalog.names()
    with pytest.raises(MLSQLError, match="table b is not defined"):
        run(session, script.format(condition="2==1"))


def test_tables_are_kept_between_runs_by_default(session):
    run(session, "!if QQQ 1==1 QQQ;\n select 1 as a as b;\n!fi;")
    run(session, "!if QQQ 2==1 QQQ;\n select 2 as a as b;\n!fi;\nselect * from b as output;")
    assert column(session, "output", "a") == [1]  # Byzer's documented surprise, kept by default


def test_elif_sees_what_the_if_condition_declared(session):
    run(session, """
set a = "x,y";
!if QQQ select split(:a, ",")[1] as :second, null as :nothing; :second == "z" QQQ;
   select "if" as w as b;
!elif QQQ :second == "y" and :nothing is null and "${second}" == "y" QQQ;
   select "elif" as w as b;
!fi;
""")
    assert column(session, "b", "w") == ["elif"]


def test_the_console_completes_branch_and_assert_commands():
    from mlsql_ray.kernel.assist import complete

    assert complete("!el", 3) == (1, ["elif", "else"])
    assert complete("!assertnotn", 11) == (1, ["assertnotnull", "assertnotnullthrow"])


def test_compile_mode_sql_sees_the_text_variables_above_it(session):
    run(session, """
set n = "41";
set answer=`select ${n} + 1 as v` where type="sql" and mode="compile";
select "${answer}" as v as output;
set n = "0" where scope="session";
""")
    assert column(session, "output", "v") == ["42"]
    assert session.variables["n"] == "0"
