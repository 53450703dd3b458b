"""What a data source is: a name, its options, and a loader and/or a saver.

``load FORMAT.`PATH` as T;`` finds the source named FORMAT in the registry (``__init__``) and
calls its ``load``, which names the table in the session's catalog; ``save`` calls its ``save``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ...errors import MLSQLError
from ...options import Param, check_known, is_configuration


#: Byzer's options of every save that the writers here decide for themselves (``fileNum``: how
#: many files; DuckDB and deltalake size their files): accepted, as Byzer's examples write them
SAVE_OPTIONS = ("fileNum",)

@dataclass(frozen=True)
class DataSource:
    name: str
    description: str
    #: (session, ast.Load) -> None: defines the load's table in session.catalog
    load: Callable | None = None
    #: (session, ast.Save) -> Result
    save: Callable | None = None
    params: tuple[Param, ...] = ()

    def check_options(self, options: dict[str, str]) -> None:
        """An option the source does not know is a warning and ignored (``options.check_known``);
        a dotted key (``fs.s3a.endpoint``) configures the storage under it and is passed on."""
        check_known([k for k in options if not is_configuration(k)], [*(p.name for p in self.params), *SAVE_OPTIONS],
                    self.name)


def variable_text(session, name: str, fmt: str) -> str:
    """The text of the variable a ``jsonStr``/``csvStr``/``script`` load names (without ``$``)."""
    if name not in session.variables:
        known = ", ".join(sorted(session.variables)) or "none yet"
        raise MLSQLError(f"{fmt}.`{name}` reads the variable {name}, which is not set "
                         f"(set it first: set {name}='''...'''; variables: {known})")
    return session.variables[name].strip()
