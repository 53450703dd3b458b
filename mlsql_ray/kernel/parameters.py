"""papermill parameters for the ``mlsql`` kernel: ``-p key value`` becomes
``set key = "value" where scope="session";`` (session: a variable otherwise lasts one cell, as in Byzer).

papermill 2.7 looks a kernel's parameter translator up only in its own registry, and has no entry
point for translators; but whenever it is imported it loads every ``papermill.engine`` entry
point, eagerly. So pyproject.toml declares an engine named ``mlsql`` pointing at this module's
``MLSQLEngine``: importing this module registers the translator, and that engine is papermill's
own ``NBClientEngine``, unchanged. ``papermill in.ipynb out.ipynb -p key value`` then works with no
extra flags (``--engine mlsql`` runs exactly as the default engine does).

Values are what ``mlsql-ray run --set key=value`` would give: strings as they are, numbers,
booleans, lists and maps as JSON text. They are written as a double-quoted MLSQL string with
backslash escapes (``mlsql_ray.lang.tokens``), so ``'``, ``"``, ``;``, newlines and ``${`` stay
part of the value, and every statement is checked to parse back to the same key and value.
"""

from __future__ import annotations

KERNEL_NAME = "mlsql"


def __getattr__(name: str):
    # papermill loads the entry point while its own papermill.engines is still being imported
    # (and, when this module was imported first, while this one is): hand its engine out lazily
    if name == "MLSQLEngine":
        from papermill.engines import NBClientEngine  # see the comment above

        return NBClientEngine
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


from papermill.translators import Translator, papermill_translators  # after __getattr__: see there

#: the escapes the tokenizer resolves inside "…" (backslash first, so no escape is doubled)
_ESCAPES = (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r"), ("\0", "\\0"))


def mlsql_string(text: str) -> str:
    """``text`` as a double-quoted MLSQL string literal."""
    for raw, escaped in _ESCAPES:
        text = text.replace(raw, escaped)
    return f'"{text}"'


def set_statement(name: str, value) -> str:
    """``set name = "value" where scope="session";``, refused if it would not parse back to exactly
    this name and value."""
    from .. import lang  # papermill loads this module in every run; sqlglot only for MLSQL
    from ..lang import ast

    text = ast.variable_text(value)
    statement = f'set {name} = {mlsql_string(text)} where scope="session";'
    parsed = lang.parse(statement)
    if (len(parsed) != 1 or not isinstance(parsed[0], ast.Set) or (parsed[0].key, parsed[0].value) != (name, text)
            or parsed[0].scope != "session"):
        raise ValueError(f"parameter {name!r} cannot be written as an MLSQL set statement")
    return statement


class MLSQLTranslator(Translator):
    """papermill's parameter translator for the ``mlsql`` kernel and language."""

    @classmethod
    def comment(cls, cmt_str: str) -> str:
        return f"-- {cmt_str}".strip()

    @classmethod
    def codify(cls, parameters: dict, comment: str = "Parameters") -> str:
        lines = [cls.comment(comment)] + [set_statement(name, value) for name, value in parameters.items()]
        return "\n".join(lines) + "\n"


papermill_translators.register(KERNEL_NAME, MLSQLTranslator)
