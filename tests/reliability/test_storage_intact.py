"""Interrupted and failed work leaves storage intact (issue 7, item 3).

* Ctrl-C (SIGINT) to ``mlsql-ray run`` while it overwrites a Delta table with ~600 MB: the run
  says it was interrupted, and the table's version, log and content are what they were, read
  back with plain ``deltalake``. (Before the engine ran deltalake's write in a helper thread and
  cancelled its input stream, the interrupt only took effect after the commit: the "interrupted"
  run had replaced the table.) Ctrl-C while the write's thread starts, and after the commit while
  the save looks for files earlier saves left, are exact cases of their own.
* A Python cell that raises after ``build_result``: no output table (an older table of that
  name keeps its rows), the save after it never runs, the Delta table is unchanged.
* An append whose schema does not match: a clear error, and not one file more in the table.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from mlsql_ray import InterruptedAfterCommit, MLSQLError, Session
from mlsql_ray.storage import delta
from signal_helpers import catches_sigint, sigint_as_in_a_terminal

BIG_ROWS = 3_000_000
ROW_BYTES = 200
STREAMING_S = 0.1  # into the write; streaming 600 MB into deltalake takes a few seconds
SCHEMA = pa.schema([("id", pa.int64()), ("payload", pa.binary())])


def make_big_parquet(path: Path) -> None:
    """~600 MB of rows that neither dictionary encoding nor snappy can shrink: 20 MB of random
    bytes cut into 200-byte values, repeated with new ids (repeats are 20 MB apart)."""
    block = 100_000
    data = np.random.default_rng(0).integers(0, 256, size=block * ROW_BYTES, dtype=np.uint8)
    offsets = np.arange(0, (block + 1) * ROW_BYTES, ROW_BYTES, dtype=np.int32)
    payload = pa.BinaryArray.from_buffers(pa.binary(), block, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    with pq.ParquetWriter(path, SCHEMA, compression="none") as writer:
        for start in range(0, BIG_ROWS, block):
            writer.write_table(pa.table({"id": np.arange(start, start + block), "payload": payload}, schema=SCHEMA))


def snapshot(path: Path) -> dict:
    """What a reader sees, and what is on disk."""
    table = DeltaTable(str(path))
    return {
        "version": table.version(),
        "rows": table.to_pyarrow_table().sort_by([(table.schema().to_arrow().names[0], "ascending")]),
        "log": sorted(os.listdir(path / "_delta_log")),
        "files": set(os.listdir(path)),
    }


def reading(pid: int, target: Path) -> bool:
    """Whether process ``pid`` has ``target`` open (a save streams its source while it writes)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == str(target):
                return True
        except OSError:
            continue
    return False


def thread_names(pid: int) -> set[str]:
    try:
        return {Path(f"/proc/{pid}/task/{t}/comm").read_text().strip() for t in os.listdir(f"/proc/{pid}/task")}
    except OSError:
        return set()


SMALL = pa.table({"id": [1, 2, 3, 4, 5], "payload": [b"a", b"b", b"c", b"d", b"e"]}, schema=SCHEMA)


@pytest.fixture(scope="module")
def big_parquet(tmp_path_factory) -> Path:
    big = tmp_path_factory.mktemp("big") / "big.parquet"
    make_big_parquet(big)
    yield big
    big.unlink()


def start_big_save(tmp_path: Path, big: Path) -> tuple[Path, subprocess.Popen]:
    """``keep.big`` at version 0 with 5 rows, and ``mlsql-ray run`` overwriting it with ``big``,
    returned once deltalake is writing (the source file open, deltalake's runtime started)."""
    warehouse = tmp_path / "warehouse"
    with Session(warehouse=warehouse) as session:
        session.catalog.add_arrow("small", SMALL, "test")
        session.execute("save overwrite small as delta.`keep.big`;")
    script = tmp_path / "save.mlsql"
    script.write_text(f"load parquet.`{big}` as big;\nsave overwrite big as delta.`keep.big`;\n")
    run = subprocess.Popen([sys.executable, "-m", "mlsql_ray", "run", str(script), "--warehouse", str(warehouse)],
                           cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           preexec_fn=sigint_as_in_a_terminal)
    first = run.stdout.readline()
    assert first.startswith("loaded parquet"), first
    # The load is lazy: the save opens the source file, then deltalake starts its runtime
    # (the process's first "tokio-rt-worker" thread) and pulls the stream for some seconds.
    deadline = time.monotonic() + 120
    while not (reading(run.pid, big) and "tokio-rt-worker" in thread_names(run.pid)):
        assert run.poll() is None, run.communicate()
        assert time.monotonic() < deadline, "the save never started writing"
        time.sleep(0.002)
    return warehouse / "keep" / "big", run


