"""The parametric -> non-parametric half of the loop: a batch's rollouts become memories.

Per question (reference 6.1 and 6.5): the correct rollout with the fewest messages is stored as a
positive workflow memory and one random incorrect rollout as a negative one; when both exist
the (correct plan, incorrect plan) pair is appended to `plan_pairs.jsonl`; the win rates of the
memories the planner was shown are credited once, with the majority outcome of the rollouts. A
rollout the reviewers could not decide (`unknown`) is neither lesson and credits nothing.
Every `consolidate_every` batches the store merges near-duplicates and enforces its bounds.
Without ground truth the reviewers' feedback is stored in the memory record (`judge_feedback`).
"""

from __future__ import annotations

import json
import logging
import os
import random
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mia.training.online.episodes import OnlineEpisode
from mia.training.online.rollouts import Rollout

log = logging.getLogger(__name__)
PLAN_PAIRS_FILE = "plan_pairs.jsonl"


def rollout_trajectory(episode: OnlineEpisode, rollout: Rollout, source: str = "online-rollout") -> Any:
    """A rollout as a memory `Trajectory` (plan, executor turns and observations, verdict); a
    rollout that carries the graph's own trajectory keeps its steps."""
    from mia.memory import Trajectory, TrajectoryStep

    verdict = {
        "namespace": episode.namespace,
        "question": episode.question,
        "plan": rollout.plan.text,
        "answer": rollout.answer or "",
        "outcome": rollout.outcome,
        "judge_feedback": rollout.feedback,
        "gold_answers": list(episode.gold_answers),
        "used_memory_ids": list(episode.used_memory_ids),
        "source": source,
    }
    if rollout.trajectory is not None:
        return rollout.trajectory.model_copy(update=verdict)

    steps = []
    for i, turn in enumerate(rollout.turns):
        steps.append(TrajectoryStep(kind="thought", content=turn.strip()))
        if i < len(rollout.observations):
            steps.append(TrajectoryStep(kind="observation", content=rollout.observations[i], tool="search"))
    steps.append(TrajectoryStep(kind="answer", content=rollout.answer or ""))
    return Trajectory(steps=steps, **verdict)


class MemoryLoop:
    """Writes each batch's best and worst rollouts to the memory store (see the module docstring)."""

    def __init__(
        self, store: Any, folder: str | Path, *, compressor: Any = None, consolidate_every: int = 2, seed: int = 0
    ) -> None:
        self.store, self.compressor = store, compressor
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.pairs_path = self.folder / PLAN_PAIRS_FILE
        self.consolidate_every = consolidate_every
        self.rng = random.Random(seed)
        self.batches = 0
        self._lock = threading.Lock()

    def absorb(
        self, episode: OnlineEpisode, rollouts: Sequence[Rollout], source: str = "online-rollout"
    ) -> dict[str, Any]:
        """Store one question's positive/negative rollouts and plan pair; credit win rates."""
        correct = [r for r in rollouts if r.outcome == "correct"]
        wrong = [r for r in rollouts if r.outcome == "incorrect"]  # an unknown one is neither lesson
        best = min(correct, key=lambda r: r.length) if correct else None
        worst = self.rng.choice(wrong) if wrong else None
        stored: dict[str, Any] = {"positive": None, "negative": None, "pair": False}
        for key, rollout in (("positive", best), ("negative", worst)):
            if rollout is None:
                continue
            try:
                stored[key] = self._store(rollout_trajectory(episode, rollout, source))
            except Exception as exc:  # noqa: BLE001 - memory trouble must not stop learning
                log.warning("could not store the %s rollout: %s", key, exc)
        if episode.used_memory_ids and (correct or wrong):
            try:  # the paper credits the shown memories once, with the majority outcome
                self.store.update_stats(episode.used_memory_ids, success=len(correct) > len(wrong))
            except Exception as exc:  # noqa: BLE001
                log.warning("could not update win rates: %s", exc)
        if best is not None and worst is not None:
            self._append_pair(
                {
                    "question": episode.question,
                    "namespace": episode.namespace,
                    "correct_plan": best.plan.text,
                    "incorrect_plan": worst.plan.text,
                    "correct_answer": best.answer,
                    "incorrect_answer": worst.answer,
                    "incorrect_feedback": worst.feedback,
                    "episode_id": episode.id,
                    "created_at": time.time(),
                }
            )
            stored["pair"] = True
        return stored

    def _store(self, trajectory: Any) -> str:
        """Log, compress and add one rollout *without* the store's write-time dedup: the
        positive and the negative of one question are near-duplicates by construction (same
        question) and the paper keeps both (consolidation later applies the store's policy)."""
        from mia.memory.compression import CompressionResult, extractive_workflow
        from mia.memory.store import record_from_trajectory

        self.store.log_trajectory(trajectory)
        result = (
            self.compressor.compress(trajectory)
            if self.compressor is not None
            else CompressionResult(extractive_workflow(trajectory), "extractive")
        )
        return self.store.add(record_from_trajectory(trajectory, result)).id

    def _append_pair(self, pair: dict[str, Any]) -> None:
        with self._lock, self.pairs_path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(pair, ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def plan_pairs(self) -> list[dict[str, Any]]:
        """Every stored (correct plan, incorrect plan) pair."""
        if not self.pairs_path.is_file():
            return []
        out = []
        for line in self.pairs_path.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return out

    def end_batch(self, namespace: str | None = None) -> dict[str, Any] | None:
        """Count the batch; consolidate the store every `consolidate_every` batches."""
        self.batches += 1
        if not self.consolidate_every or self.batches % self.consolidate_every:
            return None
        try:
            return self.store.consolidate(namespace)
        except Exception as exc:  # noqa: BLE001
            log.warning("memory consolidation failed: %s", exc)
            return {"error": str(exc)}
