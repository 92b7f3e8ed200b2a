"""The planner and executor prompts that training shows its policies: the graph's own prompt
builder (`mia.graph.prompts.builder`), so that a policy is trained on the very prompt it is
served. Only the choice of tools (the sandbox search) lives here.
"""

from __future__ import annotations

from typing import Any

from mia.graph.prompts import builder


def no_memories() -> str:
    """What the graph's plan node shows when memory holds nothing (a cold start)."""
    return builder.render_memories(None)


def _search_tool() -> Any:
    from mia.graph.tools.search_tool import SearchTool

    return SearchTool.model_construct()  # type: ignore[call-arg]  # schema only: never searches, needs no corpus


def render_memories(retrieved: Any) -> str:
    """Retrieved memories (a mia.memory.Retrieved, or ready text) as the graph's plan node shows them."""
    if retrieved is None:
        return ""
    if isinstance(retrieved, str):
        return retrieved.strip()
    return builder.render_memories(retrieved)


def planner_messages(
    question: str, memories: str = "", max_words: int | None = None, caption: str = "", style: str = builder.PLAN_STYLE
) -> list[dict[str, str]]:
    """The planner's prompt for one question (memories already rendered), as the plan node builds it."""
    return builder.planner_messages(
        question, memories, builder.PLAN_WORDS if max_words is None else max_words, caption=caption, style=style
    )


def executor_messages(question: str, plan: str, caption: str = "") -> list[dict[str, str]]:
    """The executor's prompt in the text tool protocol with the sandbox search tool."""
    return builder.executor_messages(question, plan, [_search_tool()], native=False, caption=caption)


def observation_message(observation: str) -> dict[str, str]:
    """A tool result, sent back as a user turn inside an escaped <tool_response> fence."""
    return {"role": "user", "content": builder.observation(observation)}


def force_answer_message() -> dict[str, str]:
    """The user turn that ends the tool budget and asks for the final answer."""
    return {"role": "user", "content": builder.force_answer("budget")}


def replan_message(replan: str) -> dict[str, str]:
    """The user turn that hands the executor a revised plan (the graph's replan node sends the same)."""
    return {"role": "user", "content": builder.replan_message(replan)}


def late_plan_message(plan: str, failure: str) -> dict[str, str]:
    """The user turn that holds back a failed answer and hands the executor the plan written after
    it (plan_when "failure"; the graph's replan node sends the same)."""
    return {"role": "user", "content": builder.late_plan_message(plan, failure)}


def replan_conversation(
    question: str, plan: str, trace: str, memories: str = "", max_words: int | None = None
) -> list[dict[str, str]]:
    """The planner's conversation that asks for a replan after a wrong answer: the plan prompt, the
    plan, the reflection prompt with the trace, a forced "yes", and the replan prompt (the paper's
    `/replan_train`, reference 5.1; the graph's reflect and replan nodes use the same prompts)."""
    return [
        *planner_messages(question, memories, max_words=max_words),
        {"role": "assistant", "content": plan},
        {"role": "user", "content": builder.reflection(trace)},
        {"role": "assistant", "content": "yes"},
        {"role": "user", "content": builder.replan_request(question)},
    ]
