"""Issue 15's "done means": notebooks/sql_training.ipynb, SQL only, trains two algorithms with
parameter groups, compares them, registers the best and scores held-out digits — run as a user runs
it, in the mlsql kernel under nbclient and by ``mlsql-ray run``, and both must tell the same story.

The accuracy is checked against a threshold a broken model misses (chance is 0.1, a constant
prediction at most 0.12 on these digits), and the function's held-out accuracy must equal the
accuracy the training reported for the group it picked: two computations of the same number."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "sql_training.ipynb"


def table_rows(text: str) -> list[list[str]]:
    """The data rows of a plain-text table (header, types and rule lines dropped)."""
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("(")]
    return [line.split() for line in lines[3:]]


def the_story(tables: list[str]) -> dict:
    """The comparison (algorithm → f1, accuracy) and the held-out accuracy, from the shown tables."""
    [comparison] = [t for t in tables if t.split()[:3] == ["algorithm", "f1", "accuracy"]]
    [scored] = [t for t in tables if t.split()[:3] == ["model", "accuracy", "images"]]
    [[model, accuracy, images]] = table_rows(scored)
    return {"comparison": [(a, float(f1), float(acc)) for a, f1, acc in table_rows(comparison)],
            "model": model, "accuracy": float(accuracy), "images": int(images)}


def check(story: dict) -> None:
    comparison = story["comparison"]
    assert sorted(a for a, _, _ in comparison) == ["NaiveBayes", "NaiveBayes", "RandomForest", "RandomForest"]
    assert [f1 for _, f1, _ in comparison] == sorted((f1 for _, f1, _ in comparison), reverse=True)
    best, _, best_accuracy = comparison[0]
    assert story["model"] == best and story["images"] == 500
    assert story["accuracy"] > 0.8
    assert story["accuracy"] == pytest.approx(best_accuracy, abs=1e-12)


@pytest.mark.slow
def test_sql_training_notebook_in_the_kernel_and_the_cli_agree(run_cli, tmp_path, executed_notebook, ray_address):
    """The kernel's run is conftest's ``executed_notebook`` (nbconvert, i.e. nbclient, in the mlsql
    kernel), shared with the other notebook tests so that the four fits run once for all of them."""
    import nbformat

    source = nbformat.read(NOTEBOOK, as_version=4)
    assert source.metadata["kernelspec"]["name"] == "mlsql"
    assert not any("--%python" in c.source for c in source.cells)  # SQL only
    ran, notebook = executed_notebook(NOTEBOOK)
    assert ran.returncode == 0, ran.stderr
    outputs = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    in_kernel = the_story([o.data["text/plain"] for o in outputs if o.output_type == "display_data"
                           and "text/plain" in o.get("data", {})])
    check(in_kernel)
    # each group's live line ends showing its result
    shown = " ".join(o.data.get("text/plain", "") for o in outputs if o.output_type == "display_data")
    for alg in ("RandomForest", "NaiveBayes"):
        for group in (0, 1):
            assert f"{alg} group {group} (2 in all): success in " in shown

    done = run_cli("run", str(NOTEBOOK), "--warehouse", str(tmp_path / "cli-warehouse"), timeout=600,
                   ray_address=ray_address)
    assert done.returncode == 0, done.stderr
    tables = ["\n".join(block.splitlines()) for block in _tables(done.stdout)]
    by_cli = the_story(tables)
    assert by_cli == in_kernel
    for group in (0, 1):
        assert f"RandomForest group {group} (2 in all): success in " in done.stderr
        assert f"NaiveBayes group {group} (2 in all): success in " in done.stderr


def _tables(stdout: str) -> list[str]:
    """The CLI's output cut into its tables (each ends with a ``(N rows…)`` line)."""
    blocks, current = [], []
    for line in stdout.splitlines():
        current.append(line)
        if line.startswith("(") and "row" in line:
            blocks.append("\n".join(l for l in current if l.strip()))
            current = []
    return [b for b in (_from_header(b) for b in blocks) if b]


def _from_header(block: str) -> str:
    """A block minus the status lines (``set …``, ``registered …``) printed before its table."""
    lines = block.splitlines()
    for i in range(len(lines) - 1):
        if set(lines[i + 2].replace(" ", "")) <= {"-"} if i + 2 < len(lines) else False:
            return "\n".join(lines[i:])
    return ""
