"""A real PostgreSQL server for the JDBC tests: Debian's binaries, its own data directory in a
temporary folder, listening on 127.0.0.1 only with password (scram) authentication, stopped at
the end. ``initdb`` refuses to run as root, so the server runs as the ``postgres`` user when the
tests run as root.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

USER = "mlsql"
PASSWORD = "s3cret-pw'\"; --"  # hostile on purpose: it must survive quoting and never be printed
DATABASE = "mlsql_test"


def binaries() -> Path | None:
    """The folder holding initdb/pg_ctl/postgres (Debian keeps them off the PATH), or None."""
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if Path(folder, "initdb").exists() and Path(folder, "pg_ctl").exists():
            return Path(folder)
    found = shutil.which("initdb")
    return Path(found).resolve().parent if found else None


@dataclass
class Server:
    host: str
    port: int
    folder: Path
    bin: Path
    run_as: str | None

    @property
    def jdbc_url(self) -> str:
        return f"jdbc:postgresql://{self.host}:{self.port}/{DATABASE}"

    @property
    def uri(self) -> str:
        from urllib.parse import quote

        return f"postgresql://{USER}:{quote(PASSWORD, safe='')}@{self.host}:{self.port}/{DATABASE}"

    def stop(self) -> None:
        _run(self, [str(self.bin / "pg_ctl"), "-D", str(self.folder / "data"), "-m", "immediate", "-w", "stop"],
             check=False)
        shutil.rmtree(self.folder, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _run(server_or_user, args: list[str], check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    user = server_or_user.run_as if isinstance(server_or_user, Server) else server_or_user
    if user:
        args = ["runuser", "-u", user, "--", *args]
    return subprocess.run(args, check=check, capture_output=True, text=True, timeout=120, **kwargs)


def start() -> Server:
    """Initialise and start a fresh server; the caller stops it."""
    bin_dir = binaries()
    if bin_dir is None:
        raise RuntimeError("PostgreSQL server binaries not found (apt-get install postgresql)")
    run_as = "postgres" if os.geteuid() == 0 else None
    folder = Path(tempfile.mkdtemp(prefix="mlsql-pg-"))
    if run_as:
        entry = pwd.getpwnam(run_as)
        os.chown(folder, entry.pw_uid, entry.pw_gid)
    password_file = folder / "pw"
    password_file.write_text(PASSWORD + "\n")
    if run_as:
        os.chown(password_file, entry.pw_uid, entry.pw_gid)
    server = Server("127.0.0.1", _free_port(), folder, bin_dir, run_as)
    _run(server, [str(bin_dir / "initdb"), "-D", str(folder / "data"), "-U", USER, "--pwfile", str(password_file),
                  "--auth=scram-sha-256", "-E", "UTF8", "--locale=C"])
    password_file.unlink()
    _run(server, [str(bin_dir / "pg_ctl"), "-D", str(folder / "data"), "-w", "-t", "60", "-l", str(folder / "log"),
                  "-o", f"-c listen_addresses=127.0.0.1 -c port={server.port} -c unix_socket_directories={folder} "
                        f"-c fsync=off -c max_connections=40",
                  "start"])
    _create_database(server)
    return server


def _create_database(server: Server) -> None:
    import psycopg

    deadline = time.monotonic() + 30
    while True:
        try:
            with psycopg.connect(host=server.host, port=server.port, user=USER, password=PASSWORD,
                                 dbname="postgres", autocommit=True, connect_timeout=5) as con:
                con.execute(f"CREATE DATABASE {DATABASE}")
                return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
