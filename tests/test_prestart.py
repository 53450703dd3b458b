"""Issue 27, item 3: a request that trains starts Ray and the workers its training takes in the
background as soon as it is parsed (``mlsql_ray.engine.prestart``); a request that trains nothing
starts nothing; one that fails before its training releases what was started; an error of the
background start shows at the training statement. Plus item 1 for the CLI: it computes the first
rows of a select when it prints them, once.

The start is observed through the session's own records (its ``prestart`` and ``!show jobs``'
times), never by timing. Trainings are two-group RandomForests on a few rows: their hosts import
scikit-learn, not TensorFlow. One test starts a Ray of its own, in a subprocess: the start of an
embedded Ray in the background and its release after an error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import SAMPLE_MNIST
from mlsql_ray import Session, lang
from mlsql_ray.frontend import cli
from mlsql_ray.cluster import ray_internals
from mlsql_ray.engine import prestart
from mlsql_ray.errors import MLSQLError
from mlsql_ray.ml import runner

LOAD = f"""load parquet.`{SAMPLE_MNIST}/train.parquet` as raw;
select image, label from raw limit 60 as small;
"""
TRAIN = """train small as RandomForest.`db.rf` where featuresCol="image" and numTrees="3"
  and `fitParam.0.maxDepth`="2" and `fitParam.1.maxDepth`="3" as res;"""


@pytest.fixture(scope="module")
def session(ray_runtime, module_pool, tmp_path_factory):
    with Session(warehouse=tmp_path_factory.mktemp("warehouse"), workers=module_pool) as s:
        yield s


def job_ended(session, text_start: str):
    """When the session's last finished job whose text starts with ``text_start`` ended (!show jobs' record)."""
    *_, job = [j for j in session.jobs._finished if j.text.startswith(text_start)]
    return job.ended


@pytest.mark.parametrize("code, expected", [
    ("--%python\nresult = train.fit(make, servers, rounds=2)", prestart.Needs(tensorflow_workers=0)),
    ("--%python\n--%num_partitions=3\nbest = search(make, servers)", prestart.Needs(tensorflow_workers=3)),
    ("--%python\n--%runIn=executor\ntrain.fit(make, servers)", prestart.Needs()),
    ("--%python\nprint('no training: train.fitting is not a call')", None),
    ("run t as Ray.`` where code='''train.fit(m, s)''' and outputTable=\"o\";", prestart.Needs(tensorflow_workers=0)),
    (TRAIN, prestart.Needs(group_hosts=(2, ("RandomForest",)))),
    ('train small as RandomForest.`db.rf` where featuresCol="image";', None),  # one group: fitted in process
    ("register tf.`db.model` as classify;", prestart.Needs()),
    ("register RandomForest.`db.rf` as classify;", prestart.Needs()),
    ("register ScriptUDF.`` as f where lang=\"python\" and code='''def apply(self, a): return a''';", None),
    ("select 1 as train_fit as t;", None),
])
def test_what_counts_as_training(code, expected):
    [statement] = lang.parse(code)
    assert prestart.needs(statement) == expected


def ids(actors) -> set[str]:
    return {ray_internals.actor_id(a) for a in actors}


def test_on_one_machine_the_start_imports_the_groups_library_here_and_the_next_train_gets_hosts(session):
    """On this one-machine Ray the first train's groups are fitted here: the start imports their
    library here before the train runs and starts no host; the hosts come up after the fits, for
    the next request's train, which runs on them."""
    results = list(session.execute_iter(LOAD + TRAIN))
    started = session.prestart
    assert started is not None and started.reached and started.fits_here
    assert started.started < job_ended(session, "select image, label from raw")
    assert started.imported is not None and started.imported < job_ended(session, "train small")
    assert started.actors == [] and started.workers_ready is not None
    assert results[-1].name == "res" and len(session.table("res").to_pylist()) > 0
    session.workers.settle()
    hosts = ids(session.workers.idle_actors())
    assert len(hosts) == 2
    session.execute(LOAD + TRAIN)
    assert ids(session.workers.idle_actors()) == hosts


