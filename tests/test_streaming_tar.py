"""streaming_tar: a file or directory as rows {start, offset, value} in 64 KiB chunks, and back;
extraction refuses archives that would write outside the target directory."""

from __future__ import annotations

import io
import os
import random
import tarfile
from pathlib import Path

import pytest

from mlsql_ray.storage import streaming_tar
from mlsql_ray.storage.streaming_tar import CHUNK_SIZE, build_rows_from_file, save_rows_as_file
from tar_helpers import rows_of, rows_of_stream


def tree(root: Path) -> dict[str, bytes | None]:
    """Every path below ``root`` (relative) with its bytes, None for directories."""
    found = {}
    for path in sorted(root.rglob("*")):
        found[str(path.relative_to(root))] = None if path.is_dir() else path.read_bytes()
    return found


def everything_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_chunk_size_is_64_kib():
    assert CHUNK_SIZE == 65536


def test_single_file_round_trips_through_64_kib_rows(tmp_path: Path):
    data = random.Random(1).randbytes(300_000)
    source = tmp_path / "model.bin"
    source.write_bytes(data)
    rows = list(build_rows_from_file(source))
    assert [set(r) for r in rows] == [{"start", "offset", "value"}] * len(rows)
    # every chunk but the last is exactly 64 KiB and starts where the previous one ended
    assert all(r["offset"] == CHUNK_SIZE for r in rows[:-1])
    assert 0 < rows[-1]["offset"] <= CHUNK_SIZE
    assert [r["start"] for r in rows] == [i * CHUNK_SIZE for i in range(len(rows))]
    assert all(len(r["value"]) == r["offset"] for r in rows)
    assert sum(r["offset"] for r in rows) > len(data)  # the tar stream holds all of the file
    out = save_rows_as_file(rows, tmp_path / "out")
    assert out == (tmp_path / "out" / "model.bin").resolve()
    assert out.read_bytes() == data


def test_concatenated_rows_are_a_plain_tar_archive(tmp_path: Path):
    """What any Delta reader does: sort on start, join the values, open as tar."""
    source = tmp_path / "weights.h5"
    source.write_bytes(b"\x00\x01" * 100_000)
    rows = list(build_rows_from_file(source))
    random.Random(2).shuffle(rows)
    stream = b"".join(r["value"] for r in sorted(rows, key=lambda r: r["start"]))
    with tarfile.open(fileobj=io.BytesIO(stream)) as archive:
        assert archive.getnames() == ["weights.h5"]
        assert archive.extractfile("weights.h5").read() == source.read_bytes()


def test_nested_directory_round_trips_with_shuffled_rows(tmp_path: Path):
    source = tmp_path / "saved_model"
    rng = random.Random(3)
    files = {
        "empty.txt": b"",
        "one.txt": b"x",
        "variables/variables.data-00000-of-00001": rng.randbytes(CHUNK_SIZE),
        "variables/variables.index": rng.randbytes(CHUNK_SIZE + 1),
        "assets/deep/er/still/big.bin": rng.randbytes(250_000),
        "fingerprint.pb": rng.randbytes(57),
    }
    for name, data in files.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_bytes(data)
    (source / "assets" / "empty_dir").mkdir()
    (source / "link_to_one").symlink_to("one.txt")  # a link staying inside is kept

    rows = list(build_rows_from_file(source))
    assert len(rows) > 5
    rng.shuffle(rows)
    out = save_rows_as_file(rows, tmp_path / "restored")
    assert out == (tmp_path / "restored" / "saved_model").resolve()
    assert tree(out) == tree(source)
    assert (out / "assets" / "empty_dir").is_dir()
    assert os.readlink(out / "link_to_one") == "one.txt"


def test_rows_with_a_missing_chunk_are_refused(tmp_path: Path):
    source = tmp_path / "f.bin"
    source.write_bytes(random.Random(4).randbytes(200_000))
    rows = list(build_rows_from_file(source))
    del rows[1]
    with pytest.raises(ValueError, match="not contiguous"):
        save_rows_as_file(rows, tmp_path / "out")


def test_missing_source_is_a_clear_error(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="nope"):
        list(build_rows_from_file(tmp_path / "nope"))


