"""Episode outcomes -> planner rewards (logic with stub runners; the real runs are in test_cpu_run)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from mia.graph.result import RunResult
from mia.training.episodes import EpisodeOutcome, outcome_from_result
from mia.training.planner_stage import PlannerEpisodeReward, completion_text

GOLD = ["Gian Carlo Menotti"]


def _graph_output(first: str, final: str, replanned: bool) -> RunResult:
    steps = [
        {"kind": "tool_call", "content": "", "tool": "search", "args": {"query_list": ["Maria Golovin"]}},
        {"kind": "observation", "content": "Maria Golovin is an opera by Gian Carlo Menotti."},
        {"kind": "answer", "content": first},
    ]
    if replanned:
        steps += [
            {"kind": "reflection", "content": "yes"},
            {"kind": "replan", "content": "1. Search again."},
            {"kind": "answer", "content": final},
        ]
    else:
        steps += [{"kind": "reflection", "content": "no"}]
    traj = {
        "question": "Who wrote Maria Golovin?",
        "plan": "1. Search.",
        "steps": steps,
        "answer": final,
        "replan": "1. Search again." if replanned else "",
    }
    return RunResult.from_output(
        {"question": traj["question"], "answer": final, "trajectory": traj, "replan": traj["replan"], "tool_calls": 1}
    )


def test_outcome_from_result_reads_first_and_final_answers() -> None:
    fixed = outcome_from_result(_graph_output("Puccini", "Gian Carlo Menotti", True), GOLD, "em")
    assert (fixed.acc_first, fixed.acc_final, fixed.replanned, fixed.decision) == (0.0, 1.0, True, "yes")
    assert fixed.first_answer == "Puccini" and fixed.tool_calls == 1 and "Menotti" in fixed.trace
    kept = outcome_from_result(_graph_output("Gian Carlo Menotti", "Gian Carlo Menotti", False), GOLD, "em")
    assert (kept.acc_first, kept.acc_final, kept.replanned, kept.decision) == (1.0, 1.0, False, "no")
    empty = outcome_from_result(RunResult.from_output({"question": "Q?", "answer": ""}), GOLD, "f1")
    assert empty.acc_final == 0.0 and empty.answer is None


class _StubRunner:
    """Answers correctly only when the plan mentions 'opera' (a stand-in for a good plan)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def run(self, question, plan, paragraphs, gold_answers) -> EpisodeOutcome:
        self.calls.append(plan)
        ok = "opera" in plan
        answer = "Gian Carlo Menotti" if ok else "Puccini"
        return EpisodeOutcome(answer=answer, first_answer=answer, acc_first=float(ok), acc_final=float(ok))


def test_planner_episode_reward_scores_plans_by_their_outcome(tmp_path: Path) -> None:
    runner = _StubRunner()
    reward = PlannerEpisodeReward(runner, log_path=tmp_path / "rollouts.jsonl", max_words=20)
    metrics: dict[str, float] = {}
    completions = [
        [{"role": "assistant", "content": "<think>hm</think>1. Search the opera's composer."}],
        [{"role": "assistant", "content": "1. Search the singer."}],
        [{"role": "assistant", "content": "word " * 30}],
    ]
    rewards = reward(
        prompts=[None] * 3,
        completions=completions,
        question=["Who wrote Maria Golovin?"] * 3,
        gold_answers=[GOLD] * 3,
        paragraphs=[[]] * 3,
        log_metric=lambda k, v: metrics.__setitem__(k, v),
    )
    # correct first try, kept: 0.7 + 0.2 + 0.05 format + 0.05 decision
    assert rewards[0] == pytest.approx(1.0)
    # wrong, no replan: format only (the decision not to replan was wrong)
    assert rewards[1] == pytest.approx(0.05)
    assert rewards[2] == pytest.approx(0.0)  # over the word limit: format fails too
    assert runner.calls[0] == "1. Search the opera's composer."  # think stripped before execution
    assert metrics["episode/acc_final"] == pytest.approx(1 / 3)
    logged = [json.loads(line) for line in (tmp_path / "rollouts.jsonl").read_text().splitlines()]
    assert [r["reward"] for r in logged] == pytest.approx(rewards)


