"""One behavioural suite for LangGraph stores: LangGraph's own `InMemoryStore` (the reference) and
`MiaStore` on a real on-disk Chroma store, both with MIA's MiniLM embedder. The same checks run on
each: get/put/delete, namespaces, search with and without a query, every filter operator, paging,
nested values, async, batches and refusals, with MIA's workflow memories as one kind of value.
The tests at the end are MiaStore's own (MIA's retrieval, persistence, atomic puts)."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

import pytest
from langgraph.store.base import BaseStore, GetOp, InvalidNamespaceError, Item, ListNamespacesOp, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from mia.graph.integrations import MiaStore
from mia.memory import MemoryStoreError

KINDS = ["in-memory", "mia"]
HAMLET = {
    "question": "Who wrote the play Hamlet?",
    "workflow": "1. Search 'Hamlet author'. 2. Read it.",
    "outcome": "correct",
}


@pytest.fixture(scope="module")
def embedder() -> Any:
    from mia.memory.embeddings import default_embedder

    return default_embedder()


@pytest.fixture(params=KINDS)
def store(request, tmp_path, embedder) -> Any:
    """A fresh store of each kind: InMemoryStore indexes every item's whole value ("$"), as
    MiaStore does by default."""
    if request.param == "in-memory":
        yield InMemoryStore(
            index={"dims": embedder.dim, "embed": lambda texts: embedder.embed_documents(list(texts)).tolist()}
        )
        return
    with MiaStore.open(tmp_path / "memory", embedder=embedder) as st:
        yield st


@pytest.fixture()
def mia(tmp_path, embedder) -> Any:
    with MiaStore.open(tmp_path / "memory", embedder=embedder) as st:
        yield st


def keys(items: list[Any]) -> list[str]:
    return [item.key for item in items]


# ---------------------------------------------------------------- get / put / delete
NESTED = {
    "text": "Grüße, 世界 ✓",
    "n": 3,
    "big": 2**53 + 1,
    "ratio": 0.1,
    "neg": -1.5e-7,
    "ok": True,
    "nothing": None,
    "empty": {},
    "none": [],
    "deep": {"a": [1, {"b": [None, False, "x"]}, [[]]], "c": {"d": {"e": "f"}}},
}


def test_is_a_base_store_without_ttl(store: BaseStore) -> None:
    assert isinstance(store, BaseStore) and store.supports_ttl is False


def test_put_get_returns_the_value_unchanged(store: BaseStore) -> None:
    store.put(("docs",), "k1", NESTED)
    item = store.get(("docs",), "k1")
    assert isinstance(item, Item)
    assert (item.namespace, item.key, item.value) == (("docs",), "k1", NESTED)
    assert isinstance(item.created_at, datetime) and item.created_at <= item.updated_at


def test_get_of_a_missing_key_is_none(store: BaseStore) -> None:
    store.put(("docs",), "k1", {"x": 1})
    assert store.get(("docs",), "k2") is None
    assert store.get(("docs", "sub"), "k1") is None


def test_overwrite_replaces_the_value(store: BaseStore) -> None:
    store.put(("docs",), "k", {"v": 1, "old": "yes"})
    store.put(("docs",), "k", {"v": 2})
    assert store.get(("docs",), "k").value == {"v": 2}
    assert keys(store.search(("docs",))) == ["k"]


def test_delete_removes_only_that_item(store: BaseStore) -> None:
    store.put(("docs",), "a", {"v": 1})
    store.put(("docs",), "b", {"v": 2})
    store.delete(("docs",), "a")
    store.delete(("docs",), "never-there")  # no error
    assert store.get(("docs",), "a") is None and store.get(("docs",), "b").value == {"v": 2}


def test_same_key_in_two_namespaces_is_two_items(store: BaseStore) -> None:
    store.put(("users", "alice"), "prefs", {"theme": "dark"})
    store.put(("users", "bob"), "prefs", {"theme": "light"})
    assert store.get(("users", "alice"), "prefs").value == {"theme": "dark"}
    assert store.get(("users", "bob"), "prefs").value == {"theme": "light"}
    assert keys(store.search(("users", "alice"))) == ["prefs"]


def test_a_workflow_memory_is_a_value_like_any_other(store: BaseStore) -> None:
    store.put(("default",), "m-hamlet", HAMLET)
    value = store.get(("default",), "m-hamlet").value
    assert value.items() >= HAMLET.items()  # MiaStore adds MIA's defaults (usage counts, times)
    assert keys(store.search(("default",), filter={"outcome": "correct"})) == ["m-hamlet"]


# ---------------------------------------------------------------- namespaces
NAMESPACES = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"), ("a", "c", "f"), ("x",)]
LISTINGS = [
    ({}, sorted(NAMESPACES)),
    ({"prefix": ("a", "b")}, [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f")]),
    ({"suffix": ("f",)}, [("a", "b", "f"), ("a", "c", "f")]),
    ({"prefix": ("a", "*", "f")}, [("a", "b", "f"), ("a", "c", "f")]),
    ({"suffix": ("d", "*")}, [("a", "b", "d", "e"), ("a", "b", "d", "i")]),
    ({"prefix": ("a",), "suffix": ("c",)}, [("a", "b", "c")]),
    ({"prefix": ("a", "b"), "max_depth": 3}, [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")]),
    ({"max_depth": 1}, [("a",), ("x",)]),
    ({"limit": 2}, sorted(NAMESPACES)[:2]),
    ({"limit": 2, "offset": 2}, sorted(NAMESPACES)[2:4]),
    ({"prefix": ("nope",)}, []),
    ({"prefix": ("a", "b", "c", "d", "e")}, []),
]


@pytest.mark.parametrize(("kwargs", "expected"), LISTINGS, ids=[str(k) for k, _ in LISTINGS])
def test_list_namespaces(store: BaseStore, kwargs: dict[str, Any], expected: list[tuple[str, ...]]) -> None:
    for i, ns in enumerate(NAMESPACES):
        store.put(ns, f"k{i}", {"i": i})
    assert store.list_namespaces(**kwargs) == expected


# ---------------------------------------------------------------- search without a query
ITEMS = {
    "a": {"n": 1, "tag": "a", "meta": {"lang": "en", "v": 1}, "tags": ["x", "y"], "flag": True, "name": "alpha"},
    "b": {"n": 2, "tag": "b", "meta": {"lang": "fr", "v": 2}, "tags": ["x"], "flag": False, "name": "beta"},
    "c": {"n": 3, "tag": "b", "meta": {"lang": "en", "v": 3}, "tags": ["y", "x"], "flag": True, "name": "gamma"},
    "d": {"n": 2.5, "tag": "c", "meta": {"lang": "de", "v": 4}, "tags": [], "flag": False, "name": "delta"},
}
FILTERS = [
    ({"tag": "b"}, {"b", "c"}),
    ({"n": {"$eq": 2}}, {"b"}),
    ({"n": {"$ne": 2}}, {"a", "c", "d"}),
    ({"n": {"$gt": 2}}, {"c", "d"}),
    ({"n": {"$gte": 2}}, {"b", "c", "d"}),
    ({"n": {"$lt": 2.5}}, {"a", "b"}),
    ({"n": {"$lte": 2.5}}, {"a", "b", "d"}),
    ({"n": {"$gt": 1, "$lt": 3}}, {"b", "d"}),
    ({"name": {"$eq": "gamma"}}, {"c"}),
    ({"name": {"$ne": "beta"}, "flag": False}, {"d"}),
    ({"tag": "b", "n": {"$gte": 3}}, {"c"}),
    ({"meta": {"lang": "en"}}, {"a", "c"}),
    ({"meta": {"lang": "en", "v": 3}}, {"c"}),
    ({"meta": {"v": {"$gte": 3}}}, {"c", "d"}),
    ({"tags": ["x", "y"]}, {"a"}),
    ({"tags": []}, {"d"}),
    ({"flag": True}, {"a", "c"}),
    ({"tag": "zzz"}, set()),
]


def put_items(store: BaseStore, ns: tuple[str, ...] = ("items",)) -> None:
    for key, value in ITEMS.items():
        store.put(ns, key, value)


@pytest.mark.parametrize(("wanted", "expected"), FILTERS, ids=[str(f) for f, _ in FILTERS])
def test_filter(store: BaseStore, wanted: dict[str, Any], expected: set[str]) -> None:
    put_items(store)
    assert set(keys(store.search(("items",), filter=wanted))) == expected


def test_search_scope_is_the_namespace_prefix(store: BaseStore) -> None:
    put_items(store, ("items", "one"))
    store.put(("items", "two"), "e", {"n": 9})
    store.put(("other",), "f", {"n": 9})
    assert set(keys(store.search(("items", "one")))) == set(ITEMS)
    assert set(keys(store.search(("items",)))) == {*ITEMS, "e"}
    assert set(keys(store.search(()))) == {*ITEMS, "e", "f"}
    assert all(hit.score is None for hit in store.search(()))


def test_pages_cover_every_item_once(store: BaseStore) -> None:
    for i in range(7):
        store.put(("paged",), f"k{i}", {"i": i})
    pages = [keys(store.search(("paged",), limit=3, offset=offset)) for offset in (0, 3, 6, 9)]
    assert [len(page) for page in pages] == [3, 3, 1, 0]
    assert sorted(sum(pages, [])) == [f"k{i}" for i in range(7)]


def test_filter_comes_before_limit_and_offset(store: BaseStore) -> None:
    for i in range(12):
        store.put(("many",), f"k{i:02d}", {"i": i, "even": i % 2 == 0})
    first = store.search(("many",), filter={"even": False}, limit=4)
    rest = store.search(("many",), filter={"even": False}, limit=4, offset=4)
    assert len(first) == 4 and len(rest) == 2
    assert sorted(keys(first + rest)) == [f"k{i:02d}" for i in range(1, 12, 2)]


# ---------------------------------------------------------------- search with a query
DOCS = {
    "py": {"text": "Python programming tutorial for beginners"},
    "ts": {"text": "TypeScript type system guide"},
    "pasta": {"text": "How to cook fresh pasta at home"},
    "garden": {"text": "Growing tomatoes in a small garden"},
}


def put_docs(store: BaseStore) -> None:
    for key, value in DOCS.items():
        store.put(("docs",), key, value)


@pytest.mark.parametrize(
    ("query", "best"),
    [("learn to code in python", "py"), ("italian noodle recipe", "pasta"), ("vegetable plants", "garden")],
)
def test_query_search_ranks_the_most_similar_first(store: BaseStore, query: str, best: str) -> None:
    put_docs(store)
    hits = store.search(("docs",), query=query, limit=4)
    assert hits[0].key == best and len(hits) == 4
    scores = [hit.score for hit in hits]
    assert all(isinstance(s, float) for s in scores) and scores == sorted(scores, reverse=True)


def test_query_search_with_a_filter_is_never_short(store: BaseStore) -> None:
    put_docs(store)
    for i in range(6):
        store.put(("docs",), f"py{i}", {"text": f"Python lesson number {i}", "kind": "lesson"})
    hits = store.search(("docs",), query="python programming", filter={"kind": {"$ne": "lesson"}}, limit=3)
    assert len(hits) == 3 and hits[0].key == "py" and not any(k.startswith("py") and k != "py" for k in keys(hits))
    assert len(store.search(("docs",), query="python", limit=3, offset=8)) == 2


def test_query_search_pages_do_not_overlap(store: BaseStore) -> None:
    put_docs(store)
    pages = [keys(store.search(("docs",), query="cooking", limit=2, offset=o)) for o in (0, 2)]
    assert len(pages[0]) == len(pages[1]) == 2 and set(pages[0]).isdisjoint(pages[1])


def test_items_not_indexed_come_after_the_scored_ones(store: BaseStore) -> None:
    put_docs(store)
    store.put(("docs",), "secret", {"text": "Python programming secrets"}, index=False)
    hits = store.search(("docs",), query="python programming", limit=10)
    assert keys(hits)[-1] == "secret" and hits[-1].score is None
    assert all(hit.score is not None for hit in hits[:-1]) and len(hits) == 5


@pytest.mark.parametrize(
    ("index", "value_of"),
    [
        (["title"], lambda title, body: {"title": title, "body": body}),
        (["doc.title"], lambda title, body: {"doc": {"title": title, "body": body}}),
        (["parts[0]"], lambda title, body: {"parts": [title, body]}),
    ],
    ids=["field", "nested-field", "array-element"],
)
def test_index_fields_choose_what_is_embedded(store: BaseStore, index: list[str], value_of: Any) -> None:
    store.put(("idx",), "bread", value_of("Baking sourdough bread", "Quantum field theory lecture notes"), index=index)
    store.put(("idx",), "physics", value_of("Particle physics seminar", "Grandma's bread baking recipe"), index=index)
    assert keys(store.search(("idx",), query="how to bake bread", limit=2)) == ["bread", "physics"]
    assert keys(store.search(("idx",), query="quantum physics", limit=2)) == ["physics", "bread"]


@pytest.mark.parametrize("outcome", ["correct", "incorrect", "unknown", None])
def test_a_workflow_memory_is_found_by_a_query_whatever_its_outcome(store: BaseStore, outcome: str | None) -> None:
    put_docs(store)
    memory = {k: v for k, v in {**HAMLET, "outcome": outcome}.items() if v is not None}
    store.put(("docs",), "m-hamlet", memory)
    assert store.search(("docs",), query="Who is the author of Hamlet?", limit=1)[0].key == "m-hamlet"


# ---------------------------------------------------------------- refusals
@pytest.mark.parametrize("wanted", [{"n": {"$in": [1, 2]}}, {"n": {"$regex": "a"}}, {"n": {"$gt": 1, "lt": 3}}])
def test_an_unknown_filter_operator_is_refused(store: BaseStore, wanted: dict[str, Any]) -> None:
    put_items(store)
    with pytest.raises(ValueError, match="(?i)unsupported"):
        store.search(("items",), filter=wanted)


def test_ttl_is_refused_and_nothing_is_written(store: BaseStore) -> None:
    with pytest.raises(NotImplementedError, match="TTL"):
        store.put(("docs",), "k", {"v": 1}, ttl=5)
    assert store.get(("docs",), "k") is None


@pytest.mark.parametrize(
    "namespace", [(), ("langgraph", "x"), ("a.b",), ("a", "")], ids=["empty", "root", "dot", "blank"]
)
def test_an_invalid_namespace_is_refused(store: BaseStore, namespace: tuple[str, ...]) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.put(namespace, "k", {"v": 1})


# ---------------------------------------------------------------- async and batches
async def test_async_operations(store: BaseStore) -> None:
    await store.aput(("async",), "k", {"text": "Python asyncio event loops"})
    await store.aput(("async",), "j", {"text": "Gardening in spring"})
    assert (await store.aget(("async",), "k")).value == {"text": "Python asyncio event loops"}
    hits = await store.asearch(("async",), query="python coroutines")
    assert keys(hits) == ["k", "j"]
    got = await asyncio.gather(store.aget(("async",), "j"), store.alist_namespaces(prefix=("async",)))
    assert got[0].key == "j" and got[1] == [("async",)]
    await store.adelete(("async",), "k")
    assert await store.aget(("async",), "k") is None


@pytest.mark.parametrize("run", ["batch", "abatch"])
def test_batch_results_follow_the_operations(store: BaseStore, run: str) -> None:
    store.put(("b",), "a", {"v": 1})
    ops = [
        GetOp(("b",), "a"),
        SearchOp(("b",), filter={"v": 1}),
        ListNamespacesOp(),
        PutOp(("b",), "c", {"v": 3}),
        PutOp(("b",), "c", {"v": 4}),
        GetOp(("b",), "missing"),
    ]
    results = store.batch(ops) if run == "batch" else asyncio.run(store.abatch(ops))
    assert len(results) == len(ops)
    assert results[0].value == {"v": 1} and keys(results[1]) == ["a"] and results[2] == [("b",)]
    assert results[3] is None and results[4] is None and results[5] is None
    assert store.get(("b",), "c").value == {"v": 4}  # the last put of a key wins


# ---------------------------------------------------------------- MiaStore's own
def test_a_workflow_memory_put_through_the_store_is_what_mia_retrieves(mia: MiaStore) -> None:
    mia.put(("users", "alice"), "m-hamlet", HAMLET)
    mia.put(("users", "alice"), "note", {"text": "Who wrote the play Hamlet? A note, not a memory."})
    got = mia.memory.retrieve("Who is the author of Hamlet?", namespace="users.alice", k_pos=3, k_neg=3)
    assert got.ids == ["m-hamlet"] and got.positives[0].record.workflow == HAMLET["workflow"]
    assert mia.memory.count("users.alice") == 1  # the generic item is not a memory
    assert mia.memory.get("m-hamlet", namespace="users.alice").source == "langgraph-store"


def test_a_value_becomes_a_memory_only_with_the_memory_shape(mia: MiaStore) -> None:
    mia.put(("default",), "extra", {**HAMLET, "flavour": "kept"})  # a field MIA lacks: a generic item
    mia.put(("default",), "half", {"question": "Only a question?"})
    assert mia.memory.count("default") == 0
    assert mia.get(("default",), "extra").value == {**HAMLET, "flavour": "kept"}
    mia.put(("default",), "half", HAMLET)  # the same key becomes a memory: one copy only
    assert mia.memory.count("default") == 1 and keys(mia.search(("default",))) == ["half", "extra"]


@pytest.mark.parametrize(
    ("value", "index", "message"),
    [
        ({**HAMLET, "outcome": "maybe"}, None, "outcome"),
        ({**HAMLET, "workflow": "  "}, None, "non-empty workflow"),
        (HAMLET, ["question"], "leave index= out"),
        ({"when": datetime.now()}, None, "JSON types"),
        ({1: "int key"}, None, "keys"),
        ({"v": 1}, "text", "index is None, False or a list"),
    ],
    ids=["bad-outcome", "blank-workflow", "index-on-memory", "not-json", "int-key", "index-string"],
)
def test_bad_input_is_refused_and_the_old_value_stays(mia: MiaStore, value: Any, index: Any, message: str) -> None:
    mia.put(("default",), "k", {"old": True})
    with pytest.raises(ValueError, match=message):
        mia.put(("default",), "k", value, index=index)
    assert mia.get(("default",), "k").value == {"old": True}


def test_what_mia_cannot_store_is_refused(mia: MiaStore) -> None:
    with pytest.raises(ValueError, match="invalid namespace"):
        mia.put(("user 1",), "k", {"v": 1})
    with pytest.raises(ValueError, match="key"):
        mia.put(("default",), "", {"v": 1})
    with pytest.raises(NotImplementedError, match="supports_ttl is False"):
        mia.batch([PutOp(("default",), "k", {"v": 1}, ttl=5.0)])  # a batch skips BaseStore.put's check
    assert mia.list_namespaces() == []


def test_a_filtered_query_asks_the_index_again_until_the_page_is_full(mia: MiaStore) -> None:
    mia.memory.retriever.n_candidates = 1  # the first ANN look-up finds one candidate per bucket
    put_docs(mia)
    for i in range(6):
        mia.put(
            ("docs",), f"m{i}", {"question": f"Python question {i}?", "workflow": "1. Search.", "outcome": "correct"}
        )
    hits = mia.search(("docs",), query="python programming", filter={"text": {"$ne": None}}, limit=3)
    assert len(hits) == 3 and hits[0].key == "py"
    memories = mia.search(("docs",), query="python", filter={"workflow": "1. Search."}, limit=5, offset=2)
    assert len(memories) == 4 and all(k.startswith("m") for k in keys(memories))


@pytest.mark.parametrize("new", [{"v": 2}, {"v": 2, "text": "x"}, HAMLET, {**HAMLET, "outcome": "incorrect"}])
def test_a_put_that_fails_in_the_backend_leaves_the_old_value(mia: MiaStore, monkeypatch, new: dict) -> None:
    mia.put(("default",), "k", HAMLET)
    mia.put(("default",), "g", {"v": 1}, index=False)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(mia.memory.index, "put", broken)
    for key, old in (("k", HAMLET), ("g", {"v": 1})):
        with pytest.raises(OSError):
            mia.put(("default",), key, new)
        assert mia.get(("default",), key).value.items() >= old.items()
    assert mia.memory.count("default") == 1


def test_items_persist_on_disk(tmp_path, embedder) -> None:
    with MiaStore.open(tmp_path / "memory", embedder=embedder) as st:
        st.put(("users", "alice"), "m-hamlet", HAMLET)
        st.put(("users", "alice"), "prefs", NESTED)
        st.put(("users", "bob"), "raw", {"v": 1}, index=False)
    with MiaStore.open(tmp_path / "memory", embedder=embedder, snapshot=True) as st:
        assert st.get(("users", "alice"), "prefs").value == NESTED
        assert st.list_namespaces() == [("users", "alice"), ("users", "bob")]
        assert keys(st.search(("users",), query="Hamlet's author", limit=1)) == ["m-hamlet"]
        with pytest.raises(MemoryStoreError, match="read-only"):
            st.put(("users", "bob"), "raw", {"v": 2})
        with pytest.raises(MemoryStoreError, match="read-only"):
            st.put(("users", "bob"), "m", HAMLET)
        assert st.get(("users", "bob"), "raw").value == {"v": 1}


def test_emptied_namespaces_are_not_listed(mia: MiaStore) -> None:
    mia.put(("gone",), "k", {"v": 1})
    mia.put(("kept",), "k", HAMLET)
    mia.delete(("gone",), "k")
    assert mia.list_namespaces() == [("kept",)]
