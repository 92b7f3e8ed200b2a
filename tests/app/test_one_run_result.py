"""Issue 12, item 1: the eval runner, `mia ask --json` and the test-time learner read the graph's
output through one `RunResult`. One scripted run is answered by each of them (the same script,
fresh fakes each time); each consumer's view is recorded where it is built, and all three must
be the same result, with each consumer's own output derived from it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mia.app.cli import app
from mia.app.commands.agent import json_output
from mia.app.evaluation.records import EvalExample
from mia.app.evaluation.runner import GraphRunner, question_result
from mia.graph.builder import build_graph
from mia.graph.context import Context
from mia.graph.judge.verdict import Verdict
from mia.graph.models.defaults import DEFAULT_MODELS
from mia.graph.nodes import deps as deps_module
from mia.graph.result import RunResult, run_question
from mia.training.online import LearningSession, OnlineConfig
from mia.training.online.session import episode_from_result
from mia.training.online.trainer import MemoryOnlyTrainer
from tests.graph.fakes import FakeStore, ScriptedChatModel, make_deps, memory

QUESTION = "Capital of France?"
# the answer is in the fake search's result ("Doc 1 about <query>"), so the default reflection
# (replan only on a failure the trace shows) makes no model call
SEARCH = '<tool_call>{"name": "search", "arguments": {"query_list": ["France capital Paris"]}}</tool_call>'


def fresh_deps() -> Any:
    """Every default model spec answers from one script; a store that shows one memory."""
    model = ScriptedChatModel(script=["1. Search the capital.", SEARCH, "<answer>Paris</answer>"])
    store = FakeStore(positives=[memory("p1", "Capital of Spain?", "1. Search the capital of Spain.", "correct")])
    deps, _ = make_deps(dict.fromkeys(DEFAULT_MODELS.values(), model), store=store)
    return deps


@pytest.fixture()
def seen(monkeypatch: pytest.MonkeyPatch) -> list[RunResult]:
    """Every RunResult any consumer builds, in order."""
    built: list[RunResult] = []
    read = RunResult.from_output.__func__

    def spy(cls: type[RunResult], out: Any) -> RunResult:
        built.append(read(cls, out))
        return built[-1]

    monkeypatch.setattr(RunResult, "from_output", classmethod(spy))
    for role in ("PLANNER", "EXECUTOR", "MANAGER", "JUDGE"):
        monkeypatch.delenv(f"MIA_{role}_MODEL", raising=False)
    return built


def same_run(result: RunResult) -> RunResult:
    """Two runs of one script differ only in the trajectory's id and creation time, and in the
    wall time of their model calls (usage `ms`)."""
    usage = {role: u.model_copy(update={"ms": 0}) for role, u in result.usage.items()}
    steps_usage = {role: {**counts, "ms": 0} for role, counts in result.trajectory.usage.items()}
    trajectory = result.trajectory.model_copy(update={"id": "", "created_at": 0.0, "usage": steps_usage})
    return result.model_copy(update={"trajectory": trajectory, "usage": usage})


def test_eval_runner_cli_json_and_learner_see_the_same_run_result(
    seen: list[RunResult], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the eval runner
    context = Context.from_env(data_dir=str(tmp_path / "eval"), plan_when="start")  # the script plans first
    example = EvalExample(id="q1", question=QUESTION, answer="Paris")
    line = asyncio.run(GraphRunner(graph=build_graph(deps=fresh_deps()), context=context, setting="open")(example))
    assert len(seen) == 1
    by_eval = seen[-1]
    expected = question_result(example, by_eval, line.wall_s, "llm")
    assert line.finished_at is not None and abs(line.finished_at - expected.finished_at) < 60  # logged when answered
    assert line == expected.model_copy(update={"finished_at": line.finished_at})

    # the CLI
    monkeypatch.setattr(deps_module, "_DEFAULT", fresh_deps())
    res = CliRunner().invoke(
        app,
        ["ask", QUESTION, "--json", "--gold", "Paris", "--thread", "t-1", "--data-dir", str(tmp_path / "cli")]
        + ["--plan-when", "start"],
    )
    assert res.exit_code == 0, res.output
    assert len(seen) == 2
    by_cli = seen[-1]
    printed = json.loads(res.stdout.strip().splitlines()[-1])
    assert printed == json.loads(json.dumps(json_output(by_cli, "t-1"), default=str))
    assert RunResult.from_output(printed) == by_cli  # --json carries the whole result

    # the test-time learner
    context = Context.from_env(data_dir=str(tmp_path / "online"), plan_when="start")
    cfg = OnlineConfig(batch_questions=8)
    session = LearningSession(context, cfg, deps=fresh_deps(), trainer=MemoryOnlyTrainer(), start=False)
    state = {"question": QUESTION, "gold_answers": ["Paris"]}
    episode = session.submit(state, run_question(session.graph(), state, session.context))
    by_learner = seen[3]  # seen[2] is the --json round trip above
    rebuilt = episode_from_result(state, by_learner, cfg, context.namespace, episode.adapter_version)
    assert episode.model_dump(exclude={"id", "created_at"}) == rebuilt.model_dump(exclude={"id", "created_at"})

    # one result, and it is the run the script describes
    assert same_run(by_eval) == same_run(by_cli) == same_run(by_learner)
    assert by_eval.answer == "Paris" and by_eval.plan == "1. Search the capital." and by_eval.tool_calls == 1
    assert isinstance(by_eval.verdict, Verdict) and by_eval.verdict.outcome == "correct"
    # shown as a strategy (Context.memory_style): the other question's names are placeholders
    assert "Search the capital of Spain." in by_eval.memory_block and by_eval.used_memory_ids == ["p1"]
    assert [m.id for m in by_eval.memories] == ["p1"] and by_eval.memory_id == "mem-1"
    assert line.judge_correct is True and line.memories_used == ["p1"]
    assert printed["judgement"]["outcome"] == "correct" and printed["thread_id"] == "t-1"
    assert episode.memories == by_eval.memory_block and episode.outcome == "correct"


def test_to_output_round_trips_and_keeps_the_cli_json_keys() -> None:
    """`mia ask --json` keeps its documented keys (docs/graph.md), plus the caption used."""
    deps = fresh_deps()
    result = run_question(
        build_graph(deps=deps),
        {"question": QUESTION, "gold_answers": ["Paris"], "caption": "a map of France"},
        Context(plan_when="start"),
    )
    out = result.to_output()
    assert RunResult.from_output(out) == result and result.caption == "a map of France"
    keys = [
        "question",
        "answer",
        "plan",
        "replan",
        "judgement",
        "usage",
        "memory_id",
        "used_memory_ids",
        "memories",
        "tool_calls",
        "stop_reason",
        "warnings",
        "trajectory",
        "memory_text",
        "caption",
    ]
    assert list(out) == keys
    executor = result.usage["executor"]
    assert out["usage"]["executor"] == {
        "calls": 2,
        "input_tokens": executor.input_tokens,
        "output_tokens": executor.output_tokens,
        "cached_tokens": executor.cached_tokens,
        "ms": executor.ms,
    }
