"""``!hdfs`` / ``!fs``: Hadoop's file shell on the local file system, inside the allowed folders.

As in Byzer, the answer is one row with the shell's text in column ``fileSystem`` (``-ls -F``: one
row per entry, in columns); ``utils getmerge``/``utils rename`` answer in column ``message``.
Every path must lie in an allowed folder (``allowed_path``): the working directory, the warehouse
or a folder given with ``--allow-path`` / ``Session(allowed_paths=...)``.
"""

from __future__ import annotations

import glob
import grp
import os
import pwd
import re
import shutil
import stat
import time
from pathlib import Path
from typing import Callable

import pyarrow as pa

from ...errors import MLSQLError, NotAllowed
from ...storage.paths import within
from ..result import Result
from . import named_arguments

_WILDCARD = re.compile(r"[*?\[]")
_JAVA_GROUP = re.compile(r"\$(\d+)")  # Java's replaceAll spells a group $1, Python's re.sub \g<1>


def allowed_roots(session) -> list[Path]:
    """The local folders file commands may touch (a warehouse on object storage is not one)."""
    return [Path.cwd().resolve(), *([session.warehouse] if isinstance(session.warehouse, Path) else []),
            *session.allowed_paths]


def allowed_path(session, text: str) -> Path:
    """The path ``text`` names (relative: to the running script's folder), if it is inside an
    allowed folder; otherwise an error naming the folders and how to allow another."""
    path = Path(os.path.abspath(session.local_path(text)))
    roots = allowed_roots(session)
    if not within(path, roots):
        raise NotAllowed(f"{text} is outside the folders file commands may touch ({', '.join(map(str, roots))}); "
                         f"allow its folder with --allow-path or Session(allowed_paths=[...])")
    return path


def _expand(session, text: str) -> list[Path]:
    """The existing paths an argument names (Hadoop's globs: ``/tmp/*.csv``)."""
    if _WILDCARD.search(text):
        matches = sorted(glob.glob(str(allowed_path(session, text))))
        if not matches:
            raise MLSQLError(f"`{text}': No such file or directory")
        return [allowed_path(session, m) for m in matches]
    path = allowed_path(session, text)
    if not path.exists():
        raise MLSQLError(f"`{text}': No such file or directory")
    return [path]


def _options(args: list[str], flags: str) -> tuple[set[str], list[str]]:
    """Split ``-R -F path`` into ({"R", "F"}, ["path"]) for the single-letter ``flags`` given."""
    seen, rest = set(), []
    for arg in args:
        if re.fullmatch(f"-[{flags}]+", arg):
            seen.update(arg[1:])
        else:
            rest.append(arg)
    return seen, rest


def _text(s, text: str, summary: str) -> Result:
    table = pa.table({"fileSystem": [text]})
    return Result(s, summary, table=table, num_rows=1)


# -- the shell commands: (session, statement, arguments) -> Result -----------------------------------

def _entry(path: Path, human: bool) -> dict:
    info = path.stat()
    size = info.st_size if not path.is_dir() else 0
    return {
        "permission": stat.filemode(info.st_mode),
        "replication": "-" if path.is_dir() else "1",
        "owner": _name(pwd.getpwuid, info.st_uid),
        "group": _name(grp.getgrgid, info.st_gid),
        "length": _human(size) if human else str(size),
        "modification_time": time.strftime("%Y-%m-%d %H:%M", time.localtime(info.st_mtime)),
        "path": str(path),
        "name": path.name,
    }


def _name(lookup: Callable, number: int) -> str:
    try:
        return lookup(number)[0]
    except KeyError:
        return str(number)


def _human(size: int) -> str:
    for unit in ("", "k", "m", "g", "t"):
        if size < 1024 or unit == "t":
            return f"{size:.1f}{unit}" if unit else str(size)
        size /= 1024
    return str(size)


def _ls(session, s, args: list[str]) -> Result:
    flags, paths = _options(args, "dhRF")
    groups: list[tuple[int | None, list[dict]]] = []  # (items found in a listed folder, their entries)
    for text in paths or ["."]:
        for path in _expand(session, text):
            if path.is_dir() and "d" not in flags:
                children = sorted(path.rglob("*") if "R" in flags else path.iterdir())
                groups.append((None if "R" in flags else len(children), [_entry(c, "h" in flags) for c in children]))
            else:
                groups.append((None, [_entry(path, "h" in flags)]))
    rows = [r for _, entries in groups for r in entries]
    if "F" in flags:
        columns = ["permission", "replication", "owner", "group", "length", "modification_time", "path", "name"]
        table = pa.table({c: [r[c] for r in rows] for c in columns}, schema=pa.schema([(c, pa.string()) for c in columns]))
        return Result(s, f"{len(rows)} entries", table=table, num_rows=len(rows))
    width = {k: max([len(r[k]) for r in rows] + [minimum]) for k, minimum in
             (("replication", 3), ("owner", 1), ("group", 1), ("length", 10))}
    lines = []
    for count, entries in groups:
        if count:
            lines.append(f"Found {count} items")
        lines += [f"{r['permission']} {r['replication']:>{width['replication']}} {r['owner']:<{width['owner']}} "
                  f"{r['group']:<{width['group']}} {r['length']:>{width['length']}} {r['modification_time']} {r['path']}"
                  for r in entries]
    return _text(s, "\n".join(lines) + "\n" if lines else "", f"{len(rows)} entries")


