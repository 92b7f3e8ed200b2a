"""The planner and executor prompts that training shows its policies, built from the graph's
prompt data (graph/prompts/*.toml), so that a policy is trained on the very prompt it sees at
inference. Only the glue (which template, which fields) lives here.
"""

from __future__ import annotations

from typing import Any

from mia.graph.prompts import caption_line, load_prompts, render

def no_memories() -> str:
    """What the graph's plan node shows when memory holds nothing (a cold start)."""
    return render("memory", "header") + "\nNone found."


def search_tool_lines() -> str:
    """The search tool's signature line, rendered by the graph's own executor node."""
    from mia.graph.nodes.execute import tool_lines
    from mia.graph.tools.search_tool import SearchTool

    return tool_lines([SearchTool.model_construct()])


def render_memories(retrieved: Any) -> str:
    """Retrieved memories (a mia.memory.Retrieved, or ready text) as the graph's plan node shows them."""
    if retrieved is None:
        return ""
    if isinstance(retrieved, str):
        return retrieved.strip()
    from mia.graph.nodes.retrieve import render_memories as graph_render

    return graph_render(retrieved)


def planner_messages(question: str, memories: str = "", max_words: int | None = None,
                     caption: str = "") -> list[dict[str, str]]:
    """The planner's conversational prompt for one question (memories already rendered), exactly
    as the graph's plan node builds it; `max_words` defaults to the graph's plan length."""
    if max_words is None:
        from mia.graph.nodes.plan import PLAN_WORDS

        max_words = PLAN_WORDS
    return [
        {"role": "system", "content": render("planner", "system")},
        {"role": "user", "content": render("planner", "plan", memories=memories or no_memories(),
                                           max_words=max_words, question=question,
                                           caption_line=caption_line(caption))},
    ]


def executor_messages(question: str, plan: str, caption: str = "") -> list[dict[str, str]]:
    """The executor's conversational prompt: the text tool protocol, then the question and plan."""
    tools = render("executor", "tools", tool_lines=search_tool_lines())
    plan_block = render("executor", "plan_block", plan=plan.strip()) + "\n" if plan.strip() else ""
    return [
        {"role": "system", "content": render("executor", "system", tools=tools)},
        {"role": "user", "content": render("executor", "question", question=question, plan_block=plan_block,
                                           memory_block="", caption_line=caption_line(caption))},
    ]


def observation_message(observation: str) -> dict[str, str]:
    """A tool result, sent back as a user turn in clean <tool_response> tags."""
    return {"role": "user", "content": render("executor", "observation", result=observation)}


def force_answer_message() -> dict[str, str]:
    """The user turn that ends the tool budget and asks for the final answer."""
    reason = load_prompts("executor")["reason_budget"].strip()
    return {"role": "user", "content": render("executor", "force_answer", reason=reason)}