def data_files(path: Path) -> set[str]:
    return {f for f in os.listdir(path) if f.endswith(".parquet")}


@pytest.mark.slow
def test_sigint_during_a_delta_save_leaves_the_table_as_it_was(tmp_path: Path, big_parquet: Path, figures):
    path, run = start_big_save(tmp_path, big_parquet)
    try:
        before = snapshot(path)
        # the write has begun once deltalake opens its first file in the table's folder (the source
        # being open and deltalake's runtime running can both come before it)
        deadline = time.monotonic() + 120
        while not set(os.listdir(path)) - before["files"]:
            assert run.poll() is None, run.communicate()
            assert time.monotonic() < deadline, "the save never began writing"
            time.sleep(0.002)
        time.sleep(STREAMING_S)
        # DuckDB closes the source once it has read it all, a second or more before deltalake has
        # written its last file and commits (1.0-1.4 s on a quiet 2-core machine): open, it is
        # still being streamed, and the commit is that far away
        assert reading(run.pid, big_parquet) and run.poll() is None, "the save ended before the interrupt"
        assert catches_sigint(run.pid), "the run ignores or blocks SIGINT: Ctrl-C cannot reach it"
        inside_save = time.monotonic()
        run.send_signal(signal.SIGINT)
        out, err = run.communicate(timeout=180)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    stopped_after = time.monotonic() - inside_save
    assert run.returncode == 130, (run.returncode, out, err)
    assert "interrupted" in err and "committed" not in err
    assert "saved" not in out, out
    after = snapshot(path)
    assert after["version"] == before["version"] == 0
    assert after["rows"].equals(before["rows"])
    assert after["log"] == before["log"], "the log gained an entry (or a temporary commit file)"
    leftovers = after["files"] - before["files"]
    table = DeltaTable(str(path))
    referenced = {Path(uri).name for uri in table.file_uris()}
    assert not leftovers & referenced
    # what an interrupted write leaves behind is garbage by Delta's rules, and vacuum knows it
    garbage = set(table.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=True, full=True))
    parquet_leftovers = {f for f in leftovers if f.endswith(".parquet")}
    assert parquet_leftovers <= garbage, (parquet_leftovers, garbage)
    figures["SIGINT during a 600 MB Delta overwrite: version before/after"] = f"{before['version']}/{after['version']}"
    figures["SIGINT during a 600 MB Delta overwrite: run stopped after (s)"] = round(stopped_after, 2)
    figures["SIGINT during a 600 MB Delta overwrite: unreferenced files left (vacuum removes them)"] = sorted(leftovers)


@pytest.mark.slow
def test_the_files_a_killed_save_left_are_deleted_by_a_later_save(tmp_path: Path, big_parquet: Path, figures):
    """SIGKILL once the save has written a data file: the table keeps its version, and the file
    stays unreferenced. The next save keeps it while it is young (it could be another writer's,
    not committed yet); once it is an hour old, the next save deletes it, and only it."""
    path, run = start_big_save(tmp_path, big_parquet)
    try:
        before = data_files(path)
        deadline = time.monotonic() + 120
        while not data_files(path) - before:
            assert run.poll() is None, run.communicate()
            assert time.monotonic() < deadline, "the save wrote no data file"
            time.sleep(0.01)
        run.kill()
        run.wait()
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    left = data_files(path) - before
    assert DeltaTable(str(path)).version() == 0 and left
    with Session(warehouse=path.parent.parent) as session:
        session.catalog.add_arrow("small", SMALL, "test")
        [young] = session.execute("save append small as delta.`keep.big`;")
        assert "deleted" not in young.message and left <= data_files(path)
        for name in left:  # an hour passes
            moment = time.time() - 3700
            os.utime(path / name, (moment, moment))
        [later] = session.execute("save append small as delta.`keep.big`;")
    assert later.message.endswith(f"(version 2, mode append; deleted {len(left)} data files an interrupted save had left)")
    assert not left & data_files(path)
    table = DeltaTable(str(path))
    assert sorted(table.to_pyarrow_table().column("id").to_pylist()) == sorted([1, 2, 3, 4, 5] * 3)
    assert DeltaTable(str(path), version=0).to_pyarrow_table().column("id").to_pylist() == [1, 2, 3, 4, 5]
    figures["SIGKILL during a 600 MB Delta overwrite: data files left, then deleted by a save an hour later"] = len(left)


