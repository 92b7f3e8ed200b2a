"""LangSmith settings: LANGSMITH_* from `.env` turn tracing on for the CLI (the environment wins),
and `mia studio` leaves tracing on when the user turned it on."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.tracers.context import tracing_v2_callback_var
from langchain_core.tracers.langchain import LangChainTracer

from mia.app.commands.agent import studio_env
from mia.app.tracing import langsmith_tracing

DOTENV = "LANGSMITH_TRACING=true\nLANGSMITH_PROJECT=from-dotenv\nLANGSMITH_ENDPOINT=http://127.0.0.1:9\nLANGSMITH_API_KEY=lsv2-x\n"


@pytest.fixture()
def no_langsmith_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    for key in (
        "LANGSMITH_TRACING",
        "LANGSMITH_PROJECT",
        "LANGSMITH_ENDPOINT",
        "LANGSMITH_API_KEY",
        "LANGCHAIN_TRACING_V2",
    ):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)
    import langsmith
    from langsmith.schemas import LangSmithInfo

    real = langsmith.Client  # a client that never asks the (unreachable) endpoint for its /info
    monkeypatch.setattr(langsmith, "Client", lambda **kw: real(**kw, info=LangSmithInfo(), auto_batch_tracing=False))
    return monkeypatch


def test_dotenv_turns_tracing_on(no_langsmith_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(DOTENV)
    with langsmith_tracing() as on:
        tracer = tracing_v2_callback_var.get()
        assert on and isinstance(tracer, LangChainTracer)
        assert tracer.project_name == "from-dotenv" and tracer.client.api_url == "http://127.0.0.1:9"
    assert tracing_v2_callback_var.get() is None
    import os

    assert "LANGSMITH_API_KEY" not in os.environ  # .env is not copied into the environment


def test_environment_wins_over_dotenv(no_langsmith_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(DOTENV)
    no_langsmith_env.setenv("LANGSMITH_PROJECT", "from-env")
    with langsmith_tracing():
        assert tracing_v2_callback_var.get().project_name == "from-env"
    no_langsmith_env.setenv("LANGSMITH_TRACING", "false")
    with langsmith_tracing() as on:
        assert not on and tracing_v2_callback_var.get() is None


def test_off_by_default(no_langsmith_env: pytest.MonkeyPatch) -> None:
    with langsmith_tracing() as on:
        assert not on and tracing_v2_callback_var.get() is None


def test_studio_keeps_tracing_the_user_turned_on(no_langsmith_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert studio_env(tmp_path)["LANGSMITH_TRACING"] == "false"  # off unless asked for
    (tmp_path / ".env").write_text(DOTENV)
    assert "LANGSMITH_TRACING" not in studio_env(tmp_path)  # the server reads .env itself
    (tmp_path / ".env").unlink()
    no_langsmith_env.setenv("LANGSMITH_TRACING", "true")
    assert studio_env(tmp_path)["LANGSMITH_TRACING"] == "true"
