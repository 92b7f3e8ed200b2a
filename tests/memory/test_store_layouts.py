"""Every store layout an earlier mia wrote opens in this one (issue 42.3): one small store per
layout, written by that commit's own code (tests/memory/layouts/make_layouts.py), is read, searched,
written to and reopened with today's code. The layout with the removed bulk-load threshold is
tests/memory/test_store_upgrade.py."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from mia.memory import MemoryStore

from .conftest import make_trajectory

LAYOUTS = sorted((Path(__file__).parent / "layouts").glob("*.tar.gz"))
RIVERS = "Which river is longer, the Danube or the Rhine?"


def test_there_is_a_fixture_per_listed_layout() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_layouts", Path(__file__).parent / "layouts" / "make_layouts.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    COMMITS = module.LAYOUTS
    assert {p.name.split("-")[-1].removesuffix(".tar.gz") for p in LAYOUTS} == set(COMMITS)


@pytest.mark.parametrize("fixture", LAYOUTS, ids=[p.name.removesuffix(".tar.gz") for p in LAYOUTS])
def test_an_older_layout_opens_searches_takes_new_memories_and_reopens(fixture: Path, tmp_path: Path, embedder) -> None:
    with tarfile.open(fixture) as tar:
        tar.extractall(tmp_path, filter="data")
    folder = tmp_path / "store"
    with MemoryStore.open(folder, embedder=embedder) as st:
        assert st.count() == 2 and len(list(st.trajectory_log.read())) == 2
        found = st.retrieve(RIVERS)
        assert [m.record.question for m in found.positives] == [RIVERS]
        assert [m.record.question for m in found.negatives] == ["Who directed the film The Duel (2010)?"]
        st.memorise(make_trajectory("Which mountain is higher, Mont Blanc or the Matterhorn?"))
    with MemoryStore.open(folder, embedder=embedder) as st:
        assert st.count() == 3 and len(list(st.trajectory_log.read())) == 3
