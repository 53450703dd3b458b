"""A file or a directory as table rows, and back (pyjava's ``streaming_tar``).

The path is packed into an uncompressed tar stream cut into 64 KiB chunks; each chunk is a row
``{start: int64, offset: int64, value: binary}`` where ``start`` is its byte position in the
stream and ``offset`` its length. Any table reader can rebuild the archive by sorting on
``start``. Extraction (tarfile's ``data`` filter, with extra checks) refuses members that would
land outside the target directory.
"""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path
from typing import Iterable, Iterator, Mapping

from .rows import CHUNK_SIZE


class _ChunkWriter(io.RawIOBase):
    """A write-only stream that hands out fixed-size chunks as tarfile writes into it."""

    def __init__(self):
        self.buffer = bytearray()
        self.position = 0

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.buffer.extend(data)
        return len(data)

    def take_full_chunks(self, final: bool = False) -> Iterator[dict]:
        while len(self.buffer) >= CHUNK_SIZE or (final and self.buffer):
            chunk = bytes(self.buffer[:CHUNK_SIZE])
            del self.buffer[:CHUNK_SIZE]
            yield {"start": self.position, "offset": len(chunk), "value": chunk}
            self.position += len(chunk)


def build_rows_from_file(path: str | os.PathLike) -> Iterator[dict]:
    """Rows holding ``path`` (a file, or a directory with everything below it) as a tar stream.

    Entries are named relative to ``path``'s parent, so a directory ``/tmp/model`` comes back
    as ``model/...`` under the extraction target, and a file as just its name.
    """
    source = Path(path)
    if not source.exists():
        raise FileNotFoundError(f"no such file or directory: {source}")
    sink = _ChunkWriter()
    with tarfile.open(fileobj=sink, mode="w|", format=tarfile.PAX_FORMAT) as archive:
        for file_path, arcname in _members(source):
            archive.add(file_path, arcname=arcname, recursive=False)
            yield from sink.take_full_chunks()
    yield from sink.take_full_chunks(final=True)


def _members(source: Path) -> Iterator[tuple[Path, str]]:
    yield source, source.name
    if source.is_dir() and not source.is_symlink():
        for root, dirs, files in os.walk(source):
            dirs.sort()
            for name in dirs + sorted(files):
                full = Path(root) / name
                yield full, str(full.relative_to(source.parent))


class _RowReader(io.RawIOBase):
    """A read stream over row chunks, checked to be contiguous (sorted on ``start``)."""

    def __init__(self, rows: Iterable[Mapping]):
        self.chunks = iter(sorted(rows, key=lambda r: r["start"]))
        self.current = b""
        self.expected_start = 0

    def readable(self) -> bool:
        return True

    def readinto(self, target) -> int:
        while not self.current:
            row = next(self.chunks, None)
            if row is None:
                return 0
            if row["start"] != self.expected_start:
                raise ValueError(f"model rows are not contiguous: expected a chunk at byte {self.expected_start}, got {row['start']}")
            self.current = bytes(row["value"])
            self.expected_start += len(self.current)
        n = min(len(target), len(self.current))
        target[:n] = self.current[:n]
        self.current = self.current[n:]
        return n


def save_rows_as_file(rows: Iterable[Mapping], target_dir: str | os.PathLike) -> Path:
    """Extract rows made by ``build_rows_from_file`` into ``target_dir``; returns the path of the
    top entry (the original file or directory's name under ``target_dir``).

    Each member goes through ``_safe_member`` (tarfile's ``data`` filter and our checks on top)
    before anything of it is written; a refused member raises ValueError.
    """
    target = Path(target_dir).resolve()
    target.mkdir(parents=True, exist_ok=True)
    top: Path | None = None
    with tarfile.open(fileobj=io.BufferedReader(_RowReader(rows)), mode="r|") as archive:
        for member in archive:
            top = top or _top_entry(target, member.name)
            archive.extract(member, target, filter=_safe_member)
    if top is None:
        raise ValueError("the rows hold an empty archive")
    return top


def _safe_member(member: tarfile.TarInfo, target: str) -> tarfile.TarInfo:
    """tarfile's ``data`` filter (nothing outside ``target``, links only to inside, no devices,
    no set-id bits, no owners), with what it lets through refused on top: absolute names and
    ``..`` parts (the filter would silently strip or resolve them), names through a symlink loop
    (the filter's ``realpath`` does not notice them and writing then fails obscurely), links in
    place of an extracted entry or hard links to anything but an extracted file (where a link
    cannot be made tarfile extracts the pointee again from the archive, which a stream cannot
    rewind to, and may recurse forever), and symlinks spelled ``x/..`` (inside by their
    spelling, elsewhere once x is a link). A name is judged as written on disk (``a//.`` is ``a``)."""
    _refuse_bad_name(Path(target), member)
    normalized = os.path.normpath(member.name)  # "a/", "a//." and "./a" are written where "a" is: the
    if normalized != member.name:  # filter would judge a symlink "a//." -> ".." as if it were inside a
        member = member.replace(name=normalized, deep=False)
    if not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
        raise ValueError(f"refusing archive member {member.name!r}: devices and pipes are not extracted")
    if (member.issym() or member.islnk()) and os.path.lexists(os.path.join(target, member.name)):
        raise ValueError(f"refusing archive member {member.name!r}: a link in place of something extracted before it")
    if member.islnk() and not os.path.isfile(os.path.join(target, member.linkname)):
        raise ValueError(f"refusing archive member {member.name!r}: its hard link to {member.linkname!r} names no file "
                         "extracted before it")  # tarfile would look further back in a stream it cannot rewind
    if member.issym() and _climbs_back(member.linkname):
        raise ValueError(f"refusing archive member {member.name!r}: its link to {member.linkname!r} goes into a "
                         "folder and back out ('x/..'), which means something else if x is a link")
    try:
        return tarfile.data_filter(member, target)
    except tarfile.FilterError as exc:
        raise ValueError(f"refusing archive member {member.name!r}: {exc}") from None


def _top_entry(target: Path, name: str) -> Path:
    """Where the archive's first member lands: its first path part, or the target itself for
    archives made with ``tar -C dir .`` (first member ``.``)."""
    parts = Path(name).parts
    return target / parts[0] if parts else target


def _climbs_back(link: str) -> bool:
    """True for link targets like ``x/..`` or ``a//..``: checked by their spelling they stay
    inside, but on disk ``x/..`` is the parent of wherever x leads (or a loop, if x is the link)."""
    parts = Path(link).parts
    return any(part == ".." for part in parts[next((i for i, p in enumerate(parts) if p != ".."), len(parts)):])


def _refuse_bad_name(target: Path, member: tarfile.TarInfo) -> None:
    """Refuse absolute names, ``..`` parts, and names through a symlink loop (an earlier member
    linked to itself: ``Path.resolve`` raises where ``realpath`` just gives up)."""
    name = member.name
    if name.startswith(("/", "\\")) or Path(name).is_absolute() or ".." in Path(name).parts:
        raise ValueError(f"refusing archive member {name!r}: it would be written outside {target}")
    try:
        (target / name).resolve()
    except (RuntimeError, OSError) as exc:
        raise ValueError(f"refusing archive member {name!r}: {Path(name).name} is a symlink loop ({exc})") from None