# -- hostile archives -------------------------------------------------------------------------

def _file(name: str) -> tuple[tarfile.TarInfo, bytes]:
    return tarfile.TarInfo(name), b"pwned"


def _link(name: str, target: str, kind: bytes) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info, None


@pytest.fixture
def sandbox(tmp_path: Path):
    """A target directory inside a parent we watch for anything written next to it."""
    parent = tmp_path / "parent"
    target = parent / "target"
    parent.mkdir()
    (parent / "victim.txt").write_text("original")
    return parent, target


HOSTILE = {
    "absolute path": lambda parent: [_file(str(parent / "abs_pwned.txt"))],
    "dot-dot": lambda parent: [_file("../dotdot_pwned.txt")],
    "dot-dot inside a name": lambda parent: [_file("ok/../../dotdot2_pwned.txt")],
    "overwrite through ..": lambda parent: [_file("../victim.txt")],
    "symlink to an absolute outside dir": lambda parent: [
        _link("escape", str(parent), tarfile.SYMTYPE), _file("escape/sym_pwned.txt")],
    "symlink climbing out": lambda parent: [
        _link("escape", "../", tarfile.SYMTYPE), _file("escape/sym2_pwned.txt")],
    "symlink through itself (a -> a//..)": lambda parent: [_link("a", "a//..", tarfile.SYMTYPE)],
    "symlink to an outside file": lambda parent: [
        _link("victim_link", "../victim.txt", tarfile.SYMTYPE), _file("victim_link")],
    "hardlink to an outside file": lambda parent: [
        _link("hard", "../victim.txt", tarfile.LNKTYPE)],
    "symlink named with a slash (escape/ -> ..)": lambda parent: [
        _link("escape/", "..", tarfile.SYMTYPE), _file("escape/slash_pwned.txt")],
    # found by the generated archives: "a//." is written as "a", but the filter judged ".." from inside a
    "symlink named a//. pointing at ..": lambda parent: [
        _link("a//.", "..", tarfile.SYMTYPE), _file("a/dot_pwned.txt")],
    "symlink in place of an extracted file": lambda parent: [
        _file("again"), _link("again", "fine.txt", tarfile.SYMTYPE)],
    "hardlink to a member not extracted": lambda parent: [_link("hard", "later.txt", tarfile.LNKTYPE)],
    "hardlink to an absolute path": lambda parent: [
        _link("hard", str(parent / "victim.txt"), tarfile.LNKTYPE)],
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_hostile_archive_is_refused_and_writes_nothing_outside(kind: str, sandbox):
    parent, target = sandbox
    rows = rows_of([_file("fine.txt"), *HOSTILE[kind](parent)])
    before = everything_under(parent)
    with pytest.raises(ValueError, match="refusing archive member"):
        save_rows_as_file(rows, target)
    created = everything_under(parent) - before
    assert all(path.startswith("target") for path in created), created
    assert (parent / "victim.txt").read_text() == "original"
    # links that were refused were not created either
    assert not any(p.is_symlink() or (p.is_file() and p.stat().st_nlink > 1) for p in target.rglob("*"))


def test_device_members_are_refused(sandbox):
    parent, target = sandbox
    info = tarfile.TarInfo("fifo")
    info.type = tarfile.FIFOTYPE
    with pytest.raises(ValueError, match="devices and pipes"):
        save_rows_as_file(rows_of([(info, None)]), target)
    assert not (target / "fifo").exists()


def test_the_module_is_what_cells_import_as_pyjava_storage():
    from mlsql_ray.cells.runner import _alias_modules

    assert _alias_modules()["pyjava.storage.streaming_tar"] is streaming_tar


def test_archive_of_a_directory_as_dot_extracts_into_the_target(tmp_path: Path):
    """Archives made with ``tar -C dir .`` (first member ``.``), e.g. by other tools."""
    source = tmp_path / "src"
    (source / "sub").mkdir(parents=True)
    (source / "sub" / "f.txt").write_text("hi")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        archive.add(source, arcname=".")
    top = save_rows_as_file(rows_of_stream(buffer.getvalue()), tmp_path / "out")
    assert top == (tmp_path / "out").resolve()
    assert (top / "sub" / "f.txt").read_text() == "hi"