def test_a_fit_here_waits_for_its_algorithms_import_ahead_and_only_that_fit():
    """The start ahead imports a train's libraries in a background thread; the train reads its rows
    meanwhile and its first fit of those algorithms waits for the import (not one of another
    algorithm), so that no two threads import the same modules at once."""
    import threading

    import numpy as np

    rng = np.random.default_rng(0)
    data = runner.Dataset(rng.random(size=(40, 3)), np.arange(40) % 2)
    forest, bayes = (runner.plan(alg, {"featuresCol": "f"})[0] for alg in ("RandomForest", "NaiveBayes"))
    fitted = {}
    fits = [threading.Thread(target=lambda p=p: fitted.setdefault(p.alg, runner.fit_group(p, data, None, 1)),
                             daemon=True) for p in (forest, bayes)]
    load = runner.load_ahead(("RandomForest",))
    try:
        for fit in fits:
            fit.start()
        fits[1].join(60)
        time.sleep(0.5)
        before_the_import = set(fitted)
    finally:
        load()  # also when the test fails: a fit of this process must not wait for it forever
    fits[0].join(60)
    assert before_the_import == {"NaiveBayes"}  # the forest's fit waited for the import ahead
    assert {alg: group.status for alg, group in fitted.items()} == {"NaiveBayes": "success", "RandomForest": "success"}


def test_closing_the_pool_stops_the_hosts_still_starting_for_the_next_train(session, ray_runtime):
    session.workers.release()
    wait_for(lambda: ray_runtime.available_resources().get("CPU", 0) >= 2)
    session.execute(LOAD + TRAIN)  # fitted here; two hosts starting for the next train
    session.workers.release()
    session.workers.settle()
    assert session.workers.idle_actors() == []
    assert not [r for r in ray_internals.actor_states().values()
                if r.get("ActorClassName", "").endswith("GroupHost") and r.get("State") != "DEAD"]


def test_a_script_that_trains_starts_its_workers_while_the_select_runs_and_the_training_takes_them(
        session, ray_runtime, monkeypatch):
    """On a cluster of several machines (here: the one-machine rule off) the start starts the hosts."""
    monkeypatch.setattr(runner, "FIT_HERE_ON_ONE_MACHINE", False)
    session.workers.release()  # the last test's hosts: the start ahead starts only what free CPUs allow
    wait_for(lambda: ray_runtime.available_resources().get("CPU", 0) >= 2)
    results = list(session.execute_iter(LOAD + TRAIN))
    started = session.prestart
    assert started is not None and started.reached
    # the start began before the select before the training had ended: it ran beside the select
    assert started.started < job_ended(session, "select image, label from raw")
    assert started.workers_ready is not None and len(started.actors) == 2
    # the training joined the start instead of starting hosts of its own: the two hosts it used
    # (given back to the pool) are the two started ahead
    ahead = {ray_internals.actor_id(a) for a in started.actors}
    assert {ray_internals.actor_id(a) for a in session.workers.idle_actors()} == ahead
    assert results[-1].name == "res" and len(session.table("res").to_pylist()) > 0


def test_a_script_without_training_starts_nothing(session):
    before = session.workers.idle_actors()
    session.execute(LOAD)
    assert session.prestart is None
    session.execute("--%python\nprint('hello')\n")
    assert session.prestart is None
    session.execute("register ScriptUDF.`` as plus_one where lang=\"python\" and dataType=\"long\" "
                    "and code='''def apply(self, a): return a + 1''';")
    assert session.prestart is None
    assert session.workers.idle_actors() == before


