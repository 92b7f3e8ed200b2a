"""The frozen executor of test-time learning's rollouts: who carries out the n sampled plans.

Two ways, one interface (`play`):

- `ReactRollouts`: training's ReAct loop on a transformers model (the learner's own frozen copy),
  the n plans played in lockstep with one batched generation per turn. For executors that are
  transformers models anyway (`local:`, `hf:`).
- `GraphRollouts`: the graph itself with a preset plan (no memory, no reflection, no judge), on
  the executor role's own model. For the default, an executor served by llama.cpp: the rollouts
  run on its parallel slots at once, with its prompt cache and the protocol's turn grammar, at
  llama.cpp's speed rather than fp32 transformers'. On a 2-core CPU, transformers generates
  Qwen-1.5B at about 2 tokens/s against 12.6 for llama.cpp (bench/models/results.md), so this is
  what makes test-time learning on the Qwen default affordable there.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

log = logging.getLogger(__name__)


@dataclass
class Played:
    """What the executor did with one plan."""

    answer: str | None
    turns: list[str] = field(default_factory=list)  # the executor's turns, as it wrote them
    observations: list[str] = field(default_factory=list)  # the tool result after each call
    tool_calls: int = 0


class RolloutExecutor(Protocol):
    def play(self, question: str, plans: Sequence[str], paragraphs: Sequence[dict[str, str]]) -> list[Played | None]:
        """One result per plan, in order; None for a rollout that broke (it earns no answer)."""
        ...


class ReactRollouts:
    """Training's ReAct loop (`training.react.ReactRunner`) on a transformers model."""

    def __init__(self, react: Any) -> None:
        self.react = react

    def play(self, question: str, plans: Sequence[str], paragraphs: Sequence[dict[str, str]]) -> list[Played | None]:
        from mia.training.prompts import executor_messages

        messages = [executor_messages(question, plan) for plan in plans]
        try:
            episodes = self.react.run_many(messages, [paragraphs] * len(plans), sample=False)
        except Exception as exc:  # noqa: BLE001 - one broken rollout must not take its group down
            log.warning("batched rollouts failed (%s); playing them one by one", exc)
            episodes = [self._one(m, paragraphs) for m in messages]
        return [
            None if ep is None else Played(ep.answer, list(ep.turns), list(ep.observations), ep.tool_calls)
            for ep in episodes
        ]

    def _one(self, messages: list[dict[str, str]], paragraphs: Sequence[dict[str, str]]) -> Any:
        try:
            return self.react.run_many([messages], [paragraphs], sample=False)[0]
        except Exception as exc:  # noqa: BLE001
            log.warning("rollout failed: %s", exc)
            return None


def played_from_result(result: Any) -> Played:
    """A graph run as the rollout it was: the executor's turns (thought, then the call or the
    answer) and the observation after each call."""
    from mia.graph.protocol import render_call

    turns: list[str] = []
    observations: list[str] = []
    thought = ""
    for step in result.steps:
        if step.kind == "thought":
            thought = f"<think>{step.content.strip()}</think>\n"
        elif step.kind == "tool_call":
            turns.append(thought + render_call(step.tool or "search", step.args or {}))
            thought = ""
        elif step.kind == "observation":
            observations.append(step.content)
        elif step.kind == "answer":
            turns.append(f"{thought}<answer>{step.content}</answer>")
            thought = ""
    return Played(result.answer or None, turns, observations, result.tool_calls)


class GraphRollouts:
    """The graph with a preset plan: memory off (the plan is given), no reflection, no judge, no
    memorising. The n plans of a question run concurrently (llama.cpp batches them on its slots).
    `context` carries the executor model and the rollout budget; `deps` lets tests inject fakes."""

    def __init__(self, context: Any, deps: Any = None, concurrency: int = 4) -> None:
        from mia.graph.builder import build_graph

        self.context = dataclasses.replace(context, memory_mode="none", judge_mode="off", memorise=False, max_replans=0)
        self.graph = build_graph(deps=deps)
        self.concurrency = max(1, int(concurrency))

    def _one(self, question: str, plan: str, paragraphs: Sequence[dict[str, str]]) -> Played | None:
        from mia.graph.result import run_question

        state = {"question": question, "plan": plan, "paragraphs": [dict(p) for p in paragraphs]}
        try:
            return played_from_result(run_question(self.graph, state, self.context))
        except Exception as exc:  # noqa: BLE001 - a broken rollout earns no answer; its group goes on
            log.warning("graph rollout failed: %s", exc)
            return None

    def play(self, question: str, plans: Sequence[str], paragraphs: Sequence[dict[str, str]]) -> list[Played | None]:
        with ThreadPoolExecutor(
            max_workers=min(self.concurrency, max(1, len(plans))), thread_name_prefix="mia-rollout"
        ) as pool:
            return list(pool.map(lambda plan: self._one(question, plan, paragraphs), plans))
