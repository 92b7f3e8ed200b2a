"""The graph LangGraph Studio / `langgraph dev` loads (`mia/langgraph.json`: `mia.graph.studio:graph` and `:chat_graph`).

Compiled without a checkpointer: the server brings its own persistence and refuses graphs that
carry one.
"""

from mia.graph.builder import build_graph
from mia.graph.chat import build_chat_graph

graph = build_graph()
graph.name = "mia"

chat_graph = build_chat_graph()  # messages in, messages out: Studio chat and Agent Chat UI
