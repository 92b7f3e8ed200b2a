"""LearningSession and the eval hook with fakes: closed planners fall back to memory-only
learning with a clear notice; the eval runner hands each answer to the learner, and without
ground truth the graph never sees the gold answers."""

from __future__ import annotations

import asyncio
from mia.graph.context import Context
from mia.graph.nodes.deps import Deps
from mia.training.online import MEMORY_ONLY_NOTICE, LearningSession, OnlineConfig
from mia.app.evaluation.learning import LearningRunner
from mia.graph.result import RunResult
from mia.memory.trajectory import TrajectoryStep
from mia.training.online.session import episode_from_result, paragraphs_from_steps, served_reward
from mia.training.online.trainer import MemoryOnlyTrainer
from tests.online.fakes import GatedTrainer


def verdict(outcome: str, feedback: str = "", answer: str = "a") -> dict:
    """A judge's verdict as the graph's output holds it."""
    return {
        "outcome": outcome,
        "score": float(outcome == "correct"),
        "mode": "reviewers",
        "method": "weighted",
        "prediction": answer,
        "feedback": feedback,
    }


def result(
    question: str = "q?",
    answer: str = "a",
    plan: str = "p",
    judgement: dict | None = None,
    steps: list[dict] | None = None,
) -> RunResult:
    """A graph output read as every consumer reads it."""
    return RunResult.from_output(
        {
            "question": question,
            "answer": answer,
            "plan": plan,
            "judgement": judgement,
            "trajectory": {"question": question, "steps": steps or []},
            "used_memory_ids": [],
        }
    )


class FakePlanner:
    def __init__(self):
        self.adapters = []

    def set_adapter(self, path):
        self.adapters.append(path)


def test_closed_planner_falls_back_to_memory_only_with_a_clear_message(tmp_path, caplog) -> None:
    for spec in (
        "openai:gpt-4.1-mini",
        "anthropic:claude-x",
        "google_genai:gemini-x",
        "openai-compatible:m@http://h",
        "llamacpp:/models/other.gguf",
    ):
        ctx = Context(planner_model=spec, memory_mode="none", data_dir=str(tmp_path / spec.split(":")[0]))
        session = LearningSession(ctx, OnlineConfig(batch_questions=1), deps=Deps(), start=False)
        assert not session.parametric and isinstance(session.trainer, MemoryOnlyTrainer)
        assert "memory-only" in session.notice and spec in session.notice
        assert session.planner is None and session.deps._planner is None  # the planner role is not replaced
    assert "cannot be fine-tuned" in MEMORY_ONLY_NOTICE


def test_which_planners_can_learn() -> None:
    from mia.training.online.config import is_closed_model

    # the embedded models on llama.cpp train their de-quantised weights; llama.cpp serves the adapter
    for spec in ("llamacpp:qwen-coder-1.5b", "llamacpp:smollm2", "local:qwen-coder-0.5b", "hf:/m/base+/a/lora"):
        assert not is_closed_model(spec), spec
    for spec in ("llamacpp:/m/other.gguf", "openai:gpt-4.1-mini", "openai-compatible:m@http://h:1/v1", "nonsense"):
        assert is_closed_model(spec), spec


def test_memory_only_learner_consumes_episodes_without_versions(tmp_path) -> None:
    ctx = Context(planner_model="openai:gpt-4.1-mini", memory_mode="none", data_dir=str(tmp_path))
    session = LearningSession(ctx, OnlineConfig(batch_questions=2), deps=Deps())
    try:
        for i in range(4):
            session.submit({"question": f"q{i}?", "gold_answers": ["a"]}, result(f"q{i}?"))
        assert session.learner.drain(30)
    finally:
        session.close()
    assert session.learner.queue.cursor() == 4 and session.registry.versions() == []


def test_served_reward_and_episode_from_graph_output(tmp_path) -> None:
    cfg = OnlineConfig()
    out = result(
        "Capital of France?",
        "Paris",
        "1. search",
        verdict("correct", "matches", "Paris"),
        [{"kind": "observation", "content": "[France] Paris is the capital of France."}],
    )
    outcome, reward, feedback = served_reward(out, ["Paris"], cfg)
    assert outcome == "correct" and reward == 0.7 + 0.2 + 0.05 and feedback == "matches"
    ep = episode_from_result({"question": "Capital of France?", "gold_answers": ["Paris"]}, out, cfg, "ns", "v0002")
    assert ep.adapter_version == "v0002" and ep.gold_answers == ["Paris"]
    assert ep.paragraphs == [{"title": "France", "text": "Paris is the capital of France."}]  # from the searches
    nogt = OnlineConfig(ground_truth=False)
    ep2 = episode_from_result({"question": "Capital of France?"}, out, nogt, "ns", None)
    assert ep2.gold_answers == [] and ep2.reward == 0.9 + 0.1 and ep2.feedback == "matches"
    unknown = served_reward(result(answer="x"), [], nogt)
    assert unknown == ("unknown", None, "")
    assert paragraphs_from_steps([TrajectoryStep(kind="thought", content="[x] long enough text here ok")]) == []


