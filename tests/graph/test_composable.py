"""MIA inside other graphs: as a node of a parent with its own context, as a chat graph taking
`messages`, and as a tool whose schema is only the question."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from mia import Deps
from mia.graph import Context, build_graph
from mia.graph.chat import build_chat_graph

from .fakes import FakeStore, ScriptedChatModel


def fake_deps(*answers: str) -> tuple[Deps, ScriptedChatModel, FakeStore]:
    """Every role is one scripted model answering in turn (memory mode none, judge off)."""
    model = ScriptedChatModel(script=[f"<answer>{a}</answer>" for a in answers])
    store = FakeStore()
    deps = Deps(
        model_factory=lambda spec, t, n: model,
        store_factory=lambda path: store,
        tools_factory=lambda ctx, paragraphs: [],
        judge_fn=lambda **kw: None,
        compressor_factory=lambda m: None,
    )
    return deps, model, store


@dataclass
class AppCtx:
    """A parent app's own context: two fields share a name with MIA's, one does not."""

    user_id: str
    memory_mode: str = "none"
    judge_mode: str = "off"
    memorise: bool = False
    min_tool_calls: int = 0


class Parent(TypedDict, total=False):
    question: str
    answer: str
    note: str


def test_mia_is_a_node_of_a_parent_with_its_own_context() -> None:
    deps, model, _ = fake_deps("Paris")

    def greet(state: Parent, runtime: Runtime[AppCtx]) -> dict[str, Any]:
        return {"note": f"for {runtime.context.user_id}"}

    parent = StateGraph(Parent, context_schema=AppCtx)
    parent.add_node("greet", greet)
    parent.add_node("mia", build_graph(deps=deps))
    parent.add_edge(START, "greet")
    parent.add_edge("greet", "mia")
    parent.add_edge("mia", END)
    out = parent.compile().invoke({"question": "Capital of France?"}, context=AppCtx(user_id="ada"))

    assert out == {"question": "Capital of France?", "answer": "Paris", "note": "for ada"}
    assert len(model.prompts) == 1  # memory_mode none and judge off came from the parent's context


def test_mia_called_from_a_node_with_an_explicit_context() -> None:
    deps, model, store = fake_deps("Rome")
    mia = build_graph(deps=deps)

    def research(state: Parent, runtime: Runtime[AppCtx]) -> dict[str, Any]:
        mine = Context(memory_mode="none", judge_mode="off", memorise=False, min_tool_calls=0, namespace="team")
        return {"answer": mia.invoke({"question": state["question"]}, context=mine)["answer"]}

    parent = StateGraph(Parent, context_schema=AppCtx)
    parent.add_node("research", research)
    parent.add_edge(START, "research")
    parent.add_edge("research", END)
    out = parent.compile().invoke(
        {"question": "Capital of Italy?"}, context=AppCtx(user_id="ada", memory_mode="mia", judge_mode="auto")
    )
    assert out["answer"] == "Rome"
    assert store.retrieve_calls == [] and len(model.prompts) == 1  # MIA's own context won


def test_chat_graph_takes_messages_and_keeps_the_conversation() -> None:
    deps, model, _ = fake_deps("Paris", "Berlin")
    chat = build_chat_graph(checkpointer=InMemorySaver(), deps=deps)
    ctx = Context(memory_mode="none", judge_mode="off", memorise=False, min_tool_calls=0)
    cfg = {"configurable": {"thread_id": "t1"}}
    chat.invoke({"messages": [HumanMessage("Capital of France?")]}, cfg, context=ctx)
    out = chat.invoke({"messages": [HumanMessage("And of Germany?")]}, cfg, context=ctx)

    assert [(type(m).__name__, m.content) for m in out["messages"]] == [
        ("HumanMessage", "Capital of France?"),
        ("AIMessage", "Paris"),
        ("HumanMessage", "And of Germany?"),
        ("AIMessage", "Berlin"),
    ]
    assert out["question"] == "And of Germany?" and out["answer"] == "Berlin"
    assert "And of Germany?" in model.prompts[1][-1].content


def test_chat_graph_is_a_node_of_a_messages_app() -> None:
    deps, _, _ = fake_deps("Paris")
    parent = StateGraph(MessagesState, context_schema=AppCtx)
    parent.add_node("mia", build_chat_graph(deps=deps))
    parent.add_edge(START, "mia")
    parent.add_edge("mia", END)
    out = parent.compile().invoke({"messages": [HumanMessage("Capital of France?")]}, context=AppCtx(user_id="x"))
    assert [m.content for m in out["messages"]] == ["Capital of France?", "Paris"]
    assert isinstance(out["messages"][-1], AIMessage)


def test_as_tool_shows_only_the_question() -> None:
    deps, _, _ = fake_deps("Paris")
    tool = build_graph(deps=deps).as_tool()
    assert tool.name == "mia"
    assert set(tool.tool_call_schema.model_json_schema()["properties"]) == {"question"}
    parent = StateGraph(Parent, context_schema=AppCtx)
    parent.add_node("ask", lambda s: {"answer": tool.invoke({"question": s["question"]})})
    parent.add_edge(START, "ask")
    parent.add_edge("ask", END)
    out = parent.compile().invoke({"question": "Capital of France?"}, context=AppCtx(user_id="x"))
    assert out["answer"] == "Paris"  # the tool's result is the answer; the parent's context reached MIA


def test_as_tool_runs_past_an_agents_default_recursion_limit() -> None:
    """Fifteen searches take more than the 25 steps an agent's config allows by default."""
    from .fakes import search_tool

    call = '<tool_call>{"name": "search", "arguments": {"query_list": ["France"]}}</tool_call>'
    model = ScriptedChatModel(script=[call] * 15 + ["<answer>Paris</answer>"])
    deps = Deps(
        model_factory=lambda spec, t, n: model,
        store_factory=lambda path: FakeStore(),
        tools_factory=lambda ctx, paragraphs: [search_tool()],
        judge_fn=lambda **kw: None,
        compressor_factory=lambda m: None,
    )
    tool = build_graph(deps=deps).as_tool()
    parent = StateGraph(Parent, context_schema=AppCtx)
    parent.add_node("ask", lambda s: {"answer": tool.invoke({"question": s["question"]})})
    parent.add_edge(START, "ask")
    parent.add_edge("ask", END)
    out = parent.compile().invoke({"question": "Capital of France?"}, context=AppCtx(user_id="x"))
    assert out["answer"] == "Paris" and len(model.prompts) == 16


def test_a_plain_invoke_runs_past_langgraphs_default_recursion_limit() -> None:
    from .fakes import search_tool

    call = '<tool_call>{"name": "search", "arguments": {"query_list": ["France"]}}</tool_call>'
    model = ScriptedChatModel(script=[call] * 15 + ["<answer>Paris</answer>"] * 2)
    deps = Deps(
        model_factory=lambda spec, t, n: model,
        store_factory=lambda path: FakeStore(),
        tools_factory=lambda ctx, paragraphs: [search_tool()],
        judge_fn=lambda **kw: None,
        compressor_factory=lambda m: None,
    )
    ctx = Context(memory_mode="none", judge_mode="off", memorise=False, tool_protocol="text")
    assert build_graph(deps=deps).invoke({"question": "Capital of France?"}, context=ctx)["answer"] == "Paris"
    model.script = [call] * 15 + ["<answer>Paris</answer>"]
    chat = build_chat_graph(deps=deps).invoke({"messages": [HumanMessage("Capital of France?")]}, context=ctx)
    assert chat["messages"][-1].content == "Paris"
