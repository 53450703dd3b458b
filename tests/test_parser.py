"""The MLSQL parser, sqlglot-style: text in, expected statement tree out.

Trees compare without positions (``line``/``col`` are left out of equality), so positions are
asserted on their own, and syntax errors are asserted to the exact line and column. The seed
notebook's statements are copied in verbatim; a fixture file of real Byzer statements must parse
the same alone as in one script; hypothesis checks that no input makes the parser fail with
anything but an ``MLSQLSyntaxError`` pointing into the text.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlsql_ray import MLSQLError, MLSQLSyntaxError, parse
from mlsql_ray.lang import python_cell, split_cells, substitute
from mlsql_ray.lang.ast import (
    Command,
    Connect,
    Include,
    Load,
    PythonCell,
    RawSQL,
    Register,
    Save,
    Select,
    Set,
    Statement,
    Train,
    Unregister,
)
from mlsql_ray.lang.parser import STATEMENT_PARSERS
from mlsql_ray.lang.tokens import T, tokenize

FIXTURES = Path(__file__).parent / "fixtures"


def one(text: str) -> Statement:
    statements = parse(text)
    assert len(statements) == 1, statements
    return statements[0]


def syntax_error(text: str) -> MLSQLSyntaxError:
    with pytest.raises(MLSQLSyntaxError) as info:
        parse(text)
    return info.value


# -- every statement form: input → expected tree ---------------------------------------------

CASES: list[tuple[str, Statement]] = [
    # load
    ("load parquet.`/tmp/mnist` as mnist;", Load(format="parquet", path="/tmp/mnist", table="mnist")),
    ('load csv.`/data/a.csv` where header="true" and delimiter=";" as t;',
     Load(format="csv", path="/data/a.csv", table="t", options={"header": "true", "delimiter": ";"})),
    ("load json.`x.json` options inferSchema='false' as t;",
     Load(format="json", path="x.json", table="t", options={"inferSchema": "false"})),
    ('LOAD JSON.`x.json` OPTIONS a="1" AND b="2" AS t;', Load(format="JSON", path="x.json", table="t", options={"a": "1", "b": "2"})),
    ('load csv.`x` header="true" as t;', Load(format="csv", path="x", table="t", options={"header": "true"})),  # where is optional
    ('load delta.`db.table` where version="2" as t;',
     Load(format="delta", path="db.table", table="t", options={"version": "2"})),
    ("load delta.db.table as t;", Load(format="delta", path="db.table", table="t")),
    ("load jdbc.`mysql1.tb_v_user` as mysql_tb_user;", Load(format="jdbc", path="mysql1.tb_v_user", table="mysql_tb_user")),
    ("LOAD Parquet.`x` WHERE k=\"v\" AND j='w' AS T;",
     Load(format="Parquet", path="x", table="T", options={"k": "v", "j": "w"})),
    ('load es.`idx` where es.nodes="h" and `es.port`="9200" as t;',
     Load(format="es", path="idx", table="t", options={"es.nodes": "h", "es.port": "9200"})),
    ("load csv.`x`\n  -- header first; then the delimiter\n  where header=\"true\" /* and ; */\n  and delimiter=\"\\t\"\nas t;",
     Load(format="csv", path="x", table="t", options={"header": "true", "delimiter": "\t"})),
    ("load text.`x` where q='''a\n'b';\n''' as t;", Load(format="text", path="x", table="t", options={"q": "a\n'b';\n"})),
    ("load parquet.`/tmp/a``b` as t;", Load(format="parquet", path="/tmp/a`b", table="t")),
    ("load parquet.`/tmp/x` as `my table`;", Load(format="parquet", path="/tmp/x", table="my table")),
    ('load parquet.`${dir}/x` where k="${v}" as ${t};',
     Load(format="parquet", path="${dir}/x", table="${t}", options={"k": "${v}"})),
    ("load parquet.`/数据/x` as 表;", Load(format="parquet", path="/数据/x", table="表")),
    # save
    ("save mnist_model as delta.`ai_model.mnist_model`;",
     Save(table="mnist_model", format="delta", path="ai_model.mnist_model", mode="errorifexists")),
    ("save overwrite t as parquet.`/out`;", Save(table="t", format="parquet", path="/out", mode="overwrite")),
    ("save OVERWRITE t as parquet.`/out`;", Save(table="t", format="parquet", path="/out", mode="overwrite")),
    ("save append t as parquet.`/out`;", Save(table="t", format="parquet", path="/out", mode="append")),
    ("save Append t as parquet.`/out`;", Save(table="t", format="parquet", path="/out", mode="append")),
    ("save errorIfExists t as parquet.`/out`;", Save(table="t", format="parquet", path="/out", mode="errorifexists")),
    ("save ERRORIFEXISTS t as parquet.`/out`;", Save(table="t", format="parquet", path="/out", mode="errorifexists")),
    ("save ignore t as parquet.`/out`;", Save(table="t", format="parquet", path="/out", mode="ignore")),
    ("save Ignore t as parquet.`/out`;", Save(table="t", format="parquet", path="/out", mode="ignore")),
    ("save overwrite as parquet.`/out`;", Save(table="overwrite", format="parquet", path="/out")),  # a table named like a mode
    ("save append ignore as parquet.`/out`;", Save(table="ignore", format="parquet", path="/out", mode="append")),
    ('save append t as parquet.`/out` where compression="snappy" partitionBy day;',
     Save(table="t", format="parquet", path="/out", mode="append", options={"compression": "snappy"}, partition_by=("day",))),
    ("save overwrite t as delta.`db.t` partitionBy year, month ,day;",
     Save(table="t", format="delta", path="db.t", mode="overwrite", partition_by=("year", "month", "day"))),
    ("save t as json.`x` PARTITIONBY `a b`;", Save(table="t", format="json", path="x", partition_by=("a b",))),
    ('save append t as delta.`db.t` options idCols="a,b";',
     Save(table="t", format="delta", path="db.t", mode="append", options={"idCols": "a,b"})),
    # select
    ("select * from mnist as t;", Select(sql="select * from mnist", table="t")),
    ("select 'a;b' as s, \"c;d\" as d, `e;f` from t as out;",
     Select(sql="select 'a;b' as s, \"c;d\" as d, `e;f` from t", table="out")),
    ("select a, -- first; column\n  b /* ; */\nfrom t\nwhere a > 1\nas filtered;",
     Select(sql="select a, -- first; column\n  b /* ; */\nfrom t\nwhere a > 1", table="filtered")),
    ("select * from t -- a note; that is not SQL\nas y;", Select(sql="select * from t", table="y")),
    ("select * from t /* note */ as y;", Select(sql="select * from t", table="y")),
    ("SELECT 1 AS one AS t;", Select(sql="SELECT 1 AS one", table="t")),
    ("select 1 as `my t`;", Select(sql="select 1", table="my t")),
    ("select * from ${t} where d = '${day}' as y;", Select(sql="select * from ${t} where d = '${day}'", table="y")),
    # set
    ("set a = b;", Set(key="a", value="b")),
    ('set a = "x y";', Set(key="a", value="x y")),
    ("set a = 'x y';", Set(key="a", value="x y")),
    ("set a = `x y`;", Set(key="a", value="x y")),
    ("set n = 1.5;", Set(key="n", value="1.5")),
    ('set a.b.c = "v";', Set(key="a.b.c", value="v")),
    ('set `my var` = "v";', Set(key="my var", value="v")),
    ('set p = "/tmp/${a}";', Set(key="p", value="/tmp/${a}")),
    ("set q = '''\nselect 1;\n''' where type=\"sql\";", Set(key="q", value="\nselect 1;\n", options={"type": "sql"})),
    ('set a = "x" where type="text";', Set(key="a", value="x", options={"type": "text"})),
    ('set a = "select 1" where type="sql";', Set(key="a", value="select 1", options={"type": "sql"})),
    ('set a = "echo 1" where type="shell";', Set(key="a", value="echo 1", options={"type": "shell"})),
    ('set spark.x = "1" options type="conf";', Set(key="spark.x", value="1", options={"type": "conf"})),
    ('set a = "1" where type="defaultParam";', Set(key="a", value="1", options={"type": "defaultParam"})),
    ('set a = "1" where scope="session";', Set(key="a", value="1", options={"scope": "session"})),
    ('SET a = b WHERE type="shell" AND scope="request";', Set(key="a", value="b", options={"type": "shell", "scope": "request"})),
    # include, register, unregister
    ("include local.`path/to/other.mlsql`;", Include(format="local", path="path/to/other.mlsql")),
    ('INCLUDE project.`lib.mlsql` where libMirror="gitee.com";',
     Include(format="project", path="lib.mlsql", options={"libMirror": "gitee.com"})),
    ("register tf.`/models/m` as predict_fn;", Register(format="tf", path="/models/m", function="predict_fn")),
    ("register ScriptUDF.`` as plus where lang=\"python\" and code='''def apply(a): return a;'''; ",
     Register(format="ScriptUDF", path="", function="plus", options={"lang": "python", "code": "def apply(a): return a;"})),
    ("unregister tf.`/models/m`;", Unregister(format="tf", path="/models/m")),
    ('unRegister ScriptUDF.`plus` where a="1";', Unregister(format="ScriptUDF", path="plus", options={"a": "1"})),
    # train, run, predict
    ('train data as RandomForest.`/tmp/model` where keepVersion="true" and evaluateTable="test";',
     Train(verb="train", table="data", format="RandomForest", path="/tmp/model",
           options={"keepVersion": "true", "evaluateTable": "test"})),
    ("train data into tf.`/tmp/m`;", Train(verb="train", table="data", format="tf", path="/tmp/m")),
    ("run command as Ray.`` where inputTable=\"T\" and outputTable=\"O\" and code='''\nimport ray\nprint('a;b')\n''' as out;",
     Train(verb="run", table="command", format="Ray", path="",
           options={"inputTable": "T", "outputTable": "O", "code": "\nimport ray\nprint('a;b')\n"}, output="out")),
    ('run t as TableRepartition.`` where partitionNum="2" as t2;',
     Train(verb="run", table="t", format="TableRepartition", path="", options={"partitionNum": "2"}, output="t2")),
    ("predict data as RandomForest.`/tmp/model` as result;",
     Train(verb="predict", table="data", format="RandomForest", path="/tmp/model", output="result")),
    ('RUN t AS Ray.`` WHERE code="x" AS o;', Train(verb="run", table="t", format="Ray", path="", options={"code": "x"}, output="o")),
    # connect
    ('connect jdbc where url="jdbc:mysql://h:3306/db?a=b&c=d" and driver="com.mysql.jdbc.Driver" as db_1;',
     Connect(format="jdbc", options={"url": "jdbc:mysql://h:3306/db?a=b&c=d", "driver": "com.mysql.jdbc.Driver"}, alias="db_1")),
    ('connect es where es.nodes="h";', Connect(format="es", options={"es.nodes": "h"})),
    ('CONNECT jdbc WHERE url="x" AS db.schema;', Connect(format="jdbc", options={"url": "x"}, alias="db.schema")),
    # insert, create, drop, refresh: kept as SQL text
    ("insert into t select 'a;b';", RawSQL(verb="insert", sql="insert into t select 'a;b'")),
    ("INSERT overwrite table t\nselect * from s -- the rest; of the line\n;", RawSQL(verb="insert", sql="INSERT overwrite table t\nselect * from s")),
    ("CREATE TABLE t (a INT);", RawSQL(verb="create", sql="CREATE TABLE t (a INT)")),
    ("drop table if exists t;", RawSQL(verb="drop", sql="drop table if exists t")),
    ("refresh table db.t;", RawSQL(verb="refresh", sql="refresh table db.t")),
    # ! commands
    ("!show tables;", Command(name="show", args=("tables",))),
    ("!desc t;", Command(name="desc", args=("t",))),
    ("!delta history db.t;", Command(name="delta", args=("history", "db.t"))),
    ("!delta info db.t;", Command(name="delta", args=("info", "db.t"))),
    ("!delta show tables;", Command(name="delta", args=("show", "tables"))),
    ('!python env "K=V";', Command(name="python", args=("env", "K=V"))),
    ('!python conf "runIn=driver";', Command(name="python", args=("conf", "runIn=driver"))),
    ("!hdfs -ls /tmp;", Command(name="hdfs", args=("-ls", "/tmp"))),
    ("!hdfs -cp /a/b.txt /c;", Command(name="hdfs", args=("-cp", "/a/b.txt", "/c"))),
    ("!sh 'a;b' `c d`;", Command(name="sh", args=("a;b", "c d"))),
    ("!kill 12;", Command(name="kill", args=("12",))),
]


@pytest.mark.parametrize("text, expected", CASES, ids=[text for text, _ in CASES])
def test_statement(text: str, expected: Statement) -> None:
    assert one(text) == expected


def test_every_byzer_statement_keyword_has_a_parser() -> None:
    assert set(STATEMENT_PARSERS) == {
        "load", "save", "select", "set", "include", "register", "unregister",
        "train", "run", "predict", "connect", "insert", "create", "drop", "refresh",
    }


def test_options_keep_their_order() -> None:
    load = one('load csv.`x` where z="1" and a="2" and m="3" as t;')
    assert list(load.options) == ["z", "a", "m"]


def test_set_type_and_scope_default_to_text_and_request() -> None:
    plain = one("set a = b;")
    assert (plain.type, plain.scope) == ("text", "request")  # Byzer's default: the variable lasts one request
    typed = one('set a = "select 1" where type="sql" and scope="request";')
    assert (typed.type, typed.scope) == ("sql", "request")


def test_equality_ignores_positions_only() -> None:
    assert Load(format="p", path="x", table="t", line=1, col=1) == Load(format="p", path="x", table="t", line=9, col=4)
    assert Load(format="p", path="x", table="t") != Load(format="p", path="x", table="u")


# -- positions -----------------------------------------------------------------------------------

def test_statements_know_where_they_start() -> None:
    text = "-- header; with a semicolon\n\n  load a.`x` as t; select 1 as y;\n/* a ;\n comment */ !show tables;"
    assert [(type(s).__name__, s.line, s.col) for s in parse(text)] == [
        ("Load", 3, 3), ("Select", 3, 20), ("Command", 5, 13),
    ]


def test_lines_count_through_block_strings_and_comments() -> None:
    text = "set a = '''\n;\n''';\n/*\n\n*/ load a.`x` as t;\nsave t as p.`y`;"
    assert [(s.line, s.col) for s in parse(text)] == [(1, 1), (6, 4), (7, 1)]


def test_tokens_carry_line_col_and_unescaped_values() -> None:
    text = "k=\"a\\\"b\" and `x``y`\n  '''l1\nl2''' ${v}_z;"
    assert [(t.type, t.value, t.line, t.col) for t in tokenize(text)] == [
        (T.WORD, "k", 1, 1),
        (T.SYMBOL, "=", 1, 2),
        (T.STRING, 'a"b', 1, 3),
        (T.WORD, "and", 1, 10),
        (T.BACKQUOTED, "x`y", 1, 14),
        (T.BLOCK_STRING, "l1\nl2", 2, 3),
        (T.WORD, "${v}_z", 3, 7),
        (T.SYMBOL, ";", 3, 13),
    ]


def test_tokens_slice_back_to_their_source() -> None:
    text = "load csv.`a b`\n where x='''1\n2''' and y=\"\\t\" as t_${n};"
    tokens = tokenize(text)
    for token in tokens:
        line_start = text.rfind("\n", 0, token.start) + 1
        assert (token.line, token.col) == (text.count("\n", 0, token.start) + 1, token.start - line_start + 1)
        if token.type in (T.WORD, T.SYMBOL):
            assert text[token.start : token.end] == token.value
    quoted = [text[t.start : t.end] for t in tokens if t.type not in (T.WORD, T.SYMBOL)]
    assert quoted == ["`a b`", "'''1\n2'''", '"\\t"']


# -- strings, escapes, comments ------------------------------------------------------------------

@pytest.mark.parametrize("literal, value", [
    ('"\\t"', "\t"),
    ('"a\\"b"', 'a"b'),
    ("'it\\'s'", "it's"),
    ('"C:\\\\dir"', "C:\\dir"),
    ('"line\\nnext"', "line\nnext"),
    ('"\\d+"', "\\d+"),  # an unknown escape stays as written: regexes survive
    ('"a--b /* c */"', "a--b /* c */"),  # comment markers inside strings are text
    ('""', ""),
    ("'''raw \\n \\t'''", "raw \\n \\t"),  # block strings are raw
    ("'''say \"hi\" and 'bye' '''", "say \"hi\" and 'bye' "),
], ids=lambda v: repr(v))
def test_option_value_escapes(literal: str, value: str) -> None:
    assert one(f"load csv.`x` where v={literal} as t;").options == {"v": value}


def test_comments_anywhere_between_tokens() -> None:
    text = "/* lead */ load /* a */ parquet . /* b */ `x` -- c ; d\n where /**/ k = 'v' -- e\n as /* f */ t /* g */ ;"
    assert one(text) == Load(format="parquet", path="x", table="t", options={"k": "v"})


def test_comment_only_text_has_no_statements() -> None:
    assert parse("-- nothing; here\n/* nor ; here */\n\n") == []
    assert parse("") == []
    assert parse(";;\n;") == []


# -- ${var}: kept by the parser, resolved by substitution ------------------------------------------

def test_substitute() -> None:
    assert substitute("a ${x} b ${ y }", {"x": "1", "y": "2"}) == "a 1 b 2"
    assert substitute("no variables", {}) == "no variables"
    # a value naming another variable is resolved in turn (Byzer re-merges its variables)
    assert substitute("${a}", {"a": "${b}", "b": "2"}) == "2"


def test_substitute_unknown_variable_is_an_error() -> None:
    with pytest.raises(MLSQLError, match=r"undefined variable \$\{missing\}") as info:
        substitute("x ${missing}", {"x": "1"})
    assert not isinstance(info.value, MLSQLSyntaxError)  # the text was valid; running it failed


def test_substituted_resolves_names_paths_options_and_sql() -> None:
    variables = {"dir": "/data", "t": "people", "v": "yes", "col": "country"}
    load = one('load parquet.`${dir}/p` where k="${v}" as ${t};').substituted(variables)
    assert load == Load(format="parquet", path="/data/p", table="people", options={"k": "yes"})
    select = one("select * from ${t} as ${t}_2;").substituted(variables)
    assert select == Select(sql="select * from people", table="people_2")
    save = one("save ${t} as delta.`db.${t}` partitionBy ${col};").substituted(variables)
    assert save == Save(table="people", format="delta", path="db.people", partition_by=("country",))
    command = one("!desc ${t};").substituted(variables)
    assert command == Command(name="desc", args=("people",))


def test_substituted_keeps_positions() -> None:
    load = parse("\n  load p.`${dir}` as t;")[0].substituted({"dir": "x"})
    assert (load.line, load.col) == (2, 3)


def test_substituted_leaves_code_alone() -> None:
    run = one("run t as Ray.`` where code='''print(\"${not_a_variable}\")''' and name=\"${n}\";")
    assert run.substituted({"n": "job"}).options == {"code": 'print("${not_a_variable}")', "name": "job"}
    cell = parse("--%python\nprint('${x}')")[0]
    assert cell.substituted({}).code == cell.code


def test_substituted_unknown_variable_is_an_error() -> None:
    with pytest.raises(MLSQLError, match="undefined variable"):
        one("load parquet.`${nowhere}` as t;").substituted({})


# -- python cells and -- %% scripts -------------------------------------------------------------------

SEED_LOAD = "load parquet.`/tmp/mnist` as mnist;"

SEED_PYTHON_ENV = """\
!python env "PYTHON_ENV=source /Users/allwefantasy/opt/anaconda3/bin/activate ray1.3.0";
!python conf "runIn=driver";
!python conf "schema=file";
!python conf "dataMode=model";"""

SEED_SAVE = "save overwrite mnist_model as delta.`ai_model.mnist_model`;"

# The seed notebook's complete Python cell, verbatim (trailing blanks included).
SEED_PYTHON_CELL = """\
--%python
--%input=mnist
--%output=mnist_model
--%cache=true