class FakeGraph:
    def __init__(self):
        self.states = []

    async def ainvoke(self, state, context=None, **kw):
        self.states.append(state)
        await asyncio.sleep(0)
        outcome = "correct" if "gold_answers" in state else "incorrect"
        return {
            "question": state["question"],
            "answer": "Paris",
            "plan": "1. search",
            "judgement": verdict(outcome, "panel says", "Paris"),
            "trajectory": {"question": state["question"], "steps": []},
            "used_memory_ids": [],
            "usage": {},
        }


def _example(i):
    from mia.app.evaluation.records import EvalExample

    return EvalExample(
        id=f"q{i}",
        question=f"Capital {i}?",
        answer="Paris",
        paragraphs=[{"title": "France", "text": "Paris is the capital."}],
    )


def test_eval_runner_without_ground_truth_hides_gold_and_feeds_the_learner(tmp_path) -> None:
    ctx = Context(planner_model="local:smollm2", memory_mode="none", data_dir=str(tmp_path))
    trainer = GatedTrainer()
    planner = FakePlanner()
    session = LearningSession(
        ctx, OnlineConfig(batch_questions=2, ground_truth=False), deps=Deps(), trainer=trainer, served_planner=planner
    )
    graph = FakeGraph()
    runner = LearningRunner(session=session, graph=graph, setting="distractor", judge="llm", ground_truth=False)
    try:
        results = [asyncio.run(runner(_example(i))) for i in range(4)]
        assert session.learner.drain(30)
    finally:
        runner.close()
    assert all("gold_answers" not in s for s in graph.states)  # the agent never saw the gold answers
    assert all(r.judge_correct is None and r.judge_grade == "reviewers:incorrect" for r in results)
    assert all(r.em == 1.0 for r in results)  # the report still grades against the gold answers
    episodes = session.learner.queue.read_all()
    assert [e.gold_answers for e in episodes] == [[]] * 4 and episodes[0].paragraphs
    assert [e.adapter_version for e in episodes][:2] == ["base", "base"]
    assert session.registry.current == "v0002" and planner.adapters[-1].name == "v0002"


def test_eval_runner_with_ground_truth_counts_the_verdict(tmp_path) -> None:
    ctx = Context(planner_model="local:smollm2", memory_mode="none", data_dir=str(tmp_path))
    session = LearningSession(
        ctx, OnlineConfig(batch_questions=8), deps=Deps(), trainer=GatedTrainer(), served_planner=FakePlanner()
    )
    graph = FakeGraph()
    runner = LearningRunner(session=session, graph=graph, setting="distractor", judge="llm", ground_truth=True)
    try:
        result = asyncio.run(runner(_example(0)))
    finally:
        runner.close()
    assert graph.states[0]["gold_answers"] == ["Paris"] and result.judge_correct is True
    assert session.learner.queue.read_all()[0].gold_answers == ["Paris"]


def test_session_resumes_serving_the_latest_version(tmp_path) -> None:
    ctx = Context(planner_model="local:smollm2", memory_mode="none", data_dir=str(tmp_path))
    first = LearningSession(
        ctx, OnlineConfig(batch_questions=1), deps=Deps(), trainer=GatedTrainer(), served_planner=FakePlanner()
    )
    first.submit({"question": "q?", "gold_answers": ["a"]}, result())
    assert first.learner.drain(30)
    first.close()
    planner, trainer = FakePlanner(), GatedTrainer()
    second = LearningSession(
        ctx, OnlineConfig(batch_questions=1), deps=Deps(), trainer=trainer, served_planner=planner, start=False
    )
    assert second.served_version == "v0001" and planner.adapters[-1].name == "v0001"
    assert trainer.resets and trainer.resets[-1].name == "v0001"


def test_eval_factory_builds_a_learning_runner_and_says_memory_only(tmp_path, capsys) -> None:
    from mia.app.evaluation.harness import EvalConfig, graph_runner_factory

    spec = "openai-compatible:some-model@http://127.0.0.1:9/v1"
    cfg = EvalConfig(
        models={r: spec for r in ("planner", "executor", "manager", "judge")},
        memory_mode="none",
        test_time_learning=True,
        ground_truth=False,
        namespace="ns",
    )
    config = {**cfg.model_dump(), "models": cfg.resolved_models(), "data_dir": str(tmp_path)}
    runner = graph_runner_factory(config, "distractor")
    try:
        assert isinstance(runner, LearningRunner) and not runner.ground_truth
        assert runner.session.context.judge_mode == "reviewers"
        assert "memory-only" in capsys.readouterr().out
    finally:
        runner.close()


def test_cli_rejects_no_ground_truth_without_test_time_learning(tmp_path) -> None:
    from typer.testing import CliRunner

    from mia.app.cli import app

    result = CliRunner().invoke(app, ["eval", "--n", "1", "--no-ground-truth", "--out", str(tmp_path / "run")])
    assert result.exit_code == 1 and "only applies with --test-time-learning" in result.output


