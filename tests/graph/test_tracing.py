"""Every model call carries its role as a tag and as metadata (what LangSmith filters on)."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler

from mia.graph.builder import build_graph, recursion_limit

from .fakes import make_deps
from .test_graph_logic import CALL, ctx, models


class Calls(BaseCallbackHandler):
    """Records the tags and metadata of every chat-model call."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, list[str], dict[str, Any]]] = []

    def on_chat_model_start(
        self,
        serialized: Any,
        messages: Any,
        *,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self.seen.append(((metadata or {}).get("ls_model_type", ""), list(tags or []), dict(metadata or {})))


def script() -> dict[str, Any]:
    return models(
        planner=["1. Search the author.", "no"],
        executor=[CALL.format(q="Hamlet author"), "<answer>Shakespeare</answer>"],
    )


def roles(calls: Calls) -> list[str]:
    return [meta.get("role", "?") for _, _, meta in calls.seen]


def test_model_calls_are_tagged_with_their_role() -> None:
    deps, _ = make_deps(script())
    calls = Calls()
    context = ctx()
    out = build_graph(deps=deps).invoke(
        {"question": "Who wrote Hamlet?", "gold_answers": ["Shakespeare"]},
        context=context,
        config={"callbacks": [calls], "tags": ["mine"], "recursion_limit": recursion_limit(context)},
    )
    assert out["answer"] == "Shakespeare"
    assert roles(calls) == ["planner", "executor", "executor", "planner", "judge"]
    for _, tags, meta in calls.seen:
        assert f"role:{meta['role']}" in tags and "mine" in tags  # the caller's tags are kept
        assert [t for t in tags if t.startswith("role:")] == [f"role:{meta['role']}"]


def test_async_runs_are_tagged_too() -> None:
    deps, _ = make_deps(script())
    calls = Calls()
    context = ctx(judge_mode="off")
    graph = build_graph(deps=deps)
    asyncio.run(
        graph.ainvoke(
            {"question": "Who wrote Hamlet?"},
            context=context,
            config={"callbacks": [calls], "recursion_limit": recursion_limit(context)},
        )
    )
    assert roles(calls) == ["planner", "executor", "executor", "planner"]