from functools import reduce
import os
import ray
import numpy as np
from tensorflow.keras import models,layers
from tensorflow.keras import utils as np_utils
from pyjava.api.mlsql import RayContext
from pyjava.storage import streaming_tar


ray_context = RayContext.connect(globals(),"127.0.0.1:10001")
data_servers = ray_context.data_servers()
replica_num = len(data_servers)
print(f"total workers {replica_num}")
def data_partition_creater(data_server):
    temp_data = [item for item in RayContext.collect_from([data_server])]
    train_images = np.array([np.array(item["image"]) for item in temp_data])
    train_labels = np_utils.to_categorical(np.array([item["label"] for item in temp_data])    )
    train_images = train_images.reshape((len(temp_data),28*28))
    return train_images,train_labels    

def create_tf_model():    
    network = models.Sequential()
    network.add(layers.Dense(512,activation="relu",input_shape=(28*28,)))
    network.add(layers.Dense(10,activation="softmax"))
    network.compile(optimizer="sgd",loss="categorical_crossentropy",metrics=["accuracy"])
    return network

@ray.remote
class Network(object):
    def __init__(self,data_server):
        self.model = create_tf_model()
        # you can also save the data to local disk if the data is 
        # not fit in memory        
        self.train_images,self.train_labels = data_partition_creater(data_server)


    def train(self):
        history = self.model.fit(self.train_images,self.train_labels,batch_size=128)
        return history.history

    def get_weights(self):
        return self.model.get_weights()

    def set_weights(self, weights):
        # Note that for simplicity this does not handle the optimizer state.
        self.model.set_weights(weights)

    def get_final_model(self):
        model_path = os.path.join("/","tmp","minist_model")
        self.model.save(model_path)
        model_binary = [item for item in streaming_tar.build_rows_from_file(model_path)]
        return model_binary
    def shutdown(self):
        ray.actor.exit_actor()