def test_eval_online_settings_reach_the_learner_and_bad_ones_are_refused_first(tmp_path) -> None:
    """`mia eval --online KEY=VALUE` sets the learner (its batch, its dtype); a typo, a setting
    without --test-time-learning or a bad value stops the command before any question runs."""
    from typer.testing import CliRunner

    from mia.app.cli import app
    from mia.app.evaluation.harness import EvalConfig, graph_runner_factory
    from mia.app.evaluation.learning import LearningRunner

    spec = "openai-compatible:some-model@http://127.0.0.1:9/v1"
    cfg = EvalConfig(
        models={r: spec for r in ("planner", "executor", "manager", "judge")},
        memory_mode="none",
        test_time_learning=True,
        namespace="ns",
        online={"batch_questions": 8, "dtype": "bfloat16"},
    )
    config = {**cfg.model_dump(), "models": cfg.resolved_models(), "data_dir": str(tmp_path)}
    runner = graph_runner_factory(config, "distractor")
    try:
        assert isinstance(runner, LearningRunner)
        assert (runner.session.cfg.batch_questions, runner.session.cfg.dtype) == (8, "bfloat16")
    finally:
        runner.close()
    cases = {
        ("--test-time-learning", "--online", "batch_size=8"): "unknown test-time learning setting(s) batch_size",
        ("--test-time-learning", "--online", "dtype=float8"): "dtype must be auto, float32, bfloat16, float16",
        ("--test-time-learning", "--online", "rollouts"): "--online expects KEY=VALUE",
        ("--online", "rollouts=4"): "only apply with --test-time-learning",
    }
    for args, message in cases.items():
        out = tmp_path / "bad"
        result = CliRunner().invoke(app, ["eval", "--n", "1", *args, "--out", str(out)])
        assert result.exit_code != 0 and message in " ".join(result.output.split()), result.output
        assert not out.exists()


def test_start_learning_for_the_agent_commands(tmp_path) -> None:
    from mia.training.online.cli import finish_learning, start_learning

    said: list[str] = []
    ctx = Context(planner_model="anthropic:claude-x", memory_mode="none", data_dir=str(tmp_path))
    # as `mia ask --learn`: the learner idles while the question is answered, then learns what is pending
    session = start_learning(ctx, ground_truth=False, echo=said.append, batch_questions=1, start=False)
    assert session.context.judge_mode == "reviewers" and "memory-only" in said[0]
    session.submit({"question": "q?"}, result(judgement=verdict("correct")))
    assert not session.learner.alive and session.learner.queue.cursor() == 0
    finish_learning(session, echo=said.append)
    assert session.learner.queue.cursor() == 1 and "Learning from 1 pending episodes" in said[1]


def test_each_namespace_has_its_own_queue_and_adapter_history(tmp_path) -> None:
    """Defect 12.6: one tenant's answers never train, or roll back, another tenant's planner."""
    import pytest

    sessions = {}
    for ns in ("alice", "bob"):
        ctx = Context(planner_model="local:smollm2", memory_mode="none", data_dir=str(tmp_path), namespace=ns)
        sessions[ns] = LearningSession(
            ctx,
            OnlineConfig(batch_questions=2),
            deps=Deps(),
            trainer=GatedTrainer(),
            served_planner=FakePlanner(),
            start=False,
        )
    alice, bob = sessions["alice"], sessions["bob"]
    assert alice.folder != bob.folder and alice.registry.root != bob.registry.root
    out = result("Capital of France?", "Paris", "1. search", verdict("correct", "", "Paris"))
    alice.submit({"question": "Capital of France?", "gold_answers": ["Paris"]}, out)
    assert len(alice.learner.queue.pending()) == 1 and bob.learner.queue.pending() == []
    assert alice.learner.queue.pending()[0].namespace == "alice"
    carol = LearningSession(  # a name the store accepts has a folder too (":" once failed --learn)
        Context(planner_model="local:smollm2", memory_mode="none", data_dir=str(tmp_path), namespace="users:carol"),
        OnlineConfig(),
        deps=Deps(),
        trainer=GatedTrainer(),
        served_planner=FakePlanner(),
        start=False,
    )
    assert carol.folder.name == "users%3Acarol" and carol.folder.parent == alice.folder.parent
    with pytest.raises(ValueError, match="invalid namespace"):
        LearningSession(
            Context(planner_model="local:smollm2", memory_mode="none", data_dir=str(tmp_path), namespace="../escape"),
            OnlineConfig(),
            deps=Deps(),
            trainer=GatedTrainer(),
            served_planner=FakePlanner(),
            start=False,
        )


def test_learning_session_leaves_memory_credit_to_the_learner(tmp_path) -> None:
    """Defect 12.7: under test-time learning the shown memories are credited once per question
    (by the memory loop, from the rollouts), so the graph does not credit them too."""
    ctx = Context(planner_model="local:smollm2", memory_mode="mia", data_dir=str(tmp_path))
    assert ctx.credit_used_memories
    session = LearningSession(
        ctx,
        OnlineConfig(batch_questions=2),
        deps=Deps(store_factory=lambda path: object()),
        trainer=GatedTrainer(),
        served_planner=FakePlanner(),
        start=False,
    )
    assert session.parametric and session.learner.memory_loop is not None
    assert session.context.credit_used_memories is False
