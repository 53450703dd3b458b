"""``mlsql-ray submit``: scripts sent to a real ``ray start --head`` with its dashboard (Ray Jobs)
and token authentication on, one head for the module; and ``ray://`` refused with a pointer here.

The head is started and stopped by ``test_cluster``'s helpers (its own process group and temp
dir, never ``ray stop``). Jobs run with ``--no-install``: the head's Python is this venv, and
nothing may download at run time.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from deltalake import DeltaTable

from mlsql_ray import MLSQLError
from mlsql_ray.frontend.submit import check_upload_size
from signal_helpers import sigint_as_in_a_terminal
from test_cluster import free_port, running_head

DASHBOARD_TIMEOUT_S = 90
JOB_TIMEOUT_S = 180


def dashboard_answers(url: str) -> bool:
    """Whether the dashboard's HTTP server is up (with token authentication on it answers 401
    to a request without the token)."""
    try:
        urllib.request.urlopen(f"{url}/api/version", timeout=2)
        return True
    except urllib.error.HTTPError as exc:
        return exc.code in (401, 403)
    except OSError:
        return False


@pytest.fixture(scope="module")
def jobs_head(tmp_path_factory) -> str:
    """A head with its dashboard on 127.0.0.1 and token authentication on: its Ray Jobs URL."""
    dashboard = free_port()
    command = ["ray", "start", "--head", "--node-ip-address=127.0.0.1", f"--port={free_port()}", "--num-cpus=1",
               "--include-dashboard=true", "--dashboard-host=127.0.0.1", f"--dashboard-port={dashboard}"]
    url = f"http://127.0.0.1:{dashboard}"
    with running_head(tmp_path_factory.mktemp("jobs-head"), command):
        deadline = time.monotonic() + DASHBOARD_TIMEOUT_S
        while not dashboard_answers(url):
            assert time.monotonic() < deadline, f"the head's dashboard did not answer at {url}"
            time.sleep(0.5)
        yield url


def submit(*args: str, env: dict | None = None, **popen) -> subprocess.Popen:
    base = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS")}
    return subprocess.Popen([sys.executable, "-m", "mlsql_ray", "submit", *args], env={**base, **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def finished(process: subprocess.Popen) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=JOB_TIMEOUT_S)
    return process.returncode, out, err


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A script folder: the main script includes another file, which loads a CSV beside it (a
    load's path is relative to the file it is in)."""
    folder = tmp_path / "project"
    (folder / "lib").mkdir(parents=True)
    (folder / "lib" / "people.csv").write_text("name,age\nada,36\nalan,41\ngrace,85\n")
    (folder / "lib" / "load.mlsql").write_text('load csv.`people.csv` where header="true" and inferSchema="true" as people;\n')
    (folder / "main.mlsql").write_text(
        "include project.`lib/load.mlsql`;\n"
        "select name, age + ${bump} as age from people where age > 40 as older;\n"
        "save overwrite older as delta.`db.older`;\n")
    return folder


@pytest.mark.slow  # a job on the module's head
def test_submit_runs_the_script_and_its_include_on_the_cluster(jobs_head, project, tmp_path):
    warehouse = tmp_path / "warehouse"
    code, out, err = finished(submit(str(project / "main.mlsql"), "--address", jobs_head, "--no-install",
                                     "--warehouse", str(warehouse), "--set", "bump=1"))
    assert code == 0, out + err
    assert "saved 2 rows of older" in out and "grace" in out  # the job's own output, streamed back
    assert "job raysubmit_" in err
    rows = DeltaTable(str(warehouse / "db" / "older")).to_pyarrow_table().sort_by("name").to_pylist()
    assert rows == [{"name": "alan", "age": 42}, {"name": "grace", "age": 86}]


@pytest.mark.slow  # a job on the module's head
def test_a_failing_script_exits_with_its_error_line(jobs_head, tmp_path):
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "bad.mlsql").write_text("select 1 as a as one;\nselect nope from missing_table as t;\n")
    code, out, err = finished(submit(str(folder / "bad.mlsql"), "--address", jobs_head, "--no-install",
                                     "--warehouse", str(tmp_path / "wh")))
    assert code == 1, out + err  # the driver's exit status: the script's error
    assert "bad.mlsql:2:" in out and "missing_table" in out
    assert "FAILED" in err


@pytest.mark.slow  # a job on the module's head
def test_ctrl_c_stops_the_job(jobs_head, tmp_path):
    folder = tmp_path / "slow"
    folder.mkdir()
    (folder / "slow.mlsql").write_text('select "waiting" as state as s;\nset waited = "sleep 120" where type="shell";\n')
    process = submit(str(folder / "slow.mlsql"), "--address", jobs_head, "--no-install",
                     "--warehouse", str(tmp_path / "wh"), preexec_fn=sigint_as_in_a_terminal)
    seen = ""
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while "waiting" not in seen:  # the job is running its second statement once the first printed
        assert time.monotonic() < deadline and process.poll() is None, seen
        seen += process.stdout.readline()
    sent = time.monotonic()
    process.send_signal(signal.SIGINT)
    code, out, err = finished(process)
    assert code == 130, f"exit {code} {time.monotonic() - sent:.1f} s after the SIGINT\n{seen}{out}\n{err}"
    assert "STOPPED" in err


@pytest.mark.slow  # a job on the module's head
def test_a_wrong_token_is_refused_before_anything_runs(jobs_head, project):
    code, out, err = finished(submit(str(project / "main.mlsql"), "--address", jobs_head, "--no-install",
                                     env={"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "not-the-token"}))
    assert code == 2, out + err
    assert "token" in err and "job raysubmit_" not in err


def test_a_big_folder_is_not_uploaded_unless_its_data_is_left_out(tmp_path):
    (tmp_path / "main.mlsql").write_text("select 1 as a as t;\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "big.bin").write_bytes(b"\0" * (2 * 1024 * 1024))
    with pytest.raises(MLSQLError, match=r"2\.0 MiB to upload.*over the 1 MiB limit.*data/ \(2\.0 MiB\)"):
        check_upload_size(tmp_path, [], 1)
    assert check_upload_size(tmp_path, ["data/"], 1) < 1024
    (tmp_path / ".rayignore").write_text("*.bin\n")  # Ray's own ignore file counts too
    assert check_upload_size(tmp_path, [], 1) < 1024


def test_ray_client_addresses_are_refused_with_a_pointer_to_submit(tmp_path, monkeypatch):
    from mlsql_ray import Session

    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    cell = "--%python\nfrom pyjava.api.mlsql import RayContext\nRayContext.connect(globals(), None)\nprint('never printed')\n"
    with Session(warehouse=tmp_path / "wh", ray_address="ray://127.0.0.1:10001") as session:
        with pytest.raises(MLSQLError, match=r"ray://127\.0\.0\.1:10001.*mlsql-ray submit"):
            session.execute(cell)
