"""Context defaults come from the settings (MIA_* in the environment or `.env`), so a graph invoked
without a context (Studio, `langgraph dev`, a library call) behaves like the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from mia.graph.builder import build_graph
from mia.graph.context import Context

from .fakes import ScriptedChatModel, make_deps

CALL = '<tool_call>{"name": "search", "arguments": {"query_list": ["Hamlet author Shakespeare"]}}</tool_call>'
ROLE_VARS = (
    "MIA_PLANNER_MODEL",
    "MIA_EXECUTOR_MODEL",
    "MIA_MANAGER_MODEL",
    "MIA_JUDGE_MODEL",
    "MIA_MEMORY_NAMESPACE",
    "MIA_DATA_DIR",
)


@pytest.fixture
def dotenv(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in ROLE_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text(
        "MIA_PLANNER_MODEL=fake:env-planner\nMIA_EXECUTOR_MODEL=fake:env-executor\n"
        "MIA_MANAGER_MODEL=fake:env-manager\nMIA_JUDGE_MODEL=fake:env-judge\n"
        f"MIA_MEMORY_NAMESPACE=from-dotenv\nMIA_DATA_DIR={tmp_path / 'data'}\n"
    )
    return tmp_path


def test_blank_context_fields_take_dotenv(dotenv: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    c = Context()
    assert (c.planner_model, c.executor_model, c.manager_model, c.judge_model) == (
        "fake:env-planner",
        "fake:env-executor",
        "fake:env-manager",
        "fake:env-judge",
    )
    assert c.namespace == "from-dotenv" and c.resolved_data_dir() == dotenv / "data"
    assert Context.coerce({"planner_model": "fake:given"}).planner_model == "fake:given"  # given values win
    monkeypatch.setenv("MIA_PLANNER_MODEL", "fake:real-env")  # the environment wins over .env
    assert Context().planner_model == "fake:real-env"


def test_graph_without_context_uses_the_models_named_in_dotenv(dotenv: Path) -> None:
    models = {  # the default plans after a failure: the executor's first answer is none
        "fake:env-planner": ScriptedChatModel(script=['1. Search "Hamlet playwright".']),
        "fake:env-executor": ScriptedChatModel(
            script=[
                CALL,
                "<answer>I don't know</answer>",
                CALL.replace("Hamlet", "Hamlet playwright"),
                "<answer>Shakespeare</answer>",
            ]
        ),
        "fake:env-manager": ScriptedChatModel(script=[]),
        "fake:env-judge": ScriptedChatModel(script=[], fallback="A"),
    }
    deps, seen = make_deps(models)
    out = build_graph(deps=deps).invoke({"question": "Who wrote Hamlet?", "gold_answers": ["Shakespeare"]})
    assert out["answer"] == "Shakespeare" and out["plan"] == '1. Search "Hamlet playwright".'
    assert models["fake:env-planner"].prompts and models["fake:env-executor"].prompts
    assert seen["judge"][0]["model"] is models["fake:env-judge"]
    traj, _ = seen["store"].memorised[0]
    assert traj.namespace == "from-dotenv"
