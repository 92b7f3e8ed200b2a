"""`mia serve-model` as a subprocess on a free port: started, its announced URL read, then stopped."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def serve_model(*args: str, env: dict[str, str] | None = None, start_s: float = 240) -> Iterator[str]:
    """The URL (http://127.0.0.1:PORT/v1) of `mia serve-model --port 0 ARGS`, until the block ends."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "mia.app.cli", "serve-model", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
    )
    url, lines = None, []
    deadline = time.monotonic() + start_s
    try:
        while url is None and time.monotonic() < deadline and proc.poll() is None:
            lines.append(proc.stdout.readline())  # type: ignore[union-attr]
            if match := re.search(r"at (http://127\.0\.0\.1:\d+/v1)", lines[-1]):
                url = match.group(1)
        assert url, "server did not announce its URL:\n" + "".join(lines)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
