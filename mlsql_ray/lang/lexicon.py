"""MLSQL's lexicon, for what reads MLSQL without parsing it: the Pygments lexer (``highlight.py``),
the kernel's completion (``kernel/assist.py``) and the JupyterLab mode (``labextension/src/``).

Nothing here is a second copy: the statement words are the parser's table (``STATEMENT_PARSERS``),
the save modes the statement's (``ast.SAVE_MODES``), the shapes of tokens and lines the tokenizer's
(``tokens.py``). The JupyterLab mode is JavaScript, so its two files are generated from this module,
by ``npm run build`` in ``labextension/`` (``python -m mlsql_ray.lang.lexicon labextension/src``);
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

#: the shapes the JupyterLab mode matches at the start of what it reads (JavaScript reads them as they are)
MODE_SHAPES = {"cellMarker": tokens.CELL_MARKER, "annotation": tokens.ANNOTATION,
               "pythonAnnotation": tokens.PYTHON_ANNOTATION, "variable": tokens.VARIABLE, "command": tokens.COMMAND}


def mode_files() -> dict[str, str]:
    """The JupyterLab mode's generated files (under ``labextension/src/``) and their text."""
    words = {"sqlStatements": list(SQL_STATEMENTS), "mlsqlStatements": list(MLSQL_STATEMENTS),
             "mlsqlKeywords": list(MLSQL_KEYWORDS)}
    return {name: json.dumps(content, indent=2) + "\n"
            for name, content in {"words.json": words, "shapes.json": MODE_SHAPES}.items()}


if __name__ == "__main__":  # python -m mlsql_ray.lang.lexicon FOLDER: write the mode's files there
    if len(sys.argv) != 2:
        sys.exit("usage: python -m mlsql_ray.lang.lexicon FOLDER")
    folder = sys.argv[1]
    for name, text in mode_files().items():
        Path(folder, name).write_text(text)
