"""Issue 14, item 7: include project.`path`, folders of scripts, lib refused (byzer-doc grammar/include.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlsql_ray import Session
from mlsql_ray.errors import MLSQLError


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_project_paths_start_at_the_entry_scripts_folder_even_from_a_nested_file(session: Session, tmp_path: Path):
    """include.md: in src/algs/a.byzer, include project.`src/algs/b.byzer` — a path from the project root."""
    project = tmp_path / "project"
    write(project / "src" / "algs" / "b.byzer", "select 'b' as who as from_b;")
    write(project / "src" / "algs" / "a.byzer", "include project.`src/algs/b.byzer`;\nselect who, 'a' as via from from_b as from_a;")
    main = write(project / "main.mlsql", "include project.`src/algs/a.byzer`;")
    session.execute(main.read_text(), source=main)
    assert session.table("from_a").to_pylist() == [{"who": "b", "via": "a"}]


def test_session_project_root_wins_over_the_scripts_folder(tmp_path: Path):
    project = tmp_path / "project"
    write(project / "lib" / "common.mlsql", 'set greeting = "hi";')
    script = write(tmp_path / "jobs" / "job.mlsql", "include project.`lib/common.mlsql`;\nselect '${greeting}' as g as out;")
    with Session(warehouse=tmp_path / "wh", project_root=project) as session:
        session.execute(script.read_text(), source=script)
        assert session.table("out").to_pylist() == [{"g": "hi"}]
    with Session(warehouse=tmp_path / "wh") as session, pytest.raises(MLSQLError, match="no such file") as caught:
        session.execute(script.read_text(), source=script)
    assert caught.value.line == 1


def test_cli_project_root_option(run_cli, tmp_path: Path):
    project = tmp_path / "project"
    write(project / "lib" / "common.mlsql", "select 41 + 1 as answer as common;")
    script = write(tmp_path / "jobs" / "job.mlsql", "include project.`lib/common.mlsql`;\nselect answer from common as out;")
    done = run_cli("run", str(script), "--warehouse", str(tmp_path / "wh"), "--project-root", str(project))
    assert done.returncode == 0, done.stderr
    assert "42" in done.stdout


def test_a_folder_runs_its_visible_files_in_name_order(session: Session, tmp_path: Path):
    """Byzer reads a folder as Spark's textFile does: every file but hidden ones (. and _), by name."""
    write(tmp_path / "steps" / "b_second.mlsql", "select concat(x, '>b') as x from trail as trail;")
    write(tmp_path / "steps" / "a_first.mlsql", "select 'a' as x as trail;")
    write(tmp_path / "steps" / "c_third.byzer", "select concat(x, '>c') as x from trail as trail;")
    write(tmp_path / "steps" / "_hidden.mlsql", "select 'hidden' as x as trail;")
    write(tmp_path / "steps" / ".dot.mlsql", "select 'dot' as x as trail;")
    main = write(tmp_path / "main.mlsql", "include local.`steps`;")
    session.execute(main.read_text(), source=main)
    assert session.table("trail").to_pylist() == [{"x": "a>b>c"}]


def test_a_folder_is_parsed_whole_before_anything_runs(session: Session, tmp_path: Path):
    write(tmp_path / "steps" / "a.mlsql", "select 1 as x as ran;")
    write(tmp_path / "steps" / "b.mlsql", "select oops oops oops;")
    write(tmp_path / "nested" / "sub" / "x.mlsql", "select 1 as x as t;")
    main = write(tmp_path / "main.mlsql", "include project.`steps`;")
    with pytest.raises(MLSQLError) as caught:
        session.execute(main.read_text(), source=main)
    assert Path(caught.value.source) == (tmp_path / "steps" / "b.mlsql").resolve()
    assert "ran" not in session.catalog
    main.write_text("include project.`nested`;")
    with pytest.raises(MLSQLError, match=r"holds folders \(sub\)"):
        session.execute(main.read_text(), source=main)


def test_lib_needs_the_internet(session: Session, tmp_path: Path):
    """include.md's first example: include lib.`github.com/allwefantasy/lib-core` where alias="libCore"."""
    main = write(tmp_path / "main.mlsql", """select 1 as x as before;
include lib.`github.com/allwefantasy/lib-core`
where
-- libMirror="gitee.com"
alias="libCore";
""")
    with pytest.raises(MLSQLError) as caught:
        session.execute(main.read_text(), source=main)
    assert caught.value.line == 2
    assert "include lib.`github.com/allwefantasy/lib-core` downloads a library from GitHub, which needs the internet" in caught.value.message


def test_project_include_outside_the_project_is_refused(session: Session, tmp_path: Path):
    write(tmp_path / "outside.mlsql", "select 1 as x as escaped;")
    main = write(tmp_path / "project" / "main.mlsql", "include project.`../outside.mlsql`;")
    with pytest.raises(MLSQLError, match="outside .*the project root"):
        session.execute(main.read_text(), source=main)
    assert "escaped" not in session.catalog


def test_unknown_include_format_names_the_supported_ones(session: Session):
    with pytest.raises(MLSQLError, match=r"include supports local.`path`, project.`path`, not http"):
        session.execute("include http.`project.demo.udfs`;")
