"""plan: the planner writes a fact-free, step-by-step plan from the question and the retrieved
workflows (reference 3.2). A preset plan in the input (training) skips the model call, but the
planner conversation is still built so that reflection and replanning can follow."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from mia.graph.context import Context
from mia.graph.nodes.calls import invoke, text_of
from mia.graph.nodes.deps import Deps
from mia.graph.prompts.builder import planner_messages
from mia.graph.protocol import PLAN_STOP, served_plan
from mia.graph.state import State, given


def to_messages(conversation: list[dict[str, str]]) -> list[BaseMessage]:
    """Planner conversation (kept in state as plain dicts) to chat messages."""
    kinds = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}
    return [kinds[m["role"]](content=m["content"]) for m in conversation]


def make_plan(deps: Deps):
    def plan(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = Context.coerce(runtime.context)
        conversation = planner_messages(
            state["question"],
            state.get("memory_text") or "",
            caption=given(state, "caption") or "",
            style=ctx.plan_style,
        )
        preset = (state.get("plan") or "").strip()
        if preset:
            conversation.append({"role": "assistant", "content": preset})
            return {"plan": preset, "planner_messages": conversation}
        model = deps.chat_model(ctx, "planner")
        reply, usage = invoke(model, to_messages(conversation), "planner", stop=PLAN_STOP)
        raw = text_of(reply)
        text = served_plan(raw, state["question"])
        conversation.append({"role": "assistant", "content": text})
        update: dict[str, Any] = {"plan": text, "closed_plan": text, "planner_messages": conversation, "usage": usage}
        if not text:
            update["warnings"] = ["the planner returned an empty plan"]
        return update

    return plan
