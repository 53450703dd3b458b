"""``!fs`` on object storage (``s3://…``): ``-ls``, ``-cat``, ``-mkdir``, ``-rm``, ``-put``,
``-get`` and ``-cp``, through pyarrow's filesystem of the store; a command that names no URI is
the local shell's (``filesystem``). Answers look like the local shell's; a local path given to
``-put``/``-get`` must still lie in an allowed folder. An object store has no permissions nor
owners to show: ``-ls`` shows ``-`` there.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

import pyarrow as pa
from pyarrow import fs

from ...errors import MLSQLError, first_line
from ...objectstore import ObjectPath, is_uri
from ..result import Result
from . import filesystem as local


def _location(session, text: str) -> ObjectPath:
    path = session.location(text)
    if not isinstance(path, ObjectPath):
        raise MLSQLError(f"{text}: expected an object store URI here (s3://bucket/key)")
    return path


def _info(path: ObjectPath, text: str):
    info = _call(lambda: path.filesystem().get_file_info(path.key), path)
    if info.type == fs.FileType.NotFound:
        raise MLSQLError(f"`{text}': No such file or directory")
    return info


def _call(work: Callable, path: ObjectPath):
    """``work()``, a store's refusal (no such bucket, access denied) said as the user's error."""
    try:
        return work()
    except OSError as exc:
        raise MLSQLError(f"{path}: {first_line(exc)}") from exc


def _ls(session, s, args: list[str]):
    flags, paths = local._options(args, "dhRF")
    rows = []
    for text in paths:
        path = _location(session, text)
        info = _info(path, text)
        store = path.filesystem()
        if info.type == fs.FileType.Directory and "d" not in flags:
            found = _call(lambda: store.get_file_info(fs.FileSelector(path.key, recursive="R" in flags)), path)
        else:
            found = [info]
        for entry in sorted(found, key=lambda e: e.path):
            folder = entry.type == fs.FileType.Directory
            size = 0 if folder else entry.size or 0
            rows.append({"permission": "d---------" if folder else "----------", "replication": "-" if folder else "1",
                         "owner": "-", "group": "-", "length": local._human(size) if "h" in flags else str(size),
                         "modification_time": time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.mtime.timestamp()))
                         if entry.mtime else "",
                         "path": f"{path.scheme}://{entry.path}", "name": entry.base_name})
    if "F" in flags:
        columns = list(rows[0]) if rows else ["permission", "replication", "owner", "group", "length",
                                              "modification_time", "path", "name"]
        table = pa.table({c: [r[c] for r in rows] for c in columns}, schema=pa.schema([(c, pa.string()) for c in columns]))
        return Result(s, f"{len(rows)} entries", table=table, num_rows=len(rows))
    lines = [f"{r['permission']} {r['replication']:>3} {r['owner']} {r['group']} {r['length']:>10} "
             f"{r['modification_time']} {r['path']}" for r in rows]
    return local._text(s, "\n".join(lines) + "\n" if lines else "", f"{len(rows)} entries")


def _cat(session, s, args: list[str]):
    texts = []
    for text in args:
        path = _location(session, text)
        if _info(path, text).type == fs.FileType.Directory:
            raise MLSQLError(f"`{text}': Is a directory")

        def read(path=path):
            with path.filesystem().open_input_stream(path.key) as stream:
                return stream.read().decode(errors="replace")

        texts.append(_call(read, path))
    return local._text(s, "".join(texts), f"{len(texts)} files")


def _mkdir(session, s, args: list[str]):
    _, paths = local._options(args, "p")
    for text in paths:
        path = _location(session, text)
        _call(lambda: path.filesystem().create_dir(path.key), path)
    return local._text(s, "", f"made {', '.join(paths)}")


def _remove(session, s, args: list[str], recursive: bool = False):
    flags, paths = local._options(args, "rRf")
    recursive = recursive or bool(flags & {"r", "R"})
    lines = []
    for text in paths:
        path = _location(session, text)
        if "/" not in path.key:
            raise MLSQLError(f"will not delete {path}: it is a whole bucket")
        store = path.filesystem()
        if _info(path, text).type == fs.FileType.Directory:
            if not recursive:
                raise MLSQLError(f"`{text}': Is a directory (use -rmr or -rm -r)")
            _call(lambda: store.delete_dir(path.key), path)
        else:
            _call(lambda: store.delete_file(path.key), path)
        lines.append(f"Deleted {path}")
    return local._text(s, "\n".join(lines) + "\n", f"deleted {len(lines)} paths")


def _endpoint(session, text: str):
    """(pyarrow filesystem, path on it, name, shown as) for a URI or an allowed local path."""
    if is_uri(text):
        path = _location(session, text)
        return path.filesystem(), path.key, path.name, str(path)
    path = local.allowed_path(session, text)
    return fs.LocalFileSystem(), str(path), path.name, str(path)


def _copy(session, s, args: list[str]):
    """``-put``/``-get``/``-cp`` between local folders and object storage (either way)."""
    if len(args) < 2:
        raise MLSQLError("expected SOURCE... DESTINATION")
    target_fs, target, _, shown = _endpoint(session, args[-1])
    target_is_dir = target_fs.get_file_info(target).type == fs.FileType.Directory
    if len(args) > 2 and not target_is_dir:
        raise MLSQLError(f"`{args[-1]}': is not a directory (several sources need a folder to go to)")
    for text in args[:-1]:
        source_fs, source, name, _ = _endpoint(session, text)
        if source_fs.get_file_info(source).type == fs.FileType.NotFound:
            raise MLSQLError(f"`{text}': No such file or directory")
        destination = f"{target.rstrip('/')}/{name}" if target_is_dir else target
        if target_fs.get_file_info(destination).type != fs.FileType.NotFound:
            raise MLSQLError(f"`{destination}': File exists")
        if isinstance(target_fs, fs.LocalFileSystem):
            Path(destination).parent.mkdir(parents=True, exist_ok=True)
        try:
            fs.copy_files(source, destination, source_filesystem=source_fs, destination_filesystem=target_fs)
        except OSError as exc:
            raise MLSQLError(f"cannot copy {text} to {shown}: {first_line(exc)}") from exc
    return local._text(s, "", f"copied {len(args) - 1} paths to {args[-1]}")


SHELL: dict[str, Callable] = {
    "-ls": _ls, "-lsr": lambda session, s, args: _ls(session, s, ["-R", *args]), "-cat": _cat, "-text": _cat,
    "-mkdir": _mkdir, "-rm": _remove, "-rmr": lambda session, s, args: _remove(session, s, args, recursive=True),
    "-cp": _copy, "-put": _copy, "-copyFromLocal": _copy, "-get": _copy, "-copyToLocal": _copy,
}


def _fs(session, s) -> Result:
    """``!fs``/``!hdfs``: on object storage when an argument of a shell command is a URI."""
    args = list(s.args)
    if not args or args[0] not in local.SHELL or not any(is_uri(arg) for arg in args[1:]):
        return local.COMMANDS[s.name.lower()](session, s)
    shell = SHELL.get(args[0])
    if shell is None:
        raise MLSQLError(f"!{s.name} {args[0]} does not work on object storage: use one of {', '.join(SHELL)}")
    return shell(session, s, args[1:])


COMMANDS: dict[str, Callable] = {name: _fs for name in local.COMMANDS}
