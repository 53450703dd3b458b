"""``mlsql-ray serve`` as Byzer's clients use it: the server runs as a real process, called with
httpx and with curl exactly as Byzer's doc does; an async job posts to a real local HTTP receiver;
kills, owners' sessions and homes, the token, and hostile inputs, each answered and survived."""

from __future__ import annotations

import concurrent.futures
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path

import httpx
import hypothesis
import pytest

TOKEN = "test-token-0123456789abcdef"
LONG_QUERY = "select count(*) as n from range(100000000000) as r(x) as t;"  # minutes, unless killed


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A ``mlsql-ray serve`` process on a free port, stopped with SIGTERM."""

    def __init__(self, root: Path, *extra: str, token: bool = True, ready_within: float = 120):
        self.root = root
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = root / f"server-{self.port}.log"
        args = ["--port", str(self.port), "--warehouse", str(root / "warehouse"), "--home-root", str(root / "homes")]
        if token:
            (root / "token").write_text(TOKEN + "\n")
            args += ["--token-file", str(root / "token")]
        with self.log.open("w") as log:
            self.process = subprocess.Popen([sys.executable, "-m", "mlsql_ray", "serve", *args, *extra],
                                            stdout=log, stderr=subprocess.STDOUT, cwd=root)
        deadline = time.monotonic() + ready_within
        while True:
            assert self.process.poll() is None, self.log.read_text()
            try:
                if httpx.get(f"{self.url}/health/readiness", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, self.log.read_text()
            time.sleep(0.2)
        self.client = httpx.Client(base_url=self.url, timeout=900,  # a first train starts Ray: minutes on a busy machine
                                   headers={"Authorization": f"Bearer {TOKEN}"} if token else {})

    def run(self, sql: str, **params) -> httpx.Response:
        return self.client.post("/run/script", data={"sql": sql, **params})

    def stop(self) -> int:
        """SIGTERM, then the exit code (a SIGKILL's after 60 s); again: the code."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.client.close()
        return self.process.returncode


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    running = Server(tmp_path_factory.mktemp("service"), "--max-jobs", "4")
    yield running
    assert running.stop() == 0, running.log.read_text()  # its jobs stopped, its sessions and Ray closed
    assert TOKEN not in running.log.read_text()


def fit_hosts(server: Server) -> set[int]:
    """The pids of the server's GroupHost processes (Ray names an actor's process ``ray::GroupHost``),
    among the server's descendants (its embedded Ray's workers)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            pid, rest = stat.read_text().split(" (", 1)
        except OSError:  # ended meanwhile
            continue
        children.setdefault(int(rest.rsplit(") ", 1)[1].split()[1]), []).append(int(pid))
    descendants, todo = set(), [server.process.pid]
    while todo:
        todo += children.get(todo.pop(), [])
        descendants.update(todo)
    hosts = set()
    for pid in descendants:
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::GroupHost"):
                hosts.add(pid)
        except OSError:
            pass
    return hosts


def cpu_ticks(pid: int) -> int:
    """The CPU time ``pid`` has used (user + system), in clock ticks."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()
    return int(fields[11]) + int(fields[12])


TWO_GROUPS = """select array(rand(), rand(), rand()) as features, cast(id % 2 as double) as label from range(3000) as r(id) as w;
select vec_dense(features) as features, label from w as warm;
train warm as RandomForest.`models/warm` where numTrees="20" and `fitParam.0.maxDepth`="6" and `fitParam.1.maxDepth`="8";"""


@pytest.mark.slow
def test_every_jobs_first_train_fits_on_the_fit_hosts_the_server_started(server: Server):
    """Issue 42: the server is ready with its fit hosts up (scikit-learn imported in them); the first
    train of each job, whatever its session, fits its groups on them: no job starts hosts of its own."""
    deadline = time.monotonic() + 900  # Ray and two fit hosts starting: minutes on a busy machine
    while not server.client.get("/health/readiness").json()["warm"]:
        assert time.monotonic() < deadline, server.log.read_text()
        time.sleep(0.5)
    hosts = fit_hosts(server)
    assert len(hosts) == min(2, os.cpu_count() or 1)
    for owner in ("warm1", "warm2"):
        before = {pid: cpu_ticks(pid) for pid in hosts}
        trained = server.run(TWO_GROUPS, owner=owner, sessionPerUser="true")
        assert trained.status_code == 200, trained.text
        assert [r["value"] for r in trained.json() if r["name"] == "status"] == ["success", "success"]
        assert fit_hosts(server) == hosts
        # each host fitted a group (20 trees, skops): tenths of a CPU second, where
        # an idle host spends next to none (a fit in the server would leave them idle)
        assert all(cpu_ticks(pid) - before[pid] >= 5 for pid in hosts), (before, {p: cpu_ticks(p) for p in hosts})


def test_curl_as_byzers_doc_calls_it(server: Server):
    out = subprocess.run(["curl", "-s", "-w", "\n%{http_code}", "-XPOST", f"{server.url}/run/script",
                          "--data-urlencode", "sql=select 1 as id as output;", "--data-urlencode", "owner=admin",
                          "--data-urlencode", f"access_token={TOKEN}"], capture_output=True, text=True, check=True)
    body, status = out.stdout.rsplit("\n", 1)
    assert status == "200" and json.loads(body) == [{"id": 1}]


def test_json_get_schema_and_byzers_rendering(server: Server):
    """GET with a query string and POST with a JSON body; nulls left out as Spark's toJSON does;
    two columns with one name both kept; includeSchema is Spark's StructType JSON."""
    got = server.client.get("/run/script", params={"sql": "select 1 as a, 2 as a, null as n, 'x' as s as t;"})
    assert got.status_code == 200 and got.text == '[{"a":1,"a":2,"s":"x"}]'
    posted = server.client.post("/run/script", json={"sql": "select 7 as id, array(1.5, 2.5) as v as t;",
                                                      "includeSchema": True})
    body = posted.json()
    assert body["data"] == [{"id": 7, "v": [1.5, 2.5]}]
    assert body["schema"]["type"] == "struct" and [f["name"] for f in body["schema"]["fields"]] == ["id", "v"]
    assert body["schema"]["fields"][0]["type"] == "integer"


def test_output_size_silence_analyze_and_the_last_select(server: Server):
    rows = server.run("select id from range(10) as r(id) as t;", outputSize="3").json()
    assert rows == [{"id": 0}, {"id": 1}, {"id": 2}]
    assert server.run("select 1 as a as t;", silence="true").json() == []
    # the last select counts, a save after it does not
    assert server.run("select 5 as a as t;\nsave overwrite t as parquet.`t5`;").json() == [{"a": 5}]
    analyzed = server.run("select 1 as a as t;\nsave overwrite t as parquet.`never`;", executeMode="analyze").json()
    assert [(s["type"], s["line"]) for s in analyzed] == [("select", 1), ("save", 2)]
    assert not (server.root / "homes" / "admin" / "never").exists()  # analyze runs nothing


def test_an_error_is_500_with_its_position(server: Server):
    failed = server.run("select 1 as a as t;\nselect nosuch from t as u;")
    assert failed.status_code == 500
    assert failed.text.startswith("script:2:1: ") and "nosuch" in failed.text
    syntax = server.run("select 1 as a as t;\nloda x;")
    assert syntax.status_code == 500 and syntax.text.startswith("script:2:")
    assert server.run("select 2 as a as t;").json() == [{"a": 2}]  # the server goes on


def test_show_resource_in_byzer_notebooks_shape(server: Server):
    [resource] = server.run("!show resource;").json()
    assert resource["activeTasks"] == 0 and resource["totalCores"] == os.cpu_count()


def test_the_token_is_checked_before_anything_runs(server: Server):
    marker = "select 1 as a as t;\nsave overwrite t as parquet.`tokenless`;"
    for headers, data in [({}, {}), ({"Authorization": "Bearer wrong-token-0123456789"}, {}),
                          ({}, {"access_token": TOKEN[:-1] + "x"})]:
        refused = httpx.post(f"{server.url}/run/script", data={"sql": marker, **data}, headers=headers)
        assert refused.status_code == 403 and refused.json() == {"msg": "access_token is not right"}
    assert not (server.root / "homes" / "admin" / "tokenless").exists()
    for path in ("/runningjobs", "/killjob", "/model/predict"):
        assert httpx.post(f"{server.url}{path}").status_code == 403
    assert httpx.get(f"{server.url}/check").json() == {}  # the probes need no token: they tell nothing
    allowed = httpx.post(f"{server.url}/run/script", data={"sql": "select 3 as a as t;", "access_token": TOKEN})
    assert allowed.json() == [{"a": 3}]
    assert TOKEN not in server.log.read_text()


def test_hostile_inputs_are_clear_4xx_and_the_server_lives(server: Server):
    assert server.client.post("/run/script", data={"owner": "admin"}).status_code == 400  # no sql
    bad_owner = server.run("select 1 as a as t;", owner="../x")
    assert bad_owner.status_code == 400 and "not a valid owner name" in bad_owner.json()["msg"]
    big = server.client.post("/run/script", content=b"sql=" + b"x" * (50 * 1024 * 1024),
                             headers={"content-type": "application/x-www-form-urlencoded"})
    assert big.status_code == 413 and "more than the server takes" in big.json()["msg"]
    assert server.run("select 1 as a as t;", outputSize="-1").status_code == 400
    assert server.run("select 1 as a as t;", executeMode="nosuch").status_code == 400
    assert server.run("select 1 as a as t;", **{"async": "true"}).status_code == 400  # no callback
    assert server.client.post("/run/script", content=b"[1]", headers={"content-type": "application/json"}).status_code == 400
    included = server.run("include local.`other.mlsql`;", skipInclude="true")
    assert included.status_code == 400 and "skipInclude" in included.json()["msg"]
    assert server.client.get("/nosuch").status_code == 404
    put = server.client.put("/run/script", data={"sql": "select 1 as a as t;"})
    assert put.status_code == 405 and put.headers["allow"] == "GET, POST"
    probe = server.client.head("/health/liveness")  # a probe's HEAD: GET's answer without its body
    assert probe.status_code == 200 and probe.content == b"" and probe.headers["access-control-allow-origin"] == "*"
    assert server.client.get("/health/liveness").json() == {"status": "UP"}


def test_paths_stay_in_the_owners_home(server: Server):
    homes = server.root / "homes"
    saved = server.run("select 1 as a as t;\nsave overwrite t as parquet.`data/t1`;", owner="alice")
    assert saved.status_code == 200 and (homes / "alice" / "data" / "t1").is_dir()
    assert server.run("load parquet.`data/t1` as back;", owner="alice").json() == [{"a": 1}]
    (homes / "bob").mkdir(exist_ok=True)
    outside = server.root / "outside"
    outside.mkdir()
    (homes / "alice" / "link").symlink_to(outside)
    (outside / "secret.mlsql").write_text("select 'leaked' as s as leak;\n")
    escapes = [*(f"save overwrite t as parquet.`{p}`;" for p in ("../bob/stolen", outside / "abs", "link/through", "~/x")),
               f"save overwrite t as delta.`{outside / 'delta'}` where mode=\"path\";",
               f"load delta.`../bob/d` where mode=\"path\" as d;",
               f"include project.`{outside / 'secret.mlsql'}` where allowOutside=\"true\";",
               f"!fs -ls {outside};"]
    for escape in escapes:  # a refusal by the error's type (NotAllowed): 403 with the error at its position
        escaped = server.run(f"select 1 as a as t;\n{escape}", owner="alice")
        assert escaped.status_code == 403, (escape, escaped.status_code, escaped.text)
        assert escaped.text.startswith("script:2:1: ") and "outside this owner's home" in escaped.text, escaped.text
    on_s3 = server.run("load parquet.`s3://bucket/data` as d;", owner="alice")
    assert on_s3.status_code == 403 and "--allow-object-storage" in on_s3.text, on_s3.text
    assert not (homes / "bob" / "stolen").exists() and sorted(p.name for p in outside.iterdir()) == ["secret.mlsql"]
    assert server.run("select 2 as a as t;", owner="alice").json() == [{"a": 2}]  # nothing lost: the session goes on
    prefix = server.run("select 1 as a as t;", owner="alice", defaultPathPrefix="../bob")
    assert prefix.status_code == 403 and "outside the home of alice" in prefix.json()["msg"]
    inner = server.run("select 1 as a as t;\nsave overwrite t as parquet.`t2`;", owner="alice", defaultPathPrefix="data")
    assert inner.status_code == 200 and (homes / "alice" / "data" / "t2").is_dir()


def test_session_per_user_keeps_owners_apart(server: Server):
    assert server.run("select 'mine' as v as private_t;", owner="carol", sessionPerUser="true").status_code == 200
    seen = server.run("select * from private_t as x;", owner="dave", sessionPerUser="true")
    assert seen.status_code == 500 and "private_t" in seen.text
    assert server.run("select * from private_t as x;", owner="carol", sessionPerUser="true").json() == [{"v": "mine"}]
    # without sessionPerUser every owner shares one session, as in Byzer
    server.run("select 'shared' as v as common_t;", owner="erin")
    assert server.run("select * from common_t as x;", owner="frank").json() == [{"v": "shared"}]
    # sessionPerRequest: nothing outlives the request
    server.run("select 1 as v as fleeting;", owner="erin", sessionPerRequest="true")
    assert server.run("select * from fleeting as x;", owner="erin", sessionPerRequest="true").status_code == 500


def _long_job(server: Server, script: str = LONG_QUERY, **params) -> tuple[concurrent.futures.Future, dict]:
    pool = concurrent.futures.ThreadPoolExecutor(1)
    future = pool.submit(server.run, script, **params)
    pool.shutdown(wait=False)
    deadline = time.monotonic() + 30
    while True:
        jobs = server.client.get("/runningjobs").json()
        mine = [j for j in jobs.values() if j["jobContent"] == script]
        if mine:
            return future, mine[0]
        assert time.monotonic() < deadline and not future.done(), future.result().text if future.done() else jobs
        time.sleep(0.05)


@pytest.mark.parametrize("by", ["groupId", "jobName"])
def test_killjob_stops_a_running_job_within_2_s(server: Server, by: str):
    future, job = _long_job(server, owner="killer", jobName=f"long-{by}")
    assert job["owner"] == "killer" and job["jobName"] == f"long-{by}" and TOKEN not in json.dumps(job)
    started = time.monotonic()
    assert server.client.post("/killjob", data={by: job[by]}).json() == {}
    answer = future.result(10)
    assert time.monotonic() - started < 2
    assert answer.status_code == 500 and "killed" in answer.text
    assert server.client.get("/runningjobs").json() == {}
    assert server.run("select 1 as a as t;", owner="killer").json() == [{"a": 1}]


def test_killjob_stops_python_code_and_leaves_no_half_written_table(server: Server):
    """A Python cell on the driver stops at once; a save killed before its commit leaves no table."""
    script = "--%python\nimport time\nwhile True:\n    time.sleep(0.02)\n"
    future, job = _long_job(server, script, owner="killer")
    time.sleep(0.3)  # well inside the loop
    started = time.monotonic()
    server.client.post("/killjob", data={"groupId": job["groupId"]})
    answer = future.result(10)
    assert time.monotonic() - started < 2 and answer.status_code == 500 and "killed" in answer.text
    saving = "select count(*) as n from range(100000000000) as r(x) as big;\nsave overwrite big as parquet.`half`;"
    future, job = _long_job(server, saving, owner="killer")
    server.client.post("/killjob", data={"groupId": job["groupId"]})
    assert future.result(10).status_code == 500
    assert not (server.root / "homes" / "killer" / "half").exists()


def test_a_timeout_stops_the_job(server: Server):
    started = time.monotonic()
    answer = server.run(LONG_QUERY, timeout="500")
    assert answer.status_code == 500 and "timed out after 500 ms" in answer.text
    assert time.monotonic() - started < 5


class _Receiver(http.server.BaseHTTPRequestHandler):
    posts: list = []

    def do_POST(self):  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers["content-length"])).decode()
        _Receiver.posts.append((dict(urllib.parse.parse_qsl(body)), self.headers.get("X-Notebook")))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def receiver():
    _Receiver.posts = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/callback"
    httpd.shutdown()


