"""The MIA graph behind a chat interface: `messages` in, `messages` out.

For LangGraph Studio's chat, Agent Chat UI and parents built on `MessagesState`. The last human
message is the question (or a `question` key when no message is given); the answer is appended
as an AI message. MIA's own graph runs as a subgraph, so its executor conversation (tool calls,
observations, protocol tags) stays inside it and the chat shows questions and answers only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from typing_extensions import TypedDict

from mia.graph.builder import build_graph, recursion_limit
from mia.graph.context import Context
from mia.graph.nodes.deps import Deps
from mia.graph.state import OutputState


class ChatInput(TypedDict, total=False):
    """A chat turn: messages (the last human one is the question), or a plain question."""

    messages: Annotated[list[AnyMessage], add_messages]
    question: str


class ChatState(OutputState, total=False):
    """The conversation, plus MIA's outputs for the last question."""

    messages: Annotated[list[AnyMessage], add_messages]


def question_of(state: Mapping[str, Any]) -> str:
    """The last message's text when it is a human message, else the `question` key."""
    messages = state.get("messages") or []
    if messages and isinstance(messages[-1], HumanMessage):
        content = messages[-1].content
        text = (
            content
            if isinstance(content, str)
            else " ".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)
        )
        if text.strip():
            return text.strip()
    question = str(state.get("question") or "").strip()
    if not question:
        raise ValueError("give a question: a human message last in `messages`, or a `question`")
    return question


def read_question(state: ChatState) -> dict[str, Any]:
    return {"question": question_of(state)}


def reply(state: ChatState) -> dict[str, Any]:
    return {"messages": [AIMessage(content=state.get("answer") or "", name="mia")]}


def build_chat_graph(
    checkpointer: Any = None,
    store: Any = None,
    *,
    deps: Deps | None = None,
    name: str = "mia-chat",
    **compile_kwargs: Any,
) -> CompiledStateGraph[ChatState, Context, ChatInput, ChatState]:
    """MIA with a `messages` input and output (see the module docstring); other arguments as
    `build_graph`."""
    g = StateGraph(ChatState, context_schema=Context, input_schema=ChatInput, output_schema=ChatState)
    g.add_node("read_question", read_question)
    g.add_node("mia", build_graph(store=store, deps=deps))
    g.add_node("reply", reply)
    g.add_edge(START, "read_question")
    g.add_edge("read_question", "mia")
    g.add_edge("mia", "reply")
    g.add_edge("reply", END)
    graph = g.compile(checkpointer=checkpointer, store=store, name=name, **compile_kwargs)
    return graph.with_config(recursion_limit=recursion_limit(Context()) + 3)  # + its own three nodes
