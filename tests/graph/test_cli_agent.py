"""`mia ask` / `mia chat` over scripted fake models: JSON output, checkpointed threads, resuming
after a failure, and clear errors for bad model specs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mia.app.cli import app
from mia.graph.models.defaults import DEFAULT_MODELS
from mia.graph.nodes import deps as deps_module

from .fakes import ScriptedChatModel, make_deps

runner = CliRunner()
# Context.min_tool_calls defaults to 1: the scripted executor searches once before it answers.
SEARCH = '<tool_call>{{"name": "search", "arguments": {{"query_list": ["{}"]}}}}</tool_call>'
# the default reflection (Context.replan_when "failure") replans only on a failure the trace shows, and
# makes no model call otherwise: each scripted answer is in the fake search's result ("Doc 1 about <query>")


@pytest.fixture()
def fake_models(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Every role's spec resolves to one scripted model (the spec check still sees the default spec)."""
    model = ScriptedChatModel(script=[])
    deps, seen = make_deps(dict.fromkeys(DEFAULT_MODELS.values(), model))
    monkeypatch.setattr(deps_module, "_DEFAULT", deps)
    for role in ("PLANNER", "EXECUTOR", "MANAGER", "JUDGE"):
        monkeypatch.delenv(f"MIA_{role}_MODEL", raising=False)
    return {"model": model, "seen": seen}


def test_ask_json_and_thread_reopen(fake_models: dict[str, Any], tmp_path: Path) -> None:
    fake_models["model"].script = [
        "1. Search.",
        '<tool_call>{"name": "search", "arguments": {"query_list": ["Paris"]}}',
        "<answer>Paris</answer>",
    ]
    args = ["ask", "Capital of France?", "--json", "--data-dir", str(tmp_path), "--gold", "Paris", "--thread", "t-1"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["answer"] == "Paris" and out["thread_id"] == "t-1" and out["tool_calls"] == 1
    assert out["judgement"]["outcome"] == "correct" and out["memory_id"] == "mem-1"
    assert (tmp_path / "checkpoints.sqlite").is_file()
    again = runner.invoke(app, ["ask", "--thread", "t-1", "--data-dir", str(tmp_path), "--json"])
    assert again.exit_code == 0 and json.loads(again.stdout.strip().splitlines()[-1])["answer"] == "Paris"


def test_ask_streams_events(fake_models: dict[str, Any], tmp_path: Path) -> None:
    fake_models["model"].script = [
        "1. Search the capital.",
        '<tool_call>{"name": "search", "arguments": {"query_list": ["capital Paris"]}}',
        "<answer>Paris</answer>",
    ]
    res = runner.invoke(app, ["ask", "Capital of France?", "--data-dir", str(tmp_path), "--judge-mode", "off"])
    assert res.exit_code == 0, res.output
    for text in ("1. Search the capital.", "search", "Doc 1 about capital", "answer", "Paris", "memorised", "usage"):
        assert text in res.output


@pytest.mark.parametrize("min_calls, tool_calls", [("0", 0), ("1", 1)])
def test_min_tool_calls_option(fake_models: dict[str, Any], tmp_path: Path, min_calls: str, tool_calls: int) -> None:
    """`--min-tool-calls 0` accepts an answer before any search; 1 (the default) forces one first."""
    fake_models["model"].script = ["<answer>Paris</answer>", SEARCH.format("Paris"), "<answer>Paris</answer>"]
    args = ["ask", "Capital of France?", "--json", "--data-dir", str(tmp_path), "--judge-mode", "off"]
    res = runner.invoke(app, args + ["--max-replans", "0", "--min-tool-calls", min_calls])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["answer"] == "Paris" and out["tool_calls"] == tool_calls


def test_failed_run_resumes_from_its_checkpoint(fake_models: dict[str, Any], tmp_path: Path) -> None:
    def boom(messages: Any) -> str:
        raise ConnectionError("backend went away")

    fake_models["model"].script = ["1. Plan.", boom]
    args = ["ask", "Q?", "--data-dir", str(tmp_path), "--thread", "t-2", "--judge-mode", "off", "--plan-when", "start"]
    res = runner.invoke(app, args)
    assert res.exit_code == 1 and "resume it with `mia ask --thread t-2`" in res.output
    planner_calls = len(fake_models["model"].prompts)
    fake_models["model"].script = [SEARCH.format("resumed"), "<answer>resumed</answer>"]
    resume = [
        "ask",
        "--thread",
        "t-2",
        "--data-dir",
        str(tmp_path),
        "--json",
        "--judge-mode",
        "off",
        "--plan-when",
        "start",
    ]
    res = runner.invoke(app, resume)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["answer"] == "resumed" and out["plan"] == "1. Plan."
    assert len(fake_models["model"].prompts) == planner_calls + 2  # executor x2, no reflection call; no new plan


def test_chat_keeps_one_thread(fake_models: dict[str, Any], tmp_path: Path) -> None:
    fake_models["model"].script = [
        "1.",
        SEARCH.format("one"),
        "<answer>one</answer>",
        "1.",
        SEARCH.format("two"),
        "<answer>two</answer>",
    ]
    res = runner.invoke(
        app,
        ["chat", "--data-dir", str(tmp_path), "--judge-mode", "off", "--no-memorise"],
        input="first?\nsecond?\nexit\n",
    )
    assert res.exit_code == 0, res.output
    assert "one" in res.output and "two" in res.output and res.output.count("thread ") >= 2


@pytest.mark.parametrize(
    "option, spec, needle",
    [
        ("--planner-model", "nonsense:model", "no backend named"),
        ("--executor-model", "openai:gpt-4o-mini", "OPENAI_API_KEY"),
    ],
)
def test_bad_model_spec_is_a_one_line_error(option: str, spec: str, needle: str, tmp_path: Path) -> None:
    res = runner.invoke(app, ["ask", "Q?", option, spec, "--data-dir", str(tmp_path)])
    assert res.exit_code == 2
    lines = [x for x in res.output.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error:") and needle in lines[0]


def test_bad_options(tmp_path: Path) -> None:
    res = runner.invoke(app, ["ask", "Q?", "--memory-mode", "bogus", "--data-dir", str(tmp_path)])
    assert res.exit_code == 2 and "--memory-mode" in res.output
    res = runner.invoke(app, ["ask", "--data-dir", str(tmp_path)])
    assert res.exit_code == 2 and "give a question" in res.output
    for blank in ("", "   ", "\t\n"):  # a blank question never reaches the graph
        res = runner.invoke(app, ["ask", blank, "--data-dir", str(tmp_path)])
        assert res.exit_code == 2 and "the question is empty" in res.output, res.output
    assert not (tmp_path / "memory").exists()
    res = runner.invoke(app, ["ask", "--thread", "missing", "--data-dir", str(tmp_path)])
    assert res.exit_code == 2 and "does not exist" in res.output
