"""``%load_ext mlsql_ray``: MLSQL from an ordinary IPython kernel.

``%%mlsql`` runs a cell of MLSQL statements (or one ``--%python`` cell), ``%mlsql`` one
statement, both in one ``Session`` per kernel, run by the front-end driver
(``mlsql_ray.frontend.driver``) as the ``mlsql`` kernel runs its cells. Results show as the kernel
shows them (HTML and text bundles); training progress updates one display in place; an error names
its line and column in the cell and shows it with a caret.

Options (before the statements): ``-o NAME`` puts the last result in the user namespace as a
pyarrow Table (``--pandas``: a DataFrame); ``--vars`` lets ``${name}`` take the value of the
Python variable ``name`` (never without it: the user namespace is not read otherwise);
``--warehouse`` and ``--ray-address`` choose the session, as do
``%config MLSQLMagic.warehouse = "..."`` and ``%config MLSQLMagic.ray_address = "..."``; changing
them starts a new session. ``--sql-engine`` and ``%config MLSQLMagic.sql_engine = "daft"`` choose what
runs the selects (docs/daft.md), in the same session from then on, as ``set sql_engine="daft" where
type="conf";`` does. An interrupt stops the running statement (a DuckDB query included).
"""

from __future__ import annotations

import contextlib
import re
import sys

from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand
from IPython.display import display
from traitlets import Unicode, observe, validate

from ..config import SQL_ENGINE_SETTING, sql_engine_named
from ..errors import MLSQLError
from ..lang import ast
from .present import present_error

#: the magic's options: name → whether it takes a value
OPTIONS = {"-o": True, "--output": True, "--pandas": False, "--vars": False, "--warehouse": True,
           "--ray-address": True, "--sql-engine": True}
_TOKEN = re.compile(r"\s*(\S+)")


def split_options(line: str) -> tuple[dict[str, str | bool], str]:
    """The options at the start of the magic's line, and the rest of it (a statement, for ``%mlsql``)."""
    options: dict[str, str | bool] = {}
    pos = 0
    while True:
        match = _TOKEN.match(line, pos)
        if not match or match.group(1) not in OPTIONS:
            return options, line[pos:].strip()
        name, pos = match.group(1), match.end()
        if OPTIONS[name]:
            value = _TOKEN.match(line, pos)
            if not value:
                raise MLSQLError(f"%mlsql option {name} needs a value")
            options[name], pos = value.group(1), value.end()
        else:
            options[name] = True


