"""One MLSQL lexicon (mlsql_ray/lang/lexicon.py, over tokens.py and the parser's table): the
JupyterLab mode's generated files are what it writes, its shapes mean the same in JavaScript, and the
kernel's completion reads statements, strings and comments as the tokenizer does."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
from mlsql_ray.kernel import assist
from mlsql_ray.lang import ast, lexicon, parse, tokens
from mlsql_ray.lang.parser import STATEMENT_PARSERS
from mlsql_ray.lang.tokens import pieces

LABEXTENSION = ROOT / "labextension"


# -- the JupyterLab mode's files: generated from the lexicon at build time --------------------------

def test_the_modes_files_are_what_the_lexicon_writes(tmp_path):
    """``npm run build`` writes them first (its ``lexicon`` script); after an edit of the lexicon the
    committed files are stale and this fails: cd labextension && npm run build."""
    scripts = json.loads((LABEXTENSION / "package.json").read_text())["scripts"]
    assert scripts["build"].startswith("npm run lexicon && ")
    assert scripts["lexicon"] == "cd .. && python -m mlsql_ray.lang.lexicon labextension/src"
    done = subprocess.run([sys.executable, "-m", "mlsql_ray.lang.lexicon", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    written = {path.name: path.read_text() for path in tmp_path.iterdir()}
    assert written == lexicon.mode_files()
    for name, text in written.items():
        assert (LABEXTENSION / "src" / name).read_text() == text, f"labextension/src/{name} is stale: npm run build"


def test_the_mode_imports_its_generated_files():
    mode = (LABEXTENSION / "src" / "mlsql.js").read_text()
    for name in lexicon.mode_files():
        assert f"from './{name}';" in mode
    for key in lexicon.SHAPES:
        assert f"shapes.{key}" in mode


# -- the words: the parser's, nothing listed twice ----------------------------------------------------

def test_the_statement_words_are_the_parsers():
    assert set(lexicon.SQL_STATEMENTS) | set(lexicon.MLSQL_STATEMENTS) == set(STATEMENT_PARSERS)
    assert not set(lexicon.SQL_STATEMENTS) & set(lexicon.MLSQL_STATEMENTS)
    for word in lexicon.SQL_STATEMENTS:  # their body is Spark SQL, kept as text
        (statement,) = parse(f"{word} x as y;" if word == "select" else f"{word} table x;")
        assert isinstance(statement, (ast.Select, ast.RawSQL)), word


def test_every_save_mode_the_lexicon_offers_parses_in_any_case():
    for mode in lexicon.SAVE_MODES:
        assert mode in lexicon.MLSQL_KEYWORDS
        for written in (mode, mode.upper()):
            (statement,) = parse(f"save {written} t as parquet.`/tmp/t`;")
            assert statement.mode == mode.lower()


# -- the shapes mean the same in JavaScript --------------------------------------------------------------

SHAPE_SAMPLES = ["-- %%", "  --%% x", "--%python", "--%pythonExec=python3", "--%python.x", "--%input=t", "--%",
                 "${a}", "${a.b} x", "${", "!show tables", "!1", "! show", "select 1", "-- a comment", "\t--%cache=true",
                 "parquet.`/tmp/x`", "parquet.x", "a1.`b`", "12.5 rows", "12.x", "7", ">= 1", "!= 2", "/ 3",
                 "#foreach($c in $cols)", "#settle", "#end", "$!{x.y} z", "$cols,", "$", ":n > 1", ":1", "::x"]


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js, which builds the mode")
def test_the_modes_shapes_match_in_javascript_what_they_match_in_python():
    """The mode compiles each shape as ``^(?:shape)`` (mlsql.js: atStart); JavaScript's regexes are
    not Python's, so the shapes keep to what both read alike."""
    script = ("const [shapes, samples] = JSON.parse(require('fs').readFileSync(0, 'utf8'));\n"
              "const out = {};\n"
              "for (const [key, shape] of Object.entries(shapes)) {\n"
              "  out[key] = samples.map(s => { const m = new RegExp(`^(?:${shape})`).exec(s); return m && m[0]; });\n"
              "}\n"
              "process.stdout.write(JSON.stringify(out));")
    done = subprocess.run(["node", "-e", script], input=json.dumps([lexicon.SHAPES, SHAPE_SAMPLES]),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    in_python = {key: [(match.group() if (match := re.match(shape, sample)) else None) for sample in SHAPE_SAMPLES]
                 for key, shape in lexicon.SHAPES.items()}
    assert json.loads(done.stdout) == in_python
    assert all(any(found) for found in in_python.values())  # each shape matched something


# -- the tokenizer's pieces, for text still being typed ---------------------------------------------------

@pytest.mark.parametrize("text, last", [
    ("load csv.`/data/tr", ("backquoted", "`/data/tr")),
    ("set a = '''print(1);", ("block", "'''print(1);")),
    ("set a = 'it\\'s", ("string", "'it\\'s")),
    ("select 1 /* still", ("comment", "/* still")),
    ("select 1 -- done", ("comment", "-- done")),
    ("select ${x", ("word", "${x")),
    ("select 1 as t;", ("symbol", ";")),
])
def test_pieces_of_unfinished_text(text, last):
    found = pieces(text)
    assert "".join(text[start:end] for _, start, end in found) == text  # every character once, in order
    kind, start, end = found[-1]
    assert (kind, text[start:end]) == last


def test_pieces_of_whole_text_are_the_tokenizers():
    text = "load csv.`a``b` where x='1;2' and y=\"a\\\"b\" -- c;\n/* d; */ as t;\nset s = '''x''';"
    kept = [(kind, start, end) for kind, start, end in pieces(text) if kind not in ("blank", "comment")]
    assert [(token.start, token.end) for token in tokens.tokenize(text)] == [(start, end) for _, start, end in kept]


# -- the kernel's completion reads the text as the tokenizer does --------------------------------------------

def test_a_quote_in_a_comment_opens_no_string_for_completion():
    code = "-- don't forget the header\nload "
    assert "parquet" in assist.complete(code, len(code), None)[1]


def test_completion_inside_a_block_comment_offers_nothing():
    code = "select 1 as t;\n/* to do: lo"
    assert assist.complete(code, len(code), None) == (len(code), [])


def test_a_semicolon_in_a_string_does_not_end_the_statement_for_completion():
    class Catalog:
        tables = {"digits": ["label", "images"], "other": ["x"]}

        def names(self):
            return list(self.tables)

        def schema(self, name):
            import pyarrow as pa

            return pa.schema([(column, pa.int64()) for column in self.tables[name]])

    class Session:
        catalog = Catalog()

    code = "select im from other where s = 'a;b' or x in (select label from digits) as y;"
    assert assist.complete(code, 9, Session())[1][:1] == ["images"]  # a column of digits, named after the ';'
