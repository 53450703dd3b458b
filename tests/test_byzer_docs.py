"""Every MLSQL example of Byzer's docs ``grammar/`` and ``ml/eda/`` pages runs (issue 14, "Done means"),
and so do those of the ET pages ``extension/et/`` (the ETs mlsql-ray has), ``ml/feature/`` (issue 15;
its tfidf.md and word2vec.md have no example yet: tests/test_feature_ets.py tests those ETs),
``ml/algs/`` (issue 15), and, for issue 23's Byzer behaviours, ``extension/dev/`` (``!show et``,
``load modelParams``) and the Excel pages of ``datasource/file/``.

The pages are copied, unchanged, under ``tests/fixtures/byzer-doc/`` (Apache-2.0, see its LICENSE
and NOTICE.md). Each fenced block tagged ``sql`` is one test: it runs in a fresh Session, in its own
temporary folder (the current directory, and where the docs' ``/tmp/`` paths lead), and must
finish without error; where the doc shows the result, the result is checked. Around the block:

- ``AFTER``: earlier blocks of the same page it builds on, run first in the same session, each as its
  own request (as a notebook runs cells) — or, for the keys in ``ONE_REQUEST``, as one script with
  the block (they use a variable an earlier block sets, and a variable lasts one request);
- ``GIVEN``: what the doc takes for granted ("假设存在源表数据 table1", a file it loads), made first
  (``FILES``: files no MLSQL statement can make, such as a workbook of several sheets);
- ``DOC_TABLES``: blocks whose result is compared with the table the doc prints after them (a
  markdown table or Spark's ``show()`` text, read from the page; ``THEN``: blocks run after the
  block to make that table); ``PRINTS``: what the doc says a block prints;
- ``EXPECT`` / ``EXPECT_ERROR``: the result table (named, or "" for the table of the block's last
  statement, e.g. a ``!profiler sql``) the doc shows in other ways (prose, a picture), or the error; ``TRAINED`` / ``CHECK_ROWS``: what
  is certain of a train's result or a prediction, as scikit-learn's figures differ from Spark's;
- ``SKIP``: blocks that are not a whole script (an outline with placeholders, a piece of a larger
  example), with what they are;
- ``UNSUPPORTED``: blocks of what mlsql-ray does not have (MySQL, ``include lib.`` and
  ``include http.``, ``!pyInclude``, ``!plugin``, Scala/Java UDFs): each runs, must fail with the
  error that says so, and then counts as an xfail with the reason;
- ``DATED``: a result that depends on the day the block runs (computed when it runs);
- ``NOT_YET``: blocks that fail because mlsql-ray lacks something, with what. They run as strict
  xfails: once the piece exists the test fails until the entry is removed.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from pathlib import Path

import pytest

from mlsql_ray import MLSQLError, Session
from mlsql_ray.engine import ets
from mlsql_ray.engine.ets.base import PEOPLE_DATA
from mlsql_ray.cluster.warm import WarmPool

DOCS = Path(__file__).resolve().parent / "fixtures" / "byzer-doc"
PAGES = [*sorted(DOCS.glob("grammar/*.md")), *sorted(DOCS.glob("ml/eda/*.md")), *sorted(DOCS.glob("extension/et/*.md")),
         *sorted(DOCS.glob("ml/feature/**/*.md")), *sorted(DOCS.glob("ml/algs/**/*.md")),
         *sorted(DOCS.glob("extension/dev/*.md")), *sorted(DOCS.glob("datasource/file/*.md"))]
_FENCE = re.compile(r"^[ \t]*```([^\n`]*)\n(.*?)^[ \t]*```", re.DOTALL | re.MULTILINE)


def _blocks() -> dict[str, str]:
    """``page#index`` → text of each fenced block tagged sql (the index counts every block of the page)."""
    found = {}
    for page in PAGES:
        for index, match in enumerate(_FENCE.finditer(page.read_text(encoding="utf-8"))):
            if match.group(1).replace("\u200b", "").strip().lower() == "sql":
                found[f"{page.relative_to(DOCS).as_posix()}#{index}"] = match.group(2)
    return found


BLOCKS = _blocks()

PEOPLE = PEOPLE_DATA  # the data of the EDA pages' own examples (PatternDistribution.md)

HELLO_XLSX = ("select 'hello world' as hello as hello_sheet;\n"
              "save overwrite hello_sheet as excel.`./example-data/excel/hello_world.xlsx` where header=\"true\";")
VEGA_CSV = ("select 2001 as Year, 15 as Miles as vega;\n"
            "save overwrite vega as csv.`/tmp/upload/visual_data_0.csv` where header=\"true\";")