workers = [Network.remote(data_server) for data_server in data_servers]
ray.get([worker.train.remote() for worker in workers])
_weights = ray.get([worker.get_weights.remote() for worker in workers])

def epoch_train(weights):  
    sum_weights = reduce(lambda a,b: [(a1 + b1) for a1,b1 in zip(a,b)],weights)
    averaged_weights = [layer/replica_num for layer in sum_weights]
    ray.get([worker.set_weights.remote(averaged_weights) for worker in workers])
    ray.get([worker.train.remote() for worker in workers])
    return ray.get([worker.get_weights.remote() for worker in workers])

for epoch in range(6):
   _weights = epoch_train(_weights)

model_binary = ray.get(workers[0].get_final_model.remote())
[worker.shutdown.remote() for worker in workers]
ray_context.build_result(model_binary)"""


def test_seed_load_cell() -> None:
    assert parse(SEED_LOAD) == [Load(format="parquet", path="/tmp/mnist", table="mnist")]


def test_seed_python_env_cell() -> None:
    statements = parse(SEED_PYTHON_ENV)
    assert statements == [
        Command(name="python", args=("env", "PYTHON_ENV=source /Users/allwefantasy/opt/anaconda3/bin/activate ray1.3.0")),
        Command(name="python", args=("conf", "runIn=driver")),
        Command(name="python", args=("conf", "schema=file")),
        Command(name="python", args=("conf", "dataMode=model")),
    ]
    assert [s.line for s in statements] == [1, 2, 3, 4]


def test_seed_save_cell() -> None:
    assert parse(SEED_SAVE) == [Save(table="mnist_model", format="delta", path="ai_model.mnist_model", mode="overwrite")]


def test_seed_python_cell() -> None:
    (cell,) = parse(SEED_PYTHON_CELL)
    assert isinstance(cell, PythonCell)
    assert cell.annotations == {"input": "mnist", "output": "mnist_model", "cache": "true"}
    assert (cell.line, cell.col) == (1, 1)
    cell_lines, code_lines = SEED_PYTHON_CELL.split("\n"), cell.code.split("\n")
    assert len(code_lines) == len(cell_lines)  # line k of the code is line k of the cell
    assert code_lines[:4] == ["#--%python", "#--%input=mnist", "#--%output=mnist_model", "#--%cache=true"]
    assert code_lines[4:] == cell_lines[4:]
    compile(cell.code, "<cell>", "exec")  # the annotation lines are comments: valid Python
    assert code_lines.index('ray_context = RayContext.connect(globals(),"127.0.0.1:10001")') + 1 == 16



def test_seed_annotation_fragment() -> None:
    # the article's first annotation block, followed by its first line of code
    text = '--%python\n--%input=mnist\n--%cache=true\n--%output=mnist_model\n\nray_context = RayContext.connect(globals(),"127.0.0.1:10001")'
    assert parse(text) == [PythonCell(
        code='#--%python\n#--%input=mnist\n#--%cache=true\n#--%output=mnist_model\n\nray_context = RayContext.connect(globals(),"127.0.0.1:10001")',
        annotations={"input": "mnist", "cache": "true", "output": "mnist_model"},
    )]


def test_seed_notebook_as_a_script() -> None:

    script = "\n-- %%\n".join([SEED_LOAD, SEED_PYTHON_ENV, SEED_PYTHON_CELL, SEED_SAVE])
    statements = parse(script)
    assert [type(s).__name__ for s in statements] == ["Load"] + ["Command"] * 4 + ["PythonCell", "Save"]
    assert [s.line for s in statements] == [1, 3, 4, 5, 6, 8, 87]
    script_lines = script.split("\n")
    cell = statements[5]
    for k, code_line in enumerate(cell.code.split("\n"), start=1):
        script_line = script_lines[cell.line + k - 2]
        assert code_line == (f"#{script_line}" if script_line.startswith("--%") else script_line)
    assert statements[6] == parse(SEED_SAVE)[0]


def test_python_cell_needs_the_python_annotation() -> None:
    assert python_cell("--%input=mnist\nselect 1 as t;") is None
    assert python_cell("select 1 as t;\n--%python") is None
    assert python_cell("-- %python\nx = 1") is None
    # annotations without --%python are comments to the MLSQL parser
    assert parse("--%input=mnist\nselect 1 as t;") == [Select(sql="select 1", table="t")]


def test_python_cell_annotations_in_any_order_and_without_values() -> None:
    cell = python_cell("--%input=mnist\n--%python\n--%schema=st(field(a,long),field(b,string))\n--%cache\nx = 1", 4)
    assert cell == PythonCell(
        code="#--%input=mnist\n#--%python\n#--%schema=st(field(a,long),field(b,string))\n#--%cache\nx = 1",
        annotations={"input": "mnist", "schema": "st(field(a,long),field(b,string))", "cache": ""},
    )
    assert cell.line == 4


def test_python_cell_annotations_stop_at_the_first_code_line() -> None:
    cell = one("--%python\n--%input=t\nx = 1\n--%output=not_an_annotation")
    assert cell.annotations == {"input": "t"}
    assert cell.code.endswith("x = 1\n--%output=not_an_annotation")


def test_python_cell_is_not_parsed_as_mlsql() -> None:
    assert one("--%python\nselect; this is 'python'") == PythonCell(code="#--%python\nselect; this is 'python'")


def test_python_cell_after_blank_lines_starts_at_its_annotation() -> None:
    cell = one("\n\n--%python\n--%input=t\n\nprint(1)")
    assert (cell.line, cell.code) == (3, "#--%python\n#--%input=t\n\nprint(1)")


def test_python_cell_with_crlf_line_ends() -> None:
    cell = one("--%python\r\n--%input=mnist\r\n--%cache=true\r\nprint(1)\r\n")
    assert isinstance(cell, PythonCell)
    assert cell.annotations == {"input": "mnist", "cache": "true"}


def test_split_cells() -> None:
    script = "a\n-- %%\nb\n--%%\nc\n  --  %% titled cell\nd\n-- %%\n\n-- %%\ne"
    assert split_cells(script) == [(1, "a"), (2, "\nb"), (4, "\nc"), (6, "\nd"), (10, "\ne")]
    assert split_cells("no markers\nat all") == [(1, "no markers\nat all")]
    # the cell text keeps the script's line numbering: line i of a cell is line first + i - 1
    for first, cell in split_cells(script):
        for i, line in enumerate(cell.split("\n")):
            if line:
                assert script.split("\n")[first + i - 1] == line


def test_script_cells_keep_script_lines() -> None:
    script = "load a.`x` as t;\n-- %%\n--%python\n--%input=t\nx = 1\n-- %%\n\nsave t as delta.`a.b`;"
    statements = parse(script)
    assert statements == [
        Load(format="a", path="x", table="t"),
        PythonCell(code="#--%python\n#--%input=t\nx = 1", annotations={"input": "t"}),
        Save(table="t", format="delta", path="a.b"),
    ]
    assert [s.line for s in statements] == [1, 3, 8]


def test_a_marker_only_splits_cells_it_does_not_end_statements() -> None:
    # each cell is parsed on its own: a statement cannot run on into the next cell
    error = syntax_error("load a.`x`\n-- %%\nas t;")
    assert (error.line, error.column) == (1, 11)
    assert "missing ';'" in error.message


# -- syntax errors, to the exact line and column --------------------------------------------------------

ERRORS: list[tuple[str, int, int, str]] = [
    ("load parquet.`x` as t", 1, 22, "missing ';'"),
    ("load a.`x` as t;\nselect * from t", 2, 16, "missing ';'"),
    ("load a.`x` as t\nselect * from t as y;", 2, 1, "unexpected 'select' after the table name; expected ';'"),
    ("select * from t;", 1, 15, "must end with 'as TABLE_NAME'"),
    ("select a as b from t as;", 1, 22, "must end with 'as TABLE_NAME'"),
    ("select;", 1, 7, "must end with 'as TABLE_NAME'"),
    ('load a.`x` where k="v as t;', 1, 20, "unterminated string"),
    ("load a.`x` where k='v as t;", 1, 20, "unterminated string"),
    ('load a.`x` where k="v\\" as t;', 1, 20, "unterminated string"),
    ("load parquet.`/tmp/x as t;", 1, 14, "unterminated ` quoted name"),
    ("load parquet.`/tmp/x`` as t;", 1, 14, "unterminated ` quoted name"),
    ("load a.`x` as t; /* never\nclosed", 1, 18, "unterminated /* comment"),
    ("load a.`x` as t;\nrun c as Ray.`` where code='''\nprint(1);\n", 2, 28, "unterminated ''' string"),
    ("select * from ${t as y;", 1, 15, "unterminated ${ variable"),
    # a word that goes on after a ${…} spanning a line: the unclosed ${ is on the second line
    ("select a${x\n}b${y as t;", 2, 3, "unterminated ${ variable"),
    ("load csv.`x` where header=true as t;", 1, 27, "option 'header' needs a quoted value"),
    ("load csv.`x` where header= as t;", 1, 28, "option 'header' needs a quoted value"),
    ('load a.`x` where k="1" and k="2" as t;', 1, 28, "option 'k' is given twice"),
    ('load a.`x` where k="v" and as t;', 1, 31, "expected '='"),
    ('load a.`x` where k="v" j="w" as t;', 1, 24, "expected 'as', found 'j'"),
    ("lod parquet.`x` as t;", 1, 1, "unknown statement 'lod'"),
    ("-- comment\n/* c */\n  show tables;", 3, 3, "unknown statement 'show'"),
    ("'load' a.`x` as t;", 1, 1, "unknown statement string `load`"),
    ('set a = b where type="bad";', 1, 22, "set type must be text, sql, shell, conf or defaultParam, not 'bad'"),
    ('set a = b where type="Text";', 1, 22, "set type must be"),  # byzer's type names are case-sensitive
    ('set a = "select 1" where type="sql" and scope="global";', 1, 47, "set scope must be session or request, not 'global'"),
    ("set a;", 1, 6, "expected '='"),
    ("set a =;", 1, 8, "needs a value after '='"),
    ("set = b;", 1, 5, "expected a variable name"),
    ("set a = -1;", 1, 9, "expected a value"),
    ("load a.`x` t;", 1, 12, "expected 'as', found 't'"),
    ("load a.`x`;", 1, 11, "expected 'as', found end of statement"),
    ("load parquet as t;", 1, 14, "expected '.'"),
    ("load .`x` as t;", 1, 6, "expected a format name"),
    ("load a.`x` as t u;", 1, 17, "unexpected 'u' after the table name"),
    ("save t as a.`x` partitionBy;", 1, 28, "expected a column name after partitionBy"),
    ("save t as a.`x` partitionBy a,;", 1, 31, "expected a column name"),
    ("save t;", 1, 7, "expected 'as'"),
    ("save t as parquet.`x` partition by a;", 1, 23, "unexpected 'partition' after the save statement; expected ';'"),
    ("save t as parquet.`x` where partition by a;", 1, 39, "expected '=', found 'by'"),
    ("connect jdbc url;", 1, 14, "unexpected 'url' after the connect statement"),

    ("train t with tf.`x`;", 1, 9, "expected 'as' or 'into'"),
    ("register tf.`m`;", 1, 16, "expected 'as'"),
    ("! show tables;", 1, 3, "expected a command name right after '!'"),
    ("!;", 1, 2, "expected a command name"),
    ("connect;", 1, 8, "expected a format name"),
]


@pytest.mark.parametrize("text, line, column, message", ERRORS, ids=[text for text, *_ in ERRORS])
def test_syntax_error_position(text: str, line: int, column: int, message: str) -> None:
    error = syntax_error(text)
    assert (error.line, error.column) == (line, column), error.message
    assert message in error.message
    assert error.source_line == text.split("\n")[line - 1]
    assert str(error).startswith(f"{line}:{column}: ")


def test_caret_points_at_the_column() -> None:
    error = syntax_error("load csv.`x` where header=true as t;")
    assert error.caret == "load csv.`x` where header=true as t;\n                          ^"
    assert str(error) == (
        "1:27: option 'header' needs a quoted value, like header=\"...\"\n"
        "load csv.`x` where header=true as t;\n"
        "                          ^"
    )


def test_caret_keeps_tabs_so_it_lines_up() -> None:
    error = syntax_error("load a.`x` as t;\n\t\tsave\tt as;")
    assert (error.line, error.column) == (2, 12)
    assert error.caret == "\t\tsave\tt as;\n\t\t    \t    ^"


def test_caret_of_a_crlf_script_has_no_carriage_return() -> None:
    error = syntax_error("load a.`x` as t;\r\nload b as u;\r\n")
    assert (error.line, error.column) == (2, 8)
    assert error.caret == "load b as u;\n       ^"


def test_error_in_a_later_cell_reports_the_script_line() -> None:
    script = "load a.`x` as t;\n-- %%\n--%python\nx = 1\n\n-- %%\nselect * from t as y;\n\nsave t as;\n"
    error = syntax_error(script)
    assert (error.line, error.column) == (9, 10)
    assert error.source_line == "save t as;"


def test_error_after_multiline_tokens_reports_the_right_line() -> None:
    error = syntax_error("set a = '''\none;\ntwo;\n''';\n/* x\n*/ load b as u;")
    assert (error.line, error.column) == (6, 11)


def test_nothing_parsed_if_any_statement_is_wrong() -> None:
    # a whole script is parsed before anything runs, so an error late in it stops everything
    with pytest.raises(MLSQLSyntaxError):
        parse("load a.`x` as t;\nsave overwrite t as delta.`a.b`;\nselect oops;")


# -- the fixture file: real Byzer statements, alone and together --------------------------------------

def _paragraphs(text: str) -> list[tuple[int, str]]:
    """(first line, text) of each blank-line separated paragraph that holds a statement."""
    out, line = [], 1
    for paragraph in text.split("\n\n"):
        if any(l.strip() and not l.startswith("--") for l in paragraph.split("\n")):
            out.append((line, paragraph))
        line += paragraph.count("\n") + 2
    return out


def test_fixture_statements_parse_the_same_alone_and_together() -> None:
    text = (FIXTURES / "statements.mlsql").read_text()
    together = parse(text)
    paragraphs = _paragraphs(text)
    assert len(together) == len(paragraphs) == 43
    for statement, (first_line, paragraph) in zip(together, paragraphs):
        assert [statement] == parse(paragraph), paragraph
        lines = paragraph.split("\n")
        leading_comments = next(i for i, l in enumerate(lines) if not l.startswith("--"))
        assert statement.line == first_line + leading_comments, paragraph
    assert Counter(type(s).__name__ for s in together) == {
        "Load": 7, "Select": 3, "Set": 7, "Include": 2, "Register": 2, "Unregister": 1,
        "Train": 5, "Connect": 1, "Save": 4, "RawSQL": 4, "Command": 7,
    }


# -- fuzzing: anything is either statements or an MLSQLSyntaxError that points into the text -----------

VALID = [text for text, _ in CASES] + [SEED_LOAD, SEED_PYTHON_ENV, SEED_SAVE, "--%python\n--%input=t\nx = 1;"]
PIECES = ["'", '"', "'''", "`", "``", ";", "--", "-- %%\n", "\n--%python\n", "--%input=x\n", "/*", "*/", "${", "}",
          "\n", "\r\n", "\t", " as ", " where ", " and ", "=", ".", ",", "!", "\\", "select ", "load ", "表", "\x00", "\u2028"]


def assert_statements_or_positioned_error(text: str) -> None:
    try:
        statements = parse(text)
    except MLSQLSyntaxError as error:
        lines = text.split("\n")
        assert 1 <= error.line <= len(lines), (error.line, len(lines))
        raw_line = lines[error.line - 1]
        assert error.source_line == raw_line.rstrip("\r")
        assert 1 <= error.column <= len(raw_line) + 1, (error.column, raw_line)
        assert error.caret.endswith("^")
    else:
        assert isinstance(statements, list)
        assert all(isinstance(s, Statement) for s in statements)
        assert all(1 <= s.line <= text.count("\n") + 1 and s.col >= 1 for s in statements)


@st.composite
def mutated_scripts(draw: st.DrawFn) -> str:
    text = "\n".join(draw(st.lists(st.sampled_from(VALID), min_size=1, max_size=4)))
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["insert", "delete", "splice"]))
        if action == "insert":
            text = text[:at] + draw(st.sampled_from(PIECES) | st.text(max_size=3)) + text[at:]
        elif action == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 12)) :]
        else:
            other = draw(st.sampled_from(VALID))
            start = draw(st.integers(0, len(other)))
            text = text[:at] + other[start : draw(st.integers(start, len(other)))] + text[at:]
    return text


FUZZ = settings(max_examples=300, deadline=500, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.text(max_size=300))
def test_random_unicode_never_crashes_the_parser(text: str) -> None:
    assert_statements_or_positioned_error(text)


@FUZZ
@given(st.lists(st.sampled_from(PIECES) | st.sampled_from(["a", "b", "t", "x", "1", " "]), max_size=40).map("".join))
def test_random_mlsql_fragments_never_crash_the_parser(text: str) -> None:
    assert_statements_or_positioned_error(text)


@FUZZ
@given(mutated_scripts())
def test_mutated_scripts_never_crash_the_parser(text: str) -> None:
    assert_statements_or_positioned_error(text)


SEPARATORS = [" ", "\n", "\r\n", "\t", "\n\n", "/* ; */", "-- ; 'x\n", " /* a\n b */ "]


@FUZZ
@given(st.data())
def test_valid_statements_parse_the_same_whatever_separates_them(data: st.DataObject) -> None:
    cases = data.draw(st.lists(st.sampled_from(CASES), min_size=1, max_size=6))
    text = ""
    for source, _ in cases:
        text += data.draw(st.sampled_from(SEPARATORS)) + source
    assert parse(text) == [expected for _, expected in cases]
