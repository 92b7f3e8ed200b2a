"""Recorded episodes -> training data: the memory-to-weights half of MIA's bidirectional loop.

The memory keeps every episode in an append-only trajectory log (`trajectories.jsonl`). Here it
becomes:
- GRPO questions (`examples_from_trajectory_log`): each judged question, with its gold answers,
  or, lacking those, the answer the judge accepted; its search sandbox is what the agent read
  (the observations), so the question can be replayed offline;
- plan preference pairs (`plan_preference_pairs`): per question, a plan that led to a correct
  answer (chosen) against one that did not (rejected), for DPO-style training or inspection;
- supervised rows (`correct_plan_rows`): the planner prompt with a plan that worked.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mia.memory.trajectory_log import TrajectoryLog
from mia.training.examples import QAExample
from mia.training.prompts import planner_messages


def read_trajectories(path: str | Path, namespace: str | None = None) -> list[Any]:
    """Every readable trajectory of a log (torn or damaged lines are skipped by the memory layer)."""
    path = Path(path).expanduser()
    if path.is_dir():
        path = path / "trajectories.jsonl"
    log = TrajectoryLog(path)
    if not log.exists():
        raise FileNotFoundError(f"trajectory log not found: {path}")
    return list(log.read(namespace))


def _observations(trajectory: Any) -> list[dict[str, str]]:
    paragraphs = []
    for i, step in enumerate(trajectory.steps):
        if step.kind == "observation" and step.content.strip():
            paragraphs.append({"title": f"observation {i}", "text": step.content.strip()})
    return paragraphs


def examples_from_trajectories(trajectories: Iterable[Any], only_correct: bool = False) -> list[QAExample]:
    """One QAExample per judged question (deduplicated by question; gold answers preferred)."""
    by_question: dict[str, QAExample] = {}
    for traj in trajectories:
        if traj.outcome == "unknown" or (only_correct and traj.outcome != "correct"):
            continue
        golds = [g for g in traj.gold_answers if g.strip()]
        if not golds and traj.outcome == "correct" and traj.answer.strip():
            golds = [traj.answer.strip()]  # no ground truth: the judged-correct answer stands in
        if not golds:
            continue
        current = by_question.get(traj.question)
        paragraphs = _observations(traj)
        if current is None:
            by_question[traj.question] = QAExample(
                id=traj.id, question=traj.question, gold_answers=golds, paragraphs=paragraphs
            )
        else:
            seen = {p["text"] for p in current.paragraphs}
            current.paragraphs += [p for p in paragraphs if p["text"] not in seen]
            current.gold_answers = list(dict.fromkeys(current.gold_answers + golds))
    return [ex for ex in by_question.values() if ex.paragraphs]


def examples_from_trajectory_log(
    path: str | Path, only_correct: bool = False, namespace: str | None = None
) -> list[QAExample]:
    """`examples_from_trajectories` over a trajectory log file (or the memory folder holding it)."""
    return examples_from_trajectories(read_trajectories(path, namespace), only_correct=only_correct)


def plan_preference_pairs(trajectories: Iterable[Any], max_words: int | None = None) -> list[dict[str, Any]]:
    """{prompt, chosen, rejected} per question with both a correct and an incorrect plan (the
    paper's plan-pair memory, as training data). The shortest correct plan is chosen."""
    groups: dict[str, dict[str, list[str]]] = defaultdict(lambda: {"correct": [], "incorrect": []})
    for traj in trajectories:
        if traj.plan.strip() and traj.outcome in ("correct", "incorrect"):
            groups[traj.question][traj.outcome].append(traj.plan.strip())
    pairs = []
    for question, plans in groups.items():
        if plans["correct"] and plans["incorrect"]:
            pairs.append(
                {
                    "prompt": planner_messages(question, max_words=max_words),
                    "chosen": min(plans["correct"], key=len),
                    "rejected": plans["incorrect"][0],
                    "question": question,
                }
            )
    return pairs


def correct_plan_rows(trajectories: Iterable[Any], max_words: int | None = None) -> list[dict[str, Any]]:
    """Conversational SFT rows (planner prompt + a plan that led to a correct answer)."""
    rows = []
    for traj in trajectories:
        if traj.outcome == "correct" and traj.plan.strip():
            rows.append(
                {
                    "messages": planner_messages(traj.question, max_words=max_words)
                    + [{"role": "assistant", "content": traj.plan.strip()}]
                }
            )
    return rows