AFTER: dict[str, list[str]] = {
    **{f"grammar/assert.md#{i}": ["#0"] for i in range(1, 9)},
    "grammar/branch_statement.md#4": ["#3"],
    "grammar/load.md#1": ["#0"],
    "grammar/outline.md#11": ["#10"],
    "grammar/select.md#5": ["#3"],
    **{f"grammar/save.md#{i}": ["#0"] for i in range(1, 6)},
    "grammar/set.md#4": ["#3"],
    **{f"ml/eda/DataSummary.md#{i}": ["#0"] for i in (2, 3)},
    **{f"ml/eda/PatternDistribution.md#{i}": ["#0"] for i in (1, 2, 3)},
    "extension/et/CacheExt.md#1": ["#0"],
    "extension/et/CacheExt.md#2": ["#0", "#1"],
    "extension/et/TableRepartition.md#2": ["#1"],
    "extension/et/TableRepartition.md#4": ["#3", "#6"],
    "extension/et/TableRepartition.md#5": ["#3"],
    "extension/et/TableRepartition.md#6": ["#3"],
    "extension/et/TreeBuildExt.md#1": ["#0"],
    "extension/et/TreeBuildExt.md#3": ["#0", "#1"],
    "extension/et/TreeBuildExt.md#5": ["#0", "#1"],
    "ml/feature/rate_sample.md#1": ["#0"],
    "ml/feature/rate_sample.md#2": ["#0", "#1"],
    **{f"ml/feature/{page}#{i}": ["#0", "#1", "#2"][:i]
       for page, blocks in (("confusion_matrix.md", 3), ("discretizer/bucketizer.md", 4), ("discretizer/quantile.md", 4),
                            ("normalize.md", 4))
       for i in range(1, blocks)},
    "ml/feature/extract_example.md#1": ["#0"],
    "ml/feature/extract_example.md#3": ["#0", "#1"],
    "ml/feature/extract_example.md#4": ["#0", "#1", "#3"],
    "ml/feature/scale.md#2": ["#1"],
    "ml/feature/scale.md#3": ["#1", "#2"],
    "ml/feature/vecmap.md#4": ["#3"],
    "datasource/file/excel_load.md#8": ["#7"],
    **{f"ml/algs/{page}": ["#0"] for page in ("als.md#1", "auto_ml.md#1", "kmeans.md#1", "lda.md#1", "linear_regression.md#2",
                                              "linear_regression.md#4", "logistic_regression.md#4", "naive_bayes.md#4",
                                              "random_forest.md#4", "model_explain/ModelSelfExplain.md#1",
                                              "model_explain/ModelSelfExplain.md#2")},
    **{f"ml/algs/{page}": ["#0", "#1"] for page in ("als.md#2", "kmeans.md#2", "lda.md#2", "lda.md#3")},
}

# the earlier blocks set a variable the block reads: the doc continues one script
ONE_REQUEST = {"grammar/load.md#1", "grammar/outline.md#11", "extension/et/TreeBuildExt.md#1",
               "extension/et/TreeBuildExt.md#3", "extension/et/TreeBuildExt.md#5"}

# vecmap.md's first block builds its map column with a Scala UDF: the same column in SQL
VECMAP_DATA = """set jsonStr='''
{"features":{"a":1.6,"b":1.2},"label":0.0}
{"features":{"a":1.5,"b":0.2},"label":0.0}
{"features":{"a":1.6,"b":1.2},"label":0.0}
{"features":{"a":1.6,"b":7.2},"label":0.0}
''';
load jsonStr.`jsonStr` as data;
select map("a", features.a, "b", features.b) as f from data as newdata;"""

# ModelSelfExplain.md trains with evaluateTable="mock_data_validate", which it never makes: its own data
_SELF_EXPLAIN_DATA = (BLOCKS["ml/algs/model_explain/ModelSelfExplain.md#0"].split("-- use RandomForest")[0]
                      + "select * from mock_data_1 as mock_data_validate;")

GIVEN: dict[str, str] = {
    "grammar/assert.md#10": VEGA_CSV, "grammar/assert.md#11": VEGA_CSV,
    **{key: HELLO_XLSX for key in ("grammar/macro.md#0", "grammar/macro.md#1", "grammar/macro.md#2", "grammar/macro.md#3",
                                   "grammar/outline.md#0", "grammar/outline.md#1", "grammar/outline.md#2",
                                   "grammar/outline.md#7", "grammar/outline.md#8")},
    "grammar/select.md#2": "select 1 as id, '12345678' as study_id, 1 as status as table_a;\n"
                           "select 1 as id, 0 as use_status, 'x' as name as table_b;",
    "grammar/train.md#2": "select 1 as id union all select 2 as id as testData;",
    **{f"ml/eda/DataSummary.md#{i}": PEOPLE for i in (0, 2, 3)},
    "ml/eda/UniqueIdentifier.md#0": PEOPLE,
    "extension/et/TableRepartition.md#8": "select 1 as id union all select 2 as id union all select 3 as id as table_cc;",
    # scale.md trains data1, but its first block names the table data
    **{f"ml/feature/scale.md#{i}": BLOCKS["ml/feature/scale.md#0"] + "\nselect * from data as data1;" for i in (1, 2, 3)},
    "ml/feature/vecmap.md#1": VECMAP_DATA,
    **{f"ml/feature/vecmap.md#{i}": VECMAP_DATA + '\ntrain newdata as VecMapInPlace.`/tmp/model` where inputCol="f";'
       for i in (3, 4)},  # what #1 trains (it fails in its load)
    "ml/algs/model_explain/ModelSelfExplain.md#0": _SELF_EXPLAIN_DATA,
    # it explains /tmp/model/_model_8, the doc's ninth train of /tmp/model (AFTER runs the ninth)
    **{f"ml/algs/model_explain/ModelSelfExplain.md#{i}": _SELF_EXPLAIN_DATA + "\n" + "\n".join(
        [BLOCKS["ml/algs/model_explain/ModelSelfExplain.md#0"]] * 8) for i in (1, 2)},
    # the table behind the doc's result: age 18 once and 21 seven times, 上海 once and 广州 seven times
    "ml/eda/DescriptiveMetrics.md#0": "select * from values (18, '上海'), " + ", ".join(["(21, '广州')"] * 7)
                                      + " as t(age, address) as table1;",
}



