"""LangChain tools over MIA's memory, for any tool-calling agent (`create_agent`, a ToolNode).

`search_workflows` shows the agent the best judged workflows of similar past questions (MIA's
scoring: similarity and win rate), with their ids; `record_outcome` stores how a task went (a
workflow, judged correct or incorrect) and credits or debits the memories the agent used, so
the memory learns from the agent's own results; `manage_workflow` creates, updates or deletes one
workflow by id (the agent corrects its own memory).

The store and the namespace are resolved when a tool runs, not when it is made, as langmem's tools
do: with no store given, the graph's store (`compile(store=MiaStore.open(...))`, or the one the
LangGraph server provides) is read with `get_store()`; a namespace may be a template, `"users.{user_id}"`
or `("users", "{user_id}")`, filled from the run's `configurable`, so one agent serves many users
and each sees only their own memories. A mistake of the agent's (an unknown id, a missing field) comes
back to it as the tool's reply; a mistake of the app's (no store, a template key the run's config
lacks) raises.
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field

from mia.graph.integrations.namespaces import to_mia
from mia.graph.integrations.store import unwrap

NamespaceTemplate = str | tuple[str, ...]


class SearchWorkflowsInput(BaseModel):
    question: str = Field(description="The task or question to find past workflows for.")


class RecordOutcomeInput(BaseModel):
    question: str = Field(description="The task or question that was worked on.")
    workflow: str = Field(description="The steps taken (searches, checks), as a short numbered list.")
    correct: bool = Field(description="Whether the result was correct.")
    used_memory_ids: list[str] = Field(
        default_factory=list, description="Ids of the past workflows (from search_workflows) that were used."
    )


class ManageWorkflowInput(BaseModel):
    action: Literal["create", "update", "delete"] = Field(description="What to do with the workflow.")
    id: str | None = Field(
        default=None, description="The workflow's id (from search_workflows); required to update or delete."
    )
    question: str | None = Field(
        default=None, description="The task the workflow is for (create; update to change it)."
    )
    workflow: str | None = Field(
        default=None, description="The steps, as a short numbered list (create; update to change them)."
    )
    correct: bool | None = Field(
        default=None, description="Whether the workflow led to a right answer (create; update to change it)."
    )


def fill_namespace(template: NamespaceTemplate, config: RunnableConfig | None) -> str:
    """The MIA namespace of a template filled from the run's `configurable` ("{user_id}" labels)."""
    configurable = dict((config or {}).get("configurable") or {})
    labels = (template,) if isinstance(template, str) else tuple(template)
    try:
        filled = tuple(label.format(**configurable) for label in labels)
    except KeyError as err:
        raise ValueError(
            f"the memory namespace {template!r} needs {err.args[0]!r} in the run's config['configurable']"
        ) from None
    return filled[0] if isinstance(template, str) else to_mia(filled)


def _memory_of(store: Any) -> Any:
    """The MemoryStore behind `store`, or the graph's store at run time when `store` is None."""
    if store is None:
        from langgraph.config import get_store

        try:
            store = get_store()
        except (RuntimeError, KeyError):  # outside a runnable context / outside a graph run
            store = None
        if store is None:
            raise RuntimeError(
                "memory_tools() was made without a store and this run has none: compile the "
                "graph with store=MiaStore.open(...) or pass the store to memory_tools"
            )
    memory = unwrap(store)
    if not hasattr(memory, "retrieve"):
        raise TypeError(f"memory_tools needs MIA's memory (a MiaStore or a MemoryStore), not {type(store).__name__}")
    return memory


def memory_tools(
    store: Any = None, namespace: NamespaceTemplate = "default", *, k_pos: int = 2, k_neg: int = 2
) -> list[BaseTool]:
    """[search_workflows, record_outcome, manage_workflow] over a MiaStore or a MemoryStore (None:
    the graph's store when the tool runs), in one namespace or a template filled per run."""
    if not isinstance(namespace, (str, tuple)) or not namespace:
        raise ValueError(
            f"namespace is a name, a template such as 'users.{{user_id}}' or a tuple of labels, not {namespace!r}"
        )

    def where(config: RunnableConfig) -> tuple[Any, str]:
        return _memory_of(store), fill_namespace(namespace, config)

    def search_workflows(question: str, config: RunnableConfig) -> tuple[str, Any]:
        memory, ns = where(config)
        got = memory.retrieve(question, namespace=ns, k_pos=k_pos, k_neg=k_neg)
        ids = ", ".join(got.ids) or "none"
        return f"{got.to_prompt_text()}\nMemory ids: {ids}", got

    def record_outcome(
        question: str, workflow: str, correct: bool, config: RunnableConfig, used_memory_ids: list[str] | None = None
    ) -> str:
        from mia.memory import MemoryRecord

        memory, ns = where(config)
        record = memory.add(
            MemoryRecord(
                namespace=ns,
                question=question,
                workflow=workflow,
                outcome="correct" if correct else "incorrect",
                source="langchain-tool",
                compression="manual",
            )
        )
        credited = memory.update_stats(list(used_memory_ids or []), success=correct, namespace=ns)
        return f"Stored workflow {record.id} ({record.outcome}); updated {credited} used memories."

    def manage_workflow(
        action: str,
        config: RunnableConfig,
        id: str | None = None,
        question: str | None = None,
        workflow: str | None = None,
        correct: bool | None = None,
    ) -> str:
        from mia.memory import MemoryRecord

        memory, ns = where(config)
        outcome = None if correct is None else ("correct" if correct else "incorrect")
        if action == "create":
            if not (question and workflow and outcome):
                raise ToolException("create needs a question, a workflow and correct (true or false)")
            record = memory.add(
                MemoryRecord(
                    namespace=ns,
                    question=question,
                    workflow=workflow,
                    outcome=outcome,
                    source="langchain-tool",
                    compression="manual",
                )
            )
            return f"Created workflow {record.id} ({record.outcome})."
        old = memory.get(id, namespace=ns) if id else None
        if old is None:
            raise ToolException(f"{action} needs the id of a workflow in this namespace; {id!r} is not one")
        if action == "delete":
            memory.delete([old.id], namespace=ns)
            return f"Deleted workflow {old.id}."
        changes = {k: v for k, v in (("question", question), ("workflow", workflow), ("outcome", outcome)) if v}
        if not changes:
            raise ToolException("update needs a new question, workflow or correct")
        new = memory.replace(MemoryRecord.model_validate({**old.model_dump(), **changes}))
        return f"Updated workflow {new.id} ({', '.join(sorted(changes))})."

    return [
        StructuredTool.from_function(
            search_workflows,
            name="search_workflows",
            args_schema=SearchWorkflowsInput,
            response_format="content_and_artifact",
            handle_tool_error=True,
            description="Find workflows that worked (and ones that failed) for similar past questions. "
            "Call it first, before planning.",
        ),
        StructuredTool.from_function(
            record_outcome,
            name="record_outcome",
            args_schema=RecordOutcomeInput,
            handle_tool_error=True,
            description="After finishing a task, store the workflow used and whether it was correct.",
        ),
        StructuredTool.from_function(
            manage_workflow,
            name="manage_workflow",
            args_schema=ManageWorkflowInput,
            handle_tool_error=True,
            description="Create, update or delete one stored workflow by id: correct a workflow that misled you, "
            "or delete one that is wrong.",
        ),
    ]
