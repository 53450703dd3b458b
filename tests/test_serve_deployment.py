"""``register … where serve="true"``: a model served by real Ray Serve replicas on the test run's
Ray, called over HTTP on Ray Serve's proxy (127.0.0.1, a free port): answers equal the session's own
function, a killed replica is replaced while requests are still answered, bad requests are 400."""

from __future__ import annotations

import dataclasses
import json
import re
import socket
import time

import httpx
import pytest

from mlsql_ray.errors import MLSQLError

ROWS = [[5.1, 3.5, 1.4, 0.2], [6.8, 3.0, 5.3, 2.2], [4.9, 3.0, 1.4, 0.2], [6.3, 2.5, 5.0, 1.9], [5.9, 3.0, 4.2, 1.5]]
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
train data1 as RandomForest.`MODEL` where `fitParam.0.maxDepth`="3" and `fitParam.0.seed`="1";
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def replicas(app: str) -> list[str]:
    """The names of the replica actors of Ray Serve application ``app`` that are alive."""
    import ray

    return sorted(a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                  if a["name"].startswith(f"SERVE_REPLICA::{app}#") and _alive(a))


def _alive(named: dict) -> bool:
    import ray

    try:
        ray.get(ray.get_actor(named["name"], namespace=named["namespace"]).__ray_ready__.remote(), timeout=10)
        return True
    except Exception:  # noqa: BLE001 - dead, restarting or gone
        return False


def eventually(check, seconds: float = 120):
    deadline = time.monotonic() + seconds
    while True:
        try:
            result = check()
            if result:
                return result
        except (httpx.HTTPError, AssertionError):
            if time.monotonic() > deadline:
                raise
        assert time.monotonic() < deadline, "not within the time given"
        time.sleep(0.5)


@pytest.fixture(scope="module")
def served(ray_runtime, module_pool, tmp_path_factory):
    """A session with a trained RandomForest, registered as rf (in this process, on actors) and
    served as rf_served by two replicas; unregistered (and undeployed) at the end. One per module:
    a deployment's start costs seconds, and the bad requests leave it as it was."""
    from mlsql_ray import Session

    tmp_path = tmp_path_factory.mktemp("served")
    model = tmp_path / "models" / "rf"
    with Session(warehouse=tmp_path / "warehouse", workers=module_pool) as session:
        session.execute(TRAIN.replace("MODEL", str(model)) + f"register RandomForest.`{model}` as rf;")
        [result] = session.execute(f'register RandomForest.`{model}` as rf_served where serve="true" '
                                   f'and servePort="{free_port()}" and serveReplicas="2";')
        url = re.search(r"served at (http://\S+)", result.message)[1]
        try:
            yield session, url, result.message
        finally:
            session.execute("unregister RandomForest.`rf_served`;")


@pytest.mark.slow
def test_a_served_model_answers_as_its_function_and_survives_a_replica_death(served):
    import ray

    session, url, message = served
    assert url.startswith("http://127.0.0.1:") and url.endswith("/serve/rf_served"), message
    assert "(2 replicas of 0 CPUs)" in message
    arrays = ", ".join(f"array({', '.join(map(str, row))})" for row in ROWS)
    session.execute(f"select rf(vec_dense(feature)) as p, rf_served(vec_dense(feature)) as q from "
                    f"(select explode(array({arrays})) as feature) as scored;")
    local = session.table("scored").to_pylist()
    assert [r["p"] for r in local] == [r["q"] for r in local] and {r["p"] for r in local} == {0.0, 1.0}

    # Byzer's request shapes: vector data form-encoded, row data in a JSON body
    vectors = httpx.post(url, data={"dataType": "vector", "data": json.dumps(ROWS)}, timeout=60)
    assert vectors.status_code == 200, vectors.text
    assert vectors.json() == [{"rf_served": r["p"]} for r in local]
    rows = httpx.post(url, json={"dataType": "row", "data": [{"feature": r} for r in ROWS]}, timeout=60)
    assert rows.json() == vectors.json()

    [shown] = session.execute("!show served;")
    listed = [r for r in shown.table.to_pylist() if r["function"] == "rf_served"]
    assert listed == [{"function": "rf_served", "route": "/serve/rf_served", "status": "RUNNING", "replicas": "RUNNING 2"}]

    # a replica killed: Ray Serve starts another, requests answered meanwhile and after
    app = "mlsql-rf_served"
    before = eventually(lambda: len(replicas(app)) == 2 and replicas(app))
    ray.kill(ray.get_actor(before[0], namespace="serve"), no_restart=True)
    answered = eventually(lambda: httpx.post(url, data={"dataType": "vector", "data": json.dumps(ROWS)}, timeout=60))
    assert answered.status_code == 200 and answered.json() == vectors.json()
    after = eventually(lambda: len(replicas(app)) == 2 and before[0] not in replicas(app) and replicas(app), 180)
    assert before[1] in after
    for _ in range(10):
        assert httpx.post(url, data={"dataType": "vector", "data": json.dumps(ROWS)}, timeout=60).json() == vectors.json()