def _excel_workbooks(folder: Path) -> None:
    """The workbooks datasource/file/excel*.md load: ./example-data/hello_world.xlsx with the sheets
    roles, comment, comment2 (a table at B6:C7) and dateformat, and /tmp/upload/it.xlsx (技术文档)."""
    import xlsxwriter

    (folder / "example-data").mkdir()
    book = xlsxwriter.Workbook(str(folder / "example-data" / "hello_world.xlsx"))
    book.add_worksheet("roles").write_row(0, 0, ["name", "role"])
    book.get_worksheet_by_name("roles").write_row(1, 0, ["jack", "admin"])
    book.add_worksheet("comment").write_row(0, 0, ["a", "b"])
    comment2 = book.add_worksheet("comment2")
    comment2.write_row(5, 1, ["k", "v"])
    comment2.write_row(6, 1, ["a", 1])
    dates = book.add_worksheet("dateformat")
    dates.write_row(0, 0, ["day", "n"])
    for row in (1, 2):
        dates.write_datetime(row, 0, dt.datetime(2024, 1, row), book.add_format({"num_format": "yyyy/mm/dd"}))
        dates.write(row, 1, row)
    book.close()
    (folder / "tmp" / "upload").mkdir(parents=True)
    it = xlsxwriter.Workbook(str(folder / "tmp" / "upload" / "it.xlsx"))
    it.add_worksheet("技术文档").write_row(0, 0, ["title"])
    it.get_worksheet_by_name("技术文档").write_row(1, 0, ["intro"])
    it.close()


FILES = {f"datasource/file/{page}": _excel_workbooks for page in ("excel.md#0", "excel.md#3", "excel_load.md#0",
                                                                  "excel_load.md#3", "excel_load.md#4", "excel_load.md#5",
                                                                  "excel_load.md#6", "excel_load.md#7", "excel_load.md#8")}

EXPECT: dict[str, tuple[str, list[dict]]] = {
    "grammar/branch_statement.md#0": ("output", [{"a": 2}]),
    "grammar/branch_statement.md#4": ("output", [{"a": 2}]),
    "grammar/branch_statement.md#5": ("output", [{"a": Decimal("1.2")}]),
    "grammar/branch_statement.md#10": ("output", [{"a": "jackdj"}]),
    "grammar/branch_statement.md#11": ("output", [{"a": 2}]),
    "grammar/branch_statement.md#12": ("output", [{"a": 1}]),
    "grammar/load.md#3": ("output", [{"dataType": "A group", "x": 100, "y": 200, "z": 200},
                                     {"dataType": "B group", "x": 120, "y": 100, "z": 260}]),
    "grammar/macro.md#0": ("output", [{"hello": "hello world"}]),
    "grammar/outline.md#0": ("hello_world", [{"hello": "hello world"}]),
    "grammar/outline.md#11": ("output", [{"a": "b"}]),
    "grammar/outline.md#12": ("output", [{"a": 1}]),
    "grammar/outline.md#13": ("output", [{"a": 1}]),
    "grammar/outline.md#17": ("output", [{"a": 2}]),
    "grammar/select.md#0": ("table1", [{"col1": 1}]),
    "grammar/select.md#2": ("traindata", [{"id": 1, "use_status": 0, "name": "x"}]),
    "grammar/set.md#14": ("output", [{"name": "foo"}]),
    "grammar/train.md#2": ("newdata", [{"id": 1}, {"id": 2}]),
    "ml/eda/DataSummary.md#0": ("summaryTable", [
        {"columnName": "age", "ordinalPosition": "1", "median": "44.0", "%75": "57.0", "mean": "43.33"},
        {"columnName": "income", "ordinalPosition": "2", "median": "163500.0", "%75": "284500.0", "mean": "182866.67"},
        {"columnName": "label", "ordinalPosition": "3", "median": "0.5", "%75": "1.0", "mean": "0.5"},
        {"columnName": "name", "ordinalPosition": "4", "median": "", "%75": "", "mean": ""},
        {"columnName": "phone", "ordinalPosition": "5", "median": "1.55522115215E10", "%75": "1.555222652125E10",
         "mean": "1.550221818783E10"}]),
    "extension/et/JsonExpandExt.md#0": ("output", [  # Byzer's ModelExample rows; the example runs (test_ets.py)
        {"name": "name", "value": "JsonExpandExt"},
        {"name": "codeExample", "value": ets.find("JsonExpandExt").example},
        {"name": "codeType", "value": "sql"},
        {"name": "doc", "value": ets.find("JsonExpandExt").description},
        {"name": "docType", "value": "text"}]),
    "extension/et/TreeBuildExt.md#5": ("result", [  # (the doc's table leaves out 201, a child of 199)
        {"children": [{"children": [], "id": 7, "parentID": 0}], "id": 0, "parentID": None, "level": 1},
        {"children": [{"children": [], "id": 2, "parentID": 1},
                      {"children": [{"children": [], "id": 200, "parentID": 199},
                                    {"children": [], "id": 201, "parentID": 199}], "id": 199, "parentID": 1}],
         "id": 1, "parentID": None, "level": 2}]),
    # the doc's result table shows a new Unique_ID column, but its call replaces income: 1, 2, ...
    "ml/eda/UniqueIdentifier.md#0": ("uniqueIdentifier", [
        {"age": a, "income": i + 1, "label": la, "name": n, "phone": p} for i, (a, la, n, p) in enumerate([
            (57, 0, "elena", 15552231521), (67, 0, "candy", 15552231521), (57, 0, "bob", 15252211521),
            (25, 1, "candy", 15552211522), (31, 1, "candy", 15552211521), (23, 1, "finn", 15552211521)])]),
    # the matrix the page shows as a picture: cat was taken for rabbit once, for dog twice
    "ml/feature/confusion_matrix.md#1": ("output", [{"act\\prt": "cat", "cat": 1, "dog": 2, "rabbit": 1},
                                                     {"act\\prt": "dog", "cat": 0, "dog": 1, "rabbit": 0},
                                                     {"act\\prt": "rabbit", "cat": 0, "dog": 0, "rabbit": 0}]),
    "ml/feature/normalize.md#3": ("output", [{"features": [-0.4932558994483363, 0.0]}]),
    "ml/feature/scale.md#3": ("output", [{"features": [0.006006006006006006, 0.5]}]),
    "ml/feature/discretizer/bucketizer.md#3": ("output", [{"features": [2.0, 2.0]}]),
    "ml/feature/discretizer/quantile.md#3": ("output", [{"features": [1.0, 1.0]}]),
    # the doc's table as Byzer computes it (its booleans print blank there; the third row is cut short)
    "ml/feature/extract_example.md#1": ("output", [
        {"content": "请联系 13634282910", "predict": "rabbit", "phone": True, "noEmoAndSpec": "请联系 13634282910",
         "email": False, "qqwechat": False, "url": 0, "pic": 0, "cleanedDoc": "请联系 13634282910", "blank": 6,
         "chinese": 20, "english": 0, "number": 73, "punctuation": 0, "uninvisible": 0, "mostchar": 2, "length": 15},
        {"content": "扣扣 527153688@qq.com", "predict": "dog", "phone": False, "noEmoAndSpec": "扣扣 527153688@qq.com",
         "email": True, "qqwechat": True, "url": 0, "pic": 0, "cleanedDoc": "扣扣 ", "blank": 33, "chinese": 66,
         "english": 0, "number": 0, "punctuation": 0, "uninvisible": 0, "mostchar": 2, "length": 3},
        {"content": "<html> dddd img.dxycdn.com ffff 527153688@qq.com", "predict": "cat", "phone": False,
         "noEmoAndSpec": "<html> dddd img.dxycdn.com ffff 527153688@qq.com", "email": True, "qqwechat": False,
         "url": 0, "pic": 1, "cleanedDoc": "dddd  ffff ", "blank": 27, "chinese": 0, "english": 72, "number": 0,
         "punctuation": 0, "uninvisible": 0, "mostchar": 4, "length": 11}]),
    "ml/feature/extract_example.md#4": ("output", [{"features": True}]),
    "ml/feature/vecmap.md#1": ("output", [{"f": [1.6, 1.2]}, {"f": [1.5, 0.2]}, {"f": [1.6, 1.2]}, {"f": [1.6, 7.2]}]),
    "ml/feature/vecmap.md#4": ("output", [{"features": [1.0, 0.0]}]),
}

