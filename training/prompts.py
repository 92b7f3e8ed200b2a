"""The planner and executor prompts that training shows its policies, built from the graph's
prompt data (graph/prompts/*.toml), so that a policy is trained on the very prompt it sees at
inference. Only the glue (which template, which fields) lives here.
"""

from __future__ import annotations

from typing import Any

from mia.graph.prompts import load_prompts, render

#: Shown to the planner when memory holds nothing relevant (a cold start).
NO_MEMORIES = "(No past workflows yet.)"
#: The one tool of the sandbox setting, as the executor's system prompt lists it.
SEARCH_TOOL_LINE = (
    '- search: search the documents. Arguments: {"query_list": ["query", ...]}. '
    "Returns the best matching passages for each query."
)


def render_memories(retrieved: Any) -> str:
    """Render retrieved memories (a mia.memory.Retrieved, or ready text) for the planner prompt."""
    if retrieved is None:
        return ""
    if isinstance(retrieved, str):
        return retrieved.strip()
    lines = []
    for label, items in (("correct", getattr(retrieved, "positives", [])),
                         ("incorrect", getattr(retrieved, "negatives", []))):
        for item in items:
            record = getattr(item, "record", item)
            text = next((getattr(record, a) for a in ("workflow", "text", "content")
                         if isinstance(getattr(record, a, None), str)), str(record))
            question = getattr(record, "question", "")
            lines.append(f"Past question ({label}): {question}\nWorkflow: {text}".strip())
    return "\n\n".join(lines)


def planner_messages(question: str, memories: str = "", max_words: int = 120) -> list[dict[str, str]]:
    """The planner's conversational prompt for one question (memories already rendered)."""
    return [
        {"role": "system", "content": load_prompts("planner")["system"].strip()},
        {"role": "user", "content": render("planner", "plan", memories=memories or NO_MEMORIES,
                                           max_words=max_words, question=question)},
    ]


def executor_messages(question: str, plan: str) -> list[dict[str, str]]:
    """The executor's conversational prompt: the text tool protocol, then the question and plan."""
    tools = render("executor", "tools", tool_lines=SEARCH_TOOL_LINE)
    plan_block = render("executor", "plan_block", plan=plan.strip()) + "\n" if plan.strip() else ""
    return [
        {"role": "system", "content": render("executor", "system", tools=tools)},
        {"role": "user", "content": render("executor", "question", question=question, plan_block=plan_block,
                                           memory_block="")},
    ]


def observation_message(observation: str) -> dict[str, str]:
    """A tool result, sent back as a user turn in clean <tool_response> tags."""
    return {"role": "user", "content": render("executor", "observation", result=observation)}


def force_answer_message() -> dict[str, str]:
    """The user turn that ends the tool budget and asks for the final answer."""
    reason = load_prompts("executor")["reason_budget"].strip()
    return {"role": "user", "content": render("executor", "force_answer", reason=reason)}
