"""MLSQL's lexicon, for what reads MLSQL without parsing it: the Pygments lexer (``highlight.py``),
the kernel's completion (``kernel/assist.py``) and the JupyterLab mode (``labextension/src/``).

Nothing here is a second copy: the statement words are the parser's table (``STATEMENT_PARSERS``),
the save modes the statement's (``ast.SAVE_MODES``), the shapes of tokens and of the lines the parser
reads the tokenizer's (``tokens.py``); the shapes defined here are the ones only highlighters match.
The JupyterLab mode is JavaScript, so its two files are generated from this module by ``npm run
build`` in ``labextension/`` (``python -m mlsql_ray.lang.lexicon labextension/src``);
tests/test_lexicon.py fails when the committed files differ from what it would write.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from . import tokens
from .ast import SAVE_MODES
from .parser import STATEMENT_PARSERS, Parser

#: the statement words whose body is Spark SQL (``select ... as T;`` and byzer-lang's raw SQL statements)
SQL_STATEMENTS = tuple(word for word, parse in STATEMENT_PARSERS.items() if parse in (Parser._select, Parser._raw_sql))
#: the other statement words
MLSQL_STATEMENTS = tuple(sorted(set(STATEMENT_PARSERS) - set(SQL_STATEMENTS)))
#: the words between a statement's parts, as completion offers them
CLAUSE_WORDS = ("as", "where", "options", "and", "partitionBy")
#: every word inside MLSQL's statements (``named``: ``!pyInclude ... named NAME``)
MLSQL_KEYWORDS = (*CLAUSE_WORDS, *SAVE_MODES, "named")

# Shapes only the highlighters match, as they colour without parsing (the parser reads ``!show`` as
# ``!`` and a word, ``parquet.`x``` as a word, ``.`` and a quoted name, a select's text as a whole)
#: the annotation that makes a cell Python
PYTHON_ANNOTATION = rf"{tokens.ANNOTATION_START}python(?![\w.])"
#: a ``!command`` (``!show``, ``!if``, a macro's ``!name``)
COMMAND = r"![A-Za-z_]\w*"
#: the format of ``format.`path```
FORMAT = r"\w+(?=\.`)"
NUMBER = r"\d+(?:\.\d+)?\b"
OPERATOR = r"[=<>!+*/%&|^~-]"
#: in the Spark SQL of a select: a Velocity directive (``#set``, ``#foreach``, …)
VELOCITY_DIRECTIVE = r"#(?:set|foreach|if|elseif|else|end|break|stop)\b"
#: in the Spark SQL of a select: Velocity's ``$x``, ``$!x``, ``${x.y}``
VELOCITY_REFERENCE = r"\$!?\{?[A-Za-z_][\w.]*\}?"
#: in the Spark SQL of a condition: a branch's ``:v``
BRANCH_VARIABLE = r":[A-Za-z_]\w*"

#: every shape both highlighters match, by its name in the JupyterLab mode, which compiles each as
#: ``^(?:shape)``: they keep to what Python's and JavaScript's regexes read alike
SHAPES = {"cellMarker": tokens.CELL_MARKER, "annotation": tokens.ANNOTATION, "pythonAnnotation": PYTHON_ANNOTATION,
          "variable": tokens.VARIABLE, "command": COMMAND, "format": FORMAT, "number": NUMBER, "operator": OPERATOR,
          "velocityDirective": VELOCITY_DIRECTIVE, "velocityReference": VELOCITY_REFERENCE,
          "branchVariable": BRANCH_VARIABLE}


def mode_files() -> dict[str, str]:
    """The JupyterLab mode's generated files (under ``labextension/src/``) and their text."""
    words = {"sqlStatements": list(SQL_STATEMENTS), "mlsqlStatements": list(MLSQL_STATEMENTS),
             "mlsqlKeywords": list(MLSQL_KEYWORDS)}
    return {name: json.dumps(content, indent=2) + "\n"
            for name, content in {"words.json": words, "shapes.json": SHAPES}.items()}


if __name__ == "__main__":  # python -m mlsql_ray.lang.lexicon FOLDER: write the mode's files there
    if len(sys.argv) != 2:
        sys.exit("usage: python -m mlsql_ray.lang.lexicon FOLDER")
    folder = sys.argv[1]
    for name, text in mode_files().items():
        Path(folder, name).write_text(text)
