"""Offline training feeds memory (issue 37, item 4): the planner stage's rollouts of a question go
through the same memory loop as test-time learning, so its best right rollout and one wrong one
become memories (source "offline-rollout"), with the graph's own trajectory when it made one."""

from __future__ import annotations

from pathlib import Path

import pytest

from mia.memory import Trajectory, TrajectoryStep
from mia.training.episodes import EpisodeOutcome
from mia.training.online.memory_loop import MemoryLoop
from mia.training.planner_stage import PlannerEpisodeReward

Q = "Who wrote the opera Maria Golovin?"


class ScriptedRunner:
    """The frozen executor: answers by plan, as a graph episode would (with its trajectory)."""

    def __init__(self, answers: dict[str, str | None]) -> None:
        self.answers = answers

    def run(self, question, plan, paragraphs, gold_answers) -> EpisodeOutcome:  # type: ignore[no-untyped-def]
        answer = self.answers[plan]
        if answer is None:
            return EpisodeOutcome(None, None, 0.0, 0.0, error="RuntimeError: the executor broke")
        acc = 1.0 if answer == gold_answers[0] else 0.0
        steps = [
            TrajectoryStep(kind="tool_call", tool="search", args={"query_list": [plan]}),
            TrajectoryStep(kind="observation", content=f"{answer} wrote it."),
            TrajectoryStep(kind="answer", content=answer),
        ]
        made = Trajectory(question=question, plan=plan, steps=steps, answer=answer)
        return EpisodeOutcome(answer, answer, acc, acc, tool_calls=1, trajectory=made)


@pytest.fixture
def store(tmp_path: Path):
    from mia.memory import MemoryStore

    s = MemoryStore.open(tmp_path / "memory")
    yield s
    s.close()


def test_planner_rollouts_become_memories_through_the_memory_loop(store, tmp_path: Path) -> None:
    plans = {"1. Search the opera.": "Gian Carlo Menotti", "1. Guess.": "Puccini", "1. Break.": None}
    loop = MemoryLoop(store, tmp_path / "run", consolidate_every=0)
    reward = PlannerEpisodeReward(ScriptedRunner(plans), memory=loop, namespace="train")
    completions = [[{"role": "assistant", "content": p}] for p in plans]
    rewards = reward([None] * 3, completions, [Q] * 3, [["Gian Carlo Menotti"]] * 3, [[]] * 3)
    assert rewards[0] > rewards[1]
    kept = store.list(namespace="train")
    by_outcome = {m.outcome: m for m in kept}
    assert len(kept) == 2 and set(by_outcome) == {"correct", "incorrect"}  # the broken rollout is not stored
    assert by_outcome["correct"].plan == "1. Search the opera." and by_outcome["incorrect"].plan == "1. Guess."
    logged = {t.plan: t for t in store.trajectory_log.read("train")}
    assert logged["1. Search the opera."].source == "offline-rollout"
    assert [s.kind for s in logged["1. Search the opera."].steps] == ["tool_call", "observation", "answer"]
    pair = loop.plan_pairs()[0]
    assert pair["correct_plan"] == "1. Search the opera." and pair["incorrect_plan"] == "1. Guess."
