"""Issue 40, part 1: what kind of model a FORMAT is, answered by one lookup (``engine.kinds``), and
every function ``register`` defines, of any kind, in the session's one registry (``ml.functions``)."""

from __future__ import annotations

import pytest

from mlsql_ray import Session, options
from mlsql_ray.engine import prestart
from mlsql_ray.engine.kinds import FEATURE_ETS, KINDS
from mlsql_ray.engine.udfs import SCRIPT_UDF
from mlsql_ray.errors import MLSQLError
from mlsql_ray.lang import parse
from mlsql_ray.ml import kinds
from mlsql_ray.ml.functions import SQLFunction


@pytest.mark.parametrize(("fmt", "question", "kind"), [
    ("RandomForest", "predict", kinds.ALGORITHMS),
    ("automl", "params", kinds.ALGORITHMS),
    ("TF", "register", kinds.KERAS),
    ("keras", "predict", kinds.KERAS),
    ("ScalerInPlace", "register", FEATURE_ETS),
    ("RateSampler", "predict", FEATURE_ETS),  # an ET that learns nothing: its kind refuses it, naming those that do
    ("scriptudf", "register", SCRIPT_UDF),
    ("ScriptUDF", "predict", None),  # a kind that does not answer a question is passed by
    ("tf", "params", None),
    ("Nope", "register", None),
])
def test_one_lookup_names_the_kind_that_answers(fmt, question, kind):
    assert KINDS.find(fmt, question) is kind


def test_the_start_ahead_asks_the_kind():
    """register of a model needs Ray; of a fitted ET or a script nothing; a train of several groups
    its hosts, planned once for the start ahead and the train."""
    statements = parse("""register tf.`db.m` as f;
register ScalerInPlace.`/tmp/s` as g;
register ScriptUDF.`` as h where lang="python" and code='''def apply(self, a): return a''';
train t as RandomForest.`/tmp/rf` where `fitParam.0.maxDepth`="2" and `fitParam.1.maxDepth`="3";
predict t as tf.`db.m`;""")
    found = [prestart.needs(s) for s in statements]
    assert found[:3] == [prestart.Needs(), None, None]
    assert found[3] == prestart.Needs(group_hosts=(2, ("RandomForest",)))
    assert found[4] is None
    train = statements[3]
    kept = kinds._PLANNED[(train.format, tuple(sorted(dict(train.options).items())))]
    assert [p.index for p in kinds.ALGORITHMS.plans(train.format, dict(train.options))] == [0, 1]
    assert all(a is b for a, b in zip(kinds.ALGORITHMS.plans(train.format, dict(train.options)), kept))  # the start ahead's


def test_plans_that_warned_are_planned_again_so_each_train_warns():
    """An unknown option warns in every train that writes it (and fails under strictOptions), not only
    in the first: plans that gave a warning are not kept for reuse."""
    fmt, written = "RandomForest", {"fitParam.0.maxDepth": "2", "fitParam.0.depht": "3"}
    for _ in range(2):
        with options.noting(options.Notes()) as notes:
            assert [p.index for p in kinds.ALGORITHMS.plans(fmt, written)] == [0]
        assert len(notes.warnings) == 1 and "'depht'" in notes.warnings[0], notes.warnings
    with options.noting(options.Notes(strict=True)), pytest.raises(MLSQLError, match="depht"):
        kinds.ALGORITHMS.plans(fmt, written)

def test_script_udfs_are_in_the_one_registry_and_unregister_removes_them(session: Session):
    session.execute("""register ScriptUDF.`` as plus_one where lang="python" and dataType="integer" and code='''
def apply(self, a):
    return a + 1
''';""")
    function = session.model_functions.functions["plus_one"]
    assert isinstance(function, SQLFunction)
    assert session.execute("select plus_one(41) as x as t;")[-1].table.column("x").to_pylist() == [42]
    session.execute("unregister ScriptUDF.`plus_one`;")
    assert "plus_one" not in session.model_functions.functions
    with pytest.raises(MLSQLError, match="plus_one"):
        session.execute("select plus_one(41) as x as t2;")


