"""`mia ask --web-search`: a clear error without a Tavily key; with one, the executor is offered
Tavily web search next to the corpus search."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mia.app.cli import app
from mia.graph.context import Context
from mia.graph.models.defaults import DEFAULT_MODELS
from mia.graph.nodes import deps as deps_module

from .fakes import ScriptedChatModel, make_deps

runner = CliRunner()


@pytest.fixture()
def seen_contexts(monkeypatch: pytest.MonkeyPatch) -> list[Context]:
    search = '<tool_call>{"name": "search", "arguments": {"query_list": ["capital Paris"]}}</tool_call>'
    model = ScriptedChatModel(script=["1. Search.", search, "<answer>Paris</answer>"])
    deps, _ = make_deps(dict.fromkeys(DEFAULT_MODELS.values(), model))
    contexts: list[Context] = []
    tools = deps.tools

    def spy(context: Context, paragraphs: Any) -> Any:
        contexts.append(context)
        return tools(context, paragraphs)

    monkeypatch.setattr(deps, "tools", spy)
    monkeypatch.setattr(deps_module, "_DEFAULT", deps)
    for role in ("PLANNER", "EXECUTOR", "MANAGER", "JUDGE"):
        monkeypatch.delenv(f"MIA_{role}_MODEL", raising=False)
    return contexts


def test_web_search_without_a_key_is_a_one_line_error(
    seen_contexts: list[Context], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)  # no .env here
    res = runner.invoke(app, ["ask", "Q?", "--web-search", "--data-dir", str(tmp_path)])
    lines = [x for x in res.output.splitlines() if x.strip()]
    assert res.exit_code == 2 and len(lines) == 1 and "TAVILY_API_KEY" in lines[0], res.output
    assert seen_contexts == []


def test_web_search_flag_reaches_the_context(
    seen_contexts: list[Context], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
    res = runner.invoke(
        app,
        [
            "ask",
            "Capital of France?",
            "--web-search",
            "--json",
            "--judge-mode",
            "off",
            "--no-memorise",
            "--data-dir",
            str(tmp_path),
        ],
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout.strip().splitlines()[-1])["answer"] == "Paris"
    assert seen_contexts and all(c.web_search for c in seen_contexts)


def test_default_tools_offer_tavily_when_asked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
    paragraphs = [{"title": "Paris", "text": "Paris is the capital of France."}]
    names = [t.name for t in deps_module.Deps().tools(Context(web_search=True, data_dir=str(tmp_path)), paragraphs)]
    assert "web_search" in names and "search" in names
    plain = [t.name for t in deps_module.Deps().tools(Context(data_dir=str(tmp_path)), paragraphs)]
    assert "web_search" not in plain