# Ctrl-C at the worst moment, made exact: this wrapper of deltalake's write lets the real write run
# (every row handed over, the commit done), then interrupts its own process and holds the write's
# thread until the main thread has taken the KeyboardInterrupt, i.e. while the save still waits.
LATE_INTERRUPT = """
import os, signal, sys, threading
import deltalake

real_write = deltalake.write_deltalake
taken = threading.Event()

def on_sigint(signum, frame):
    taken.set()
    raise KeyboardInterrupt

def write_then_interrupt(*args, **kwargs):
    real_write(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGINT)
    assert taken.wait(60)

signal.signal(signal.SIGINT, on_sigint)
deltalake.write_deltalake = write_then_interrupt
from mlsql_ray.frontend.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("mode", ["overwrite", "append"])
def test_an_interrupt_that_lost_the_race_with_the_commit_says_so(tmp_path: Path, mode: str):
    warehouse = tmp_path / "warehouse"
    with Session(warehouse=warehouse) as session:
        session.execute("select 1 as id as one; save overwrite one as delta.`db.t`;")
    script = tmp_path / "save.mlsql"
    script.write_text(f"select id from range(2, 5) as more;\nsave {mode} more as delta.`db.t`;\n")
    done = subprocess.run([sys.executable, "-c", LATE_INTERRUPT, "run", str(script), "--warehouse", str(warehouse)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    table = DeltaTable(str(warehouse / "db" / "t"))
    assert table.version() == 1  # the commit went through
    assert done.returncode == 130, (done.stdout, done.stderr)
    assert done.stderr.strip().endswith("save.mlsql: interrupted after db.t was committed as version 1"), done.stderr
    assert "saved" not in done.stdout
    expected = [2, 3, 4] if mode == "overwrite" else [1, 2, 3, 4]
    assert sorted(table.to_pyarrow_table().column("id").to_pylist()) == expected


def test_an_interrupt_while_the_write_thread_starts_cancels_the_write(session, warehouse, monkeypatch):
    """Ctrl-C inside ``Thread.start`` of the save's writer thread (start waits there for the thread
    to run; the KeyboardInterrupt is raised as start returns): the write is cancelled, and the
    interrupt goes up once the writer has given up, as from any other moment. (With the thread
    started outside the wait's try, the KeyboardInterrupt went up at once and nothing was
    cancelled: the write went on, and committed if it had its rows before the save closed its
    source.) The write here begins 0.2 s late, so that the interrupt is under way when it does."""
    import deltalake

    session.catalog.add_arrow("small", SMALL, "test")
    session.execute("save overwrite small as delta.`keep.start`;")
    writers, finished = [], threading.Event()

    class InterruptedStart(threading.Thread):
        def start(self):
            super().start()
            if self.name == "mlsql-delta-write":
                writers.append(self)
                raise KeyboardInterrupt

    real_write = deltalake.write_deltalake

    def late_write(*args, **kwargs):
        try:
            time.sleep(0.2)
            return real_write(*args, **kwargs)
        finally:
            finished.set()

    monkeypatch.setattr(delta.threading, "Thread", InterruptedStart)
    monkeypatch.setattr(deltalake, "write_deltalake", late_write)
    try:
        with pytest.raises(KeyboardInterrupt) as raised:
            session.execute("save overwrite small as delta.`keep.start`;")
        assert finished.is_set(), "the interrupt went up while the write went on"
    finally:
        for writer in writers:
            writer.join(60)
    assert len(writers) == 1 and type(raised.value) is KeyboardInterrupt
    assert DeltaTable(str(warehouse / "keep" / "start")).version() == 0


def test_an_interrupt_before_the_write_thread_exists_does_not_wait_for_it(session, warehouse, monkeypatch):
    """Ctrl-C inside ``Thread.start`` before the thread was made: there is no write to wait for,
    and the interrupt goes up once the thread has had ``START_WAIT_S`` to show up (0.2 s here),
    not after ``CANCEL_WAIT_S`` with "it may yet commit"."""
    class NeverStarted(threading.Thread):
        def start(self):
            if self.name != "mlsql-delta-write":
                return super().start()
            raise KeyboardInterrupt

    session.catalog.add_arrow("small", SMALL, "test")
    session.execute("save overwrite small as delta.`keep.never`;")
    monkeypatch.setattr(delta.threading, "Thread", NeverStarted)
    monkeypatch.setattr(delta, "START_WAIT_S", 0.2)
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt) as raised:
        session.execute("save overwrite small as delta.`keep.never`;")
    assert type(raised.value) is KeyboardInterrupt and time.monotonic() - started < 10
    assert DeltaTable(str(warehouse / "keep" / "never")).version() == 0


def test_an_interrupt_after_the_commit_while_the_save_tidies_up_names_the_commit(session, warehouse, monkeypatch):
    """Ctrl-C after deltalake has committed, while the save looks for data files interrupted saves
    left (``remove_leftovers``: a vacuum dry run): ``InterruptedAfterCommit`` with the version, not
    a bare "interrupted" for a save that went through."""
    def interrupted(path):
        raise KeyboardInterrupt

    monkeypatch.setattr(delta, "remove_leftovers", interrupted)
    session.catalog.add_arrow("small", SMALL, "test")
    with pytest.raises(KeyboardInterrupt) as raised:  # (an InterruptedAfterCommit is one)
        session.execute("save overwrite small as delta.`keep.tidy`;")
    assert isinstance(raised.value, InterruptedAfterCommit), repr(raised.value)
    assert str(raised.value) == "interrupted after keep.tidy was committed as version 0"
    assert DeltaTable(str(warehouse / "keep" / "tidy")).version() == 0


def test_a_python_cell_that_raises_after_build_result_changes_nothing(ray_session, warehouse):
    session = ray_session
    session.execute("select 1 as a, 'old' as b as out; save overwrite out as delta.`keep.cell`;")
    path = warehouse / "keep" / "cell"
    before = snapshot(path)
    cell = """--%python
