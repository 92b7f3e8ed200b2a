"""LangSmith tracing for the command line, configured by LANGSMITH_* in the environment or `.env`.

LangSmith's own code reads only os.environ, and mia does not copy `.env` into os.environ; so when
`.env` turns tracing on, the CLI opens a tracer with the client and project that `.env` names
(the environment wins over `.env`, as everywhere in mia). Nothing is traced unless
LANGSMITH_TRACING is true.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

KEYS = ("LANGSMITH_TRACING", "LANGSMITH_API_KEY", "LANGSMITH_PROJECT", "LANGSMITH_ENDPOINT")
_TRUE = {"1", "true", "yes", "on"}


def langsmith_values(folder: Path | None = None) -> dict[str, str]:
    """The LANGSMITH_* values: `.env` in `folder` (default: the working directory), then the environment."""
    from dotenv import dotenv_values

    path = (folder or Path.cwd()) / ".env"
    values = {k: str(v) for k, v in (dotenv_values(path) if path.is_file() else {}).items() if k in KEYS and v}
    values.update({k: os.environ[k] for k in KEYS if os.environ.get(k)})
    return values


def tracing_on(values: dict[str, str]) -> bool:
    return values.get("LANGSMITH_TRACING", "").strip().lower() in _TRUE


@contextmanager
def langsmith_tracing(folder: Path | None = None) -> Iterator[bool]:
    """Trace every run started inside the block when LANGSMITH_TRACING is on; yields whether it is."""
    values = langsmith_values(folder)
    if not tracing_on(values):
        yield False
        return
    from langchain_core.tracers.context import tracing_v2_enabled
    from langsmith import Client

    client = Client(api_url=values.get("LANGSMITH_ENDPOINT"), api_key=values.get("LANGSMITH_API_KEY"))
    with tracing_v2_enabled(project_name=values.get("LANGSMITH_PROJECT"), client=client):
        yield True