def _wait_for_posts(count: int) -> list:
    deadline = time.monotonic() + 60
    while len(_Receiver.posts) < count:
        assert time.monotonic() < deadline, _Receiver.posts
        time.sleep(0.05)
    return _Receiver.posts


def test_async_jobs_call_back_as_byzer_notebook_expects(server: Server, receiver: str):
    """Byzer Notebook's parameter set, form-encoded with access_token: the answer is at once, the
    outcome comes to the callback with stat, res or msg, and jobInfo."""
    notebook = {"owner": "nb", "jobName": "nb-1", "async": "true", "sessionPerUser": "true", "callback": receiver,
                "callbackHeader": json.dumps({"X-Notebook": "yes"}), "access_token": TOKEN,
                "context.__auth_secret__": "s3cret", "show_stack": "false", "skipGrammarValidate": "false",
                "includeSchema": "true", "fetchType": "take"}
    answer = httpx.post(f"{server.url}/run/script", data={"sql": "select 42 as answer as t;", **notebook})
    assert answer.status_code == 200 and answer.json() == {}
    [(fields, header)] = _wait_for_posts(1)
    assert fields["stat"] == "succeeded" and header == "yes"
    assert json.loads(fields["res"])["data"] == [{"answer": 42}]
    info = json.loads(fields["jobInfo"])
    assert info["owner"] == "nb" and info["jobName"] == "nb-1" and info["groupId"] == answer.headers["X-MLSQL-Group-Id"]
    httpx.post(f"{server.url}/run/script", data={"sql": "select nosuch as t;", **notebook, "jobName": "nb-2"})
    (fields, _) = _wait_for_posts(2)[1]
    assert fields["stat"] == "failed" and "nosuch" in fields["msg"] and "res" not in fields


