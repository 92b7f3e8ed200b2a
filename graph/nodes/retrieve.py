"""retrieve_memory: fetches what the memory mode needs: judged workflows for the planner (mia) or
raw past trajectories for the executor (trajectory-rag). An image question is matched by its
question and its caption (weights from the context, MIA: 0.8 / 0.2). `fresh_question_state` is
the reset that the first node (prepare) applies; `close_question` ends every run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import RemoveMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from mia.graph.context import ROLES, Context
from mia.graph.nodes.deps import Deps
from mia.graph.prompts.builder import render_memories, render_trajectories
from mia.graph.state import State, given
from mia.memory.errors import EmbeddingModelMissingError


def fresh_question_state(state: State | None = None) -> dict[str, Any]:
    """Updates that reset every per-question channel. This question's inputs come from the run's
    input alone (ephemeral channels, see `InputState`); a plan still equal to the one the thread
    last used is left over, not a preset for this question, even when that run raised midway: the
    planner and `prepare` record every plan they use in `closed_plan` as they go."""
    current: Mapping[str, Any] = state or {}
    plan = current.get("plan")
    stale_plan = bool(plan) and plan == current.get("closed_plan")
    return {
        "plan": None if stale_plan else plan,
        "closed_plan": None if stale_plan else plan,
        "inputs": {
            "gold_answers": current.get("gold_answers"),
            "paragraphs": current.get("paragraphs"),
            "caption": current.get("caption"),
            "image": current.get("image"),
        },
        "messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES)],
        "steps": Overwrite([]),
        "usage": Overwrite({role: {"calls": 0, "input_tokens": 0, "output_tokens": 0} for role in ROLES}),
        "memory_text": "",
        "used_memory_ids": [],
        "memories": [],
        "planner_messages": [],
        "replan": "",
        "pending_tool": None,
        "tool_calls": 0,
        "format_retries": 0,
        "replans": 0,
        "reflections": 0,
        "evidence_rounds": 0,
        "evidence_queries": [],
        "last_turn": "",
        "answer": "",
        "stop_reason": "",
        "trajectory": {},
        "judgement": None,
        "memory_id": None,
        "warnings": Overwrite([]),
    }


def close_question(state: State) -> dict[str, Any]:
    """The last node of every run: drops this question's inputs (an image need not stay in the
    thread's checkpoints) and records the plan it ended with."""
    return {"inputs": {}, "closed_plan": state.get("plan")}


def make_retrieve_memory(deps: Deps):
    def retrieve_memory(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = Context.coerce(runtime.context)
        update: dict[str, Any] = {}
        if ctx.memory_mode == "none":
            return update
        caption = (given(state, "caption") or "").strip()
        try:
            store, lost = deps.usable_memory_store(ctx)
            if lost:
                update["warnings"] = [lost]
            if ctx.memory_mode == "mia":
                got = store.retrieve(
                    state["question"],
                    namespace=ctx.namespace,
                    k_pos=ctx.k_pos,
                    k_neg=ctx.k_neg,
                    min_similarity=ctx.min_similarity,
                    caption=caption,  # "": the question cosine alone
                    caption_weight=ctx.caption_weight,
                )
                update["memory_text"] = render_memories(got, ctx.memory_style)
                # credited only once a planner is shown them: at once, or with a late plan (plan_when "failure")
                update["used_memory_ids"] = list(got.ids) if ctx.plan_when == "start" else []
                update["memories"] = [m.shown() for m in list(got.positives) + list(got.negatives)]
            else:
                found = store.search_trajectories(
                    state["question"], ctx.namespace, ctx.k_pos + ctx.k_neg, min_similarity=ctx.min_similarity
                )
                update["memory_text"] = render_trajectories(found, max_words=300)
                # shown, not credited: used_memory_ids stays for the workflows whose stats a verdict updates
                update["memories"] = [t.shown() for t in found]
        except EmbeddingModelMissingError:
            raise  # memory cannot work in this install at all: loudly off, before any model is asked
        except Exception as exc:  # a broken store must not lose the question
            update["warnings"] = [*update.get("warnings", []), f"memory retrieval failed: {type(exc).__name__}: {exc}"]
        return update

    return retrieve_memory
