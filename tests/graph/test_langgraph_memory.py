"""MIA's memory from other apps: the BaseStore, the tools and the retriever, on a real on-disk
Chroma store with the real MiniLM embedder, used from a plain StateGraph and from create_agent."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from typing_extensions import TypedDict

from mia.graph.integrations import MiaStore, MiaWorkflowRetriever, memory_tools

from .fakes import ScriptedChatModel

AUTHOR = ("Who wrote the play Hamlet?", "1. Search 'Hamlet play author'. 2. Read the top hit's author.")
RIVER = ("Which river flows through Vienna?", "1. Search 'Vienna river'. 2. Answer the river named first.")
FAILED = ("Who wrote Macbeth?", "1. Guessed from memory without searching.")


@pytest.fixture(scope="module")
def embedder() -> Any:
    from mia.memory.embeddings import default_embedder

    return default_embedder()


@pytest.fixture()
def store(tmp_path, embedder) -> Any:
    with MiaStore.open(tmp_path / "memory", embedder=embedder) as st:
        st.put(("default",), "m-author", {"question": AUTHOR[0], "workflow": AUTHOR[1], "outcome": "correct"})
        st.put(("default",), "m-river", {"question": RIVER[0], "workflow": RIVER[1], "outcome": "correct"})
        st.put(("default",), "m-failed", {"question": FAILED[0], "workflow": FAILED[1], "outcome": "incorrect"})
        yield st


def test_base_store_get_put_delete_and_namespaces(store: MiaStore) -> None:
    assert isinstance(store, BaseStore)
    item = store.get(("default",), "m-author")
    assert item is not None and item.key == "m-author" and item.namespace == ("default",)
    assert item.value["question"] == AUTHOR[0] and item.value["outcome"] == "correct"

    store.put(("users", "alice"), "a1", {"question": "Capital of Peru?", "workflow": "1. Search it."})
    assert store.memory.get("a1", namespace="users.alice").question == "Capital of Peru?"
    assert set(store.list_namespaces()) == {("default",), ("users", "alice")}
    assert store.list_namespaces(prefix=("users",)) == [("users", "alice")]
    assert set(store.list_namespaces(max_depth=1)) == {("default",), ("users",)}

    store.put(("default",), "m-author", {"question": AUTHOR[0], "workflow": AUTHOR[1], "outcome": "incorrect"})
    assert store.get(("default",), "m-author").value["outcome"] == "incorrect"
    assert store.memory.count("default") == 3  # the outcome change moved the record, no second copy

    store.delete(("default",), "m-author")
    assert store.get(("default",), "m-author") is None
    # a value that is not a workflow memory is kept as it is, apart from MIA's memories
    store.put(("default",), "note", {"question": "q", "workflow": "w", "flavour": "kept"})
    assert store.get(("default",), "note").value == {"question": "q", "workflow": "w", "flavour": "kept"}
    assert store.memory.get("note", namespace="default") is None and store.memory.count("default") == 2
    with pytest.raises(ValueError, match="outcome"):  # a memory's shape with a bad field: refused
        store.put(("default",), "bad", {"question": "q", "workflow": "w", "outcome": "maybe"})


def test_search_runs_mia_scoring(store: MiaStore) -> None:
    hits = store.search(("default",), query="Who is the author of Hamlet?", limit=3)
    assert hits[0].key == "m-author"
    expected = store.memory.retrieve("Who is the author of Hamlet?", namespace="default", k_pos=3, k_neg=3)
    scores = {m.record.id: m.score for m in [*expected.positives, *expected.negatives]}
    assert {h.key: h.score for h in hits} == pytest.approx(scores)
    only_failed = store.search(("default",), query="Who wrote Macbeth?", filter={"outcome": "incorrect"})
    assert [h.key for h in only_failed] == ["m-failed"]
    listed = store.search(("default",), limit=10)  # no query: newest first
    assert [h.key for h in listed] == ["m-failed", "m-river", "m-author"]


def test_async_batch_runs_off_the_event_loop(store: MiaStore) -> None:
    threads: list[int] = []
    query = store.memory.index.query

    def spy(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.get_ident())
        return query(*args, **kwargs)

    store.memory.index.query = spy

    async def main() -> tuple[list[Any], Any]:
        loop_thread = threading.get_ident()
        hits = await store.asearch(("default",), query="Hamlet's author", limit=1)
        return hits, loop_thread

    try:
        hits, loop_thread = asyncio.run(main())
    finally:
        del store.memory.index.query
    assert hits[0].key == "m-author"
    assert threads and all(t != loop_thread for t in threads)


class QA(TypedDict, total=False):
    question: str
    workflows: list[str]


def test_plain_stategraph_app_uses_runtime_store(store: MiaStore) -> None:
    def recall(state: QA, runtime: Runtime) -> dict[str, Any]:
        hits = runtime.store.search(("default",), query=state["question"], limit=1)
        runtime.store.put(("default",), "m-new", {"question": state["question"], "workflow": "1. Reused the plan."})
        return {"workflows": [h.value["workflow"] for h in hits]}

    graph = StateGraph(QA)
    graph.add_node("recall", recall)
    graph.add_edge(START, "recall")
    graph.add_edge("recall", END)
    out = graph.compile(store=store).invoke({"question": "Which river runs through Vienna?"})
    assert out["workflows"] == [RIVER[1]]
    assert store.get(("default",), "m-new").value["workflow"] == "1. Reused the plan."


def test_create_agent_uses_the_tools(store: MiaStore) -> None:
    from langchain.agents import create_agent

    model = ScriptedChatModel(
        script=[
            AIMessage(
                content="",
                tool_calls=[{"name": "search_workflows", "args": {"question": "Author of Hamlet?"}, "id": "c1"}],
            ),
            AIMessage(
                content="",
                tool_calls=[
                    {
                        "name": "record_outcome",
                        "id": "c2",
                        "args": {
                            "question": "Author of Hamlet?",
                            "workflow": "1. Followed m-author.",
                            "correct": True,
                            "used_memory_ids": ["m-author"],
                        },
                    }
                ],
            ),
            "Shakespeare.",
        ]
    )
    agent = create_agent(model, tools=memory_tools(store, namespace="default", k_pos=1, k_neg=1))
    out = agent.invoke({"messages": [HumanMessage("Who wrote Hamlet?")]})

    tool_messages = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert AUTHOR[1] in tool_messages[0].content and "m-author" in tool_messages[0].content
    assert FAILED[1] in tool_messages[0].content  # the failed workflow is shown as a lesson
    assert out["messages"][-1].content == "Shakespeare."
    assert {t.name for t in model.bound_tools} == {"search_workflows", "record_outcome", "manage_workflow"}
    stored = [r for r in store.memory.list("default") if r.source == "langchain-tool"]
    assert [(r.question, r.outcome) for r in stored] == [("Author of Hamlet?", "correct")]
    used = store.memory.get("m-author", namespace="default")
    assert (used.usage_count, used.success_count) == (1, 1)


def call(name: str, cid: str, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": cid}])


def test_run_time_tools_keep_two_users_apart_with_the_graphs_store(store: MiaStore) -> None:
    """Issue 39: tools made once, without a store, resolve the graph's store (`get_store()`) and a
    namespace template from each run's config, so one agent serves two users; the agent creates,
    updates and deletes its own workflows, and its mistakes come back to it as the tool's reply."""
    from langchain.agents import create_agent

    script = [
        call(
            "record_outcome",
            "a1",
            question="Tallest mountain in the Alps?",
            correct=True,
            workflow="1. Search 'highest Alps mountain'. 2. Read the height.",
        ),
        "Mont Blanc.",
        call("search_workflows", "b1", question="Tallest mountain in the Alps?"),
        call(
            "manage_workflow",
            "b2",
            action="create",
            question="Longest river in Asia?",
            correct=False,
            workflow="1. Guessed the Ganges.",
        ),
        call("manage_workflow", "b3", action="delete", id="no-such-id"),
        "Not sure.",
    ]
    model = ScriptedChatModel(script=script)
    agent = create_agent(model, tools=memory_tools(namespace=("users", "{user_id}")), store=store)
    agent.invoke({"messages": [HumanMessage("Tallest Alps mountain?")]}, {"configurable": {"user_id": "alice"}})
    bob = agent.invoke({"messages": [HumanMessage("Tallest Alps mountain?")]}, {"configurable": {"user_id": "bob"}})

    (alice_wf,) = store.memory.list("users.alice")
    assert alice_wf.outcome == "correct" and "highest Alps" in alice_wf.workflow
    replies = [m.content for m in bob["messages"] if isinstance(m, ToolMessage)]
    assert "highest Alps" not in replies[0] and "Memory ids: none" in replies[0]  # bob cannot see alice's
    (bob_wf,) = store.memory.list("users.bob")
    assert bob_wf.outcome == "incorrect" and "Ganges" in bob_wf.workflow
    assert "'no-such-id' is not one" in replies[2]  # the agent's mistake, told to the agent
    assert store.memory.list("default")  # the fixture's memories stay where they were

    # update and delete by id, in alice's namespace only
    tools = {t.name: t for t in memory_tools(store, namespace="users.{user_id}")}
    alice = {"configurable": {"user_id": "alice"}}
    manage = tools["manage_workflow"]
    assert "is not one" in manage.invoke({"action": "update", "id": bob_wf.id, "correct": True}, alice)
    reply = manage.invoke(
        {"action": "update", "id": alice_wf.id, "correct": False, "workflow": "1. Wrong height."}, alice
    )
    assert reply == f"Updated workflow {alice_wf.id} (outcome, workflow)."
    updated = store.memory.get(alice_wf.id, namespace="users.alice")
    assert (updated.outcome, updated.workflow, updated.question) == ("incorrect", "1. Wrong height.", alice_wf.question)
    assert manage.invoke({"action": "delete", "id": alice_wf.id}, alice) == f"Deleted workflow {alice_wf.id}."
    assert store.memory.list("users.alice") == [] and len(store.memory.list("users.bob")) == 1
    assert "create needs" in manage.invoke({"action": "create", "question": "Q?"}, alice)


