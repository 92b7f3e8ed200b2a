"""Stores that older versions wrote open in this one. The removed bulk-load option left collections
with an HNSW sync threshold of 100,000; a new process opening such a store read every collection's
configuration before registering mia's embedding function and called the store unreadable."""

from __future__ import annotations

import textwrap

from mia.memory import MemoryStore

from .conftest import make_trajectory, run_python

OLD_BULK_LOAD = textwrap.dedent("""
    import sys
    from mia.memory import MemoryStore
    from mia.memory.chroma_collections import HNSW_SYNC_THRESHOLD
    with MemoryStore.open(sys.argv[1]) as st:
        for col in st.index.client.list_collections():  # what the bulk-load option wrote
            col.modify(configuration={"hnsw": {"sync_threshold": 100_000}})
        print(sorted(c.configuration_json["hnsw"]["sync_threshold"] for c in st.index.client.list_collections()))
""")

REOPEN = textwrap.dedent("""
    import sys
    from mia.memory import MemoryStore
    with MemoryStore.open(sys.argv[1]) as st:
        thresholds = sorted(c.configuration_json["hnsw"]["sync_threshold"] for c in st.index.client.list_collections())
        print(st.count(), thresholds, bool(st.retrieve("Which river is longer, the Danube or the Rhine?").positives))
""")


def test_a_store_with_the_old_bulk_load_threshold_opens_in_a_new_process(tmp_path, embedder) -> None:
    folder = tmp_path / "memory"
    with MemoryStore.open(folder, embedder=embedder) as st:
        st.memorise(make_trajectory("Which river is longer, the Danube or the Rhine?"))
    old = run_python(OLD_BULK_LOAD, str(folder))
    assert old.returncode == 0 and old.stdout.strip() == "[100000, 100000]", old.stderr[-2000:]
    reopened = run_python(REOPEN, str(folder))  # a fresh process: nothing of chroma_ef imported yet
    assert reopened.returncode == 0, reopened.stderr[-2000:]
    assert reopened.stdout.split() == ["1", "[1000,", "1000]", "True"]  # readable, and the threshold set back