def test_200_requests_at_once_are_answered_or_refused_clearly(server: Server):
    """Past --max-jobs (4) a request is refused at once with 429; every other one is answered
    right; the server is alive after."""
    def one(i: int) -> httpx.Response:
        return httpx.post(f"{server.url}/run/script", data={"sql": f"select {i} as i as t;", "owner": f"o{i % 4}",
                                                           "sessionPerUser": "true", "access_token": TOKEN}, timeout=120)

    with concurrent.futures.ThreadPoolExecutor(200) as pool:
        answers = list(pool.map(one, range(200)))
    statuses = {a.status_code for a in answers}
    assert statuses <= {200, 429}, statuses
    for i, answer in enumerate(answers):
        if answer.status_code == 200:
            assert answer.json() == [{"i": i}]
        else:
            assert "its limit (--max-jobs 4)" in answer.json()["msg"]
    assert 200 in statuses
    assert server.client.get("/health/liveness").status_code == 200


def test_no_other_address_without_a_token(tmp_path: Path):
    refused = subprocess.run([sys.executable, "-m", "mlsql_ray", "serve", "--host", "0.0.0.0", "--port",
                              str(free_port())], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert refused.returncode == 2 and "refusing to listen on 0.0.0.0 without a token" in refused.stderr


TRAIN = '''set jsonStr=\'\'\'
{"features":[5.1,3.5,1.4,0.2],"label":0.0}
{"features":[6.9,3.1,5.4,2.1],"label":1.0}
{"features":[5.0,3.4,1.5,0.2],"label":0.0}
{"features":[6.7,3.0,5.2,2.3],"label":1.0}
{"features":[4.9,3.0,1.4,0.2],"label":0.0}
{"features":[6.3,2.5,5.0,1.9],"label":1.0}
\'\'\';
load jsonStr.`jsonStr` as data;
select vec_dense(features) as features, label from data as data1;
train data1 as RandomForest.`models/rf` where `fitParam.0.maxDepth`="3" and `fitParam.0.seed`="1";
register RandomForest.`models/rf` as rf_predict;
'''


@pytest.mark.slow
def test_registered_models_answer_and_survive_a_stop_and_a_restart(tmp_path: Path, ray_runtime, ray_address: str):
    """Byzer's API service, through a server joined to a running Ray (the test run's): a model
    trained and registered by one script answers /model/predict (row and vector data) in its
    owner's session only, beside a running job and batched; ``register … where serve="true"``
    also deploys it on Ray Serve. A SIGTERM stops the server gracefully at once (a long job in
    flight stopped and answered, its deployments deleted, which the cluster would otherwise keep
    serving, exit 0); a restarted server registers and deploys the model again from the kept
    register before it says ready. (One server and one restart for both: each start costs tens
    of seconds.)"""
    from ray import serve

    from mlsql_ray.cluster import ray_internals
    from mlsql_ray.ml.deployments import APP_PREFIX

    app = APP_PREFIX + "rf_served"
    script = TRAIN + f'register RandomForest.`models/rf` as rf_served where serve="true" and servePort="{free_port()}";\n'
    request = {"dataType": "vector", "data": "[[6.8, 3.0, 5.3, 2.2], [5.1, 3.5, 1.4, 0.2]]"}
    predict = {"sql": "select rf_predict(vec_dense(feature)) as p", "owner": "ml", "sessionPerUser": "true"}
    server = Server(tmp_path, "--ray-address", ray_address, "--warm-groups", "0")
    try:
        trained = server.run(script, owner="ml", sessionPerUser="true")
        assert trained.status_code == 200, trained.text
        assert (tmp_path / "homes" / "ml" / "models" / "rf").is_dir()
        rows = server.client.post("/model/predict", data={**predict, "dataType": "row", "data": json.dumps(
            [{"feature": [5.1, 3.5, 1.4, 0.2]}, {"feature": [6.8, 3.0, 5.3, 2.2]}])})
        assert rows.status_code == 200 and rows.json() == [{"p": 0.0}, {"p": 1.0}]
        vectors = server.client.post("/model/predict", data={**predict, "dataType": "vector",
                                                             "data": "[[6.8, 3.0, 5.3, 2.2]]"})
        assert vectors.json() == [{"p": 1.0}]
        host, port = ray_internals.serve_http_address()  # a Serve already running keeps its port
        url = f"http://{host}:{port}/serve/rf_served"
        assert httpx.post(url, data=request, timeout=120).json() == [{"rf_served": 1.0}, {"rf_served": 0.0}]
        # the fast path: the function called beside the owner's running script, not queued behind it
        future, job = _long_job(server, owner="ml", sessionPerUser="true")
        started = time.monotonic()
        beside = server.client.post("/model/predict", data={**predict, "dataType": "vector", "data": "[[6.8, 3.0, 5.3, 2.2]]"})
        assert beside.json() == [{"p": 1.0}] and time.monotonic() - started < 5 and not future.done()
        server.client.post("/killjob", data={"groupId": job["groupId"]})
        assert future.result(10).status_code == 500
        with concurrent.futures.ThreadPoolExecutor(16) as pool:  # gathered into batches, each answer its own row's
            rows = [[5.1, 3.5, 1.4, 0.2], [6.8, 3.0, 5.3, 2.2]] * 16
            answers = list(pool.map(lambda row: server.client.post("/model/predict", data={
                **predict, "dataType": "vector", "data": json.dumps([row])}).json(), rows))
        assert answers == [[{"p": 0.0}], [{"p": 1.0}]] * 16
        wrong = server.client.post("/model/predict", data={**predict, "dataType": "vector", "data": "[[1, 2, 3]]"})
        assert wrong.status_code == 500 and wrong.text.startswith("predict:1:1: ") and "rows of 4 values" in wrong.text
        other = server.client.post("/model/predict", data={**predict, "owner": "someone", "dataType": "vector",
                                                           "data": "[[1, 2, 3, 4]]"})
        assert other.status_code == 500 and "rf_predict" in other.text
        assert server.client.post("/model/predict", data={**predict, "dataType": "vector",
                                                          "data": "not json"}).status_code == 400
        with concurrent.futures.ThreadPoolExecutor(1) as pool:  # a long job in flight: stopped, answered
            long_job = pool.submit(httpx.post, f"{server.url}/run/script", headers=server.client.headers, timeout=120,
                                   data={"sql": "select count(*) as n from range(100000000000) as r(a) where a % 7 = 3 as t;"})
            while not server.client.get("/runningjobs").json():
                assert not long_job.done(), long_job.result().text
                time.sleep(0.1)
            assert server.stop() == 0, server.log.read_text()
            answer = long_job.result(timeout=30)
        assert answer.status_code == 500 and "stopped: the server is shutting down" in answer.text, answer.text
    finally:
        server.stop()
    assert server.log.read_text().rstrip().endswith("mlsql-ray serve: stopped")
    assert app not in serve.status().applications  # deleted by the server, on a Ray that still runs
    restarted = Server(tmp_path, "--ray-address", ray_address, "--warm-groups", "0", ready_within=900)
    try:
        assert restarted.client.get("/health/readiness").json()["restoreErrors"] == 0
        again = restarted.client.post("/model/predict", data={**predict, "dataType": "vector",
                                                              "data": "[[5.0, 3.4, 1.5, 0.2]]"})
        assert again.status_code == 200, (again.text, restarted.log.read_text()[-3000:])
        assert again.json() == [{"p": 0.0}]
        assert httpx.post(url, data=request, timeout=120).json() == [{"rf_served": 1.0}, {"rf_served": 0.0}]
        shown = restarted.run("!show served;", owner="ml", sessionPerUser="true")
        assert shown.status_code == 200 and "/serve/rf_served" in shown.text, shown.text
    finally:
        assert restarted.stop() == 0, restarted.log.read_text()
    assert app not in serve.status().applications


def test_mlsql_ray_run_sends_a_script_to_the_engine(server: Server, tmp_path: Path):
    """``mlsql-ray run --engine-url``: the script runs on the server, its last table printed as a
    local run prints it, its error at FILE:LINE:COL; the token comes from the environment."""
    script = tmp_path / "remote.mlsql"
    script.write_text("select 1 as id, 'x' as s as t;\n")
    env = {**os.environ, "MLSQL_ENGINE_TOKEN": TOKEN}
    command = [sys.executable, "-m", "mlsql_ray", "run", str(script), "--engine-url", server.url]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0].split() == ["id", "s"] and "(1 row)" in done.stdout
    script.write_text("select 1 as id as t;\nselect nosuch from t as u;\n")
    failed = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert failed.returncode == 1 and failed.stderr.startswith(f"{script}:2:1: ")
    refused = subprocess.run(command, capture_output=True, text=True, timeout=120,
                             env={**env, "MLSQL_ENGINE_TOKEN": "wrong-token-0123456789"})
    assert refused.returncode == 1 and "answered 403" in refused.stderr


