"""A real S3-compatible server for the object-storage tests: moto's server mode (``moto_server``,
from the ``moto[server]`` dev extra) on 127.0.0.1, a free port, one bucket made through boto3,
stopped by its pid at the end. moto honours conditional puts (``If-None-Match: *``), which
deltalake's commits rely on, so concurrent Delta writers are tested for real.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

BUCKET = "mlsql-test"
ACCESS_KEY = "testing-access-key"
SECRET_KEY = "testing-s3cret-KEY-never-printed"
REGION = "us-east-1"


@dataclass
class Server:
    endpoint: str
    process: subprocess.Popen

    @property
    def env(self) -> dict[str, str]:
        """The standard AWS variables that point every client (deltalake, pyarrow, boto3) here."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": REGION, "AWS_ALLOW_HTTP": "true"}

    def client(self):
        """A boto3 client of this server: a second, independent reader of what the project wrote."""
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=ACCESS_KEY,
                            aws_secret_access_key=SECRET_KEY, region_name=REGION)

    def keys(self, prefix: str) -> list[str]:
        """The objects under ``prefix``, but not the empty ``folder/`` markers pyarrow leaves."""
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
        return sorted(item["Key"] for page in pages for item in page.get("Contents", []) if not item["Key"].endswith("/"))

    def stop(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _moto_server() -> str:
    """moto_server beside this interpreter (the venv's bin), else on the PATH."""
    beside = Path(sys.executable).parent / "moto_server"
    return str(beside) if beside.exists() else (shutil.which("moto_server") or "moto_server")


def start(timeout_s: float = 30) -> Server:
    port = _free_port()
    process = subprocess.Popen([_moto_server(), "-H", "127.0.0.1", "-p", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = Server(f"http://127.0.0.1:{port}", process)
    deadline = time.monotonic() + timeout_s
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"moto_server exited with status {process.returncode} before answering")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            if time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(f"moto_server did not answer on port {port} within {timeout_s} s")
            time.sleep(0.1)
    server.client().create_bucket(Bucket=BUCKET)
    return server