def test_a_train_looks_its_algorithm_up_once_and_plans_its_groups_once(session, ray_runtime, monkeypatch):
    """The algorithm a train names is looked up when its groups are planned and carried from there
    (``GroupPlan.algorithm``) to the start ahead, the datasets, the fits and the model table; the
    start ahead's import of it, in a thread of its own, is the one other lookup. The groups are
    planned once, for the start ahead and the train."""
    from mlsql_ray.ml import registry, runner

    session.execute("""select array(1.0, 2.0) as features, 0.0 as label union all select array(2.0, 1.0), 1.0
union all select array(3.0, 1.0), 1.0 union all select array(0.0, 2.0), 0.0 as t;""")
    looked_up, planned = [], []
    get, plan = registry.get, runner.plan
    monkeypatch.setattr(registry, "get", lambda name: looked_up.append(name) or get(name))
    monkeypatch.setattr(runner, "plan", lambda *args: planned.append(args) or plan(*args))
    monkeypatch.setattr(kinds, "_PLANNED", {})  # not planned by an earlier test
    trained = session.execute(f"""train t as RandomForest.`{session.warehouse}/rf` where `fitParam.0.maxDepth`="2"
and `fitParam.1.maxDepth`="3" as result;""")[-1]
    assert trained.table.column("value").to_pylist().count("success") == 2  # both groups were fitted
    assert len(looked_up) <= 2 and set(looked_up) == {"RandomForest"}, looked_up
    assert len(planned) == 1, planned


def test_a_train_of_a_feature_et_asks_the_kinds_once_and_the_kind_trains(session, monkeypatch):
    """``train T as ScalerInPlace.`...``` goes the way of every train: one lookup of its kind
    (``KINDS.find``; the start ahead asks too), whose ``train`` runs the ET; the statement knows no
    ET of its own."""
    from mlsql_ray.engine.statements import train as statement

    session.execute("select 1.0 as a union all select 3.0 as a as t;")
    asked, trained = [], []
    find, train = KINDS.find, FEATURE_ETS.train
    monkeypatch.setattr(KINDS, "find", lambda fmt, question: asked.append((fmt, question)) or find(fmt, question))
    monkeypatch.setattr(FEATURE_ETS, "train", lambda session, s: trained.append(s.format) or train(session, s))
    result = session.execute(f"""train t as ScalerInPlace.`{session.warehouse}/scaler`
where inputCols="a" and scaleMethod="min-max" as scaled;""")[-1]
    assert asked == [("ScalerInPlace", "ahead"), ("ScalerInPlace", "train")], asked  # the start ahead's, the train's
    assert trained == ["ScalerInPlace"]
    assert sorted(result.table.column("a").to_pylist()) == [0.0, 1.0] and result.name == "scaled"
    assert "ets" not in vars(statement), "the train statement reaches the ETs only through their kind"


def test_a_kind_lists_the_questions_it_answers_and_the_list_must_be_true():
    """Which kind answers which question is written on the kind (``ANSWERS``), checked against its
    methods when the class is made: a question listed but not answered, or answered but not listed,
    is refused."""
    assert kinds.KERAS.ANSWERS == {"predict", "register", "ahead", "loader"}
    assert SCRIPT_UDF.ANSWERS == {"register"} and "train" in FEATURE_ETS.ANSWERS

    with pytest.raises(TypeError, match="lists \\['train'\\]; it answers \\(defines\\) \\[\\]"):
        class Listed(kinds.Kind):
            ANSWERS = frozenset({"train"})

            def matches(self, fmt: str) -> bool:
                return True
    with pytest.raises(TypeError, match="lists \\[\\]; it answers \\(defines\\) \\['predict'\\]"):
        class Unlisted(kinds.Kind):
            def matches(self, fmt: str) -> bool:
                return True

            def predict(self, session, s):
                return None