def test_the_fast_path_answers_with_the_function_a_name_holds_now(ray_session, tmp_path: Path):
    """``FastPath`` looks a select's functions up once per session (``_Prepared``) and keeps them
    while each name holds the same function: a name registered again with another model answers
    with that model, and a name unregistered sends the select the script's way (None)."""
    import asyncio

    import pyarrow as pa

    from mlsql_ray.service.fast_predict import FastPath

    ray_session.execute(f"""select array(cast(id as double)) as features, cast(id < 10 as double) as low,
        cast(id >= 10 as double) as high from range(20) as r(id) as data;
        select vec_dense(features) as features, low, high from data as d;
        train d as RandomForest.`{tmp_path / 'low'}` where `fitParam.0.labelCol`="low";
        train d as RandomForest.`{tmp_path / 'high'}` where `fitParam.0.labelCol`="high";
        register RandomForest.`{tmp_path / 'low'}` as f;""")
    fast, select = FastPath(), "select f(vec_dense(feature)) as p"
    rows = pa.table({"feature": pa.array([[2.0], [15.0]], pa.list_(pa.float64()))})

    def answer() -> list | None:
        found = asyncio.run(fast.answer(ray_session, select, rows, f"{select} from rows"))
        return None if found is None else found[0].column("p").to_pylist()

    assert answer() == [1.0, 0.0] == answer()
    ray_session.execute(f"register RandomForest.`{tmp_path / 'high'}` as f;")
    assert answer() == [0.0, 1.0]
    ray_session.execute("unregister RandomForest.`f`;")
    assert answer() is None