def _count(session, s, args: list[str]) -> Result:
    """Hadoop's ``-count``: DIR_COUNT FILE_COUNT CONTENT_SIZE PATHNAME (a folder counts itself)."""
    flags, paths = _options(args, "qh")
    lines = []
    for text in paths:
        for path in _expand(session, text):
            below = [path, *path.rglob("*")] if path.is_dir() else [path]
            dirs = sum(p.is_dir() for p in below)
            files = [p for p in below if p.is_file()]
            size = sum(p.stat().st_size for p in files)
            size_text = _human(size) if "h" in flags else str(size)
            lines.append(f"{dirs:>12} {len(files):>12} {size_text:>18} {path}")
    return _text(s, "\n".join(lines) + "\n", f"counted {len(lines)} paths")


def _cat(session, s, args: list[str]) -> Result:
    texts = []
    for text in args:
        for path in _expand(session, text):
            if path.is_dir():
                raise MLSQLError(f"`{text}': Is a directory")
            texts.append(path.read_text(errors="replace"))
    return _text(s, "".join(texts), f"{len(texts)} files")


def _mkdir(session, s, args: list[str]) -> Result:
    flags, paths = _options(args, "p")
    for text in paths:
        path = allowed_path(session, text)
        if path.exists() and "p" not in flags:
            raise MLSQLError(f"`{text}': File exists")
        path.mkdir(parents=True, exist_ok=True)
    return _text(s, "", f"made {', '.join(paths)}")


def _remove(session, s, args: list[str], recursive: bool = False) -> Result:
    flags, paths = _options(args, "rRf")
    recursive = recursive or bool(flags & {"r", "R"})
    lines = []
    for text in paths:
        for path in _expand(session, text):
            if path.resolve() in allowed_roots(session):  # e.g. `!fs -rmr ${dir}` with dir empty: the working directory
                raise MLSQLError(f"will not delete {path}: it is one of the folders file commands may touch, not a path inside one")
            if path.is_dir() and not path.is_symlink():
                if not recursive:
                    raise MLSQLError(f"`{text}': Is a directory (use -rmr or -rm -r)")
                shutil.rmtree(path)
            else:
                path.unlink()
            lines.append(f"Deleted {path}")
    return _text(s, "\n".join(lines) + "\n", f"deleted {len(lines)} paths")


def _rmdir(session, s, args: list[str]) -> Result:
    for text in args:
        for path in _expand(session, text):
            if not path.is_dir():
                raise MLSQLError(f"`{text}': Is not a directory")
            if any(path.iterdir()):
                raise MLSQLError(f"`{text}': Directory is not empty")
            path.rmdir()
    return _text(s, "", f"removed {', '.join(args)}")


def _sources_and_target(session, args: list[str], verb: str) -> tuple[list[Path], Path]:
    if len(args) < 2:
        raise MLSQLError(f"-{verb}: expected SOURCE... DESTINATION")
    sources = [p for text in args[:-1] for p in _expand(session, text)]
    target = allowed_path(session, args[-1])
    if len(sources) > 1 and not target.is_dir():
        raise MLSQLError(f"`{args[-1]}': is not a directory (several sources need a folder to go to)")
    return sources, target


def _destination(source: Path, target: Path) -> Path:
    destination = target / source.name if target.is_dir() else target
    if destination.exists():
        raise MLSQLError(f"`{destination}': File exists")
    return destination


def _copy(session, s, args: list[str]) -> Result:
    """``-cp`` (and ``-put``/``-get``: local and remote are the same disk here)."""
    sources, target = _sources_and_target(session, args, "cp")
    for source in sources:
        destination = _destination(source, target)
        if source.is_dir():
            shutil.copytree(source, destination)
        else:
            shutil.copy2(source, destination)
    return _text(s, "", f"copied {len(sources)} paths to {args[-1]}")


def _move(session, s, args: list[str]) -> Result:
    sources, target = _sources_and_target(session, args, "mv")
    for source in sources:
        shutil.move(source, _destination(source, target))
    return _text(s, "", f"moved {len(sources)} paths to {args[-1]}")


def _getmerge(session, s, args: list[str]) -> Result:
    """Hadoop's ``-getmerge SRC... DST``: the files' bytes, one after the other, into DST."""
    if len(args) < 2:
        raise MLSQLError("-getmerge: expected SOURCE... DESTINATION")
    _merge([p for text in args[:-1] for p in _expand(session, text)], allowed_path(session, args[-1]), 0)
    return _text(s, "", f"merged into {args[-1]}")


