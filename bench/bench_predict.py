"""Issue 6's benchmark: batch inference through a registered model function vs one model.predict.

    .venv/bin/python bench/bench_predict.py [--runs 5]

Scores the 2 000 held-out MNIST images with the seed's model (784-512-10) two ways, after the
actors are warm: ``select mnist_predict(image) ... as scored`` (Ray actors fed Arrow batches by
DuckDB) and one ``model.predict`` on the whole array in this process. Target: the SQL path takes
<= 2x the single predict. Prints rows/s for both (medians over --runs).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = Path(__file__).resolve().parent.parent
TEST = ROOT / "sample_data" / "mnist" / "test.parquet"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    import keras
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mlsql_ray import Session
    from mlsql_ray.storage.rows import FILE_SCHEMA
    from mlsql_ray.models import rows_from_model_file
    from mlsql_ray.train import Columns

    model = keras.Sequential([keras.layers.Input((784,)), keras.layers.Dense(512, activation="relu"),
                              keras.layers.Dense(10, activation="softmax")])
    x, _ = Columns(scale=1 / 255)(pq.read_table(TEST))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.keras"
        model.save(path)
        rows = rows_from_model_file(path.read_bytes())
        with Session(warehouse=Path(tmp) / "warehouse") as session:
            session.catalog.add_arrow("model_rows", pa.Table.from_pylist(rows, schema=FILE_SCHEMA), "bench")
            session.execute("save overwrite model_rows as delta.`ai_model.bench`;")
            session.execute(f"load parquet.`{TEST}` as mnist_test;")
            started = time.perf_counter()
            session.execute('register tf.`ai_model.bench` as mnist_predict where scale="1/255" and output="argmax";')
            register_s = time.perf_counter() - started
            query = "select mnist_predict(image) as prediction, label from mnist_test as scored;"
            session.execute(query)
            session.table("scored")  # warm: first batches through each actor
            sql_times, local_times = [], []
            for _ in range(args.runs):
                start = time.perf_counter()
                session.execute(query)
                session.table("scored")  # a batch select runs when its rows are read
                sql_times.append(time.perf_counter() - start)
                start = time.perf_counter()
                expected = model.predict(x, batch_size=1024, verbose=0).argmax(axis=1)
                local_times.append(time.perf_counter() - start)
            got = session.table("scored").column("prediction").to_numpy()
            assert (got == expected).all(), "the registered function and the model disagree"
            workers = len(session.model_functions.functions["mnist_predict"].actors)
    sql, local = statistics.median(sql_times), statistics.median(local_times)
    rows_n = len(x)
    print(f"register (start the embedded Ray, start {workers} actors, each loads the model): {register_s:.1f} s")
    print(f"select mnist_predict(image) over {rows_n} rows: {sql * 1000:.0f} ms = {rows_n / sql:,.0f} rows/s")
    print(f"one model.predict in this process:           {local * 1000:.0f} ms = {rows_n / local:,.0f} rows/s")
    print(f"ratio {sql / local:.2f} (target <= 2)")


if __name__ == "__main__":
    main()