def test_concurrent_calls_of_a_function_are_batched_and_a_bad_column_fails_alone():
    """``fast_predict.Batches``: callers that come while a call runs are gathered into the next
    one; a batch that fails is called again column by column, so only the bad column's caller fails."""
    import pyarrow as pa

    from mlsql_ray.service.fast_predict import Batches

    sizes = []

    def doubled(column: pa.Array) -> pa.Array:
        sizes.append(len(column))
        time.sleep(0.05)
        if any(v is None for v in column.to_pylist()):
            raise ValueError("a null")
        return pa.array([v * 2 for v in column.to_pylist()])

    batches = Batches(doubled)
    columns = [pa.array([i]) for i in range(20)] + [pa.array([None], pa.int64())]
    with concurrent.futures.ThreadPoolExecutor(len(columns)) as pool:
        futures = [pool.submit(batches, column) for column in columns]
        results = [f.exception() or f.result().to_pylist() for f in futures]
    assert results[:20] == [[i * 2] for i in range(20)]
    assert isinstance(results[20], ValueError)
    assert len(sizes) < 21 + 20 and max(sizes) > 1  # some calls held several columns


def test_calls_on_the_event_loop_are_batched_and_a_bad_column_fails_alone():
    """``LoopBatches`` (an in-process model's calls on the server's event loop): the requests the
    loop has ready are one call; a failing batch is called again column by column."""
    import asyncio

    import pyarrow as pa

    from mlsql_ray.service.fast_predict import LoopBatches

    sizes = []

    def doubled(column: pa.Array) -> pa.Array:
        sizes.append(len(column))
        if any(v is None for v in column.to_pylist()):
            raise ValueError("a null")
        return pa.array([v * 2 for v in column.to_pylist()])

    async def requests():
        batches = LoopBatches(doubled)
        first = await asyncio.gather(*(batches(pa.array([i, i + 1])) for i in range(10)))
        second = await asyncio.gather(batches(pa.array([5])), batches(pa.array([None], pa.int64())),
                                      return_exceptions=True)
        return first, second

    first, second = asyncio.run(requests())
    assert [a.to_pylist() for a in first] == [[i * 2, i * 2 + 2] for i in range(10)]
    assert second[0].to_pylist() == [10] and isinstance(second[1], ValueError)
    assert sizes == [20, 2, 1, 1]  # ten requests in one call; then a failed pair, each alone


