"""The MIA loop over a real MemoryStore on the in-memory NumPy index (no Chroma): what one
question memorises, the next similar question retrieves, and its use is credited."""

from __future__ import annotations

from typing import Any

import pytest

from mia.graph.builder import build_graph, recursion_limit
from mia.memory import Compressor, MemoryStore

from .fakes import ScriptedChatModel, make_deps, fake_context

CALL = '<tool_call>{{"name": "search", "arguments": {{"query_list": ["{q}"]}}}}</tool_call>'
WORKFLOW = "1. Search the play's author (play title -> author)\n2. Answer with the author (author -> answer)"


@pytest.fixture()
def store():
    from mia.memory.embeddings import default_embedder

    st = MemoryStore.in_memory(embedder=default_embedder())
    yield st
    st.close()


def test_a_memorised_workflow_is_retrieved_by_the_next_question(store: MemoryStore) -> None:
    models = {
        "fake:planner": ScriptedChatModel(script=["1. Search for the author.", "no"] * 2),
        "fake:executor": ScriptedChatModel(
            script=[
                CALL.format(q="Hamlet author"),
                "<answer>Shakespeare</answer>",
                CALL.format(q="Macbeth author"),
                "<answer>Shakespeare</answer>",
            ]
        ),
        "fake:manager": ScriptedChatModel(script=[WORKFLOW, WORKFLOW]),
        "fake:judge": ScriptedChatModel(fallback="A"),
    }
    deps, _ = make_deps(models, store=store, compressor_factory=Compressor)
    context = fake_context(min_tool_calls=0, plan_when="start")  # memory reaches the plan written first
    graph = build_graph(deps=deps)
    config: Any = {"recursion_limit": recursion_limit(context)}

    first = graph.invoke(
        {"question": "Who wrote Hamlet?", "gold_answers": ["Shakespeare"]}, context=context, config=config
    )
    assert first["used_memory_ids"] == [] and first["memory_id"]
    stored = store.get(first["memory_id"])
    assert stored is not None and stored.outcome == "correct" and stored.workflow.startswith("1. Search the play")

    second = graph.invoke(
        {"question": "Who wrote the play Hamlet?", "gold_answers": ["Shakespeare"]}, context=context, config=config
    )
    assert second["used_memory_ids"] == [first["memory_id"]]
    assert "Search the play's author" in models["fake:planner"].prompts[2][1].content  # the second plan's prompt
    assert (store.get(first["memory_id"]).usage_count, store.get(first["memory_id"]).success_count) == (1, 1)
    assert store.count() == 2 and len(store.search_trajectories("Hamlet", "default", k=5)) == 2
