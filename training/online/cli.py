"""`--learn` for `mia ask` and `mia chat`: the glue the agent commands call (kept here so the
commands only gain a few lines).

`mia ask --learn`: the answer is shown first; then, if a batch of episodes is pending (this one
plus earlier ones, the queue is durable across invocations), the learner takes its GRPO step
before the process exits, with a message. `mia chat --learn`: the learner runs in the
background for the whole chat and learns while the user reads and types.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mia.training.online.config import OnlineConfig
from mia.training.online.session import LearningSession


def start_learning(
    context: Any,
    ground_truth: bool,
    echo: Callable[[str], None] = print,
    batch_questions: int = 4,
    start: bool = True,
) -> LearningSession:
    """A LearningSession for the agent commands; says when learning is memory-only. Without
    gold answers the reviewer panel judges (judge_mode reviewers) and its verdict is the reward.
    `start=False` (ask) leaves the learner idle until `finish_learning`: one question's answer
    gains nothing from a learner beside it, and what is pending at the end is then known."""
    import dataclasses

    if not ground_truth and context.judge_mode in ("auto", "ground_truth"):
        context = dataclasses.replace(context, judge_mode="reviewers")
    if context.judge_mode == "off":
        echo("Test-time learning needs a verdict: --judge-mode off gives none, so nothing will be learned.")
    session = LearningSession(
        context, OnlineConfig(ground_truth=ground_truth, batch_questions=batch_questions), start=start
    )
    if session.notice:
        echo(session.notice)
    else:
        echo(
            f"Test-time learning on: planner adapter {session.served_version} "
            f"(a GRPO update every {batch_questions} answered questions, adapters in "
            f"{session.registry.root})."
        )
    return session


def finish_learning(session: LearningSession, echo: Callable[[str], None] = print, wait: bool = True) -> None:
    """End of a command: learn from a full pending batch (ask), or just stop (chat)."""
    pending = len(session.learner.queue.pending())
    if wait and pending >= session.cfg.batch_questions:
        echo(f"Learning from {pending} pending episodes before exiting (the answer is already given)...")
        session.learner.start()  # idle until now for ask (start_learning start=False); running for chat
        session.close(drain=True)
        echo(f"Planner adapter now {session.registry.current}.")
    else:
        session.close()
        if pending:
            echo(f"{pending} episode(s) queued for the next update ({session.cfg.batch_questions} per update).")
