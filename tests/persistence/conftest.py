"""A real PostgreSQL (the Debian `postgresql` package) started for the session on a free port in a
temporary folder, and stopped afterwards. Root cannot run the server: it then runs as `nobody`.
When no server can be started, the tests are skipped with the reason (never faked)."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[4]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _as_server_user(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", "nobody", "--", *cmd] if os.geteuid() == 0 else cmd


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    bin_dir = _pg_bin()
    if bin_dir is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql; scripts/setup.sh --dev does it)")
    try:
        import psycopg  # noqa: F401
        import langgraph.checkpoint.postgres  # noqa: F401
    except ModuleNotFoundError as err:
        pytest.skip(f"the 'postgres' extra is not installed ({err.name})")
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        pytest.skip("running as root without runuser: cannot start PostgreSQL as another user")
    root = Path(tempfile.mkdtemp(prefix="mia-pg-"))
    os.chmod(root, 0o755)
    data = root / "data"
    data.mkdir()
    if os.geteuid() == 0:
        shutil.chown(root, "nobody")
        shutil.chown(data, "nobody")
    port = _free_port()
    init = subprocess.run(
        _as_server_user(
            [str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"]
        ),
        capture_output=True,
        text=True,
        check=False,
    )
    if init.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"initdb failed: {init.stderr.strip()[-300:]}")
    log = root / "server.log"
    opts = f"-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories={root} -c fsync=off"
    start = subprocess.run(
        _as_server_user(
            [str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", opts, "-w", "-t", "120", "start"]
        ),
        capture_output=True,
        text=True,
        check=False,
    )
    if start.returncode != 0:
        detail = log.read_text()[-300:] if log.exists() else start.stderr[-300:]
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"PostgreSQL did not start: {detail.strip()}")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            _as_server_user([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]),
            capture_output=True,
            check=False,
        )
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture()
def fresh_db(postgres_url: str) -> Iterator[str]:
    """A database of its own for one test (tables from an earlier test cannot leak in)."""
    import uuid

    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield postgres_url.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
