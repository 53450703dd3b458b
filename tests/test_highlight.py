"""MLSQL's colours outside the engine: the Pygments lexer ``mlsql`` (mlsql_ray/lang/highlight.py) on
Byzer's doc examples, on the notebooks and in nbconvert's HTML export; the JupyterLab mode's bundle
(labextension/) being the build of its source. The mode itself runs in JupyterLab in
tests/test_browser.py."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import tomllib
from importlib.metadata import EntryPoint

import nbformat
import pytest
from pygments.token import Comment, Error, Keyword, Name, Punctuation, String
from test_byzer_docs import BLOCKS, SKIP

from conftest import ROOT
from mlsql_ray.kernel.kernel import MLSQLKernel
from mlsql_ray.lang.highlight import MLSQL_KEYWORDS, SQL_STATEMENTS, MLSQLLexer

LABEXTENSION = ROOT / "labextension"
BUNDLE = LABEXTENSION / "mlsql-ray-lang"
MLSQL_NOTEBOOKS = [p for p in sorted((ROOT / "notebooks").glob("*.ipynb"))
                   if nbformat.read(p, as_version=4).metadata.kernelspec.name == "mlsql"]


def lex(text: str) -> list[tuple]:
    """(token type, text) of every token that is not blank."""
    return [(kind, value) for kind, value in MLSQLLexer().get_tokens(text) if value.strip()]


def kinds_of(text: str, value: str) -> set:
    return {kind for kind, token in lex(text) if token == value}


# -- the lexer ----------------------------------------------------------------------------------

def test_every_doc_example_the_doc_tests_run_lexes_without_an_error_token():
    """The blocks tests/test_byzer_docs.py runs (its collection, less what it skips)."""
    run = {key: text for key, text in BLOCKS.items() if key not in SKIP}
    assert len(run) > 150
    errors = {key: [value for kind, value in lex(text) if kind in Error] for key, text in run.items()}
    assert {key: found for key, found in errors.items() if found} == {}
    for text in run.values():  # every character is in a token, once (Pygments strips blank lines around)
        assert "".join(value for _, value in MLSQLLexer().get_tokens(text)) == text.strip("\n") + "\n"


@pytest.mark.parametrize("path", MLSQL_NOTEBOOKS, ids=lambda p: p.name)
def test_the_notebooks_lex_without_an_error_token(path):
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "code":
            assert [value for kind, value in lex(cell.source) if kind in Error] == [], cell.source


def test_mlsql_statements_and_their_spark_sql():
    text = ('load parquet.`${data}/train.parquet` where header="true" as mnist;\n'
            "select label, count(*) as images from mnist where label > 0 group by label as digits;\n"
            "!show tables;\n"
            "set code = '''print(1); print(2)''' where scope=\"session\";\n"
            "save overwrite digits as delta.`demo.digits` partitionBy label;")
    assert kinds_of(text, "load") == {Keyword}
    assert kinds_of(text, "parquet") == {Name.Builtin}  # the format of format.`path`
    assert kinds_of(text, "${data}") == {String.Interpol}
    assert kinds_of(text, "/train.parquet") == {String.Backtick}
    assert kinds_of(text, "select") == kinds_of(text, "from") == kinds_of(text, "group") == {Keyword}  # Pygments' SQL
    assert kinds_of(text, "!show") == {Keyword.Pseudo}
    assert kinds_of(text, "print(1); print(2)") == {String.Doc}  # a ';' in ''' ''' ends nothing
    assert kinds_of(text, "overwrite") == kinds_of(text, "partitionBy") == {Keyword}
    assert kinds_of(text, "where") == {Keyword}  # MLSQL's (load, set) and SQL's alike
    assert (Punctuation, ";") in lex(text)


def test_a_python_cell_is_python_up_to_the_next_cell_marker():
    text = ("--%python\n--%input=mnist\n# what it does\nimport ray\n\ndef train(load):\n    return load  # not MLSQL here\n"
            "-- %%\n"
            "load csv.`x.csv` as t;\n")
    tokens = lex(text)
    assert tokens[0] == (Comment.Preproc, "--%python\n") and tokens[1] == (Comment.Preproc, "--%input=mnist\n")
    assert (Comment.Single, "# what it does") in tokens
    assert kinds_of(text, "import") == {Keyword.Namespace}  # Pygments' Python
    assert kinds_of(text, "def") == kinds_of(text, "return") == {Keyword}
    assert kinds_of(text, "train") == {Name.Function}
    marker = tokens.index((Comment.Special, "-- %%\n"))
    assert {kind for kind, value in tokens[:marker] if value == "load"} == {Name}  # a Python name here
    assert tokens[marker + 1] == (Keyword, "load")  # and an MLSQL statement again after -- %%


def test_annotations_without_python_leave_the_cell_mlsql():
    text = "--%input=x\nselect 1 as a as t;"
    assert kinds_of(text, "--%input=x\n") == {Comment.Preproc}
    assert kinds_of(text, "select") == {Keyword}
    # as parser.python_cell reads it: a blank line ends the annotations, so this --%python is a comment
    late = "--%input=x\n\n--%python\nimport os\nselect 1 as a as t;"
    assert kinds_of(late, "--%python") == {Comment.Single} and kinds_of(late, "import") == {Name}
    assert kinds_of("\n--%input=x\n--%python\nimport os", "import") == {Keyword.Namespace}


def test_velocity_templates_and_branch_variables_inside_sql():
    text = ('select #foreach($c in $cols) ${c}, #end 1 as one from t as u;\n'
            "!if ''':n > 1''';\n!fi;")
    assert kinds_of(text, "#foreach") == kinds_of(text, "#end") == {Comment.Preproc}
    assert kinds_of(text, "$cols") == {Name.Variable}
    assert kinds_of(text, "${c}") == {String.Interpol}
    assert kinds_of(text, "!if") == kinds_of(text, "!fi") == {Keyword.Pseudo}


# -- Pygments finds it, nbconvert uses it ---------------------------------------------------------------

def test_pyproject_registers_the_lexer_with_pygments():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (target,) = project["entry-points"]["pygments.lexers"].values()
    assert EntryPoint("mlsql", target, "pygments.lexers").load() is MLSQLLexer
    assert any(re.match(r"pygments\b", dependency) for dependency in project["dependencies"])


def test_the_kernel_and_its_notebooks_name_the_lexer_and_the_mode():
    info = MLSQLKernel.language_info
    assert info["pygments_lexer"] in MLSQLLexer.aliases and info["mimetype"] in MLSQLLexer.mimetypes
    mode = (LABEXTENSION / "src" / "index.js").read_text()
    assert f"name: '{info['codemirror_mode']}'" in mode and f"mime: '{info['mimetype']}'" in mode
    for path in MLSQL_NOTEBOOKS:
        stored = nbformat.read(path, as_version=4).metadata.language_info
        assert (stored.pygments_lexer, stored.codemirror_mode) == (info["pygments_lexer"], info["codemirror_mode"]), path


def test_nbconvert_html_of_the_mnist_notebook_classes_mlsql_and_python_tokens(tmp_path):
    """The real path: nbconvert asks Pygments for the notebook's ``pygments_lexer``, which Pygments
    finds through the installed package's entry point (a venv installed before the entry point
    existed needs ``pip install -e .`` again; ./test.sh does it when pyproject.toml changes)."""
    done = subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", "--output-dir", str(tmp_path),
                           str(ROOT / "notebooks" / "mnist_distributed.ipynb")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    html = (tmp_path / "mnist_distributed.html").read_text()
    # MLSQL: load parquet.`../sample_data/mnist/train.parquet` as mnist; !python conf "runIn=driver";
    assert '<div class="highlight hl-mlsql">' in html
    assert '<span class="k">load</span><span class="w"> </span><span class="nb">parquet</span>' in html
    assert '<span class="p">.</span><span class="sb">`../sample_data/mnist/train.parquet`</span>' in html
    assert '<span class="kp">!python</span>' in html
    assert '<span class="cp">--%python' in html  # the annotations
    # Python in the --%python cells: keywords, comments, definitions
    assert '<span class="kn">import</span><span class="w"> </span><span class="nn">ray</span>' in html
    assert '<span class="c1"># The seed' in html
    assert '<span class="k">def</span><span class="w"> </span><span class="nf">create_tf_model</span>' in html
    assert '<span class="err">' not in html


# -- the JupyterLab mode --------------------------------------------------------------------------------

def test_the_labextension_bundle_is_the_build_of_its_source():
    """labextension/mlsql-ray-lang/ is committed built (pip installs it without npm); stamp.mjs
    records the source it was built from. Rebuild: ``cd labextension && npm ci && npm run build``."""
    files = ["package.json", "package-lock.json", *sorted(f"src/{p.name}" for p in (LABEXTENSION / "src").iterdir())]
    digest = hashlib.sha256()
    for name in files:
        digest.update(f"{name}\n".encode())
        digest.update((LABEXTENSION / name).read_bytes())
    assert (BUNDLE / "source.sha256").read_text().strip() == digest.hexdigest(), \
        "labextension/ changed since its bundle was built: cd labextension && npm ci && npm run build"
    built = json.loads((BUNDLE / "package.json").read_text())
    assert (BUNDLE / built["jupyterlab"]["_build"]["load"]).is_file()


def test_the_mode_and_the_lexer_know_the_same_words():
    words = json.loads((LABEXTENSION / "src" / "words.json").read_text())
    assert words == {"sqlStatements": list(SQL_STATEMENTS), "mlsqlKeywords": list(MLSQL_KEYWORDS)}


def test_pyproject_ships_the_bundle_as_wheel_data():
    data_files = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["data-files"]
    shipped = {pattern for patterns in data_files.values() for pattern in patterns}
    assert shipped >= {"labextension/mlsql-ray-lang/package.json", "labextension/mlsql-ray-lang/static/*",
                       "labextension/install.json"}
    assert data_files["share/jupyter/labextensions/mlsql-ray-lang/static"] == ["labextension/mlsql-ray-lang/static/*"]
