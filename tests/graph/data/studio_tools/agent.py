"""A user's own graph for `langgraph dev` (tests/graph/test_studio_memory_tools.py): a ToolNode
over MIA's memory tools made without a store, in a per-user namespace template. The run's input
is the agent's tool call, so the test needs no model."""

from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from mia import memory_tools

builder = StateGraph(MessagesState)
builder.add_node("tools", ToolNode(memory_tools(namespace=("users", "{user_id}"))))
builder.add_edge(START, "tools")
builder.add_edge("tools", END)
graph = builder.compile()
