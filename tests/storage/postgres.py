"""A real PostgreSQL server for the tests: ``initdb`` into a temporary directory, a
free loopback port, one database per test.

``postgres`` (session scope) starts the server the first time a test asks for it and
stops it at the end of the session (with pytest-xdist, one server per worker). The
binaries are Debian's (``/usr/lib/postgresql/<version>/bin``, which ``make test``
installs) or the first ``initdb`` on the PATH; where there are none, or the server
will not start, every test that asks for it is skipped with the reason. PostgreSQL
refuses to run as root, so under root the server runs as ``nobody`` (``setpriv``)
in a directory it owns.

``postgres_url`` (function scope) is the URL of a new database at the schema's head
(copied from a template migrated once, so a test pays no migration);
``postgres.database(migrated=False)`` makes an empty one.

``database`` (function scope, two parameters) is a database of each kind to open: an
SQLite file's path, then a PostgreSQL URL; a test that takes it runs on both.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ports import restartable_port

START_TIMEOUT_S = 30
TEMPLATE = "mammamia_template"


def _binaries() -> Path | None:
    """Returns the directory of PostgreSQL's server binaries, or None."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


class PostgresServer:
    """One PostgreSQL cluster in a temporary directory, on 127.0.0.1 and a free port."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin = bin_dir
        self.directory = Path(tempfile.mkdtemp(prefix="mammamia-pg-"))
        self.data = self.directory / "data"
        self.log = self.directory / "postgres.log"
        self.port = restartable_port()  # it restarts on it
        self._names = itertools.count(1)
        self._as: list[str] = []
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            os.chown(self.directory, nobody.pw_uid, nobody.pw_gid)
            self._as = [
                "setpriv",
                f"--reuid={nobody.pw_uid}",
                f"--regid={nobody.pw_gid}",
                "--clear-groups",
                "--",
            ]
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth=trust",
            "--no-sync",
            "-E",
            "UTF8",
            "--locale=C",
        )
        self.start()
        self._create(TEMPLATE)
        from server.db import schema

        schema.upgrade(self.url(TEMPLATE))

    def _run(self, tool: str, *args: str) -> None:
        subprocess.run(
            [*self._as, str(self.bin / tool), *args],
            check=True,
            capture_output=True,
            timeout=START_TIMEOUT_S,
            cwd=self.directory,
            env={**os.environ, "LC_ALL": "C"},
        )

    def url(self, database: str = "postgres") -> str:
        """Returns the URL of ``database`` on this server."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        """Starts the server (again, on the same port) and waits until it accepts."""
        # fsync off: the tests never cut the power, and it keeps them quick.
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-w",
            "-t",
            str(START_TIMEOUT_S),
            "-o",
            f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c full_page_writes=off -c max_connections=200",
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        """Stops the server: ``fast`` cuts open connections and shuts down cleanly (a
        restart), ``immediate`` as a crash would (commits not yet flushed are lost)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def _create(self, name: str, template: str = "template0") -> None:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as db:
            db.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')

    def database(self, migrated: bool = True) -> str:
        """Returns the URL of a new database: at the schema's head, or empty."""
        name = f"test_{os.getpid()}_{next(self._names)}"
        self._create(name, TEMPLATE if migrated else "template0")
        return self.url(name)

    def close(self) -> None:
        """Stops the server and removes its directory."""
        with contextlib.suppress(subprocess.CalledProcessError):
            self.stop("immediate")
        shutil.rmtree(self.directory, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """Yields a running PostgreSQL server, or skips the test when there is none."""
    bin_dir = _binaries()
    if bin_dir is None:
        pytest.skip("PostgreSQL is not installed (make test installs Debian's postgresql)")
    try:
        server = PostgresServer(bin_dir)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as e:
        detail = getattr(e, "stderr", b"") or b""
        pytest.skip(f"PostgreSQL would not start: {e} {detail.decode(errors='replace')[-300:]}")
    yield server
    server.close()


@pytest.fixture
def postgres_url(postgres: PostgresServer) -> str:
    """Returns the URL of a new database at the schema's head."""
    return postgres.database()


def wait_accepting(server: PostgresServer, timeout: float = START_TIMEOUT_S) -> None:
    """Returns once the server accepts connections (after a restart)."""
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        try:
            psycopg.connect(server.url(), connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Returns a database to open: an SQLite file's path, or a new PostgreSQL
    database's URL at the schema's head (skipped where PostgreSQL cannot run)."""
    if request.param == "sqlite":
        return str(tmp_path / "arena.db")
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.database()
