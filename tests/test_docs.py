"""The documentation holds together: every relative link of README.md, docs/*.md and bench/README.md
leads to a file of the checkout (and, with a #fragment, to a heading of that page), and every MLSQL
example (an ```mlsql block) parses, its Python cells included. The examples that need a running engine
are run elsewhere: docs/models.md's readers by tests/test_clean_exits.py, docs/cluster.md's
``ray start`` by tests/test_cluster.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mlsql_ray import parse
from mlsql_ray.lang.ast import PythonCell

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "bench" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
# [text](target): inline links; code spans are removed first so that `[a](b)` in code is no link
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"(`+).*?\1", re.S)


def _prose(page: Path) -> str:
    return CODE_SPAN.sub("", FENCE.sub("", page.read_text()))


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, code marks and punctuation dropped, spaces to '-'."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    return {_anchor(line.lstrip("#")) for line in FENCE.sub("", page.read_text()).splitlines() if line.startswith("#")}


def _relative_links(page: Path) -> list[str]:
    return [target for target in LINK.findall(_prose(page)) if not re.match(r"[a-z]+:", target)]


def test_the_front_door_is_short_and_links_every_page():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 250
    linked = set(_relative_links(ROOT / "README.md"))
    for page in (ROOT / "docs").glob("*.md"):
        assert f"docs/{page.name}" in linked, f"README.md does not link docs/{page.name}"
    assert "bench/README.md" in linked


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_somewhere(page: Path):
    links = _relative_links(page)
    broken = []
    for target in links:
        path, _, fragment = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(target)
        elif fragment and file.suffix == ".md" and fragment not in _anchors(file):
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)}: links to nothing: {broken}"


def test_the_link_check_sees_a_broken_link(tmp_path: Path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[there](missing.md), [here](page.md#title), [not](page.md#nope), `[code](x.md)`\n")
    assert _relative_links(page) == ["missing.md", "page.md#title", "page.md#nope"]
    assert "title" in _anchors(page) and "nope" not in _anchors(page)


SQL_BLOCKS = [(page, n, body) for page in PAGES for n, (lang, body) in enumerate(FENCE.findall(page.read_text()))
              if lang in ("sql", "mlsql")]


@pytest.mark.parametrize("page, number, body", SQL_BLOCKS, ids=[f"{p.relative_to(ROOT)}-{n}" for p, n, _ in SQL_BLOCKS])
def test_every_mlsql_example_parses(page: Path, number: int, body: str):
    statements = parse(body)
    assert statements
    for cell in (s for s in statements if isinstance(s, PythonCell)):
        compile(cell.code, f"{page.name}: block {number}, cell at line {cell.line}", "exec")


def test_the_tour_has_a_load_a_select_a_python_cell_and_a_save():
    readme = (ROOT / "README.md").read_text()
    tour = re.search(r"<!-- tests/test_docs.py parses this -->\s*```mlsql\n(.*?)```", readme, re.S).group(1)
    kinds = {type(s).__name__ for s in parse(tour)}
    assert {"Load", "Select", "PythonCell", "Save"} <= kinds


def test_mlsql_examples_are_fenced_as_mlsql():
    """Renderers that colour with Pygments (GitHub-style Markdown, MkDocs, Sphinx) pick the lexer by
    the fence's language: MLSQL examples say ``mlsql`` (issue 28)."""
    fenced_as_sql = [(page.name, n) for page in PAGES for n, (lang, body) in enumerate(FENCE.findall(page.read_text()))
                     if lang == "sql"]
    assert fenced_as_sql == []
