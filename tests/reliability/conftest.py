"""The reliability suite (issue 7): faults, load and hostile input, each really injected.

Every test here carries the ``reliability`` marker (``pytest -m reliability`` runs them alone);
they are also part of the default run. Each test records the figures it produced (inputs tried,
faults injected, commits, memory) with the ``figures`` fixture; they are printed at the end of
the run and written to ``test-output/reliability-figures.json`` (docs/reliability.md
quotes them).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
FIGURES: dict[str, object] = {}
_started = time.monotonic()


def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.reliability)


@pytest.fixture
def figures():
    """``figures[key] = value``: a number worth reporting."""
    return FIGURES


def pytest_terminal_summary(terminalreporter):
    if not FIGURES:
        return
    terminalreporter.section("reliability figures")
    for key, value in FIGURES.items():
        terminalreporter.write_line(f"{key}: {value}")


def pytest_sessionfinish(session):
    if not FIGURES:
        return
    out = ROOT / "test-output"
    out.mkdir(exist_ok=True)
    payload = {"figures": FIGURES, "session_seconds": round(time.monotonic() - _started, 1)}
    (out / "reliability-figures.json").write_text(json.dumps(payload, indent=2, default=str) + "\n")
