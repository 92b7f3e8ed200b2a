"""The SQLite shortcut serves `ainvoke` and `astream` as well as `invoke` (issue 39: it gave a sync
SqliteSaver, whose async methods raise NotImplementedError), and a thread written by one API is
read by the other."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from mia.graph.builder import build_graph
from mia.graph.persistence import open_checkpointer

from tests.graph.fakes import make_deps
from tests.graph.test_graph_logic import ctx, models


@pytest.mark.parametrize("form", ["path", "url"])
def test_sqlite_shortcut_serves_ainvoke_astream_and_invoke_on_one_thread(tmp_path: Path, form: str) -> None:
    deps, _ = make_deps(
        models(
            planner=["1. Look.", "no", "1. Again.", "no", "1. Once more.", "no"],
            executor=["<answer>one</answer>", "<answer>two</answer>", "<answer>three</answer>"],
        )
    )
    target = tmp_path / "threads" / "checkpoints.sqlite"
    graph = build_graph(checkpointer=str(target) if form == "path" else f"sqlite:///{target}", deps=deps)
    cfg = {"configurable": {"thread_id": "t"}}

    async def run_async() -> tuple[dict, list, list]:
        out = await graph.ainvoke({"question": "Q1"}, cfg, context=ctx())
        chunks = [c async for c in graph.astream({"question": "Q2"}, cfg, context=ctx(), stream_mode="updates")]
        history = [h async for h in graph.checkpointer.alist(cfg, limit=3)]
        return out, chunks, history

    out, chunks, history = asyncio.run(run_async())
    assert out["answer"] == "one" and any("close_question" in c for c in chunks) and len(history) == 3
    assert asyncio.run(graph.aget_state(cfg)).values["answer"] == "two"
    third = graph.invoke({"question": "Q3"}, cfg, context=ctx())  # the sync API on the same thread
    assert third["answer"] == "three"
    with open_checkpointer(target) as saver:  # another connection reads what both APIs wrote
        assert {h.checkpoint["channel_values"].get("question") for h in saver.list(cfg)} >= {"Q1", "Q2", "Q3"}
        asyncio.run(saver.adelete_thread("t"))
        assert saver.get_tuple(cfg) is None