# results that depend on the day the block runs: (table, the rows given that day)
DATED: dict[str, tuple[str, object]] = {
    "grammar/set.md#10": ("output", lambda day: [{"dt": (day - dt.timedelta(days=1)).isoformat()}]),
}

# train blocks: the result the doc shows, a name/value block per parameter group with Byzer's names, each
# status success and its metrics named and in range (scikit-learn trains here, not Spark: the values differ)
TRAIN_RESULT_NAMES = ["modelPath", "algIndex", "alg", "metrics", "status", "message", "startTime", "endTime", "trainParams"]
CLASSIFIER_METRICS = {"f1", "weightedPrecision", "weightedRecall", "accuracy"}
METRIC_RANGE = {**{name: (0.0, 1.0) for name in CLASSIFIER_METRICS},
                "mae": (0.0, float("inf")), "mse": (0.0, float("inf")), "rmse": (0.0, float("inf")), "r2": (-float("inf"), 1.0)}
TRAINED: dict[str, tuple[str, int, set[str] | None]] = {  # alg's prefix, groups, metric names (None: not evaluated)
    "ml/algs/random_forest.md#0": ("sklearn.ensemble.RandomForestClassifier", 2, CLASSIFIER_METRICS),
    "ml/algs/model_explain/ModelSelfExplain.md#0": ("sklearn.ensemble.RandomForestClassifier", 2, CLASSIFIER_METRICS),
    "ml/algs/logistic_regression.md#0": ("sklearn.linear_model.LogisticRegression", 2, CLASSIFIER_METRICS),
    "ml/algs/naive_bayes.md#0": ("sklearn.naive_bayes.", 2, CLASSIFIER_METRICS),
    "ml/algs/linear_regression.md#0": ("sklearn.linear_model.", 2, {"mae", "mse", "r2", "rmse"}),
    "ml/algs/auto_ml.md#0": ("sklearn.", 2, CLASSIFIER_METRICS),  # algos="LogisticRegression,NaiveBayes"
    "ml/algs/kmeans.md#1": ("sklearn.cluster.KMeans", 1, None),
    "ml/algs/lda.md#1": ("sklearn.decomposition.", 1, None),
    "ml/algs/als.md#1": ("mlsql_ray.ml.algs.als.SparkALS", 2, {"rmse"}),
}


# AutoML's algIndex is Byzer's ALG.N (the doc's result shows LogisticRegression.0), others' the group number
ALG_INDICES = {"ml/algs/auto_ml.md#0": ["LogisticRegression.0", "NaiveBayes.0"]}


def _check_trained(table, alg: str, groups: int, metrics: set[str] | None, alg_indices: list[str] | None = None) -> None:
    blocks = []
    for row in table.to_pylist():
        if row["name"] == "modelPath":
            blocks.append({})
        blocks[-1][row["name"]] = row["value"]
    assert [list(block) for block in blocks] == [TRAIN_RESULT_NAMES] * groups
    assert sorted(block["algIndex"] for block in blocks) == (alg_indices or [str(i) for i in range(groups)])
    for block in blocks:
        assert block["status"] == "success", block["message"]
        assert block["alg"].startswith(alg), block["alg"]
        if metrics is not None:
            words = block["metrics"].replace(":", " ").split()
            scores = dict(zip(words[::2], map(float, words[1::2])))
            assert set(scores) == metrics, block["metrics"]
            for name, score in scores.items():
                low, high = METRIC_RANGE[name]
                assert low <= score <= high, (name, score)


