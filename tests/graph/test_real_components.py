"""The graph over the real memory store (Chroma on disk), the real search tool over a paragraph
sandbox, the real Compressor and the real judge; only the chat models are scripted (fast)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mia.graph.builder import build_graph
from mia.graph.context import Context
from mia.graph.nodes.deps import Deps

from .fakes import ScriptedChatModel

SAMPLE = Path(__file__).parent / "data" / "hotpotqa_sample.json"


def test_memory_store_tools_judge_for_real(tmp_path: Path) -> None:
    record = json.loads(SAMPLE.read_text())[0]
    q, gold = record["question"], record["answer"]
    scripts: dict[str, list[Any]] = {
        "planner": ["1. Search both magazines.\n2. Compare founding years.", "no", "1. Search again.", "no"],
        "executor": [
            '<tool_call>{"name": "search", "arguments": {"query_list": ["Home Monthly magazine"]}}</tool_call>',
            f"<answer>{gold}</answer>",
            "<answer>Mirabella</answer>",
        ],
        "manager": [
            "1. Search the two magazines (names -> founding years)\n2. Compare the years (years -> earlier one)"
        ],
        "judge": ["A", "B"],
    }
    models = {role: ScriptedChatModel(script=list(s)) for role, s in scripts.items()}
    deps = Deps(model_factory=lambda spec, t, n: models[spec.split(":")[1]])
    ctx = Context(
        planner_model="x:planner",
        executor_model="x:executor",
        manager_model="x:manager",
        judge_model="x:judge",
        data_dir=str(tmp_path),
        namespace="t",
        max_tool_calls=2,
        replan_when="planner",
        plan_when="start",
    )  # the scripts hold the plan and the planner's yes/no reflection turns
    graph = build_graph(deps=deps)

    first = graph.invoke({"question": q, "gold_answers": [gold], "paragraphs": record["paragraphs"]}, context=ctx)
    obs = [s for s in first["trajectory"]["steps"] if s["kind"] == "observation"][0]["content"]
    assert "Home Monthly" in obs  # the real hybrid search over the sandbox paragraphs
    assert first["judgement"]["outcome"] == "correct" and first["memory_id"]

    second = graph.invoke(
        {"question": q.replace("published first", "older"), "gold_answers": [gold], "paragraphs": record["paragraphs"]},
        context=ctx,
    )
    assert second["used_memory_ids"] == [first["memory_id"]]
    plan_prompt = models["planner"].prompts[2][1].content
    assert "Compare the years" in plan_prompt and "Successful strategies (1)" in plan_prompt
    assert second["judgement"]["outcome"] == "incorrect"

    store = deps.memory_store(ctx)
    used = store.get(first["memory_id"], namespace="t")
    assert used.usage_count == 1 and used.success_count == 0  # credited with the second episode's failure
    assert len((tmp_path / "memory" / "trajectories.jsonl").read_text().splitlines()) == 2

    rag = graph.invoke(
        {"question": q, "paragraphs": record["paragraphs"]},
        context=Context(**{**ctx.__dict__, "memory_mode": "trajectory-rag", "judge_mode": "off"}),
    )
    assert rag["answer"] == "fallback"  # the executor's script is used up
    assert q in models["executor"].prompts[-1][1].content  # past raw trajectories were pasted in
    shown = {m["question"] for m in rag["memories"]}  # and the output names them (real Chroma similarity)
    assert q in shown and all(0.0 < m["similarity"] <= 1.0001 for m in rag["memories"])
