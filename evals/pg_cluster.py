"""A throwaway PostgreSQL cluster from Debian's packages (tests, benchmarks, the real stack).

``initdb`` refuses to run as root, so when we are root the cluster's folder is handed to the
``postgres`` user and the server runs as that user. It listens on a free loopback port with
its unix socket inside the folder, so it touches nothing of a system cluster.

Example:
    >>> with PgCluster() as pg:
    ...     await run_sop("examples/service_interruption", {...}, checkpoint=pg.dsn)
"""

from __future__ import annotations

import atexit
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from sopgraph.nodes.ports import free_port

INSTALL_HINT = "install it with `apt-get update && apt-get install -y postgresql`"
PG_ROOT = Path("/usr/lib/postgresql")  # where Debian's packages put each major version


# Stops the cluster when the process that started it dies without cleaning up (SIGKILL, a
# timeout): otherwise a killed test session would leave a server running for good.
_REAPER = """
import os, shutil, subprocess, sys, time
parent, pg_ctl, data, root, user = int(sys.argv[1]), *sys.argv[2:6]
while os.path.exists(root):
    try:
        os.kill(parent, 0)
    except ProcessLookupError:
        subprocess.run([pg_ctl, "-D", data, "-m", "immediate", "-w", "stop"],
                       user=user or None, capture_output=True)
        shutil.rmtree(root, ignore_errors=True)
        break
    time.sleep(1)
"""


class PostgresMissing(RuntimeError):
    """No PostgreSQL server binaries on this machine; ``str`` says how to install them."""


def find_bindir() -> Path:
    """The newest ``/usr/lib/postgresql/<version>/bin`` that has ``initdb`` and ``pg_ctl``."""
    found = []
    for initdb in PG_ROOT.glob("*/bin/initdb"):
        version = initdb.parent.parent.name
        if (initdb.parent / "pg_ctl").exists() and re.fullmatch(r"\d+(\.\d+)?", version):
            found.append((float(version), initdb.parent))
    if not found:
        raise PostgresMissing(
            f"PostgreSQL is not installed (no {PG_ROOT}/*/bin/initdb); {INSTALL_HINT}"
        )
    return max(found)[1]


class PgCluster:
    """A PostgreSQL server in a temporary folder; ``dsn`` is a ``postgresql://`` URL to its database.

    ``start()`` creates and starts it; ``stop()`` (also run at interpreter exit) stops it
    and deletes the folder.
    """

    def __init__(self, database: str = "sopgraph", bindir: Path | None = None):
        self.database = database
        self.bindir = bindir
        self.root: Path | None = None
        self.port = 0
        self._user: str | None = None
        self._reaper: subprocess.Popen | None = None

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{self.database}"

    def _run(self, *args: str) -> None:
        # ``user=`` drops privileges in the child only; the caller stays root.
        proc = subprocess.run(
            args, user=self._user, capture_output=True, text=True, cwd=self.root, timeout=120
        )
        if proc.returncode != 0:
            raise RuntimeError(
                f"{Path(args[0]).name} failed: {(proc.stderr or proc.stdout).strip()}"
            )

    def start(self) -> PgCluster:
        bindir = self.bindir or find_bindir()
        self.root = Path(tempfile.mkdtemp(prefix="sopgraph-pg-"))
        atexit.register(self.stop)
        if os.geteuid() == 0:
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                raise PostgresMissing(
                    f"no 'postgres' user to run the server as; {INSTALL_HINT}"
                ) from None
            self._user = "postgres"
            os.chown(self.root, owner.pw_uid, owner.pw_gid)
        data = self.root / "data"
        self._run(
            str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust",
            "-E", "UTF8", "--no-sync",
        )  # fmt: skip
        self.port = free_port()
        # fsync off: a test cluster needs crash safety of the server process, not of the disk.
        options = f"-h 127.0.0.1 -p {self.port} -k {self.root} -c fsync=off -c max_connections=200"
        self._run(
            str(bindir / "pg_ctl"), "-D", str(data), "-l", str(self.root / "server.log"),
            "-o", options, "-w", "-t", "60", "start",
        )  # fmt: skip
        self._reaper = subprocess.Popen(
            [sys.executable, "-c", _REAPER, str(os.getpid()), str(bindir / "pg_ctl"),
             str(data), str(self.root), self._user or ""],
            start_new_session=True, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self._run(
            str(bindir / "createdb"), "-h", str(self.root), "-p", str(self.port),
            "-U", "postgres", self.database,
        )  # fmt: skip
        return self

    def stop(self) -> None:
        if self.root is None:
            return
        root, self.root = self.root, None
        data = root / "data"
        if (data / "postmaster.pid").exists():
            bindir = self.bindir or find_bindir()
            subprocess.run(
                [str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                user=self._user, capture_output=True, timeout=60,
            )  # fmt: skip
        shutil.rmtree(root, ignore_errors=True)
        if self._reaper is not None:
            self._reaper.kill()
            self._reaper.wait()
            self._reaper = None

    def __enter__(self) -> PgCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