def _same_cluster_for_same_features(rows: list[dict]) -> bool:
    """kmeans.md: data1's eight rows [5.1,3.5,1.4,0.2] (all but the 4th and 8th) share a cluster; k=2 makes two."""
    same = {row["catagory"] for i, row in enumerate(rows) if i not in (3, 7)}
    return len(same) == 1 and len({row["catagory"] for row in rows}) == 2


def _every_item_for_each_user(rows: list[dict]) -> bool:
    """als.md: users 1 and 2 rated items 2, 3, 6 and 7 (all 1): userRec="10" gives each user all four
    items, best first, and the best group (rmse near 0) predicts the items each rated near 1."""
    rated = {1: {2, 3, 6}, 2: {2, 7}}
    return sorted(row["a"] for row in rows) == [1, 2] and all(
        sorted(r["i"] for r in row["recommendations"]) == [2, 3, 6, 7]
        and [r["rating"] for r in row["recommendations"]] == sorted((r["rating"] for r in row["recommendations"]), reverse=True)
        and all(abs(r["rating"] - 1) < 0.05 for r in row["recommendations"] if r["i"] in rated[row["a"]])
        for row in rows)


def _two_forests_explained(rows: list[dict]) -> bool:
    """ModelSelfExplain.md: the two forests of /tmp/model/_model_8, each one importance per feature
    (4), summing to 1."""
    sums = {}
    for row in rows:
        if row["alg"] != "RandomForest" or row["name"] != "featureImportance":
            return False
        sums[row["algIndex"]] = sums.get(row["algIndex"], 0.0) + row["value"]
    return len(rows) == 8 and set(sums) == {0, 1} and all(abs(total - 1) < 1e-9 for total in sums.values())


def _lda_functions(rows: list[dict]) -> bool:
    """lda.md's register: the features have 4 terms, so lda(4) (the topics matrix's row of term 4) is
    null; lda_doc a distribution over k="3" topics; lda_topic(label, 4) all 4 terms of topic 0 or 1,
    heaviest first, with their weights in the topic (summing to 1), the same for the same label."""
    by_label = {}
    for row in rows:
        topic = row["describeTopics"]
        weights = topic["termWeights"]
        if not (row["topicsMatrix"] is None and len(row["TopicDistribution"]) == 3
                and abs(sum(row["TopicDistribution"]) - 1) < 1e-9 and sorted(topic["termIndices"]) == [0, 1, 2, 3]
                and weights == sorted(weights, reverse=True) and abs(sum(weights) - 1) < 1e-9):
            return False
        by_label.setdefault(row["label"], topic)
        if by_label[row["label"]] != topic:
            return False
    return len(rows) == 10 and set(by_label) == {0.0, 1.0} and by_label[0.0] != by_label[1.0]


# checks of the block's last result where the doc shows no table to compare with
CHECK_ROWS = {
    "ml/algs/kmeans.md#2": _same_cluster_for_same_features,
    "ml/algs/als.md#2": _every_item_for_each_user,
    "ml/algs/auto_ml.md#1": lambda rows: len(rows) == 10 and all(row["prediction"] in (0.0, 1.0) for row in rows),
    # k="3": each row's distribution over the three topics
    "ml/algs/lda.md#2": lambda rows: len(rows) == 10 and all(
        len(row["topicDistribution"]) == 3 and abs(sum(row["topicDistribution"]) - 1) < 1e-9 for row in rows),
    "ml/algs/lda.md#3": _lda_functions,
    **{f"ml/algs/model_explain/ModelSelfExplain.md#{i}": _two_forests_explained for i in (1, 2)},
    # Byzer's explainParams (the doc prints a param/description table of these two); !show et/params/ET the same
    "extension/dev/et_dev.md#14": lambda rows: [r["param"] for r in rows] == ["action", "sql"],
    "extension/dev/et_params_dev.md#2": lambda rows: {"numTrees", "maxDepth"} <= {r["param"] for r in rows},
    "extension/dev/et_params_dev.md#1": lambda rows: [r["name"] for r in rows] == ["RandomForest"],
}

# blocks with Python cells: they share the test run's one local Ray
NEEDS_RAY = {"grammar/outline.md#17"}

EXPECT_ERROR: dict[str, str] = {
    # a regression has no f1: Byzer scores LinearRegression with its classification evaluator (the doc's
    # "f1: 0.0 ... accuracy: 0.0"), mlsql-ray with regression metrics, and says so
    "ml/algs/linear_regression.md#4": "has the metric 'f1'.*stored: mae, mse, r2, rmse",
    # the Throw variants stop the script: z has nulls, z and (z, y) repeat
    "grammar/assert.md#2": "Assert Failed: 'table1' dirty count: 3",
    "grammar/assert.md#4": "Assert Failed: conflict key: z",
    "grammar/assert.md#6": r"Assert Failed: conflict key: z,y",
    # errorIfExists after the first block saved to the same path
    "grammar/save.md#5": "already exists",
    # the doc's second request: the variable of the first request is gone (its default scope is request)
    "grammar/set.md#4": r"undefined variable \$\{hello\}",
    # the module checks its parameters: run on its own, inputTable is not set
    "grammar/assert.md#12": "inputTable is missing",
    # the doc's point: without the taken branch, b was never made
    "grammar/branch_statement.md#14": "table b is not defined",
    "grammar/branch_statement.md#15": "table b is not defined",
    # the doc's point: a macro body holding a command (!hdfs) is illegal
    "grammar/macro.md#4": "macro !hello calls a ! command",
}