def _merge(sources: list[Path], target: Path, skip_lines: int) -> int:
    """Write the files into ``target``, dropping the first ``skip_lines`` lines of all but the
    first (their repeated CSV header). Returns how many files went in."""
    files = [f for p in sources for f in (sorted(x for x in p.rglob("*") if x.is_file()) if p.is_dir() else [p])
             if f.resolve() != target.resolve()]
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "wb") as out:
        for i, f in enumerate(files):
            with open(f, "rb") as src:
                if i:
                    for _ in range(skip_lines):
                        src.readline()
                shutil.copyfileobj(src, out)
    return len(files)


_USAGE = """Usage: hadoop fs [generic options]
\t[-cat <src> ...]
\t[-count [-q] [-h] <path> ...]
\t[-cp <src> ... <dst>]
\t[-get <src> ... <localdst>]
\t[-getmerge <src> <localdst>]
\t[-help [cmd ...]]
\t[-ls [-d] [-h] [-R] [-F] [<path> ...]]
\t[-lsr [<path> ...]]
\t[-mkdir [-p] <path> ...]
\t[-mv <src> ... <dst>]
\t[-put <localsrc> ... <dst>]
\t[-rm [-r|-R] <src> ...]
\t[-rmdir <dir> ...]
\t[-rmr <src> ...]
\t[-usage [cmd ...]]
\tutils getmerge <srcGlob> <dst> [skipNLines]
\tutils rename <srcGlob> <targetDir> <pattern> <replacement>
"""


def _usage(session, s, args: list[str]) -> Result:
    return _text(s, _USAGE, "usage of !fs")


SHELL: dict[str, Callable] = {
    "-ls": _ls, "-lsr": lambda session, s, args: _ls(session, s, ["-R", *args]),
    "-count": _count, "-cat": _cat, "-text": _cat, "-mkdir": _mkdir,
    "-rm": _remove, "-rmr": lambda session, s, args: _remove(session, s, args, recursive=True), "-rmdir": _rmdir,
    "-cp": _copy, "-put": _copy, "-copyFromLocal": _copy, "-get": _copy, "-copyToLocal": _copy,
    "-mv": _move, "-getmerge": _getmerge, "-help": _usage, "-usage": _usage,
}


# -- utils: Byzer's additions, positional or named (`_ -source ... -target ...`) ---------------------

def _named_or_positional(args: list[str], names: tuple[str, ...], required: int) -> list[str | None]:
    usage = (" ".join(names[:required]) + (f" [{' '.join(names[required:])}]" if len(names) > required else "")
             + f" or _ {' '.join(f'-{n} ...' for n in names)}")
    if args and args[0] == "_":
        named = named_arguments(args, usage)
        values = [named.get(n) for n in names]
    else:
        values = list(args) + [None] * (len(names) - len(args))
    if len(values) > len(names) or any(v is None for v in values[:required]):
        raise MLSQLError(f"expected {usage}")
    return values


def _message(s, text: str) -> Result:
    return Result(s, text, table=pa.table({"message": [text]}), num_rows=1)


def _util_getmerge(session, s, args: list[str]) -> Result:
    source, target, skip = _named_or_positional(args, ("source", "target", "skipNLines"), 2)
    if not (skip or "0").isdigit():
        raise MLSQLError(f"skipNLines must be a whole number, not {skip!r}")
    count = _merge(_expand(session, source), allowed_path(session, target), int(skip or 0))
    return _message(s, f"merged {count} files into {target}")


def _util_rename(session, s, args: list[str]) -> Result:
    """Move the files matching ``source`` into the folder ``target``, replacing what ``pattern``
    (a regular expression) matches in each name by ``replace``."""
    source, target, pattern, replacement = _named_or_positional(args, ("source", "target", "pattern", "replace"), 4)
    folder = allowed_path(session, target)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise MLSQLError(f"pattern {pattern!r} is not a regular expression: {exc}") from exc
    moved = 0
    for path in _expand(session, source):
        new_name = regex.sub(_JAVA_GROUP.sub(r"\\g<\1>", replacement.replace("\\", "\\\\")), path.name)
        shutil.move(path, _destination(Path(new_name), folder))
        moved += 1
    return _message(s, f"renamed {moved} files into {target}")


UTILS: dict[str, Callable] = {"getmerge": _util_getmerge, "rename": _util_rename}


def _fs(session, s) -> Result:
    args = list(s.args)
    if args and args[0] == "utils":
        rest = args[1:]
        while rest and rest[0] == "utils":  # the doc's own examples repeat it: !hdfs utils utils getmerge ...
            rest = rest[1:]
        util = UTILS.get(rest[0]) if rest else None
        if util is None:
            raise MLSQLError(f"!{s.name} utils: expected one of {', '.join(UTILS)}")
        return util(session, s, rest[1:])
    shell = SHELL.get(args[0]) if args else None
    if shell is None:
        raise MLSQLError(f"!{s.name}: expected one of {', '.join(SHELL)} or utils {'|'.join(UTILS)}, "
                         f"not {' '.join(args[:1]) or 'nothing'}")
    return shell(session, s, args[1:])


COMMANDS: dict[str, Callable] = {"hdfs": _fs, "fs": _fs}
