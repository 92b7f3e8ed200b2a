"""The nodes of the MIA graph, one module per node or small group. Each module exposes a
`make_<node>(deps)` factory returning a sync node `(state, runtime) -> update`: sync, because
Chroma and local generation block, and LangGraph runs sync nodes in a worker thread."""
