"""A throwaway PostgreSQL server for the benchmarks, started as scripts/test starts the tests' one.

Debian's server binaries, a fresh data directory under the temp folder, `fsync=on` (every commit
waits for its WAL flush, as on a real server), pinned like the clients when they are pinned, and
`pg_stat_statements` loaded so statements are counted at the server. Counters read from it:

- statements (`pg_stat_statements`: every statement any client ran, BEGIN and COMMIT included),
- commits (`pg_stat_database.xact_commit`) and WAL flushes (`pg_stat_wal.wal_sync`: the fsyncs),
- the server's CPU time (every postgres process, the ones that ended included).

PostgreSQL publishes its cumulative statistics about once a second, so `counters()` waits for
that before it reads them.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from glob import glob

STATS_DELAY = 1.2
"""Seconds for the backends to publish their statistics (PostgreSQL flushes them at most once a second)."""


@dataclass
class Server:
    dsn: str
    datadir: str

    def postmaster_pid(self) -> int:
        with open(os.path.join(self.datadir, "postmaster.pid")) as f:
            return int(f.readline())

    def cpu_seconds(self) -> float:
        """CPU time of the postmaster and its children, living and reaped."""
        tick = os.sysconf("SC_CLK_TCK")
        root = self.postmaster_pid()
        total = 0
        for stat in glob("/proc/[0-9]*/stat"):
            try:
                with open(stat) as f:
                    raw = f.read()
            except OSError:
                continue
            fields = raw.rsplit(")", 1)[1].split()
            pid = int(stat.split("/")[2])
            ppid = int(fields[1])
            utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
            if pid == root:
                total += utime + stime + cutime + cstime
            elif ppid == root:
                total += utime + stime
        return total / tick

    def counters(self, dbname: str | None = None) -> dict[str, float]:
        """Statements, commits and WAL fsyncs so far (after the backends published them), and the server's CPU."""
        import psycopg

        time.sleep(STATS_DELAY)
        admin = self.dsn.rsplit("/", 1)[0] + "/postgres"  # where the extension's view was created
        with psycopg.connect(admin, autocommit=True) as conn:
            statements = conn.execute("SELECT coalesce(sum(calls), 0) FROM pg_stat_statements").fetchone()
            commits = conn.execute(
                "SELECT coalesce(sum(xact_commit), 0) FROM pg_stat_database WHERE datname = coalesce(%s, datname)",
                (dbname,),
            ).fetchone()
            wal = conn.execute("SELECT wal_sync, wal_bytes FROM pg_stat_wal").fetchone()
        assert statements is not None and commits is not None and wal is not None
        return {
            "statements": float(statements[0]),
            "commits": float(commits[0]),
            "wal_syncs": float(wal[0]),
            "wal_bytes": float(wal[1]),
            "cpu_s": self.cpu_seconds(),
        }

    def create_database(self, name: str) -> str:
        """A fresh database on this server; its DSN."""
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.dsn.rsplit("/", 1)[0] + f"/{name}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def postgres_server(pin: list[str]) -> Iterator[Server]:
    """Start a throwaway server (as the postgres user when run as root), yield it, stop it and remove its files."""
    initdbs = sorted(glob("/usr/lib/postgresql/*/bin/initdb"))
    if not initdbs:
        raise SystemExit("PostgreSQL is not installed (scripts/test installs Debian's postgresql package)")
    pgbin = os.path.dirname(initdbs[-1])
    pgdir = tempfile.mkdtemp(prefix="sayso-bench-pg.")
    as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if as_postgres:
        shutil.chown(pgdir, "postgres")
    port = _free_port()
    data = os.path.join(pgdir, "data")
    subprocess.run(
        [*as_postgres, f"{pgbin}/initdb", "-D", data, "-A", "trust", "-U", "postgres"],
        check=True,
        capture_output=True,
    )
    options = (
        f"-p {port} -k {pgdir} -c listen_addresses=127.0.0.1 -c fsync=on -c synchronous_commit=on "
        "-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all -c max_connections=200"
    )
    subprocess.run(
        [
            *pin,
            *as_postgres,
            f"{pgbin}/pg_ctl",
            "-D",
            data,
            "-l",
            os.path.join(pgdir, "log"),
            "-w",
            "-o",
            options,
            "start",
        ],
        check=True,
        capture_output=True,
    )
    server = Server(dsn=f"postgresql://postgres@127.0.0.1:{port}/postgres", datadir=data)
    try:
        import psycopg

        with psycopg.connect(server.dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        yield server
    finally:
        subprocess.run(
            [*as_postgres, f"{pgbin}/pg_ctl", "-D", data, "-m", "fast", "stop"], check=False, capture_output=True
        )
        shutil.rmtree(pgdir, ignore_errors=True)