@magics_class
class MLSQLMagic(Magics):
    """``%mlsql`` and ``%%mlsql``; settable with ``%config MLSQLMagic.warehouse = "..."``."""

    warehouse = Unicode(None, allow_none=True, config=True,
                        help="root folder of the Delta tables (default: $MLSQL_WAREHOUSE or ./warehouse)")
    ray_address = Unicode(None, allow_none=True, config=True,
                          help="Ray cluster for Python cells and training (default: $MLSQL_RAY_ADDRESS, else a local Ray)")
    sql_engine = Unicode(None, allow_none=True, config=True,
                         help="what runs the selects: duckdb or daft (default: $MLSQL_SQL_ENGINE, else duckdb)")

    def __init__(self, shell=None, **kwargs):
        super().__init__(shell=shell, **kwargs)
        self._session = None
        self._session_settings = None
        self._failed = None  # the outcome of the last run, if it failed (its error's view)

    def session(self, warehouse: str | None, ray_address: str | None):
        """The kernel's one Session; new if the warehouse or Ray address asked for changed."""
        settings = (warehouse or self.warehouse, ray_address or self.ray_address)
        if self._session is not None and settings != self._session_settings:
            self.close()
        if self._session is None:
            from ..engine import Session  # the engine (DuckDB, pyarrow) at the first %mlsql, not at %load_ext

            self._session = Session(warehouse=settings[0], ray_address=settings[1], sql_engine=self.sql_engine)
            self._session_settings = settings
        return self._session

    @validate("sql_engine")
    def _known_engine(self, proposal):
        return None if proposal["value"] is None else sql_engine_named(proposal["value"])

    @observe("sql_engine")
    def _switch_engine(self, change) -> None:
        """A new engine applies to the running session's next selects, as ``set`` would."""
        if self._session is not None and change["new"] is not None:
            self._session.set_conf(SQL_ENGINE_SETTING, change["new"])

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    @no_var_expand  # IPython would put Python variables into the line ($x, {x}) unasked
    @line_cell_magic
    def mlsql(self, line: str, cell: str | None = None):
        options, statement = split_options(line)
        code = statement if cell is None else cell
        if not code.strip():
            return
        session = self.session(options.get("--warehouse"), options.get("--ray-address"))
        if options.get("--sql-engine"):
            self.sql_engine = options["--sql-engine"]
        lent = {}
        if options.get("--vars"):
            user = self.shell.user_ns
            lent = {name: ast.variable_text(user[name]) for name in ast.referenced_variables(code) if name in user}
        with _lent(session.variables, lent):
            last = self._run(session, code)
        name = options.get("-o") or options.get("--output")
        table = self._full_table(session, last) if name and last is not None else None
        if table is not None:
            self.shell.user_ns[name] = table.to_pandas() if options.get("--pandas") else table
        elif name:
            print(f"warning: -o {name}: the last statement made no table", file=sys.stderr)

    def _run(self, session, code: str):
        """Run the statements, showing each result; the last result. An error or an interrupt is
        raised again for IPython, which shows an ``MLSQLError`` through ``show_error``."""
        from .driver import Request  # the engine (DuckDB, pyarrow) at the first %mlsql, not at %load_ext

        handle = {}

        def show_progress(view) -> None:
            if view.stage == "start":  # one display per training run, and per parameter group
                handle[view.key] = display(view.bundle(), raw=True, display_id=True)
            elif view.key in handle:
                handle[view.key].update(view.bundle(), raw=True)

        outcome = Request([code]).run(lambda: contextlib.nullcontext(session), previews=True, show=self._show,
                                      progress_sink=show_progress, interruptible=True)
        self._failed = outcome if outcome.error is not None else None
        if outcome.interruption is not None and not isinstance(outcome.exception, KeyboardInterrupt):
            raise KeyboardInterrupt from outcome.exception  # a DuckDB query cancelled by the interrupt
        if not outcome.ok:
            raise outcome.exception
        return outcome.last

    @staticmethod
    def _show(view) -> None:
        for warning in view.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        if view.table is None:
            print(view.message)
        else:
            display(view.table.bundle(), raw=True)

    @staticmethod
    def _full_table(session, result):
        """All rows of what the statement made (its result's table is a preview)."""
        if result.name and result.name in session.catalog:
            return session.catalog.relation(result.name).to_arrow_table()
        return result.table

    def show_error(self, shell, etype, value, tb, tb_offset=None):
        """IPython's handler for MLSQLError: the mlsql kernel's lines (position, the cell's
        line with a caret), not a traceback through this module."""
        failed = self._failed
        view = failed.error if failed is not None and failed.exception is value else present_error(value, "")
        lines = view.notebook_lines()
        shell._showtraceback(etype, value, lines)
        return lines


@contextlib.contextmanager
def _lent(variables: dict, lent: dict):
    """Python variables as MLSQL variables for one run only (unless a statement set them anew)."""
    saved = {name: variables.get(name) for name in lent}
    variables.update(lent)
    try:
        yield
    finally:
        for name, value in lent.items():
            if variables.get(name) == value:
                if saved[name] is None:
                    variables.pop(name, None)
                else:
                    variables[name] = saved[name]


def load_ipython_extension(shell) -> None:
    magic = MLSQLMagic(shell)
    shell.register_magics(magic)
    shell.configurables.append(magic)  # for %config MLSQLMagic.warehouse = "..."
    shell.set_custom_exc((MLSQLError,), lambda shell_, *args, **kwargs: magic.show_error(shell_, *args, **kwargs))


def unload_ipython_extension(shell) -> None:
    magic = shell.magics_manager.registry.get("MLSQLMagic")
    if magic is not None:
        magic.close()
    shell.set_custom_exc((), None)
