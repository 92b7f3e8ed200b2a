"""What the learner does with one batch of answered questions.

`GRPOBatchTrainer`: n plans per question from the learner's planner copy, each carried out by
the frozen executor and scored (`RolloutScorer`), then one GRPO step. `MemoryOnlyTrainer`: the
fallback for planners that cannot be fine-tuned (API models, GGUF files): no weights change,
learning happens in memory only (the graph memorises every answer; the learner consolidates).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from mia.graph.prompts.builder import PLAN_STYLE
from mia.graph.protocol import PLAN_STOP
from mia.training.online.config import OnlineConfig
from mia.training.online.episodes import OnlineEpisode
from mia.training.online.rollouts import Rollout, RolloutScorer
from mia.training.online.sampling import PlanSampler
from mia.training.online.stopping import ShouldStop, check_stop

log = logging.getLogger(__name__)


@dataclass
class BatchResult:
    """Rollouts per episode id, and the update's statistics."""

    rollouts: dict[str, list[Rollout]] = field(default_factory=dict)
    stats: dict[str, float] = field(default_factory=dict)
    updated: bool = False


class BatchTrainer(Protocol):
    """The learner's seam (tests plug in fakes): learn from a batch, save and restore weights.
    `learn` polls `should_stop` and raises `LearningStopped`, so that closing the learner (Ctrl-C,
    the end of a run) waits for seconds, not for the rest of a batch (minutes on a CPU)."""

    parametric: bool

    def learn(self, episodes: Sequence[OnlineEpisode], should_stop: ShouldStop | None = None) -> BatchResult: ...

    def save(self, folder: Path) -> None: ...

    def reset_to(self, folder: Path | None) -> None: ...


class MemoryOnlyTrainer:
    """No parametric update (closed planner models): batches pass straight to the memory loop."""

    parametric = False

    def learn(self, episodes: Sequence[OnlineEpisode], should_stop: ShouldStop | None = None) -> BatchResult:
        return BatchResult(stats={"questions": float(len(episodes))})

    def save(self, folder: Path) -> None:  # pragma: no cover - never called for a non-parametric trainer
        raise RuntimeError("a memory-only learner has no weights to save")

    def reset_to(self, folder: Path | None) -> None:
        return None


class GRPOBatchTrainer:
    """n rollouts per question, then one GRPO step on the planner LoRA."""

    parametric = True

    def __init__(
        self,
        policy: Any,
        scorer: RolloutScorer,
        cfg: OnlineConfig,
        before_step: Callable[[], None] | None = None,
        plan_style: str = PLAN_STYLE,
        sampler: PlanSampler | None = None,
    ) -> None:
        self.policy, self.scorer, self.cfg = policy, scorer, cfg
        self.before_step = before_step  # tests: observe/hold the moment a GRPO step begins
        self.plan_style = plan_style  # the served planner's prompt (Context.plan_style)
        self.sampler: PlanSampler = sampler or policy.sample  # who samples the plans (sampling.py)

    def learn(self, episodes: Sequence[OnlineEpisode], should_stop: ShouldStop | None = None) -> BatchResult:
        from mia.training.prompts import planner_messages

        started = time.perf_counter()
        result = BatchResult()
        groups = []
        sample_s = 0.0
        for ep in episodes:
            check_stop(should_stop)
            messages = planner_messages(ep.question, ep.memories, self.cfg.plan_max_words, style=self.plan_style)
            sampling = time.perf_counter()
            plans = self.sampler(
                messages,
                self.cfg.rollouts,
                self.cfg.plan_max_tokens,
                self.cfg.temperature,
                should_stop=should_stop,
                stop=PLAN_STOP,
            )
            sample_s += time.perf_counter() - sampling
            check_stop(should_stop)  # a sampling cut short by the stop is not a group to score
            rollouts = self.scorer.score_group(ep, plans)
            result.rollouts[ep.id] = rollouts
            groups.append([(r.plan, r.reward) for r in rollouts])
        rollout_s = time.perf_counter() - started
        if self.before_step is not None:
            self.before_step()
        check_stop(should_stop)
        stats = self.policy.grpo_step(groups, should_stop=should_stop)
        all_rollouts = [r for rs in result.rollouts.values() for r in rs]
        stats.update(
            rollout_s=round(rollout_s, 2),
            sample_s=round(sample_s, 2),
            step_s=round(time.perf_counter() - started - rollout_s, 2),
            rollout_accuracy=sum(r.outcome == "correct" for r in all_rollouts) / max(1, len(all_rollouts)),
        )
        result.stats, result.updated = stats, bool(stats.get("updated"))
        return result

    def save(self, folder: Path) -> None:
        self.policy.save(folder)

    def reset_to(self, folder: Path | None) -> None:
        self.policy.load_adapter_weights(folder)