def test_the_kernel_runs_its_cells_on_the_engine(server: Server, tmp_path: Path):
    """A real ``mlsql`` kernel process with ``MLSQL_ENGINE_URL``: each cell runs on the server (its
    table is in the server's session, nothing runs here), shown as a local table; an error names
    its line and column; an interrupt kills the job on the server."""
    from kernel_helpers import Kernel, checkout_kernelspec

    with checkout_kernelspec(tmp_path / "jupyter"):
        kernel = Kernel(cwd=tmp_path, timeout=120, MLSQL_ENGINE_URL=server.url, MLSQL_ENGINE_TOKEN=TOKEN)
        try:
            reply, messages = kernel.execute("select 1 as id, 'x' as s as kernel_t;")
            assert reply["status"] == "ok", reply
            [shown] = [m["content"]["data"] for m in messages if m["msg_type"] == "display_data"]
            assert shown["text/plain"].split("\n")[0].split() == ["id", "s"] and "<table" in shown["text/html"]
            assert server.run("select * from kernel_t as y;").json() == [{"id": 1, "s": "x"}]
            assert not (tmp_path / "warehouse").exists()  # nothing ran in the kernel
            reply, _ = kernel.execute("select 1 as a as t;\nselect nosuch from t as u;")
            assert reply["status"] == "error" and reply["evalue"].startswith("line 2, column 1: "), reply
            assert "nosuch" in reply["evalue"]
            msg_id = kernel.kc.execute(LONG_QUERY, stop_on_error=False)  # the next cell is not to be aborted
            deadline = time.monotonic() + 60
            while not any(j["jobName"].startswith("mlsql-kernel-") for j in server.client.get("/runningjobs").json().values()):
                assert time.monotonic() < deadline
                time.sleep(0.05)
            kernel.km.interrupt_kernel()
            interrupted = kernel.reply(msg_id, 30)["content"]
            assert interrupted["status"] == "error" and interrupted["ename"] == "KeyboardInterrupt", interrupted
            deadline = time.monotonic() + 5
            while server.client.get("/runningjobs").json():
                assert time.monotonic() < deadline, "the job still runs on the server"
                time.sleep(0.05)
            reply, _ = kernel.execute("select 2 as b as after;")
            assert reply["status"] == "ok"
        finally:
            kernel.close()


