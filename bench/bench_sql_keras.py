"""Issue 15's KerasClassifier benchmark: `train … as KerasClassifier` from SQL vs `mlsql_ray.train.fit`.

    .venv/bin/python bench/bench_sql_keras.py [--epochs 7]

On the sample MNIST (8 000 train / 2 000 held out), the seed's network (784-512-10, SGD 0.01,
batch 128, pixels scaled by 1/255), 2 workers of 1 CPU, the same seed for the initial weights:
1. direct: `train.fit` on the two halves of the train set (as numpy arrays), then the model scores
   the held-out images
2. SQL: `train train as KerasClassifier.`db.k` where … and evaluateTable="test"`: reads the
   table, fits the same way, scores the evaluate table, saves the model as a Delta table
Each is run twice: first on fresh actors (no warm pool for (1); the session's first train for
(2)), then again on warm ones (a `WarmPool` for (1); the session's pool for (2)). Ray is started
before the timings. Targets: (2) within 1 point of (1)'s accuracy and ≤ 1.1× its time.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TRAIN = ROOT / "sample_data" / "mnist" / "train.parquet"
TEST = ROOT / "sample_data" / "mnist" / "test.parquet"


def direct(epochs: int, x, y, tx, ty) -> tuple[float, float]:
    """``train.fit`` as KerasClassifier calls it; (seconds, held-out accuracy)."""
    import numpy as np

    from mlsql_ray.ml.algs.keras_classifier import KerasClassifier

    start = time.perf_counter()
    model = KerasClassifier(layers=(512,), epochs=epochs, scale=1 / 255, workers=2).fit(x, y)
    accuracy = float((model.predict(tx) == ty).mean())
    return time.perf_counter() - start, float(np.round(accuracy, 4))


def sql(session, epochs: int) -> tuple[float, float]:
    start = time.perf_counter()
    session.execute(f"""train train as KerasClassifier.`db.k` where featuresCol="image" and labelCol="label"
        and layers="512" and epochs="{epochs}" and scale="1/255" and workers="2" and evaluateTable="test" as r;""")
    wall = time.perf_counter() - start
    metrics = next(row["value"] for row in session.table("r").to_pylist() if row["name"] == "metrics")
    return wall, round(float(metrics.split("accuracy: ")[1].split()[0]), 4)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=7)
    args = parser.parse_args()

    import numpy as np
    import pyarrow.parquet as pq

    from mlsql_ray import Session, train
    from mlsql_ray.arrays import matrix

    train_table, test_table = pq.read_table(TRAIN), pq.read_table(TEST)
    x, y = matrix(train_table.column("image"), np.float32), train_table.column("label").to_numpy()
    tx, ty = matrix(test_table.column("image"), np.float32), test_table.column("label").to_numpy()
    print(f"MNIST {len(x)} train / {len(tx)} test, 784-512-10, {args.epochs} epochs, 2 workers")

    with tempfile.TemporaryDirectory() as warehouse, Session(warehouse=warehouse) as session:
        session.execute(f"load parquet.`{TRAIN}` as train; load parquet.`{TEST}` as test;")
        session.ray_link.ensure()  # the cluster is up before the timings
        cold_direct = direct(args.epochs, x, y, tx, ty)
        with train.WarmPool() as pool, pool.active():
            direct(args.epochs, x, y, tx, ty)
            warm_direct = direct(args.epochs, x, y, tx, ty)
        cold_sql = sql(session, args.epochs)
        warm_sql = sql(session, args.epochs)
    for label, (d, s) in (("fresh actors", (cold_direct, cold_sql)), ("warm actors ", (warm_direct, warm_sql))):
        print(f"{label}: train.fit {d[0]:6.2f} s accuracy {d[1]:.4f} | SQL {s[0]:6.2f} s accuracy {s[1]:.4f} "
              f"| SQL/direct time {s[0] / d[0]:.2f}x (target ≤ 1.1), accuracy {100 * (s[1] - d[1]):+.2f} points "
              f"(target within 1)")


if __name__ == "__main__":
    main()