def test_run_time_tools_refuse_an_app_mistake_loudly(store: MiaStore) -> None:
    search = memory_tools(store, namespace="users.{user_id}")[0]
    with pytest.raises(ValueError, match="needs 'user_id' in the run's config"):
        search.invoke({"question": "Q?"}, {"configurable": {}})
    with pytest.raises(RuntimeError, match="without a store and this run has none"):
        memory_tools()[0].invoke({"question": "Q?"})
    with pytest.raises(ValueError, match="namespace is a name"):
        memory_tools(store, namespace="")


def test_retriever_returns_documents(store: MiaStore) -> None:
    docs = MiaWorkflowRetriever(store=store, k_pos=1, k_neg=1).invoke("Who penned Hamlet?")
    assert [d.metadata["id"] for d in docs] == ["m-author", "m-failed"]
    assert docs[0].page_content == AUTHOR[1] and docs[0].metadata["outcome"] == "correct"
    again = asyncio.run(MiaWorkflowRetriever(store=store.memory, k_pos=1, k_neg=0).ainvoke("Vienna's river"))
    assert [d.id for d in again] == ["m-river"]


def test_build_graph_store_is_the_graphs_memory(store: MiaStore) -> None:
    from mia.graph import Context, build_graph
    from mia.graph.nodes.deps import Deps

    models = {
        "fake:planner": ScriptedChatModel(script=["1. Search the author."]),
        "fake:executor": ScriptedChatModel(script=["<answer>Shakespeare</answer>"]),
        "fake:manager": ScriptedChatModel(),
    }
    deps = Deps(
        model_factory=lambda spec, t, n: models[spec],
        tools_factory=lambda ctx, p: [],
        compressor_factory=lambda model: None,
        judge_fn=lambda **kw: None,
    )
    context = Context(
        planner_model="fake:planner",
        executor_model="fake:executor",
        manager_model="fake:manager",
        judge_mode="off",
        max_replans=0,
        plan_when="start",  # the planner is shown the store's memories
        min_tool_calls=0,
        tool_protocol="text",
        namespace="default",
    )
    out = build_graph(store=store, deps=deps).invoke({"question": "Who wrote Hamlet, the play?"}, context=context)
    assert out["answer"] == "Shakespeare"
    assert "m-author" in out["used_memory_ids"]
    assert out["memory_id"], out.get("warnings")
    assert store.memory.get(out["memory_id"], namespace="default").question == "Who wrote Hamlet, the play?"


def test_readme_snippet_runs(tmp_path) -> None:
    """The README's "Use MIA memory in your own LangGraph app" code, as written (a scripted model
    stands in for OpenAI, and the store goes to a temporary folder)."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme[readme.index("### Use MIA memory in your own LangGraph app") :]
    start = section.index("```python\n") + len("```python\n")
    code = section[start : section.index("\n```", start)]
    assert 5 < len(code.splitlines()) <= 15
    code = code.replace('"./memory"', repr(str(tmp_path / "memory"))).replace('"openai:gpt-4.1-mini"', "FAKE")
    scope: dict[str, Any] = {"FAKE": ScriptedChatModel(script=["ok"])}
    exec(compile(code, "README.md", "exec"), scope)  # noqa: S102 - our own README
    try:
        out = scope["app"].invoke({"messages": [HumanMessage("Who wrote Macbeth?")]})
        assert out["messages"][-1].content == "1. Search the play. 2. Read the author."
        assert [d.id for d in scope["docs"]] == ["m1"]
        assert scope["agent"].invoke({"messages": [HumanMessage("hi")]})["messages"][-1].content == "ok"
    finally:
        scope["store"].close()
