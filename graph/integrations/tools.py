"""LangChain tools over MIA's memory, for any tool-calling agent (`create_agent`, a ToolNode).

`search_workflows` shows the agent the best judged workflows of similar past questions (MIA's
scoring: similarity and win rate), with their ids; `record_outcome` stores how a task went (a
workflow, judged correct or incorrect) and credits or debits the memories the agent used, so
the memory learns from the agent's own results.
"""

from __future__ import annotations

from typing import Any

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

from mia.graph.integrations.store import unwrap


class SearchWorkflowsInput(BaseModel):
    question: str = Field(description="The task or question to find past workflows for.")


class RecordOutcomeInput(BaseModel):
    question: str = Field(description="The task or question that was worked on.")
    workflow: str = Field(description="The steps taken (searches, checks), as a short numbered list.")
    correct: bool = Field(description="Whether the result was correct.")
    used_memory_ids: list[str] = Field(default_factory=list,
                                       description="Ids of the past workflows (from search_workflows) that were used.")


def memory_tools(store: Any, namespace: str = "default", *, k_pos: int = 2, k_neg: int = 2) -> list[BaseTool]:
    """[search_workflows, record_outcome] over a MiaStore or a MemoryStore, in one namespace."""
    memory = unwrap(store)

    def search_workflows(question: str) -> tuple[str, Any]:
        got = memory.retrieve(question, namespace=namespace, k_pos=k_pos, k_neg=k_neg)
        ids = ", ".join(got.ids) or "none"
        return f"{got.to_prompt_text()}\nMemory ids: {ids}", got

    def record_outcome(question: str, workflow: str, correct: bool, used_memory_ids: list[str] | None = None) -> str:
        from mia.memory import MemoryRecord

        record = memory.add(MemoryRecord(namespace=namespace, question=question, workflow=workflow,
                                         outcome="correct" if correct else "incorrect",
                                         source="langchain-tool", compression="manual"))
        credited = memory.update_stats(list(used_memory_ids or []), success=correct, namespace=namespace)
        return f"Stored workflow {record.id} ({record.outcome}); updated {credited} used memories."

    return [
        StructuredTool.from_function(
            search_workflows, name="search_workflows", args_schema=SearchWorkflowsInput,
            response_format="content_and_artifact",
            description="Find workflows that worked (and ones that failed) for similar past questions. "
                        "Call it first, before planning."),
        StructuredTool.from_function(
            record_outcome, name="record_outcome", args_schema=RecordOutcomeInput,
            description="After finishing a task, store the workflow used and whether it was correct."),
    ]
