"""The harness end to end with a scripted graph: every metric checked by hand, resumption, errors,
concurrency, the lock and the config guard."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mia.app.evaluation import runlog
from mia.app.evaluation.harness import EvalConfig, RunAborted, run_evaluation
from mia.app.evaluation.runner import GraphRunner
from mia.memory import was_cut_for_log

from .fakes import ScriptedGraph, SimulatedCrash, write_tiny


def factory(graph: ScriptedGraph):
    def make(config, setting):
        return GraphRunner(
            graph=graph, context={"namespace": config["namespace"]}, setting=setting, judge=config["judge"]
        )

    return make


def cfg(dataset: Path, **kw) -> EvalConfig:
    base = dict(
        dataset=str(dataset),
        seed=0,
        memory_mode="mia",
        models={r: "fake:scripted" for r in ("planner", "executor", "manager", "judge")},
        max_tool_calls=4,
        concurrency=1,
    )
    base.update(kw)
    return EvalConfig(**base)


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    return write_tiny(tmp_path / "tiny.jsonl")


async def test_every_metric_by_hand(tiny: Path, tmp_path: Path):
    out = tmp_path / "run"
    graph = ScriptedGraph()
    s = await run_evaluation(cfg(tiny), out, runner_factory=factory(graph), progress=False)

    assert s.n == 4 and s.errors == 0 and s.warned == 1
    # judge: q1, q2 CORRECT; q3 INCORRECT; q4 NOT_ATTEMPTED -> 2/4, Wilson [0.150, 0.850]
    assert s.accuracy.value == 0.5
    assert (s.accuracy.low, s.accuracy.high) == (pytest.approx(0.1500, abs=1e-4), pytest.approx(0.8500, abs=1e-4))
    # EM: only "paris" == "Paris" -> 1/4
    assert s.em.value == 0.25
    # F1: q1 1; q2 "menotti" vs "gian carlo menotti" P=1 R=1/3 -> 0.5; q3 yes/no -> 0;
    # q4 "year 1998" vs "1998": P=1/2 R=1 -> 2/3 (better than alias "in 1998": 1/2)
    f1s = [1.0, 0.5, 0.0, 2 / 3]
    mean = sum(f1s) / 4
    assert s.f1.value == pytest.approx(mean)
    # percentile bootstrap (a t interval would reach -0.12): resampled means of 4 draws. Lower tail:
    # P(0) = 1/256, P(1/8: three 0, one 1/2) = 4/256 -> 1.95%, P(1/6: three 0, one 2/3) = 4/256 -> 3.5%:
    # the 2.5% quantile is 1/6. Upper tail, symmetrically: 1 (1/256), 11/12 (4/256), 7/8 (4/256) -> 7/8.
    assert s.f1.low == pytest.approx(1 / 6) and s.f1.high == pytest.approx(7 / 8)
    # cover (gold inside the answer, whole tokens): q1 yes, q2 "menotti" lacks "gian carlo" no, q3 no,
    # q4 "the year 1998" contains "1998" yes -> 2/4; judge agrees with cover on q1, q3 (q2, q4 differ) -> 2/4
    assert s.cover.value == 0.5 and s.judge_agrees_with_cover.value == 0.5
    # tool calls 1, 2, 0, 3 -> mean 1.5; LLM calls 4, 5, 3, 7 -> 4.75
    assert s.tool_calls.value == 1.5
    assert s.llm_calls.value == 4.75
    # prompt tokens: 450, 665, 335, 1380 -> total 2830; completion: 61, 86, 26, 201 -> 374
    assert s.total_prompt_tokens == 2830 and s.total_completion_tokens == 374
    assert s.prompt_tokens.value == pytest.approx(2830 / 4)
    # without the judge (50 + 55 + 45 + 60 = 210): (2830 - 210) / 4
    assert s.agent_prompt_tokens.value == pytest.approx((2830 - 210) / 4)
    assert s.completion_tokens.value == pytest.approx(374 / 4)
    # per role: executor prompt 300+500+200+800 = 1800 -> 450/q; manager only on q4: 400/4 = 100/q
    assert s.per_role["executor"].prompt_tokens == 450 and s.per_role["executor"].total_prompt_tokens == 1800
    assert s.per_role["manager"].calls == 0.25 and s.per_role["manager"].prompt_tokens == 100
    assert s.per_role["judge"].calls == 1.0
    assert s.wall_s.value is not None and s.wall_s.value >= 0

    # the log: one line per question, with plan, trajectory (an unusually long step cut), scores, memories
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == [ex["id"] for ex in _order(tiny)]
    q2 = next(r for r in rows if r["id"] == "q2")
    assert q2["plan"] == "plan for q2" and q2["memories_used"] == ["m-q2"] and q2["memory_id"] == "new-q2"
    assert q2["judge_grade"] == "CORRECT" and q2["f1"] == 0.5 and q2["stop_reason"] == "answered"
    assert q2["memories"] == [
        {"id": "m-q2", "outcome": "correct", "question": "an older question", "score": 0.5, "similarity": 0.0}
    ]
    assert next(r for r in rows if r["id"] == "q3")["warnings"] == ["memorise failed: boom"]
    obs = [st for st in q2["trajectory"] if st["kind"] == "observation"]
    assert len(obs) == 2 and obs[0]["content"] == "x" * 4096  # a search result is logged whole: SFT rebuilds it
    assert obs[1]["content"].startswith("x" * 16_384) and was_cut_for_log(obs[1]["content"])
    assert obs[1]["content"].endswith(f" …[{20_000 - 16_384} chars cut]")
    # the graph got the sandbox paragraphs and the gold answers
    state, ctx = graph.calls[0]
    assert state["paragraphs"] and state["gold_answers"]
    assert ctx["namespace"].startswith("eval-mia-")
    # summary files and plot
    saved = json.loads((out / "summary.json").read_text())
    assert saved["accuracy"]["value"] == 0.5 and saved["total_prompt_tokens"] == 2830
    md = (out / "summary.md").read_text()
    assert "agrees with cover match on 0.50 [0.15, 0.85]" in md
    assert "0.500 [0.150, 0.850]" in md and "| executor | 2.50 | 450 | n/a | 50 | n/a |" in md
    assert (out / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (out / ".lock").exists()


def _order(tiny: Path):
    from mia.app.evaluation.datasets import load_examples

    examples, _ = load_examples(str(tiny), None, 0)
    return [e.model_dump() for e in examples]


async def test_metrics_judge_makes_no_accuracy(tiny: Path, tmp_path: Path):
    s = await run_evaluation(
        cfg(tiny, judge="metrics"), tmp_path / "m", runner_factory=factory(ScriptedGraph()), progress=False
    )
    assert s.accuracy.value is None and s.em.value == 0.25 and s.cover.value == 0.5
    assert s.judge_agrees_with_cover.value is None
    assert "—" in (tmp_path / "m" / "summary.md").read_text()


async def test_resume_after_crash_and_torn_line(tiny: Path, tmp_path: Path):
    out = tmp_path / "run"
    first = ScriptedGraph(crash_after=2)
    with pytest.raises(SimulatedCrash):
        await run_evaluation(cfg(tiny, concurrency=1), out, runner_factory=factory(first), progress=False)
    assert len(runlog.read_results(out)) == 2
    assert not (out / ".lock").exists()  # released on the crash
    with (out / "results.jsonl").open("a") as fh:  # a writer killed mid-line
        fh.write('{"id": "q9", "question": "torn')
    second = ScriptedGraph()
    s = await run_evaluation(cfg(tiny), out, runner_factory=factory(second), progress=False)
    done_first = {st["question"] for st, _ in first.calls}
    assert len(second.calls) == 2 and not done_first & {st["question"] for st, _ in second.calls}
    assert s.n == 4 and s.accuracy.value == 0.5 and s.total_prompt_tokens == 2830
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(lines) == 4 and all(json.loads(line)["id"] != "q9" for line in lines)
    # same namespace kept across the resume (the memory keeps growing in the same place)
    assert first.calls[0][1]["namespace"] == second.calls[0][1]["namespace"]
    # a third start has nothing to do and rebuilds the same summary, byte for byte (its config is read
    # back from config.json then, not taken from the command line: the key order must not differ)
    written = (out / "summary.json").read_text()
    third = ScriptedGraph()
    again = await run_evaluation(cfg(tiny), out, runner_factory=factory(third), progress=False)
    assert third.calls == [] and again.model_dump(exclude={"config"}) == s.model_dump(exclude={"config"})
    assert (out / "summary.json").read_text() == written


async def test_extend_n_runs_only_new_questions(tiny: Path, tmp_path: Path):
    out = tmp_path / "run"
    await run_evaluation(cfg(tiny, n=2), out, runner_factory=factory(ScriptedGraph()), progress=False)
    more = ScriptedGraph()
    s = await run_evaluation(cfg(tiny, n=4), out, runner_factory=factory(more), progress=False)
    assert len(more.calls) == 2 and s.n == 4


async def test_resume_refuses_a_different_config(tiny: Path, tmp_path: Path):
    out = tmp_path / "run"
    await run_evaluation(cfg(tiny, n=1), out, runner_factory=factory(ScriptedGraph()), progress=False)
    with pytest.raises(runlog.RunDirError, match="memory_mode"):
        await run_evaluation(
            cfg(tiny, n=1, memory_mode="none"), out, runner_factory=factory(ScriptedGraph()), progress=False
        )


async def test_failing_question_is_logged_and_retried(tiny: Path, tmp_path: Path):
    out = tmp_path / "run"
    s = await run_evaluation(cfg(tiny), out, runner_factory=factory(ScriptedGraph(fail={"q1"})), progress=False)
    assert s.errors == 1 and s.accuracy.value == 0.25  # q1 (was correct) now counts as not correct
    bad = next(r for r in runlog.read_results(out) if r.id == "q1")
    assert "tool exploded" in bad.error and bad.judge_correct is False
    retry = ScriptedGraph()
    s2 = await run_evaluation(cfg(tiny, retry_errors=True), out, runner_factory=factory(retry), progress=False)
    assert len(retry.calls) == 1 and s2.errors == 0 and s2.accuracy.value == 0.5


async def test_consecutive_errors_abort_but_keep_the_log(tiny: Path, tmp_path: Path):
    out = tmp_path / "run"
    graph = ScriptedGraph(fail={"q1", "q2", "q3", "q4"})
    with pytest.raises(RunAborted, match="in a row"):
        await run_evaluation(cfg(tiny, max_consecutive_errors=2), out, runner_factory=factory(graph), progress=False)
    logged = runlog.read_results(out)
    assert len(logged) >= 2 and len(logged) == len(graph.calls)  # every finished question is kept
    assert all(r.error for r in logged)


async def test_backend_errors_stop_the_run_at_once(tiny: Path, tmp_path: Path):
    from mia.graph.models.errors import MissingAPIKeyError

    class NoKey(ScriptedGraph):
        async def ainvoke(self, state, context=None):
            raise MissingAPIKeyError("OPENAI_API_KEY", "openai:gpt-4.1-mini")

    with pytest.raises(MissingAPIKeyError):
        await run_evaluation(cfg(tiny), tmp_path / "run", runner_factory=factory(NoKey()), progress=False)
    assert runlog.read_results(tmp_path / "run") == []


async def test_bounded_concurrency(tiny: Path, tmp_path: Path):
    graph = ScriptedGraph(delay=0.05)
    s = await run_evaluation(cfg(tiny, concurrency=2), tmp_path / "c", runner_factory=factory(graph), progress=False)
    assert graph.max_in_flight == 2 and s.n == 4 and s.accuracy.value == 0.5
    assert (
        EvalConfig(
            models={
                "executor": "openai:gpt-4.1-mini",
                "planner": "openai:x",
                "manager": "openai:x",
                "judge": "openai:x",
            }
        ).resolved_concurrency()
        == 4
    )
    assert EvalConfig(models={"executor": "local:smollm2"}).resolved_concurrency() == 1


async def test_second_writer_is_refused_and_stale_lock_taken_over(tiny: Path, tmp_path: Path):
    out = tmp_path / "run"
    out.mkdir()
    (out / ".lock").write_text(str(os.getppid()))  # a live process holds it
    with pytest.raises(runlog.RunDirError, match="being written"):
        await run_evaluation(cfg(tiny), out, runner_factory=factory(ScriptedGraph()), progress=False)
    (out / ".lock").write_text("999999999")  # a dead one
    s = await run_evaluation(cfg(tiny), out, runner_factory=factory(ScriptedGraph()), progress=False)
    assert s.n == 4


def test_corrupt_line_in_the_middle_is_an_error(tiny: Path, tmp_path: Path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "results.jsonl").write_text('{"nope": 1}\n{"id": "q1", "question": "x", "gold_answers": ["a"]}\n')
    with pytest.raises(runlog.RunDirError, match=r"results.jsonl:1"):
        runlog.read_results(out)


def test_open_setting_sends_no_paragraphs(tiny: Path):
    from mia.app.evaluation.datasets import load_examples

    ex = load_examples(str(tiny), 1, 0)[0][0]
    assert "paragraphs" not in GraphRunner(graph=None, context=None, setting="open").input_state(ex)
    assert GraphRunner(graph=None, context=None).input_state(ex)["paragraphs"][0]["title"]


async def test_fresh_store_per_run_and_memory_from(tiny: Path, tmp_path: Path):
    seen = {}

    def make(config, setting):
        seen[config["memory_mode"]] = config
        return GraphRunner(graph=ScriptedGraph(), context=None, setting=setting, judge=config["judge"])

    a = tmp_path / "a"
    await run_evaluation(cfg(tiny, n=1), a, runner_factory=make, progress=False)
    store_a = Path(seen["mia"]["data_dir"])
    assert store_a == (a / "store").resolve() and (store_a / "index").is_symlink()
    (store_a / "memory" / "chroma").mkdir(parents=True)  # a whole store (a log alone: test_warmup.py)
    (store_a / "memory" / "trajectories.jsonl").write_text('{"x": 1}\n')
    (store_a / "memory" / ".mia-memory.lock").write_text("")
    (store_a / "memory" / ".mia-memory.owner").write_text("12345")
    ns_a = runlog.read_config(a)["namespace"]

    b = tmp_path / "b"
    await run_evaluation(cfg(tiny, n=1, memory_from=str(a)), b, runner_factory=make, progress=False)
    copied = b / "store" / "memory"
    assert (copied / "trajectories.jsonl").read_text() == '{"x": 1}\n' and not (copied / ".mia-memory.lock").exists()
    assert not (copied / ".mia-memory.owner").exists()  # another process's pid is not this run's
    assert runlog.read_config(b)["namespace"] == ns_a  # the copied records live there
    assert (store_a / "memory" / "trajectories.jsonl").exists()  # the source is untouched

    with pytest.raises(runlog.RunDirError, match="neither an eval run folder"):
        await run_evaluation(
            cfg(tiny, n=1, memory_from=str(b / "store")), tmp_path / "c", runner_factory=make, progress=False
        )
    await run_evaluation(cfg(tiny, n=1, memory_mode="none"), tmp_path / "n", runner_factory=make, progress=False)
    with pytest.raises(runlog.RunDirError, match="--memory none"):  # that run has no memory to start from
        await run_evaluation(
            cfg(tiny, n=1, memory_from=str(tmp_path / "n")), tmp_path / "d", runner_factory=make, progress=False
        )


async def test_memory_from_a_memory_folder(tiny: Path, tmp_path: Path, data_dir: Path):
    """A bare memory folder (the committed 2Wiki warm-up store, real Chroma) seeds a run: its records
    are copied, the run takes their namespace, and the source folder is left byte for byte."""
    import shutil

    from mia.memory import MemoryStore, Trajectory
    from mia.memory.trajectory_log import TrajectoryLog

    source = tmp_path / "warmup-store"
    shutil.copytree(Path(__file__).resolve().parents[2] / "results" / "training" / "2wiki-warmup-store", source)
    before = {p.relative_to(source): p.read_bytes() for p in source.rglob("*") if p.is_file()}
    seen = {}

    def make(config, setting):
        seen.update(config)
        return GraphRunner(graph=ScriptedGraph(), context=None, setting=setting, judge=config["judge"])

    out = tmp_path / "run"
    await run_evaluation(cfg(tiny, n=1, memory_from=str(source)), out, runner_factory=make, progress=False)
    assert runlog.read_config(out)["namespace"] == seen["namespace"] == "eval-mia-2488b3b7"
    assert {p.relative_to(source): p.read_bytes() for p in source.rglob("*") if p.is_file()} == before
    copied = out / "store" / "memory"
    logged = [t.model_dump() for t in TrajectoryLog(source / "trajectories.jsonl").read()]  # committed compressed
    assert len(logged) == 50 and [t.model_dump() for t in TrajectoryLog(copied / "trajectories.jsonl").read()] == logged
    with MemoryStore.open(copied, snapshot=True) as st:  # a real store that retrieves from the copy
        assert st.count("eval-mia-2488b3b7") == 50
        assert st.retrieve("Where was the director of film Adam And Eve born?", "eval-mia-2488b3b7").positives
        found = st.search_trajectories("Where was the director of film Adam And Eve born?", "eval-mia-2488b3b7", k=1)
        assert "Adam And Eve" in found[0].trajectory.question  # and trajectory-rag's raw trajectories

    two = tmp_path / "two-namespaces"  # a run takes one namespace: which one would be a guess
    shutil.copytree(source, two)
    with MemoryStore.open(two) as st:
        st.log_trajectory(Trajectory(question="q?", answer="a", namespace="other"))
    with pytest.raises(runlog.RunDirError, match="2 namespaces"):
        await run_evaluation(cfg(tiny, n=1, memory_from=str(two)), tmp_path / "r2", runner_factory=make, progress=False)
    (tmp_path / "empty").mkdir()
    with pytest.raises(runlog.RunDirError, match="neither an eval run folder"):
        await run_evaluation(
            cfg(tiny, n=1, memory_from=str(tmp_path / "empty")), tmp_path / "r3", runner_factory=make, progress=False
        )


def test_per_role_table_gives_model_seconds_and_cache_hits() -> None:
    """A run that recorded call times shows them per role; an older run's lines (no `ms`) say n/a
    instead of a misleading 0."""
    from mia.app.evaluation.records import QuestionResult, RoleUsage
    from mia.app.evaluation.summary import markdown_roles, summarise

    def row(i: int, usage: dict[str, RoleUsage]) -> QuestionResult:
        return QuestionResult(id=f"q{i}", question="?", gold_answers=["a"], usage=usage)

    new = summarise(
        [
            row(1, {"planner": RoleUsage(calls=2, input_tokens=1000, output_tokens=50, cached_tokens=300, ms=4000)}),
            row(2, {"planner": RoleUsage(calls=1, input_tokens=600, output_tokens=30, cached_tokens=100, ms=2000)}),
        ],
        {"label": "new"},
    )
    old = summarise(
        [row(1, {"planner": RoleUsage.model_validate({"calls": 1, "input_tokens": 5, "output_tokens": 1})})],
        {"label": "old"},
    )
    assert new.per_role["planner"].model_seconds == 3.0 and new.per_role["planner"].cached_prompt_tokens == 200
    assert old.per_role["planner"].model_seconds is None
    table = markdown_roles([new, old])
    assert "| new | planner | 1.50 | 800 | 200 | 40 | 3.0 |" in table
    assert "| old | planner | 1.00 | 5 | n/a | 1 | n/a |" in table


async def test_run_folder_says_which_code_wrote_it_and_each_resume(tiny: Path, tmp_path: Path, monkeypatch):
    from mia.app.evaluation import harness

    out = tmp_path / "run"
    monkeypatch.setattr(harness, "code_version", lambda: {"version": "1", "commit": "aaa", "dirty": False})
    await run_evaluation(cfg(tiny, n=1), out, runner_factory=factory(ScriptedGraph()), progress=False)
    monkeypatch.setattr(harness, "code_version", lambda: {"version": "1", "commit": "bbb", "dirty": True})
    await run_evaluation(cfg(tiny, n=2), out, runner_factory=factory(ScriptedGraph()), progress=False)
    stored = runlog.read_config(out)
    assert stored["code"] == {"version": "1", "commit": "aaa", "dirty": False}
    assert [(r["commit"], r["dirty"]) for r in stored["resumed_code"]] == [("bbb", True)]
    assert stored["resumed_code"][0]["at"] == stored["resumed_at"]
    # rebuilding a finished run's summary answers nothing, so it records no resume
    monkeypatch.setattr(harness, "code_version", lambda: {"version": "1", "commit": "ccc", "dirty": False})
    await run_evaluation(cfg(tiny, n=2), out, runner_factory=factory(ScriptedGraph()), progress=False)
    assert [r["commit"] for r in runlog.read_config(out)["resumed_code"]] == ["bbb"]


async def test_resume_refuses_when_the_memory_is_gone(tiny: Path, tmp_path: Path):
    import shutil

    out = tmp_path / "run"
    await run_evaluation(cfg(tiny, n=2), out, runner_factory=factory(ScriptedGraph()), progress=False)
    shutil.rmtree(out / "store")  # what a machine that keeps only tracked files leaves
    more = ScriptedGraph()
    with pytest.raises(runlog.RunDirError, match="2 answers are logged"):
        await run_evaluation(cfg(tiny, n=4), out, runner_factory=factory(more), progress=False)
    assert more.calls == [] and len(runlog.read_results(out)) == 2  # nothing answered, nothing lost
    # a memory-less run has nothing to lose: it resumes
    plain = tmp_path / "plain"
    await run_evaluation(
        cfg(tiny, n=2, memory_mode="none"), plain, runner_factory=factory(ScriptedGraph()), progress=False
    )
    shutil.rmtree(plain / "store")
    s = await run_evaluation(
        cfg(tiny, n=4, memory_mode="none"), plain, runner_factory=factory(ScriptedGraph()), progress=False
    )
    assert s.n == 4