_FRAGMENT = "not a whole script: "
SKIP: dict[str, str] = {
    "grammar/assert.md#9": _FRAGMENT + "the syntax outline !assert <tableName> <expr> <message>",
    "grammar/branch_statement.md#1": _FRAGMENT + "a condition expression",
    "grammar/branch_statement.md#6": _FRAGMENT + "the !if line of the nested example, without its branches",
    "grammar/branch_statement.md#7": _FRAGMENT + "the select inside a condition",
    "grammar/branch_statement.md#8": _FRAGMENT + "a condition expression",
    "grammar/include.md#3": _FRAGMENT + "the outline include local.`[PATH]`",
    "grammar/include.md#5": _FRAGMENT + "includes src/algs/b.byzer of a project the doc does not give",
    "grammar/include.md#7": _FRAGMENT + "!pyInclude of src/algs/xgboost.py of a project the doc does not give",
    "grammar/include.md#8": _FRAGMENT + "a module's body, run by the include that sets inputTable and outputTable",
    "grammar/module.md#13": _FRAGMENT + "includes ./udf.hello of a project the doc does not give",
    "grammar/outline.md#3": _FRAGMENT + "includes src/common/PyHeader.mlsql of a project the doc does not give",
    "grammar/outline.md#14": _FRAGMENT + "trains on mock_data, which the doc never defines",
    "grammar/outline.md#15": _FRAGMENT + "registers the model the previous fragment would have trained",
    "grammar/outline.md#16": _FRAGMENT + "predicts on testData with a model the doc never trains",
    "grammar/register.md#1": _FRAGMENT + "calls plusFun, the Scala UDF of the previous block",
    "grammar/register.md#7": _FRAGMENT + "registers a model at /tmp/rf that the doc never trains",
    "grammar/register.md#8": _FRAGMENT + "registers a model at /tmp/rf that the doc never trains",
    "grammar/select.md#1": _FRAGMENT + "plain Spark SQL without 'as TABLE', ending in a full-width ；",
    "grammar/train.md#0": _FRAGMENT + "trains on /tmp/train, which the doc never gives",
    "grammar/train.md#1": _FRAGMENT + "trains on /tmp/train, which the doc never gives",
    "grammar/train.md#3": _FRAGMENT + "predicts with a model at /tmp/rf that the doc never trains",
    "ml/eda/DataSummary.md#1": _FRAGMENT + "the where clause of a call, without the ';' that ends a statement",
    "extension/et/TableRepartition.md#0": _FRAGMENT + "the outline run [表名] as TableRepartition.`` ...",
    "extension/et/TableRepartition.md#7": _FRAGMENT + "the outline !tableRepartition _ -i [表名] ...",
    "extension/dev/et_dev.md#10": _FRAGMENT + "the SQL to analyse is written ''' ... '''",
}

_LIB_CORE = ("include lib. (it downloads lib-core; mlsql-ray runs offline)",
             r"include lib\.`(github|gitee)\.com/allwefantasy/lib-core` downloads a library .*needs the internet")
_NO_LIB_CORE = "lib-core, which include lib. would download (mlsql-ray runs offline)"
_SCALA = ("Byzer's JVM engine: register ScriptUDF with lang=\"scala\"",
          r"lang=\"scala\" UDFs need Byzer's JVM engine, which mlsql-ray does not have")
_NOTEBOOK = ("include http. (a Byzer notebook server's project)", r"include supports local\.`path`, project\.`path`, not http")
_MYSQL = ("MySQL (connect jdbc to jdbc:mysql://127.0.0.1:3306)", "jdbc:mysql is not supported yet")
# blocks of what mlsql-ray does not have: each runs and must fail with the error that says so, then
# counts as an xfail with the reason — (what is missing, the error's pattern)
UNSUPPORTED: dict[str, tuple[str, str]] = {
    **{key: _LIB_CORE for key in ("grammar/assert.md#13", "grammar/include.md#0", "grammar/module.md#10",
                                  "grammar/outline.md#5")},
    **{key: (_NO_LIB_CORE, "cannot include libCore.udf.hello: no such file or folder")
       for key in ("grammar/include.md#1", "grammar/module.md#11", "grammar/outline.md#6")},
    "grammar/include.md#2": (_NO_LIB_CORE + ": its hello()", "Scalar Function with name hello does not exist"),
    "grammar/include.md#4": (_NO_LIB_CORE, "cannot include github.com/allwefantasy/lib-core.udf.hello: no such file"),
    "grammar/module.md#12": (_NO_LIB_CORE, "cannot include gitee.com/allwefantasy/lib-core.udf.hello: no such file"),
    "grammar/include.md#6": ("!pyInclude", "^1:2: unknown command !pyInclude"),
    "grammar/include.md#9": ("!pyInclude", "^6:5: unknown command !pyInclude"),
    "grammar/outline.md#18": ("!plugin (Byzer's plugin store)", "unknown command !plugin"),
    **{key: _MYSQL for key in ("grammar/load.md#7", "grammar/load.md#8", "grammar/save.md#6")},
    **{f"grammar/module.md#{i}": _NOTEBOOK for i in (1, 3, 5, 7, 9)},
    **{key: _SCALA for key in ("grammar/branch_statement.md#13", "grammar/module.md#0", "grammar/module.md#2",
                               "grammar/register.md#0", "ml/feature/vecmap.md#0")},
    **{f"grammar/register.md#{i}": ("Byzer's JVM engine: register ScriptUDF from Scala code", _SCALA[1]) for i in (2, 3, 4)},
    **{f"grammar/register.md#{i}": ("Byzer's JVM engine: register ScriptUDF from Java code",
                                    r"lang=\"java\" UDFs need Byzer's JVM engine, which mlsql-ray does not have")
       for i in (5, 6)},
    "grammar/register.md#9": ("Spark Structured Streaming: register WaterMarkInPlace on a stream",
                              r"models are registered as tf or keras\.`db\.table`, not WaterMarkInPlace"),
}

