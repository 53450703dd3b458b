"""A real ``mlsql`` kernel process and a blocking client, shared by the kernel tests."""

from __future__ import annotations

import contextlib
import os
import queue
import time
from pathlib import Path

import psutil

from mlsql_ray.kernel.install import write_spec


@contextlib.contextmanager
def checkout_kernelspec(folder: Path):
    """``mlsql`` resolves to this checkout's kernel (written for this venv's Python into a
    temporary JUPYTER_PATH), so the tests run the code under test whatever else is installed."""
    write_spec(folder / "kernels" / "mlsql")
    saved = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = os.pathsep.join(p for p in (str(folder), saved) if p)
    try:
        yield folder / "kernels" / "mlsql"
    finally:
        if saved is None:
            os.environ.pop("JUPYTER_PATH", None)
        else:
            os.environ["JUPYTER_PATH"] = saved


def notebooks(root: Path) -> list:
    """Every notebook in notebooks/, as pytest params: the slow ones (SLOW_NOTEBOOKS) marked slow."""
    import pytest

    return [pytest.param(path, id=path.name, marks=[pytest.mark.slow] if path.name in SLOW_NOTEBOOKS else [])
            for path in sorted((root / "notebooks").glob("*.ipynb"))]


#: notebooks too slow for the fast tier, and why (the one list every notebook test reads)
SLOW_NOTEBOOKS = {"mnist_distributed.ipynb": "trains a Keras model on Ray for minutes",
                  "sql_training.ipynb": "fits four models, two of them as Ray tasks"}


def prints(text: str):
    """An iopub test: the message is stdout containing ``text``."""
    return lambda msg: msg["msg_type"] == "stream" and text in msg["content"]["text"]


def shown(msg_type: str = "display_data"):
    """A ``running`` test for Kernel.interrupt_once_running: the cell has sent such a message."""
    return lambda seen: any(m["msg_type"] == msg_type for m in seen)


# Cells that run until interrupted, made for a marker path: (code, the ``running`` test that says
# the cell is under way, for Kernel.interrupt_once_running). A Python cell touches the marker from
# inside its loop (a printed line would not do: the interrupt can land while print still flushes).
# test_kernel.py checks what an interrupt does to them, bench/bench_interrupt.py how fast.
INTERRUPTIBLE = {
    "python cell sleeping in a loop": lambda mark: (
        f"--%python\nimport time\nfrom pathlib import Path\nmark = Path({str(mark)!r})\n"
        "while True:\n    mark.touch()\n    time.sleep(0.05)\n", lambda seen: mark.exists()),
    # the marker is touched from inside the loop: touched before it, the interrupt could land while
    # touch() was still returning, one line short of the loop
    "busy python loop": lambda mark: (
        f"--%python\nfrom pathlib import Path\nmark = Path({str(mark)!r})\nn = 0\nwhile True:\n"
        "    n += 1\n    if n == 1:\n        mark.touch()\n", lambda seen: mark.exists()),
    # ~10^14 rows of cross join: hours of work inside DuckDB's C++, where no Python handler runs;
    # the first statement's table on iopub says the cell has reached the query
    "long DuckDB query": lambda mark: (
        "select 1 as a as started;\nselect count(*) as n from range(100000) a, range(100000) b, range(10000) c as huge;",
        shown()),
}

# What a three-round training reports (mlsql_ray.progress), sent by a driver-side Python cell: a
# training's live display without the training (tests/test_kernel.py, test_browser.py).
PROGRESS_CELL = """--%python
from mlsql_ray import progress
history = []
progress.report("train_start", total_rounds=3, workers=2)
for r in range(1, 4):
    row = {"round": r, "total_rounds": 3, "loss": 1.0 / r, "accuracy": 0.5 + r / 10, "elapsed": 0.5 * r}
    history.append(row)
    progress.report("train_round", **row)
progress.report("train_end", history=history, elapsed=1.5)
"""

