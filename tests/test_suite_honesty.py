"""The suite says what it proves (issue 24, item 9): a test that needs PostgreSQL or Chromium and
skips for want of it fails the run under CI=true (tests/conftest.py), and says NOT RUN elsewhere."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

# a JDBC test (it uses the postgres fixture) whose server is missing
MISSING_SERVER = '''
import pytest

@pytest.fixture
def postgres():
    pytest.skip("PostgreSQL server binaries not found")

def test_reads_a_table(postgres):
    pass
'''


@pytest.mark.parametrize("ci", ["true", ""])
def test_a_jdbc_test_without_its_server_fails_in_ci(tmp_path: Path, ci: str):
    (tmp_path / "test_needs_postgres.py").write_text(MISSING_SERVER)
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:randomly", "-p", "no:cacheprovider",
         "--rootdir", str(tmp_path), str(tmp_path / "test_needs_postgres.py"), "-q"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "CI": ci, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])})
    if ci:
        assert ran.returncode == 1, ran.stdout
        assert "CI=true, but the JDBC tests against PostgreSQL skipped" in ran.stdout
        assert "PostgreSQL server binaries not found" in ran.stdout
    else:
        assert ran.returncode == 0, ran.stdout
        assert "1 skipped" in ran.stdout
        assert "NOT RUN: the JDBC tests against PostgreSQL skipped" in ran.stdout