NOT_YET: dict[str, str] = {
}


# -- the result tables the docs print ---------------------------------------------------------------

_TABLE_LINE = re.compile(r"^\s*\|(.*)\|\s*$")
_BORDER = re.compile(r"^[\s|:+-]*$")  # a markdown separator (|---|:--|) or a show() border (+---+)


def _printed_table(key: str) -> tuple[list[str], list[list[str]]] | None:
    """The table the doc prints after block ``key``, before its next sql block — a markdown table
    or Spark's ``show()`` text in a plain block — as (header, rows of cell texts); None if none."""
    page, index = key.split("#")
    text = (DOCS / page).read_text(encoding="utf-8")
    fences = list(_FENCE.finditer(text))
    later = [f for f in fences[int(index) + 1:] if f.group(1).replace("\u200b", "").strip().lower() == "sql"]
    lines, started = [], False
    for line in text[fences[int(index)].end():later[0].start() if later else len(text)].splitlines():
        if _TABLE_LINE.match(line) and not _BORDER.match(line):
            lines.append([cell.strip().strip("`") for cell in _TABLE_LINE.match(line).group(1).split("|")])
            started = True
        elif started and not (line.strip() and _BORDER.match(line)):
            break
    return (lines[0], lines[1:]) if lines else None


def _as_shown(value) -> str:
    """A value as Spark's ``show()`` prints it (a null as the docs' tables print it: blank)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return "[" + ", ".join(_as_shown(v) for v in value) + "]"
    return str(value)


def _unordered(rows: list[list[str]]) -> list[list[str]]:
    """Rows in any order, and the items of an array cell ("[a, b]") in any order."""
    def cell(text: str) -> str:
        return "[" + ", ".join(sorted(text[1:-1].split(", "))) + "]" if text.startswith("[") and text.endswith("]") else text
    return sorted([cell(c) for c in row] for row in rows)


# blocks whose result is compared with the table the doc prints: (the result table: named, or "" for
# the last statement's; the block the table is printed after, "" for the block itself; how)
# - "rows": the same cells in the same order; "any order": the order of rows and of array items
#   is Spark's whim (collect_set); "shape": the same columns and number of rows (values of the
#   moment, or of Spark's hash)
DOC_TABLES: dict[str, tuple[str, str, str]] = {
    **{f"grammar/set.md#{i}": ("output", "", "rows") for i in (1, 2, 11, 12, 13)},
    "grammar/set.md#9": ("output", "", "shape"),  # the output of `date`
    "ml/eda/DescriptiveMetrics.md#0": ("descriptiveMetrics", "", "rows"),
    "extension/et/JsonExpandExt.md#1": ("table_2", "", "rows"),
    "extension/et/JsonExpandExt.md#2": ("table_3", "", "rows"),
    "extension/et/SyntaxAnalyzeExt.md#1": ("output", "", "rows"),
    # the !profiler of block #4 after a range repartition (#6), as the doc prints below #6
    "extension/et/TableRepartition.md#4": ("", "#6", "rows"),
    # the same after a hash repartition without columns: Spark's hash placement, which mlsql-ray
    # does not reproduce (its rows are dealt out evenly, see ets/tables.py)
    "extension/et/TableRepartition.md#5": ("", "", "shape"),
    "extension/et/TreeBuildExt.md#3": ("result", "", "any order"),
}

# what the doc says the block prints ("该语句输出为 `====1`"): one of its statements' messages
PRINTS: dict[str, str] = {"grammar/branch_statement.md#9": "====1"}

# blocks to run after the block, in the same session, before its result is compared
THEN: dict[str, list[str]] = {"extension/et/TableRepartition.md#5": ["#4"]}


def _check_printed(session: Session, key: str, last) -> None:
    table_name, printed_after, how = DOC_TABLES[key]
    header, printed = _printed_table(key.split("#")[0] + printed_after if printed_after else key)
    table = session.table(table_name) if table_name else last.table
    # columns by name: JsonExpandExt.md's hand-made table shows name | age, where Spark's JSON
    # inference (and mlsql-ray's) gives age, name
    assert sorted(table.column_names) == sorted(header)
    rows = [[_as_shown(row[column]) for column in header] for row in table.to_pylist()]
    if how == "shape":
        assert len(rows) == len(printed), (rows, printed)
    elif how == "any order":
        assert _unordered(rows) == _unordered(printed)
    else:
        assert rows == printed


def _run_block(session: Session, key: str, tmp_path: Path):
    page = key.split("#")[0]
    if key in FILES:
        FILES[key](tmp_path)
    if key in GIVEN:
        session.execute(_local(GIVEN[key], tmp_path))
    earlier = [_local(BLOCKS[page + block], tmp_path) for block in AFTER.get(key, [])]
    if key in ONE_REQUEST:
        return session.execute("\n".join([*earlier, _local(BLOCKS[key], tmp_path)]))
    for text in earlier:
        session.execute(text)
    results = session.execute(_local(BLOCKS[key], tmp_path))
    for block in THEN.get(key, []):
        results = session.execute(_local(BLOCKS[page + block], tmp_path))
    return results


def _local(text: str, tmp_path: Path) -> str:
    """The docs' /tmp/ paths, inside this test's own folder."""
    return text.replace("/tmp/", f"{tmp_path}/tmp/")


_TRAIN = re.compile(r"^\s*train\s", re.IGNORECASE | re.MULTILINE)


def _trains(key: str) -> bool:
    """The block, or an earlier block of its page that runs first (``AFTER``), has a ``train``."""
    page = key.split("#")[0]
    return any(_TRAIN.search(BLOCKS[block]) for block in [key, *(page + b for b in AFTER.get(key, []))])


def _cases():
    for key in BLOCKS:
        # a block that trains fits scikit-learn/XGBoost models for seconds: the slow tier (-m "not slow")
        marks = [pytest.mark.slow] if _trains(key) else []
        if key in SKIP:
            marks.append(pytest.mark.skip(reason=SKIP[key]))
        elif key in NOT_YET:
            marks.append(pytest.mark.xfail(reason="not yet: " + NOT_YET[key], strict=True))
        yield pytest.param(key, id=key, marks=marks)


_TRAINS_OR_REGISTERS = re.compile(r"^\s*(train|register|predict)\s", re.IGNORECASE | re.MULTILINE)


def _uses_workers(key: str) -> bool:
    """The block, or what runs before it, trains or registers a model: Ray actors do that work."""
    page = key.split("#")[0]
    texts = [GIVEN.get(key, ""), *(BLOCKS[page + block] for block in AFTER.get(key, [])), BLOCKS[key]]
    return any(_TRAINS_OR_REGISTERS.search(text) for text in texts)


@pytest.fixture(scope="module")
def shared_workers(ray_runtime):
    """One warm pool (mlsql_ray.cluster.warm) for the sessions of the blocks that train or register: each
    block still runs in a fresh Session, on actors an earlier block's session handed back (each
    told to forget its run), not on new Ray worker processes that import scikit-learn or
    TensorFlow first — seconds per block, most of such a block's time."""
    with WarmPool() as pool:
        yield pool


