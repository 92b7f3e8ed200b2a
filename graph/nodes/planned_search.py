"""The plan's searches, run by the graph before the executor's first turn (`Context.plan_searches`
"first").

Why: Qwen-1.5B makes one search and answers. Handed a hop plan it searched the plan's first step
only: "Which film has the director born earlier, Life Is Hot In Cracktown or Between Maybes?" got
one search for the first film's director and the answer "Buddy Giovinazzo", where plain ReAct
searched both films (results/ladder-tune/2wiki/default-v1: 3 of the first 17 right, plain ReAct 7).
So the graph makes the searches the plan names: the question itself first (what plain ReAct
searches, each query with the whole result budget), then the plan's concrete queries in one call.
Each is a tool call of the budget, written into the history as the executor's own turn, so the
executor goes on from the evidence (and fills any #N hop itself) and the trace reads as usual.
"""

from __future__ import annotations

import uuid
from typing import Any

from langchain_core.messages import AIMessage

from mia.graph.context import Context
from mia.graph.protocol import plan_queries, render_call
from mia.graph.state import State

PLANNED = "planned"
"""The content of a tool_call step the graph made from the plan (an executor's call has none)."""
EVIDENCE = "evidence"
"""The content of a tool_call step the graph made for an evidence round (mia.graph.nodes.reflect)."""
MAX_PLAN_QUERIES = 3
"""Queries of the plan's call: the result budget is shared among them (graph/tools/formatting.py)."""


def planned_calls(question: str, plan: str) -> list[list[str]]:
    """The graph's searches for this plan: the question, then the plan's concrete queries."""
    rest = plan_queries(plan, question)[:MAX_PLAN_QUERIES]
    return [[question.strip()], *([rest] if rest else [])]


def next_planned_call(state: State, ctx: Context, tools: list[Any]) -> list[str] | None:
    """The queries of the next search the graph makes itself, or None: the executor's turn."""
    plan = state.get("plan") or ""
    if ctx.plan_searches != "first" or not plan.strip() or "search" not in {t.name for t in tools}:
        return None
    made = [s for s in state.get("steps") or [] if s.get("kind") == "tool_call"]
    if any(s.get("content") != PLANNED for s in made):  # the executor has taken over
        return None
    calls = planned_calls(state["question"], plan)
    return calls[len(made)] if len(made) < len(calls) else None


def planned_turn(queries: list[str], native: bool, content: str = PLANNED) -> dict[str, Any]:
    """The update of an execute step that makes a search the graph chose (the plan's, or the
    unread names of an evidence round: `content` says which): the call in the history as the
    executor's own turn (a native tool call, or the text protocol's <tool_call>), and pending."""
    args = {"query_list": queries}
    call_id = f"call_{uuid.uuid4().hex[:24]}" if native else None
    if native:
        message = AIMessage(content="", tool_calls=[{"name": "search", "args": args, "id": call_id}])
    else:
        message = AIMessage(content=render_call("search", args))
    return {
        "messages": [message],
        "steps": [{"kind": "tool_call", "content": content, "tool": "search", "args": args}],
        "last_turn": "tool_call",
        "pending_tool": {"name": "search", "args": args, "id": call_id},
    }


__all__ = ["PLANNED", "EVIDENCE", "MAX_PLAN_QUERIES", "planned_calls", "next_planned_call", "planned_turn"]