def test_the_episode_runs_the_plan_as_serving_keeps_it() -> None:
    """A sampled plan that replays a transcript is run cut, as the served planner's would be
    (graph.protocol.cut_plan_overrun), so training's executor never sees what serving drops."""
    runner = _StubRunner()
    reward = PlannerEpisodeReward(runner, max_words=20)
    overrun = "1. Search the opera's composer.\n\nRound 1\nTool call: search(...)\nTool result: Doc 1 ..."
    rewards = reward(
        prompts=[None],
        completions=[[{"role": "assistant", "content": overrun}]],
        question=["Who wrote Maria Golovin?"],
        gold_answers=[GOLD],
        paragraphs=[[]],
    )
    assert runner.calls == ["1. Search the opera's composer."]
    assert rewards[0] == pytest.approx(1.0)


class _SlowRunner(_StubRunner):
    """The stub, but each episode waits until `width` episodes run at once (or times out)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.barrier = threading.Barrier(width, timeout=5)
        self.threads: set[str] = set()

    def run(self, question, plan, paragraphs, gold_answers) -> EpisodeOutcome:
        self.threads.add(threading.current_thread().name)
        self.barrier.wait()  # raises BrokenBarrierError when the episodes run one at a time
        return super().run(question, plan, paragraphs, gold_answers)


def test_parallel_episodes_run_together_and_keep_the_order(tmp_path: Path) -> None:
    """parallel=4: the four rollouts of a question run at once (a llama.cpp executor batches them
    on its slots), and rewards and log lines stay in the completions' order."""
    runner = _SlowRunner(width=4)
    reward = PlannerEpisodeReward(runner, log_path=tmp_path / "rollouts.jsonl", max_words=20, parallel=4)
    plans = ["1. Search the opera.", "1. Search the singer.", "1. Search the opera's composer.", "1. Search x."]
    rewards = reward(
        prompts=[None] * 4,
        completions=[[{"role": "assistant", "content": p}] for p in plans],
        question=["Who wrote Maria Golovin?"] * 4,
        gold_answers=[GOLD] * 4,
        paragraphs=[[]] * 4,
    )
    assert rewards == pytest.approx([1.0, 0.05, 1.0, 0.05])
    assert len(runner.threads) == 4
    logged = [json.loads(line) for line in (tmp_path / "rollouts.jsonl").read_text().splitlines()]
    assert [r["plan"] for r in logged] == plans


def test_completion_text_accepts_both_formats() -> None:
    assert completion_text("plain") == "plain"
    assert completion_text([{"role": "assistant", "content": "chat"}]) == "chat"
    assert completion_text([]) == ""


@pytest.mark.real_model
def test_graph_backend_carries_out_a_preset_plan(data_dir: Path, tmp_path: Path) -> None:
    """The real graph with the real embedded model: the preset plan skips the planner node."""
    from mia.training.data import load_qa_jsonl
    from mia.training.episodes import GraphEpisodeRunner

    root = Path(__file__).resolve().parents[2]
    [ex] = load_qa_jsonl(root / "app" / "evaluation" / "datasets" / "hotpotqa.jsonl.gz", limit=1)
    runner = GraphEpisodeRunner(
        {
            "executor_model": "local:smollm2",
            "planner_model": "local:smollm2",
            "max_tool_calls": 1,
            "max_replans": 0,
            "executor_max_tokens": 24,
            "judge_mode": "off",
            "namespace": "grpo-test",
            "data_dir": str(tmp_path),
        }
    )
    outcome = runner.run(ex.question, "1. Search the opera Maria Golovin.\n2. Answer.", ex.paragraphs, ex.gold_answers)
    assert outcome.error is None, outcome.error
    assert outcome.answer and 0.0 <= outcome.acc_final <= 1.0 and outcome.replanned is False


def test_accuracy_metrics_and_judge_needs_a_model() -> None:
    from mia.training.episodes import Accuracy

    assert Accuracy("em")("q", "Gian Carlo Menotti", GOLD) == 1.0
    assert Accuracy("f1")("q", "Menotti", GOLD) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="judge model"):
        Accuracy("judge")
    # an exact answer never needs the judge model (no call is made for it)
    assert Accuracy("judge", judge_model="local:smollm2")("q", "gian carlo menotti", GOLD) == 1.0
    assert Accuracy("judge", judge_model="local:smollm2")("q", "", GOLD) == 0.0
