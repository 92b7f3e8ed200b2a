"""retrieve_memory: fetches what the memory mode needs: judged workflows for the planner (mia) or
raw past trajectories for the executor (trajectory-rag). An image question is matched by its
question and its caption (weights from the context, MIA: 0.8 / 0.2). `fresh_question_state` is
the reset that the first node (prepare) applies."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import RemoveMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.runtime import Runtime

from mia.graph.context import ROLES, Context
from mia.graph.nodes.deps import Deps
from mia.graph.prompts import caption_line, load_prompts, render
from mia.graph.protocol import truncate_words
from mia.graph.state import RESET, State


def fresh_question_state() -> dict[str, Any]:
    """Updates that reset every per-question channel (inputs are left alone)."""
    return {
        "messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES)],
        "steps": [RESET],
        "usage": {RESET: True, **{role: {"calls": 0, "input_tokens": 0, "output_tokens": 0} for role in ROLES}},
        "memory_text": "", "used_memory_ids": [], "memories": [], "planner_messages": [], "replan": "",
        "pending_tool": None, "tool_calls": 0, "format_retries": 0, "replans": 0, "reflections": 0,
        "last_turn": "", "answer": "", "stop_reason": "", "trajectory": {},
        "judgement": None, "memory_id": None, "warnings": [RESET],
    }


def render_memories(retrieved: Any) -> str:
    """Positive and negative workflows as separate sections (reference 2.7)."""
    p = load_prompts("memory")
    lines = [p["header"]]
    for title, items in ((p["positives"], retrieved.positives), (p["negatives"], retrieved.negatives)):
        lines.append(title.format(n=len(items)))
        if not items:
            lines.append(p["none_found"])
        for i, scored in enumerate(items, 1):
            rec = getattr(scored, "record", scored)
            caption = (getattr(rec, "caption", "") or "").strip()
            lines.append(render(
                "memory", "item", i=i, modality="image-text" if caption else "text-only",
                judgement=getattr(rec, "outcome", "unknown"), question=rec.question.strip(),
                caption_line=caption_line(caption),
                workflow=(getattr(rec, "workflow", "") or "").strip()))
    return "\n".join(lines)


def summarise(scored: Any) -> dict[str, Any]:
    """A short, JSON-able view of one used memory (for the CLI and the output)."""
    rec = getattr(scored, "record", scored)
    return {"id": rec.id, "outcome": str(getattr(rec, "outcome", "unknown")), "question": rec.question,
            "score": round(float(getattr(scored, "score", 0.0) or 0.0), 4)}


def render_trajectories(found: Any, max_words: int) -> str:
    """Raw past trajectories for the trajectory-rag baseline (each cut to max_words)."""
    items = []
    for i, item in enumerate(found or [], 1):
        traj = item[0] if isinstance(item, tuple) else getattr(item, "trajectory", item)
        trace = traj.to_trace_text(max_words_per_observation=64) if hasattr(traj, "to_trace_text") else str(traj)
        items.append(render("memory", "trajectory_item", i=i, question=getattr(traj, "question", ""),
                            judgement=getattr(traj, "outcome", "unknown"), trace=truncate_words(trace, max_words)))
    return "\n".join(items)


def make_retrieve_memory(deps: Deps):
    def retrieve_memory(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = Context.coerce(runtime.context)
        update: dict[str, Any] = {}
        if ctx.memory_mode == "none":
            return update
        caption = (state.get("caption") or "").strip()
        try:
            store = deps.memory_store(ctx)
            if ctx.memory_mode == "mia":
                extra = {"caption": caption, "caption_weight": ctx.caption_weight} if caption else {}
                got = store.retrieve(state["question"], namespace=ctx.namespace, k_pos=ctx.k_pos, k_neg=ctx.k_neg,
                                     **extra)
                update["memory_text"] = render_memories(got)
                update["used_memory_ids"] = list(got.ids)
                update["memories"] = [summarise(m) for m in list(got.positives) + list(got.negatives)]
            else:
                found = store.search_trajectories(state["question"], ctx.namespace, ctx.k_pos + ctx.k_neg)
                update["memory_text"] = render_trajectories(found, max_words=300)
        except Exception as exc:  # a broken store must not lose the question
            update["warnings"] = [f"memory retrieval failed: {type(exc).__name__}: {exc}"]
        return update

    return retrieve_memory
