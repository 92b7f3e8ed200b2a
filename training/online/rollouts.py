"""Rollouts of test-time learning: n sampled plans per answered question, each carried out by the
frozen executor and scored.

With ground truth the reward is the planner stage's own (`PlannerEpisodeReward.score`: 0.7 final
+ 0.2 first + 0.05 format + 0.05 decision). Without it the reviewer panel decides
(`mia.graph.judge.judge(mode="reviewers")`: three reviewers and an arbiter) and the reward is
the paper's no-GT one, 0.9 * [arbiter says correct] + 0.1 * format (reference 6.2). The
reviewers' feedback travels with the rollout into memory.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mia.training.episodes import EpisodeOutcome
from mia.training.online.config import OnlineConfig
from mia.training.online.episodes import OnlineEpisode
from mia.training.online.policy import SampledPlan
from mia.graph.protocol import served_plan
from mia.training.rewards import CORRECT_AT, answer_accuracy, plan_format_ok, plan_reward

log = logging.getLogger(__name__)


@dataclass
class Rollout:
    """One plan, what the executor did with it, and its score."""

    plan: SampledPlan
    answer: str | None
    outcome: str  # correct | incorrect | unknown (the reviewers could not decide)
    reward: float
    turns: list[str] = field(default_factory=list)
    observations: list[str] = field(default_factory=list)
    tool_calls: int = 0
    feedback: str = ""
    accuracy: float | None = None
    trajectory: Any = None  # the memory Trajectory the episode made itself (a graph episode), if any

    @property
    def trace(self) -> str:
        parts = []
        for i, turn in enumerate(self.turns):
            parts.append(turn.strip())
            if i < len(self.observations):
                parts.append(f"Observation: {self.observations[i]}")
        return "\n".join(parts)

    @property
    def length(self) -> int:
        """The paper keeps the correct rollout with the fewest messages: turns, then characters."""
        if self.trajectory is not None:
            return len(self.trajectory.steps) * 100_000 + len(self.trajectory.to_trace_text())
        return len(self.turns) * 100_000 + len(self.trace)


class RolloutScorer:
    """Runs plans with a frozen executor (`executors.RolloutExecutor`) and scores them. A bare
    `ReactRunner` (anything with `run_many`) is wrapped as training's ReAct loop."""

    def __init__(self, executor: Any, cfg: OnlineConfig, judge_model: Any = None) -> None:
        if not cfg.ground_truth and judge_model is None:
            raise ValueError("learning without ground truth needs a judge model for the reviewer panel")
        if not hasattr(executor, "play"):
            from mia.training.online.executors import ReactRollouts

            executor = ReactRollouts(executor)
        self.executor, self.cfg, self.judge_model = executor, cfg, judge_model

    def run(self, episode: OnlineEpisode, plan: SampledPlan) -> Rollout:
        """One plan carried out and scored (see `score_group`)."""
        return self.score_group(episode, [plan])[0]

    def score_group(self, episode: OnlineEpisode, plans: Sequence[SampledPlan]) -> list[Rollout]:
        """All n plans of a question carried out together (batched by the executor), then scored.
        A rollout that broke earns at most its plan's format credit; its group goes on."""
        played = self.executor.play(
            episode.question, [served_plan(plan.text, episode.question) for plan in plans], episode.paragraphs
        )
        return [self._score(episode, plan, ep) for plan, ep in zip(plans, played, strict=True)]

    def _score(self, episode: OnlineEpisode, plan: SampledPlan, ep: Any) -> Rollout:
        if ep is None:
            rollout = Rollout(plan=plan, answer=None, outcome="incorrect", reward=0.0)
        else:
            rollout = Rollout(
                plan=plan,
                answer=ep.answer,
                outcome="incorrect",
                reward=0.0,
                turns=list(ep.turns),
                observations=list(ep.observations),
                tool_calls=ep.tool_calls,
            )
        use_gt = self.cfg.ground_truth and bool(episode.gold_answers)
        return self._score_gt(episode, rollout) if use_gt else self._score_reviewers(episode, rollout)

    def _score_gt(self, episode: OnlineEpisode, rollout: Rollout) -> Rollout:
        acc = answer_accuracy(rollout.answer, episode.gold_answers, self.cfg.metric)
        outcome = EpisodeOutcome(
            answer=rollout.answer,
            first_answer=rollout.answer,
            acc_first=acc,
            acc_final=acc,
            tool_calls=rollout.tool_calls,
            trace=rollout.trace,
        )
        rollout.reward = plan_reward(rollout.plan.text, outcome, self.cfg.weights)
        rollout.accuracy = acc
        rollout.outcome = "correct" if acc >= CORRECT_AT else "incorrect"
        rollout.feedback = f"Graded against the gold answer(s): {self.cfg.metric} {acc:.2f}."
        return rollout

    def _score_reviewers(self, episode: OnlineEpisode, rollout: Rollout) -> Rollout:
        verdict = review(self.judge_model, episode.question, rollout.answer or "", rollout.trace)
        # an unknown verdict (a split panel, a failed judge) stays unknown: no reward, and never a
        # negative memory (issue 38)
        rollout.outcome = verdict.outcome if verdict.outcome in ("correct", "incorrect") else "unknown"
        rollout.feedback = verdict.feedback
        fmt = plan_format_ok(rollout.plan.text)
        w = self.cfg.nogt_verdict_weight
        rollout.reward = w * float(rollout.outcome == "correct") + (1.0 - w) * float(fmt)
        return rollout


def review(model: Any, question: str, answer: str, trace: str) -> Any:
    """The reviewer panel's verdict (never raises for a misbehaving model: the judge records a
    fallback; an unexpected error becomes an 'unknown' verdict that earns no reward)."""
    from mia.graph.judge import Verdict, judge

    try:
        return judge(model, question, answer, trace_text=trace or None, gold_answers=None, mode="reviewers")
    except Exception as exc:  # noqa: BLE001 - learning must survive a broken judge
        log.warning("reviewer panel failed: %s", exc)
        return Verdict(
            outcome="unknown",
            score=0.0,
            mode="reviewers",
            method="fallback",
            prediction=answer,
            feedback=f"The reviewer panel failed ({type(exc).__name__}).",
            notes=[str(exc)],
        )
