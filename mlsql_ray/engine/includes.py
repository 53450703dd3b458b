"""``include FORMAT.`path`;``: run other scripts in this session, found by one resolver per format.

- ``local.`path```: relative to the including file (the working directory when there is none).
- ``project.`path```: relative to the project root — ``Session(project_root=...)`` / ``--project-root``,
  else the folder of the script being run, else the working directory (byzer-doc grammar/include.md,
  Byzer-desktop's ``include project.`src/algs/b.byzer```).
- a whole object store URI (``local.`s3://bucket/scripts/a.mlsql```, a file or a folder): fetched
  with the session's credentials, as ``load`` fetches a csv (``engine.object_files``).
- ``lib.`github.com/...```: Byzer downloads the library from GitHub: refused, we run offline.

A folder is included as Byzer reads it (Spark's ``textFile`` on a folder): every file in it not
hidden by Hadoop's rule (a name starting with ``.`` or ``_``), in name order; a subfolder is an
error, as it is for Hadoop. All of them are parsed before any runs. Everything included must lie
inside the project root unless ``where allowOutside="true"``; an include cycle and nesting deeper
than ``MAX_INCLUDE_DEPTH`` are refused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from .. import lang, objectstore
from ..errors import MLSQLError, NotAllowed
from ..options import flag
from ..storage.paths import within
from ..lang import ast
from . import object_files
from .result import Result

MAX_INCLUDE_DEPTH = 16


def project_root(session) -> Path:
    """Where ``project.`...``` paths start and what includes must stay inside: the session's
    ``project_root``, else the first included script's folder, else the owner's home in a
    service, else the working directory."""
    if session.project_root is not None:
        return session.project_root
    if session.include_stack:
        return session.include_stack[0].parent
    return session.home or Path.cwd().resolve()


def _local(session, path: str) -> Path:
    return session.local_path(path)


def _project(session, path: str) -> Path:
    return project_root(session) / Path(path).expanduser()


def _lib(session, path: str) -> Path:
    raise MLSQLError(f"include lib.`{path}` downloads a library from GitHub, which needs the internet; "
                     f"mlsql-ray runs offline: copy the library into your project and include project.`PATH` instead")


RESOLVERS: dict[str, Callable[..., Path]] = {"local": _local, "project": _project, "lib": _lib}


def run_include(session, s: ast.Include) -> Iterator[Result]:
    resolve = RESOLVERS.get(s.format.lower())
    if resolve is None:
        raise MLSQLError(f"include supports {', '.join(f'{name}.`path`' for name in RESOLVERS if name != 'lib')}, "
                         f"not {s.format}")
    uri = None
    if objectstore.is_uri(s.path):  # named outright, as a whole URI: no project root to stay inside
        location = session.location(s.path, s.options)
        path = object_files.fetch(location, "script", session.staging())
        uri = s.path.rstrip("/")
    else:
        path = session.confined(resolve(session, s.path), s.path)  # an owner's home bounds even allowOutside
    root = project_root(session)
    # whether a path outside exists is not told: only that it is outside
    if not objectstore.is_uri(s.path) and not within(path, [root]) and not flag(s.options, "allowOutside", False):
        raise NotAllowed(f"cannot include {path}: it is outside {root}, the project root; "
                         f"add where allowOutside=\"true\" to include it anyway")
    if not path.exists():
        raise MLSQLError(f"cannot include {path}: no such file or folder")
    files = _scripts(path)
    parsed = []
    for file in files:
        # errors in a script fetched from object storage name its URI, not the local copy
        shown_as = None if uri is None else (f"{uri}/{file.name}" if file != path else uri)
        if file.resolve() in session.include_stack:
            raise MLSQLError(f"{file} includes itself (through {' → '.join(p.name for p in session.include_stack)})")
        try:
            parsed.append((file.resolve(), lang.parse(file.read_text()), shown_as))
        except MLSQLError as exc:
            exc.source = shown_as or str(file)
            raise
    if len(session.include_stack) >= MAX_INCLUDE_DEPTH:
        raise MLSQLError(f"includes nested deeper than {MAX_INCLUDE_DEPTH} files")
    for file, statements, shown_as in parsed:
        yield from session.run_script(statements, file, shown_as)


def _scripts(path: Path) -> list[Path]:
    """The file itself, or a folder's visible files in name order (as Spark's textFile reads a folder)."""
    if not path.is_dir():
        return [path]
    files = sorted(p for p in path.iterdir() if not p.name.startswith((".", "_")))
    folders = [p.name for p in files if p.is_dir()]
    if folders:
        raise MLSQLError(f"cannot include the folder {path}: it holds folders ({', '.join(folders)}), "
                         f"and only the scripts directly in it are read")
    return files
