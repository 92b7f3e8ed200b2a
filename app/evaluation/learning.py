"""`mia eval --test-time-learning [--no-ground-truth]`: the evaluation harness answers through a
LearningSession, and every answered question is handed to the learner.

Each question is answered by the current planner adapter and the current memory; the learner
updates both (the paper's single-pass, on-the-fly TTRL, reference 6.1), by default between
questions (`online.schedule` "between": a question's seconds never include learning, which the
run's wall time does), or beside the answers ("background"). With
`--no-ground-truth` the graph never sees the gold answers: the reviewer panel judges the answer
(that verdict goes into memory and the reward), and the gold answers are used afterwards for the
report only (EM/F1; the judge accuracy column is left empty, since the reviewers' verdict is
not accuracy). The adapter version that served each question is in RUN/store/online/NAMESPACE/episodes.jsonl.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from dataclasses import dataclass
from typing import Any

from mia.app.evaluation.datasets import Setting
from mia.app.evaluation.runner import JudgeChoice, error_result, input_state, is_config_error, question_result
from mia.graph.models.errors import BackendError
from mia.graph.result import RunResult
from mia.training.online.config import online_config
from mia.training.online.session import LearningSession


@dataclass
class LearningRunner:
    """A harness QuestionRunner: answer with the session's graph, then submit the episode."""

    session: LearningSession
    graph: Any
    setting: Setting
    judge: JudgeChoice
    ground_truth: bool
    config: dict[str, Any] | None = None

    def input_state(self, example: Any) -> dict[str, Any]:
        return input_state(example, self.setting, gold=self.ground_truth)

    async def __call__(self, example: Any) -> Any:
        # between questions: learn a ready batch before this one starts (not after the last answer,
        # whose row the harness logs only once this call returns: a stop or a crash during learning
        # then loses no answer, and the last batch of a run stays queued for the next session)
        await asyncio.to_thread(self.session.settle)
        start = time.perf_counter()
        state = self.input_state(example)
        version = self.session.served_version
        try:
            extra = {"config": self.config} if self.config else {}
            with self.session.answering():  # the learner waits while a question is answered
                run = RunResult.from_output(await self.graph.ainvoke(state, context=self.session.context, **extra))
        except Exception as err:  # noqa: BLE001 - as the plain runner: one bad question is a logged error
            if is_config_error(err):
                raise
            failed = error_result(example, err, time.perf_counter() - start, self.judge)
            failed.served_version = version
            return failed
        result = question_result(example, run, time.perf_counter() - start, self.judge)
        result.served_version = version
        if not self.ground_truth:  # the reviewers' verdict is a learning signal, not accuracy
            outcome = run.verdict.outcome if run.verdict is not None else None
            result.judge_correct, result.judge_grade = None, f"reviewers:{outcome}"
        await asyncio.to_thread(self.session.submit, state, run, version)
        return result

    def close(self) -> None:
        """End of the run: stop the learner (pending episodes stay queued for a resumed run)."""
        self.session.close()


def learning_runner(
    config: dict[str, Any], setting: Setting, context: Any, recursion: int | None = None, echo: Any = print
) -> LearningRunner:
    """Build the session (learner started) and its runner; prints the memory-only notice."""
    cfg = online_config(dict(config.get("online") or {}), ground_truth=bool(config.get("ground_truth", True)))
    if not cfg.ground_truth:
        context = dataclasses.replace(context, judge_mode="reviewers")
    try:
        session = LearningSession(context, cfg)
    except ValueError as err:  # the learner's settings cannot run here (a dtype this CPU lacks): stop the run
        raise BackendError(f"test-time learning: {err}") from None
    if session.notice:
        echo(session.notice)
    graph = session.graph()
    return LearningRunner(
        session=session,
        graph=graph,
        setting=setting,
        judge=config["judge"],
        ground_truth=cfg.ground_truth,
        config={"recursion_limit": recursion} if recursion else None,
    )