@pytest.mark.parametrize("key", _cases())
def test_doc_example(key, tmp_path, monkeypatch, request):
    monkeypatch.chdir(tmp_path)
    if key in NEEDS_RAY:
        request.getfixturevalue("ray_runtime")
    # a refused block is refused before any model work: no warm pool (nor a Ray) for it
    workers = request.getfixturevalue("shared_workers") if _uses_workers(key) and key not in UNSUPPORTED else None
    with Session(warehouse=tmp_path / "warehouse", workers=workers) as session:
        if key in UNSUPPORTED:
            missing, error = UNSUPPORTED[key]
            with pytest.raises(MLSQLError, match=error):
                _run_block(session, key, tmp_path)
            pytest.xfail(f"mlsql-ray does not have {missing}, and says so")
        if key in EXPECT_ERROR:
            with pytest.raises(MLSQLError, match=EXPECT_ERROR[key]):
                _run_block(session, key, tmp_path)
            return
        started = dt.date.today()
        results = _run_block(session, key, tmp_path)
        if key in DATED:  # the day the block started or, across midnight, the day it ended
            table, rows_of = DATED[key]
            assert session.table(table).to_pylist() in (rows_of(started), rows_of(dt.date.today()))
        if key in DOC_TABLES:
            _check_printed(session, key, results[-1])
        if key in PRINTS:
            assert PRINTS[key] in [result.message for result in results], [result.message for result in results]
        if key in EXPECT:
            table, expected = EXPECT[key]
            assert (session.table(table) if table else results[-1].table).to_pylist() == expected
        if key in TRAINED:
            _check_trained(results[-1].table, *TRAINED[key], ALG_INDICES.get(key))
        if key in CHECK_ROWS:  # a load shows no preview: its table
            last = results[-1]
            rows = (last.table if last.table is not None else session.table(last.name)).to_pylist()
            assert CHECK_ROWS[key](rows), rows


def test_the_lists_name_real_blocks_and_agree():
    """Every key names a block of the pages, and no block is both skipped and expected to run."""
    for listing in (AFTER, GIVEN, EXPECT, DATED, DOC_TABLES, THEN, PRINTS, EXPECT_ERROR, SKIP, UNSUPPORTED, NOT_YET, NEEDS_RAY, ONE_REQUEST, TRAINED, CHECK_ROWS,
                    ALG_INDICES, FILES):
        assert set(listing) <= set(BLOCKS), set(listing) - set(BLOCKS)
    assert not set(SKIP) & set(NOT_YET)
    assert not set(UNSUPPORTED) & (set(SKIP) | set(NOT_YET) | set(EXPECT_ERROR))
    assert all(not reason.startswith("needs") for reason in SKIP.values())  # a skip is for a fragment only
    assert not (set(SKIP) | set(UNSUPPORTED)) & (set(EXPECT) | set(EXPECT_ERROR) | set(TRAINED) | set(CHECK_ROWS))
    assert not set(EXPECT) & set(EXPECT_ERROR)
    assert not (set(SKIP) | set(UNSUPPORTED) | set(EXPECT_ERROR)) & set(DOC_TABLES)
    for key, (_, printed_after, _) in DOC_TABLES.items():  # each names a table the doc prints
        assert _printed_table(key.split("#")[0] + printed_after if printed_after else key), key
    assert ONE_REQUEST <= set(AFTER)
    assert len(BLOCKS) > 130  # every page was found and read
