"""Progress per parameter group of ``train``, as the CLI shows it on stderr: a line when each group
starts and one when it ends, with its status and metrics (the same numbers as the result table)
or its failure."""

from __future__ import annotations

import re

import pytest

from conftest import SAMPLE_MNIST


@pytest.mark.slow
def test_cli_prints_each_groups_start_and_end(run_cli, ray_address, tmp_path):
    script = tmp_path / "groups.mlsql"
    script.write_text(f"""
load parquet.`{SAMPLE_MNIST}/train.parquet` as raw;
select image, label from raw limit 200 as digits;
train digits as RandomForest.`db.rf` where featuresCol="image" and evaluateTable="digits" and numTrees="3"
  and `fitParam.0.maxDepth`="3" and `fitParam.1.maxDepth`="-1" as res;
select concat('f1=', regexp_extract(value, 'f1: ([0-9.eE-]+)', 1)) as f1 from res where name="metrics" and value != "" as m;
""")
    done = run_cli("run", str(script), "--warehouse", str(tmp_path / "wh"), ray_address=ray_address, timeout=600)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("RandomForest group")]
    assert sorted(lines[:2]) == ["RandomForest group 0 (2 in all): training…", "RandomForest group 1 (2 in all): training…"]
    ends = {int(line.split()[2]): line for line in lines[2:]}
    assert sorted(ends) == [0, 1]
    assert re.match(r"RandomForest group 1 \(2 in all\): fail in [\d.]+s: .*max_depth", ends[1])
    shown = dict(re.findall(r"(\w+) ([\d.]+)", ends[0].split("s  ", 1)[1]))
    [f1] = [line.strip()[3:] for line in done.stdout.splitlines() if line.startswith("f1=")]
    assert set(shown) == {"f1", "weightedPrecision", "weightedRecall", "accuracy"}
    assert abs(float(shown["f1"]) - float(f1)) < 5e-5  # shown to 4 places
