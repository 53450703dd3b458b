"""The seed notebook's whole Python cell (Keras 3 spellings, pixels scaled, 2 epochs instead of
6) run by ``mlsql-ray run``; the model rows it saves are turned back into a Keras model with
nothing but ``deltalake``, a sort on ``start`` and ``tarfile``, and the model must recognise the
held-out test digits far better than chance."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

SAMPLE = Path(__file__).resolve().parent.parent / "sample_data" / "mnist"

SCRIPT = '''load parquet.`{train}` as mnist;
!python env "PYTHON_ENV=source /Users/allwefantasy/opt/anaconda3/bin/activate ray1.3.0";
!python conf "runIn=driver";
!python conf "schema=file";
!python conf "dataMode=model";
-- %%
--%python
--%input=mnist
--%output=mnist_model
--%cache=true

from functools import reduce
import os
import ray
import numpy as np
from tensorflow.keras import models,layers
from tensorflow.keras import utils as np_utils
from pyjava.api.mlsql import RayContext
from pyjava.storage import streaming_tar


ray_context = RayContext.connect(globals(), None)
data_servers = ray_context.data_servers()
replica_num = len(data_servers)
print(f"total workers {{replica_num}}")
def data_partition_creater(data_server):
    temp_data = [item for item in RayContext.collect_from([data_server])]
    train_images = np.array([np.array(item["image"]) for item in temp_data])
    train_labels = np_utils.to_categorical(np.array([item["label"] for item in temp_data])    )
    train_images = train_images.reshape((len(temp_data),28*28)).astype("float32") / 255
    return train_images,train_labels

def create_tf_model():
    network = models.Sequential()
    network.add(layers.Input(shape=(28*28,)))
    network.add(layers.Dense(512,activation="relu"))
    network.add(layers.Dense(10,activation="softmax"))
    network.compile(optimizer="sgd",loss="categorical_crossentropy",metrics=["accuracy"])
    return network

@ray.remote
class Network(object):
    def __init__(self,data_server):
        self.model = create_tf_model()
        # you can also save the data to local disk if the data is
        # not fit in memory
        self.train_images,self.train_labels = data_partition_creater(data_server)


    def train(self):
        history = self.model.fit(self.train_images,self.train_labels,batch_size=128,verbose=0)
        return history.history

    def get_weights(self):
        return self.model.get_weights()

    def set_weights(self, weights):
        # Note that for simplicity this does not handle the optimizer state.
        self.model.set_weights(weights)

    def get_final_model(self):
        model_path = os.path.join({model_dir!r},"minist_model.keras")
        self.model.save(model_path)
        model_binary = [item for item in streaming_tar.build_rows_from_file(model_path)]
        return model_binary
    def shutdown(self):
        ray.actor.exit_actor()

workers = [Network.remote(data_server) for data_server in data_servers]
ray.get([worker.train.remote() for worker in workers])
_weights = ray.get([worker.get_weights.remote() for worker in workers])

def epoch_train(weights):
    sum_weights = reduce(lambda a,b: [(a1 + b1) for a1,b1 in zip(a,b)],weights)
    averaged_weights = [layer/replica_num for layer in sum_weights]
    ray.get([worker.set_weights.remote(averaged_weights) for worker in workers])
    ray.get([worker.train.remote() for worker in workers])
    return ray.get([worker.get_weights.remote() for worker in workers])

for epoch in range(2):
   _weights = epoch_train(_weights)

model_binary = ray.get(workers[0].get_final_model.remote())
[worker.shutdown.remote() for worker in workers]
ray_context.build_result(model_binary)
-- %%
save overwrite mnist_model as delta.`ai_model.mnist_model`;
'''


@pytest.mark.slow
def test_seed_cell_trains_a_model_any_delta_reader_can_rebuild(run_cli, tmp_path: Path, ray_runtime, ray_address):
    model_dir = tmp_path / "model_out"
    model_dir.mkdir()
    script = tmp_path / "seed.mlsql"
    script.write_text(SCRIPT.format(train=SAMPLE / "train.parquet", model_dir=str(model_dir)))
    warehouse = tmp_path / "warehouse"

    done = run_cli("run", str(script), "--warehouse", str(warehouse), timeout=600, ray_address=ray_address)
    assert done.returncode == 0, done.stderr[-4000:]
    cpus = int(ray_runtime.cluster_resources()["CPU"])
    assert f"total workers {cpus}" in done.stdout  # one data server per CPU of the Ray it joined (the test run's)
    assert "saved" in done.stdout and "ai_model.mnist_model" in done.stdout

    # any Delta reader: rows sorted on start are the tar stream of the saved file
    rows = DeltaTable(str(warehouse / "ai_model" / "mnist_model")).to_pyarrow_table().sort_by("start").to_pylist()
    assert [r["start"] for r in rows] == list(np.cumsum([0] + [r["offset"] for r in rows[:-1]]))
    stream = b"".join(r["value"] for r in rows)
    extracted = tmp_path / "rebuilt"
    with tarfile.open(fileobj=io.BytesIO(stream)) as archive:
        assert archive.getnames() == ["minist_model.keras"]
        archive.extractall(extracted, filter="data")
    assert (extracted / "minist_model.keras").read_bytes() == (model_dir / "minist_model.keras").read_bytes()

    import keras

    model = keras.models.load_model(extracted / "minist_model.keras")
    test = pq.read_table(SAMPLE / "test.parquet")
    images = np.stack(test.column("image").to_numpy(zero_copy_only=False)).astype("float32") / 255
    labels = test.column("label").to_numpy()
    predicted = model.predict(images, verbose=0).argmax(axis=1)
    accuracy = float((predicted == labels).mean())
    assert len(labels) == 2000
    assert accuracy > 0.5, accuracy  # chance is 0.1


def test_the_seed_script_parses_whole_into_its_statements():
    """The fast tier's look at the seed (the training above is slow): the script as users wrote it
    parses whole, before anything runs, into the load, the four ``!python`` settings, the Python
    cell with its annotations, and the save; the cell's code is valid Python."""
    from mlsql_ray import parse
    from mlsql_ray.lang.ast import Command, Load, PythonCell, Save

    statements = parse(SCRIPT.format(train=SAMPLE / "train.parquet", model_dir="/nowhere"))
    assert [type(s) for s in statements] == [Load, Command, Command, Command, Command, PythonCell, Save]
    assert [s.args[:1] for s in statements[1:5]] == [("env",), ("conf",), ("conf",), ("conf",)]
    cell = statements[5]
    assert (cell.line, cell.annotations) == (7, {"input": "mnist", "output": "mnist_model", "cache": "true"})
    compile(cell.code, "seed-cell", "exec")  # a SyntaxError here fails the test
    assert statements[6].path == "ai_model.mnist_model" and statements[6].line == 87
