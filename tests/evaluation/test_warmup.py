"""`mia eval --warmup N`: memory is built from N other questions first (not scored), then the
evaluated questions run on that memory; both splits are disjoint and resumable."""

from __future__ import annotations

from pathlib import Path

import pytest

from mia.app.evaluation import runlog
from mia.app.evaluation.datasets import DatasetError, load_examples
from mia.app.evaluation.harness import WARMUP_DIR, run_evaluation
from mia.app.evaluation.report import compare

from .fakes import TINY, ScriptedGraph, write_tiny
from .test_harness import cfg, factory


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    return write_tiny(tmp_path / "tiny.jsonl")


def _asked(graph: ScriptedGraph) -> list[str]:
    by_question = {r["question"]: r["id"] for r in TINY}
    return [by_question[state["question"]] for state, _ in graph.calls]


async def test_warmup_runs_other_questions_first_and_is_not_scored(tiny: Path, tmp_path: Path) -> None:
    order = [ex.id for ex in load_examples(str(tiny), None, 0)[0]]
    graph = ScriptedGraph()
    s = await run_evaluation(cfg(tiny, n=2, warmup=2), tmp_path / "w", runner_factory=factory(graph), progress=False)
    evaluated, warm = order[:2], order[2:]
    assert _asked(graph) == warm + evaluated  # memory first, from the questions that are not evaluated
    assert s.n == 2
    assert sorted(runlog.latest_by_id(runlog.read_results(tmp_path / "w"))) == sorted(evaluated)
    assert sorted(runlog.latest_by_id(runlog.read_results(tmp_path / "w" / WARMUP_DIR))) == sorted(warm)
    # one runner for both splits: the same context, hence the same memory namespace and store
    assert graph.calls[0][1] is graph.calls[-1][1]
    assert runlog.read_config(tmp_path / "w")["warmup"] == 2

    again = ScriptedGraph()  # resuming a finished run asks nothing
    await run_evaluation(cfg(tiny, n=2, warmup=2), tmp_path / "w", runner_factory=factory(again), progress=False)
    assert again.calls == []


async def test_same_evaluated_questions_with_and_without_warmup(tiny: Path, tmp_path: Path) -> None:
    await run_evaluation(cfg(tiny, n=2), tmp_path / "plain", runner_factory=factory(ScriptedGraph()), progress=False)
    await run_evaluation(
        cfg(tiny, n=2, warmup=2), tmp_path / "warm", runner_factory=factory(ScriptedGraph()), progress=False
    )
    _, md = compare([tmp_path / "plain", tmp_path / "warm"])
    assert "| 2 |" in md.split("Paired comparisons")[1]  # paired over the same 2 questions


async def test_warmup_larger_than_the_rest_is_refused(tiny: Path, tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="--warmup 3 with 2 evaluated questions needs 5"):
        await run_evaluation(
            cfg(tiny, n=2, warmup=3), tmp_path / "x", runner_factory=factory(ScriptedGraph()), progress=False
        )


async def test_warmup_only_builds_a_memory_that_later_runs_start_from(
    tiny: Path, tmp_path: Path, data_dir: Path
) -> None:
    """`--n 0 --warmup N` answers the warm-up questions alone and scores nothing; its run folder is
    then a `--memory-from` source, so several configurations start from one memory. Real store."""
    from mia.memory import MemoryStore, Trajectory

    order = [ex.id for ex in load_examples(str(tiny), None, 0)[0]]
    seen: dict = {}

    def writes_memory(config, setting):  # the scripted graph stands in for the agent; the store is real
        seen.update(config)
        with MemoryStore.open(Path(config["data_dir"]) / "memory") as st:
            st.log_trajectory(Trajectory(question="warm-up question?", answer="a", namespace=config["namespace"]))
        return factory(graph)(config, setting)

    graph = ScriptedGraph()
    s = await run_evaluation(cfg(tiny, n=0, warmup=2), tmp_path / "warm", runner_factory=writes_memory, progress=False)
    assert s.n == 0 and _asked(graph) == order[2:]
    assert runlog.read_results(tmp_path / "warm") == []
    assert sorted(runlog.latest_by_id(runlog.read_results(tmp_path / "warm" / WARMUP_DIR))) == sorted(order[2:])

    later = ScriptedGraph()
    await run_evaluation(
        cfg(tiny, n=2, memory_from=str(tmp_path / "warm")),
        tmp_path / "scored",
        runner_factory=factory(later),
        progress=False,
    )
    assert _asked(later) == order[:2]  # the scored questions, never the warm-up ones
    assert runlog.read_config(tmp_path / "scored")["namespace"] == seen["namespace"]
    with MemoryStore.open(tmp_path / "scored" / "store" / "memory", snapshot=True) as st:
        found = st.search_trajectories("warm-up question?", seen["namespace"], k=5)
        assert [f.trajectory.question for f in found] == ["warm-up question?"]

    with pytest.raises(ValueError, match="--n 0 only builds a warm-up memory"):
        cfg(tiny, n=0)


