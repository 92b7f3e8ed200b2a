"""A memory folder removed while the graph runs (a chat session, a server): the next episode says so
loudly and is stored in a new store made there, and later episodes are stored as usual; before, every
later turn warned `attempt to write a readonly database` and lost its memory. Real Chroma on disk and
the real embedder; scripted models."""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest

from mia.graph.builder import build_graph, recursion_limit
from mia.memory import Compressor, MemoryStore

from .fakes import ScriptedChatModel, make_deps
from .test_graph_logic import CALL, ctx

QUESTIONS = ["Who wrote Hamlet?", "Who wrote Macbeth?", "Who wrote Othello?"]


@pytest.fixture(scope="module")
def embedder() -> Any:
    from mia.memory.embeddings import default_embedder

    return default_embedder()


def test_a_removed_memory_folder_is_made_again_and_no_later_episode_is_lost(tmp_path, embedder) -> None:
    executor = []
    for _ in QUESTIONS:
        executor += [CALL.format(q="author"), "<answer>Shakespeare</answer>"]
    m = {
        "fake:planner": ScriptedChatModel(script=[], fallback="1. Search the author."),
        "fake:executor": ScriptedChatModel(script=executor),
        "fake:manager": ScriptedChatModel(script=[]),
        "fake:judge": ScriptedChatModel(script=[], fallback="A"),
    }
    opened: list[MemoryStore] = []

    def store_factory(data_dir):
        opened.append(MemoryStore.open(data_dir / "memory", embedder=embedder))
        return opened[-1]

    deps, _ = make_deps(m, compressor_factory=lambda model: Compressor(model), store_factory=store_factory)
    graph = build_graph(deps=deps)
    context = ctx(data_dir=str(tmp_path), manager_model="extractive", max_replans=0, namespace="chat")

    def ask(question: str) -> dict:
        return graph.invoke(
            {"question": question, "gold_answers": ["Shakespeare"]},
            context=context,
            config={"recursion_limit": recursion_limit(context)},
        )

    first = ask(QUESTIONS[0])
    assert first["memory_id"] and not first.get("warnings")
    shutil.rmtree(tmp_path / "memory")  # removed under the running process

    second = ask(QUESTIONS[1])
    assert second["memory_id"], second.get("warnings")
    (warning,) = [w for w in second.get("warnings") or [] if "removed while mia ran" in w]
    assert "a new, empty store was made there" in warning
    third = ask(QUESTIONS[2])
    assert third["memory_id"] and not any("memorise failed" in w for w in third.get("warnings") or [])
    assert len(opened) == 2  # reopened once, then used as usual
    log = tmp_path / "memory" / "trajectories.jsonl"
    assert [json.loads(line)["question"] for line in log.read_text().splitlines()] == QUESTIONS[1:]
    assert opened[-1].count("chat") == 2
    opened[-1].close()


class _LostStore:
    """A store whose folder is gone (or, made with missing=False, a fresh one); records whether it was closed."""

    def __init__(self, missing: bool = True) -> None:
        self.missing, self.closed = missing, False

    def folder_missing(self) -> bool:
        return self.missing

    def close(self) -> None:
        self.closed = True


def test_a_store_handed_in_is_never_closed_and_the_learning_deps_reopen_through_their_inner_deps(tmp_path) -> None:
    from mia.graph.context import Context
    from mia.graph.nodes.deps import Deps
    from mia.training.online.session import LearningDeps

    context = Context(data_dir=str(tmp_path))
    given = _LostStore()
    store, warning = Deps().with_memory_store(given).usable_memory_store(context)
    assert store is given and not given.closed and "store given to build_graph" in warning

    opened: list[_LostStore] = []
    inner = Deps(store_factory=lambda path: opened.append(_LostStore(missing=not opened)) or opened[-1])
    learning = LearningDeps(inner, planner=None)
    first = learning.memory_store(context)
    store, warning = learning.usable_memory_store(context)
    assert first.closed and store is opened[-1] is inner.memory_store(context) and len(opened) == 2
    assert "a new, empty store was made there" in warning