@pytest.mark.slow
def test_the_calling_process_can_predict_with_a_copy_of_the_model_and_drop_it(served):
    """``nearby``, a server's /model/predict: the forest loaded in this process answers as its
    actors do, checks its input as they do, and does not keep the registered function alive."""
    import gc
    import weakref

    import pyarrow as pa

    session, _, _ = served
    function = session.model_functions.functions["rf"]
    here = function.nearby()
    column = pa.array(ROWS, pa.list_(pa.float64()))
    assert here is not function and here(column) == function(column)
    with pytest.raises(ValueError, match=r"rf\(.*\): the model takes rows of 4 values, got rows of 3"):
        here(pa.array([[1.0, 2.0, 3.0]]))
    copy = dataclasses.replace(function, actors=[])  # no actors at all: the copy still answers
    copy_here, copied = copy.nearby(), weakref.ref(copy)
    assert copy_here(column) == function(column)
    del copy
    gc.collect()
    assert copied() is None


@pytest.mark.slow
def test_a_bad_request_is_400_saying_what_is_wrong(served):
    _, url, _ = served
    cases = [({"dataType": "vector", "data": "[[1, 2, 3]]"}, "rf_served: rf_served(feature): the model takes rows of 4 values, got rows of 3"),
             ({"dataType": "vector", "data": "not json"}, "rf_served: data is not JSON"),
             ({"dataType": "vector", "data": "[]"}, "rf_served: data must be a non-empty JSON array"),
             ({"dataType": "row", "data": '[{"x": [1, 2, 3, 4]}]'}, "rf_served: data needs the model's input, feature; it has x"),
             ({"dataType": "string", "data": '["a"]'}, "rf_served: rf_served(feature): the model takes a list of numbers per row, not string"),
             ({"dataType": "table", "data": "[[1]]"}, "rf_served: dataType must be row, vector or string, not 'table'")]
    for params, message in cases:
        answer = httpx.post(url, data=params, timeout=60)
        assert answer.status_code == 400 and answer.text.startswith(message), (params, answer.status_code, answer.text)
    assert httpx.post(url, data={"dataType": "vector", "data": json.dumps(ROWS[:1])}, timeout=60).status_code == 200


@pytest.mark.slow
def test_unregister_deletes_the_deployment_and_bad_serve_options_are_refused(ray_runtime, module_pool, tmp_path):
    from mlsql_ray import Session

    model = tmp_path / "rf"
    with Session(warehouse=tmp_path / "warehouse", workers=module_pool) as session:
        session.execute(TRAIN.replace("MODEL", str(model)))
        refusals = [('serveReplicas="3" and serveCpus="1"', r"3 replicas of serveCpus=1 need 3 CPUs; the cluster has 2"),
                    ('serveReplicas="1" and serveMaxReplicas="2"', r"not both"),
                    ('serveMinReplicas="1"', r"serveMinReplicas needs serveMaxReplicas"),
                    ('serveMinReplicas="3" and serveMaxReplicas="2"', r"serveMinReplicas \(3\) is more than serveMaxReplicas \(2\)")]
        for options, message in refusals:
            with pytest.raises(MLSQLError, match=message):
                session.execute(f'register RandomForest.`{model}` as rf_bad where serve="true" and {options};')
            assert session.model_functions is None or "rf_bad" not in session.model_functions.functions
        with pytest.raises(MLSQLError, match=r"serve=\"true\" deploys models that Ray actors serve"):
            session.execute('register ScriptUDF.`` as f_bad where serve="true" and code="def apply(a): return a";')
        [result] = session.execute(f'register RandomForest.`{model}` as rf_scaled where serve="true" '
                                   f'and serveMinReplicas="1" and serveMaxReplicas="2" and serveCpus="0.5";')
        assert "(1 to 2 replicas of 0.5 CPUs)" in result.message
        url = re.search(r"served at (http://\S+)", result.message)[1]
        assert httpx.post(url, data={"dataType": "vector", "data": json.dumps(ROWS)}, timeout=60).status_code == 200
        [gone] = session.execute("unregister RandomForest.`rf_scaled`;")
        assert gone.message == "unregistered rf_scaled (and the Ray Serve deployment of rf_scaled)"
        assert httpx.post(url, data={"dataType": "vector", "data": json.dumps(ROWS)}, timeout=60).status_code == 404
        [shown] = session.execute("!show served;")
        assert "rf_scaled" not in shown.table.column("function").to_pylist()