# Real training in a cell, over a table ``small`` of MNIST rows; ROUNDS is replaced by the caller.
TRAIN_CELL = """--%python
--%input=small
--%num_partitions=2
from mlsql_ray import train
from pyjava.api.mlsql import RayContext

ray_context = RayContext.connect(globals(), None)

def create_model():
    from tensorflow.keras import layers, models
    model = models.Sequential([layers.Input(shape=(784,)), layers.Dense(32, activation="relu"),
                               layers.Dense(10, activation="softmax")])
    model.compile(optimizer="sgd", loss="categorical_crossentropy", metrics=["accuracy"])
    return model

result = train.fit(create_model, ray_context.data_servers(), rounds=ROUNDS, batch_size=64, scale=1 / 255, one_hot=10)
print("final accuracy", round(result.history[-1]["accuracy"], 3))
"""


class Kernel:
    """A running kernel and a blocking client, with helpers that collect a request's messages."""

    def __init__(self, cwd: Path, warehouse: Path | None = None, timeout: float = 30, kernel_name: str = "mlsql",
                 **env_vars: str | None):
        from jupyter_client import KernelManager

        self.timeout = timeout
        self.km = KernelManager(kernel_name=kernel_name)
        env = {**os.environ, **({"MLSQL_WAREHOUSE": str(warehouse)} if warehouse else {}), **env_vars}
        env = {name: value for name, value in env.items() if value is not None}  # None: not set
        self.km.start_kernel(cwd=str(cwd), env=env)
        self.process = psutil.Process(self.km.provisioner.pid)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=max(60, 2 * timeout))

    def execute(self, code: str, timeout: float | None = None, **kwargs):
        """(reply content, the request's iopub messages up to idle, in order)."""
        msg_id = self.kc.execute(code, **kwargs)
        reply = self.reply(msg_id, timeout)
        return reply["content"], self.iopub(msg_id, timeout)

    def ok(self, code: str) -> str:
        """Run a cell that must succeed; its stdout."""
        reply, messages = self.execute(code)
        assert reply["status"] == "ok", (code, reply.get("ename"), reply.get("evalue"))
        return "".join(m["content"]["text"] for m in messages if m["msg_type"] == "stream" and m["content"]["name"] == "stdout")

    def reply(self, msg_id: str, timeout: float | None = None):
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            msg = self.kc.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
            if msg["parent_header"].get("msg_id") == msg_id:
                return msg

    def iopub(self, msg_id: str, timeout: float | None = None) -> list[dict]:
        messages = []
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            msg = self.kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            messages.append(msg)
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                return messages

    def interrupt_once_running(self, code: str, running, timeout: float = 10, start_timeout: float | None = None):
        """Run ``code``, interrupt it as soon as ``running(its iopub messages so far)`` says it is
        under way (a marker file it touched, a table it showed): no guessed sleep, so the interrupt
        lands inside the work on a loaded machine as on a quiet one. ``timeout`` bounds the wait
        for the reply, ``start_timeout`` the wait for ``running``.
        Returns (reply content, the cell's iopub messages, how long the reply took after the interrupt)."""
        msg_id = self.kc.execute(code)
        seen = []
        deadline = time.monotonic() + (start_timeout or self.timeout)
        while not running(seen):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the cell was not seen running in time: {seen}")
            try:
                msg = self.kc.get_iopub_msg(timeout=0.02)
            except queue.Empty:
                continue
            if msg["parent_header"].get("msg_id") == msg_id:
                seen.append(msg)
        assert self.km.is_alive()
        interrupted_at = time.monotonic()
        self.km.interrupt_kernel()
        reply = self.reply(msg_id, timeout)["content"]
        stopped_in = time.monotonic() - interrupted_at
        return reply, seen + self.iopub(msg_id, timeout), stopped_in

    def request(self, method: str, *args, **kwargs) -> dict:
        msg_id = getattr(self.kc, method)(*args, **kwargs)
        return self.reply(msg_id)["content"]

    def rss_mb(self) -> float:
        return self.process.memory_info().rss / 2**20

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=False)