async def test_start_gives_a_split_disjoint_from_the_first_and_from_the_warmup(tiny: Path, tmp_path: Path) -> None:
    """`--start`: the final rows run on positions no tuning run (positions 0..n-1) or warm-up saw."""
    order = [ex.id for ex in load_examples(str(tiny), None, 0)[0]]
    graph = ScriptedGraph()
    await run_evaluation(
        cfg(tiny, n=1, start=1, warmup=1), tmp_path / "s", runner_factory=factory(graph), progress=False
    )
    assert _asked(graph) == [order[-1], order[1]]
    assert runlog.read_config(tmp_path / "s")["start"] == 1
    with pytest.raises(DatasetError, match="needs 5 from position 2"):
        await run_evaluation(
            cfg(tiny, n=2, start=2, warmup=1), tmp_path / "t", runner_factory=factory(ScriptedGraph()), progress=False
        )
    with pytest.raises(DatasetError, match="past the end"):
        load_examples(str(tiny), None, 0, start=len(order))


async def test_a_run_folder_from_before_start_existed_resumes(tiny: Path, tmp_path: Path) -> None:
    """Run folders written before `start` was recorded resume as start 0 (committed runs stay usable)."""
    await run_evaluation(cfg(tiny, n=1), tmp_path / "old", runner_factory=factory(ScriptedGraph()), progress=False)
    stored = runlog.read_config(tmp_path / "old")
    del stored["start"]
    runlog.write_config(tmp_path / "old", stored)
    again = ScriptedGraph()
    await run_evaluation(cfg(tiny, n=2), tmp_path / "old", runner_factory=factory(again), progress=False)
    assert len(again.calls) == 1


@pytest.mark.parametrize("compressed", [False, True])
async def test_memory_from_a_folder_that_keeps_only_its_trajectory_log_is_rebuilt(
    tiny: Path, tmp_path: Path, data_dir: Path, compressed: bool
) -> None:
    """A committed study keeps its trajectory log (gzip-compressed when finished), not its Chroma
    files: `--memory-from` such a folder rebuilds the memory from the log (real store) and leaves the
    source as it was."""
    from mia.memory import MemoryStore, Trajectory

    source = tmp_path / "study-memory"
    with MemoryStore.open(source) as st:
        kept = st.memorise(
            Trajectory(question="Which river is longer?", answer="Nile", outcome="correct", namespace="warm")
        )
    import shutil

    shutil.rmtree(source / "chroma")  # what git keeps of it
    if compressed:
        import gzip

        log = source / "trajectories.jsonl"
        log.with_name(log.name + ".gz").write_bytes(gzip.compress(log.read_bytes()))
        log.unlink()
    before = sorted(p.name for p in source.iterdir())
    await run_evaluation(
        cfg(tiny, n=1, memory_from=str(source)), tmp_path / "r", runner_factory=factory(ScriptedGraph()), progress=False
    )
    assert sorted(p.name for p in source.iterdir()) == before
    assert runlog.read_config(tmp_path / "r")["namespace"] == "warm"
    with MemoryStore.open(tmp_path / "r" / "store" / "memory", snapshot=True) as st:
        assert [r.id for r in st.list(namespace="warm")] == [kept.id]


async def test_a_run_resumed_from_its_log_alone_gets_its_memories_back(
    tiny: Path, tmp_path: Path, data_dir: Path
) -> None:
    """A run committed mid-way keeps its store's trajectory log, not its Chroma files: resuming it
    rebuilds the memories before the next question."""
    import shutil

    from mia.memory import MemoryStore, Trajectory

    seen: list[int] = []

    def writes_memory(config, setting):
        with MemoryStore.open(Path(config["data_dir"]) / "memory") as st:
            seen.append(st.count(config["namespace"]))
            st.memorise(
                Trajectory(
                    question=f"question {len(seen)}?", answer="a", outcome="correct", namespace=config["namespace"]
                )
            )
        return factory(ScriptedGraph())(config, setting)

    await run_evaluation(cfg(tiny, n=1), tmp_path / "r", runner_factory=writes_memory, progress=False)
    # what a clone of the commit holds: the run folder without the store's Chroma files
    shutil.copytree(tmp_path / "r", tmp_path / "clone", ignore=shutil.ignore_patterns("chroma", "*.lock"))
    await run_evaluation(cfg(tiny, n=2), tmp_path / "clone", runner_factory=writes_memory, progress=False)
    assert seen == [0, 1]  # the resumed run found the first run's memory, rebuilt from the log
