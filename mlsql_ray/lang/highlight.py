"""``MLSQLLexer``: MLSQL for Pygments (nbconvert's HTML and PDF, Sphinx, MkDocs, Markdown renderers).

Registered through Pygments' ``pygments.lexers`` entry point as ``mlsql``, the name the kernel's
``language_info`` gives. It only knows what is MLSQL's own (its words from ``lexicon.py``, its shapes
from ``tokens.py``) — the statement words of the parser, ``!commands``, ``--%`` annotations,
``format.`path```, ``'''…'''`` strings and ``${}`` variables — and hands the rest to Pygments' own
lexers: the Spark SQL of ``select``/``insert``/... to ``SqlLexer``, and a cell whose leading
annotations include ``--%python`` to ``PythonLexer``, up to the next ``-- %%`` line (as
``parser.python_cell`` and ``split_cells`` read it). The words that start MLSQL's statements and
``!commands`` are ``MLSQL_STATEMENT``, a kind of keyword those lexers do not give, so that a style
colours them as keywords yet apart from Python's and SQL's. The JupyterLab mode in ``labextension/``
colours the same way (its tag ``mlsqlStatement``), with the same words and shapes.
"""

from __future__ import annotations

import re

from pygments.lexer import RegexLexer, default, include, using, words
from pygments.lexers.python import PythonLexer
from pygments.lexers.sql import SqlLexer
from pygments.token import Comment, Keyword, Name, Number, Operator, Punctuation, String, Whitespace

from .lexicon import (BRANCH_VARIABLE, COMMAND, FORMAT, MLSQL_KEYWORDS, MLSQL_STATEMENTS, NUMBER, OPERATOR,
                      PYTHON_ANNOTATION, SQL_STATEMENTS, VELOCITY_DIRECTIVE, VELOCITY_REFERENCE)
from .tokens import ANNOTATION, CELL_MARKER, VARIABLE

#: the token of a statement word and of a ``!command`` (HTML class ``kr``)
MLSQL_STATEMENT = Keyword.Reserved

# the tokenizer's shapes of lines, each with the rest of its line
_CELL_MARKER = rf"^{CELL_MARKER}.*\n?"
_ANNOTATION = rf"{ANNOTATION}.*\n?"  # at the start of a cell
_PYTHON_ANNOTATION = rf"{PYTHON_ANNOTATION}.*\n?"


class MLSQLLexer(RegexLexer):
    """MLSQL (Byzer) statements, their Spark SQL, and ``--%python`` cells."""

    name = "MLSQL"
    aliases = ["mlsql", "byzer"]
    filenames = ["*.mlsql", "*.byzer"]
    mimetypes = ["text/x-mlsql"]
    url = "https://github.com/byzer-org/byzer-lang"
    flags = re.IGNORECASE | re.MULTILINE

    tokens = {
        # the start of a cell: blank lines, then annotations; `--%python` among them makes the cell Python
        "root": [
            (_PYTHON_ANNOTATION, Comment.Preproc, "python"),
            (_ANNOTATION, Comment.Preproc, "annotations"),
            (r"\s+", Whitespace),
            default("statements"),
        ],
        "annotations": [  # anything else, a blank line too, ends them (parser.python_cell)
            (_PYTHON_ANNOTATION, Comment.Preproc, ("#pop", "python")),
            (_ANNOTATION, Comment.Preproc),
            default(("#pop", "statements")),
        ],
        "python": [
            (_CELL_MARKER, Comment.Special, "#pop"),
            (_ANNOTATION, Comment.Preproc),
            (r"(?:.|\n)+?(?=^[ \t]*--[ \t]*%%|\Z)", using(PythonLexer)),
        ],
        "statements": [
            (_CELL_MARKER, Comment.Special, "#pop"),
            include("comments"),
            (words(SQL_STATEMENTS, suffix=r"\b"), MLSQL_STATEMENT, "sql"),
            (words(MLSQL_STATEMENTS, suffix=r"\b"), MLSQL_STATEMENT),
            (words(MLSQL_KEYWORDS, suffix=r"\b"), Keyword),
            (COMMAND, MLSQL_STATEMENT),  # !show, !delta, !if, a macro !name
            (FORMAT, Name.Builtin),  # the format of format.`path`
            include("literals"),
            (NUMBER, Number),
            (r"\w+", Name),
            (OPERATOR, Operator),
            (r"[;,.()\[\]{}:]", Punctuation),
        ],
        # Spark SQL up to the `;`: strings, quoted names and variables here, the rest by SqlLexer
        "sql": [
            (_CELL_MARKER, Comment.Special, "#pop:2"),
            (r";", Punctuation, "#pop"),
            include("comments"),
            include("literals"),
            (VELOCITY_DIRECTIVE, Comment.Preproc),
            (VELOCITY_REFERENCE, Name.Variable),
            (BRANCH_VARIABLE, Name.Variable),
            (r"[^;'\"`$#:/-]+", using(SqlLexer)),
            (r"[$#:/-]", Operator),
        ],
        "comments": [
            (r"\s+", Whitespace),
            (r"--.*?$", Comment.Single),
            (r"/\*(?:.|\n)*?\*/", Comment.Multiline),
        ],
        "literals": [
            (VARIABLE, String.Interpol),
            (r"'''", String.Doc, "triple-quoted"),
            (r'"', String.Double, "double-quoted"),
            (r"'", String.Single, "single-quoted"),
            (r"`", String.Backtick, "backquoted"),
        ],
        "triple-quoted": [
            (r"'''", String.Doc, "#pop"),
            (VARIABLE, String.Interpol),
            (r"[^'$]+|['$]", String.Doc),
        ],
        "double-quoted": [
            (r'"', String.Double, "#pop"),
            (r"\\.", String.Escape),
            (VARIABLE, String.Interpol),
            (r'[^"\\$]+|\$', String.Double),
        ],
        "single-quoted": [
            (r"'", String.Single, "#pop"),
            (r"\\.", String.Escape),
            (VARIABLE, String.Interpol),
            (r"[^'\\$]+|\$", String.Single),
        ],
        "backquoted": [
            (r"``", String.Escape),
            (r"`", String.Backtick, "#pop"),
            (VARIABLE, String.Interpol),
            (r"[^`$]+|\$", String.Backtick),
        ],
    }