def wait_for(condition, seconds: float = 120) -> None:
    """Wait (boundedly) until ``condition()`` holds; the test's assertions then say whether it did."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.1)


def test_an_error_before_the_training_releases_the_workers_started_for_it(session, ray_runtime, monkeypatch):
    monkeypatch.setattr(runner, "FIT_HERE_ON_ONE_MACHINE", False)  # hosts started ahead, as on several machines
    session.workers.release()  # the last test's hosts: the start ahead starts only what free CPUs allow
    wait_for(lambda: ray_runtime.available_resources().get("CPU", 0) >= 2)
    run = session.execute_iter(LOAD + "select no_such_column from small as broken;\n" + TRAIN)
    next(run)  # the load ran: the start is under way; let it get its hosts up before the error comes
    started = session.prestart
    wait_for(lambda: started.workers_ready is not None)
    assert len(session.workers.idle_actors()) == 2  # waiting in the pool for the training
    with pytest.raises(MLSQLError, match="no_such_column") as caught:
        list(run)
    assert caught.value.line == 3
    assert not started.reached and not started.started_ray  # the test run's Ray stays up
    assert len(started.actors) == 2 and session.workers.idle_actors() == []
    assert all(ray_internals.actor_states(ray_internals.actor_id(a)).get("State") == "DEAD" for a in started.actors)


def test_an_error_of_the_background_start_shows_at_the_training_statement(tmp_path):
    with Session(warehouse=tmp_path / "warehouse", ray_address="127.0.0.1:1") as unreachable:
        with pytest.raises(MLSQLError, match="cannot reach Ray at 127.0.0.1:1") as caught:
            unreachable.execute(LOAD + TRAIN)
    assert caught.value.line == 3


EMBEDDED = textwrap.dedent("""
    import json, sys, threading
    import ray
    from mlsql_ray import Session
    from mlsql_ray.errors import MLSQLError
    from mlsql_ray.ml import runner

    runner.FIT_HERE_ON_ONE_MACHINE = False  # the groups' hosts (and so the Ray) are started ahead, as on several machines
    with Session(warehouse=sys.argv[1]) as session:
        try:
            session.execute(sys.argv[2])
        except MLSQLError as exc:
            error = str(exc)
        started = session.prestart
        select = [j for j in session.jobs._finished if j.text.startswith("select")][0]
        up_after_the_error = ray.is_initialized()
    with Session(warehouse=sys.argv[1]) as session:  # a request that starts Ray ahead and fails at once,
        try:                                         # then one that starts nothing, while Ray still starts
            session.execute("register tf.`../x` as f;")
        except MLSQLError:
            pass
        session.execute("select 1 as a;")
    for thread in threading.enumerate():  # a start the close did not wait for would finish now
        if thread.name == "mlsql-prestart":
            thread.join()
    print(json.dumps({"error": error, "started_ray": started.started_ray,
                      "began_before_the_select_ended": started.started < select.ended,
                      "ray_up_after_the_error": up_after_the_error,
                      "ray_up_after_a_later_close": ray.is_initialized()}))
""")


def test_a_failed_script_stops_the_embedded_ray_it_started(tmp_path):
    """The one test with a Ray of its own: no Ray is running in the subprocess, so the session's
    background start starts an embedded one; the script fails before its training, and that Ray
    is stopped (by the session's own handle). A start begun by a request that failed once it
    reached its training statement, still running when the next request runs, is stopped when the
    session closes: no Ray is left behind."""
    script = LOAD + "select no_such_column from small as broken;\n" + TRAIN
    env = {k: v for k, v in os.environ.items() if k not in ("MLSQL_RAY_ADDRESS", "RAY_ADDRESS")}
    done = subprocess.run([sys.executable, "-c", EMBEDDED, str(tmp_path / "warehouse"), script],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert "no_such_column" in report["error"]
    assert report["started_ray"] and report["began_before_the_select_ended"], (report, done.stderr[-2000:])
    assert not report["ray_up_after_the_error"]
    assert not report["ray_up_after_a_later_close"]  # closing waits for an earlier request's start and stops it


def test_the_cli_computes_the_first_rows_of_a_select_once_when_it_prints_them(tmp_path, capsys):
    seen: list[int] = []
    with Session(warehouse=tmp_path / "warehouse") as s:
        s.con.create_function("counted", lambda x: seen.append(x) or x, ["BIGINT"], "BIGINT", side_effects=True)
        cli.print_results(s, lang.parse("select counted(id) as v from range(3) as r(id) as a;\n"
                                        "select counted(id) + 10 as w from range(4) as r(id) as b;\n"
                                        "select v from a as c;"), tmp_path / "x.mlsql")
        printed = capsys.readouterr().out
        assert sorted(seen) == [0, 0, 1, 1, 2, 2, 3]  # a's three rows, b's four, each once; c reads a's kept rows
        assert "13" in printed and "w" in printed  # b's rows, printed
        assert s.table("c").num_rows == 3 and len(seen) == 7