@hypothesis.given(hypothesis.strategies.text(alphabet="ab=&%+\\é 2CcF0z_\r\n", max_size=40)
                  | hypothesis.strategies.dictionaries(hypothesis.strategies.text(max_size=8),
                                                       hypothesis.strategies.text(max_size=30)).map(urllib.parse.urlencode))
def test_a_form_body_reads_as_urllib_reads_it(text: str):
    """``predict_request.form_fields``, percent-decoding by quoted-printable's decoder, against
    urllib's: broken escapes, quoted-printable's own marks, backslashes, plus signs, non-ASCII,
    blank values and all."""
    from mlsql_ray.ml.predict_request import form_fields

    assert form_fields(text.encode()) == urllib.parse.parse_qsl(text, keep_blank_values=True)


@hypothesis.given(hypothesis.strategies.recursive(
    hypothesis.strategies.none() | hypothesis.strategies.booleans() | hypothesis.strategies.floats()
    | hypothesis.strategies.integers(min_value=-2**70, max_value=2**70) | hypothesis.strategies.text(max_size=5),
    lambda inner: hypothesis.strategies.lists(inner, max_size=4)
    | hypothesis.strategies.dictionaries(hypothesis.strategies.text(max_size=4), inner, max_size=3), max_leaves=12))
def test_predict_data_reads_as_json_reads_it(value):
    """``/model/predict``'s ``data``, read by orjson where it can: what json reads it reads the same
    (NaN and infinities, which orjson refuses, and integers past 64 bits, which it reads as doubles,
    through json), and what is not JSON is json's error."""
    from mlsql_ray.ml.predict_request import _loads

    text = json.dumps(value)
    got = _loads(text)
    assert json.dumps(got) == text and type(got) is type(value)  # floats to the bit (repr), -0.0 and NaN too
    with pytest.raises(json.JSONDecodeError, match="Extra data"):
        _loads(text + "]")