--%output=out
from pyjava.api.mlsql import RayContext
ray_context = RayContext.connect(globals(), None)
ray_context.build_result([{"a": 2, "b": "new"}, {"a": 3, "b": "new"}])
raise RuntimeError("failed after build_result")
-- %%
save overwrite out as delta.`keep.cell`;
"""
    with pytest.raises(MLSQLError, match="failed after build_result") as caught:
        session.execute(cell)
    assert caught.value.line == 6
    assert session.table("out").to_pylist() == [{"a": 1, "b": "old"}]
    after = snapshot(path)
    assert after["version"] == before["version"] == 0
    assert after["rows"].equals(before["rows"])
    assert (after["log"], after["files"]) == (before["log"], before["files"])
    assert DeltaTable(str(path)).to_pyarrow_table().to_pylist() == [{"a": 1, "b": "old"}]


@pytest.mark.parametrize("mismatch", [
    "select 'not a number' as id, 'x' as name as other; save append other as delta.`keep.schema`;",
    "select 7 as id, 'x' as name, 2.5 as extra as other; save append other as delta.`keep.schema`;",
    "select 'text' as id, 'x' as name as other; save append other as delta.`keep.schema` where mergeSchema=\"true\";",
])
def test_an_append_whose_schema_does_not_match_changes_nothing(session, warehouse, mismatch):
    session.catalog.add_arrow("t", pa.table({"id": list(range(10)), "name": [f"n{i}" for i in range(10)]}), "test")
    session.execute("save overwrite t as delta.`keep.schema`;")
    path = warehouse / "keep" / "schema"
    before = snapshot(path)
    with pytest.raises(MLSQLError, match="schema does not match|cannot write") as caught:
        session.execute(mismatch)
    assert "keep.schema" in caught.value.message
    after = snapshot(path)
    assert after["version"] == before["version"] == 0
    assert after["rows"].equals(before["rows"])
    assert (after["log"], after["files"]) == (before["log"], before["files"]), "a failed append left files behind"
