"""What LangGraph Studio / `langgraph dev` loads from `mia/langgraph.json`: the graphs
(`mia.graph.studio:graph` and `:chat_graph`) and, for apps of your own, MIA's memory as the
server's long-term store (`"store": {"path": "mia.graph.studio.store"}` in your langgraph.json:
then `memory_tools()` made without a store read it with `get_store()` at run time, and a
namespace template such as `("users", "{user_id}")` keeps each user's workflows apart).

Compiled without a checkpointer: the server brings its own persistence and refuses graphs that
carry one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from mia.graph.builder import build_graph
from mia.graph.chat import build_chat_graph
from mia.graph.integrations.store import MiaStore

graph = build_graph()
graph.name = "mia"

chat_graph = build_chat_graph()  # messages in, messages out: Studio chat and Agent Chat UI


@contextmanager
def store() -> Iterator[MiaStore]:
    """The server's store: MIA's embedded memory in $MIA_DATA_DIR/memory, opened when the server
    starts and closed (its lock released) when it stops."""
    opened = MiaStore.open()
    try:
        yield opened
    finally:
        opened.close()
