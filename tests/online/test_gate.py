"""Answers first (issue 37): with the `between` schedule the learner does no unit of work while a
question is answered, resumes when it ends, still closes promptly, and an evaluation learns each
ready batch between questions; `background` keeps the old overlap."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence

import pytest

from mia.graph.context import Context
from mia.graph.nodes.deps import Deps
from mia.training.online import LearningSession, OnlineConfig
from mia.training.online.episodes import OnlineEpisode
from mia.training.online.gate import AnswerGate
from mia.training.online.learner import OnlineLearner
from mia.training.online.registry import AdapterRegistry
from mia.training.online.stopping import ShouldStop, check_stop
from mia.training.online.trainer import BatchResult
from tests.online.fakes import episode, write_fake_adapter
from tests.online.test_learner import wait_for


class UnitTrainer:
    """A batch of `units` small units, each after the stop check, as the real trainer's tokens,
    rollout groups and backward passes; records when each unit ran."""

    parametric = True

    def __init__(self, units: int = 20) -> None:
        self.units = units
        self.ran: list[float] = []

    def learn(self, episodes: Sequence[OnlineEpisode], should_stop: ShouldStop | None = None) -> BatchResult:
        for _ in range(self.units):
            check_stop(should_stop)
            self.ran.append(time.monotonic())
            time.sleep(0.005)
        return BatchResult(rollouts={}, stats={"updated": 1.0}, updated=True)

    def save(self, folder) -> None:
        write_fake_adapter(folder)

    def reset_to(self, folder) -> None:
        pass


def learner_with(tmp_path, trainer, gate: AnswerGate | None) -> OnlineLearner:
    reg = AdapterRegistry(tmp_path / "adapters")
    return OnlineLearner(tmp_path / "online", trainer, reg, batch_questions=2, poll_s=0.05, gate=gate)


def test_the_gate_blocks_only_while_a_question_is_in_flight() -> None:
    gate = AnswerGate()
    started = time.monotonic()
    gate.wait_idle()  # idle: returns at once
    assert time.monotonic() - started < 0.1
    released = threading.Event()

    def waiter() -> None:
        gate.wait_idle(poll_s=0.01)
        released.set()

    with gate.answering():
        with gate.answering():  # two questions in flight (an async server)
            t = threading.Thread(target=waiter)
            t.start()
            assert not released.wait(0.2)
        assert not released.wait(0.1), "one question is still in flight"
    assert released.wait(5) and gate.waited_s > 0.2
    stop = threading.Event()
    with gate.answering():
        stop.set()
        gate.wait_idle(stop)  # a closing learner never waits on an answer


def test_between_the_learner_runs_no_unit_while_a_question_is_answered(tmp_path) -> None:
    gate = AnswerGate()
    trainer = UnitTrainer()
    learner = learner_with(tmp_path, trainer, gate).start()
    try:
        with gate.answering():
            answer_started = time.monotonic()
            learner.submit(episode(0))
            learner.submit(episode(1))  # a batch is ready while the question is answered
            time.sleep(0.4)
            answer_ended = time.monotonic()
        assert wait_for(lambda: len(trainer.ran) == trainer.units)
    finally:
        learner.close()
    assert not [t for t in trainer.ran if answer_started <= t <= answer_ended], "a unit ran during the answer"
    assert learner.registry.current == "v0001"
    waited = learner.events[-1].stats["waited_for_answers_s"]  # learner.jsonl says how long it gave way
    assert 0.2 < waited < answer_ended - answer_started + 1.0


def test_background_overlaps_and_a_waiting_learner_still_closes(tmp_path) -> None:
    trainer = UnitTrainer()
    learner = learner_with(tmp_path / "background", trainer, None).start()
    gate = AnswerGate()
    try:
        with gate.answering():  # no gate given to this learner: it learns beside the answer
            learner.submit(episode(0))
            learner.submit(episode(1))
            assert wait_for(lambda: len(trainer.ran) == trainer.units)
    finally:
        learner.close()
    waiting = learner_with(tmp_path / "between", UnitTrainer(), gate).start()
    with gate.answering():
        waiting.submit(episode(0))
        waiting.submit(episode(1))
        time.sleep(0.2)
        started = time.monotonic()
        assert waiting.close(timeout=10) and time.monotonic() - started < 5
    assert waiting.queue.cursor() == 0  # the stopped batch stays pending


def test_the_eval_runner_learns_each_ready_batch_between_questions(tmp_path) -> None:
    from mia.app.evaluation.learning import LearningRunner
    from tests.online.test_session import FakeGraph, FakePlanner, _example

    ctx = Context(planner_model="local:smollm2", memory_mode="none", data_dir=str(tmp_path))
    trainer = UnitTrainer(units=5)
    session = LearningSession(
        ctx, OnlineConfig(batch_questions=2), deps=Deps(), trainer=trainer, served_planner=FakePlanner()
    )
    runner = LearningRunner(session=session, graph=FakeGraph(), setting="distractor", judge="llm", ground_truth=True)
    try:
        served = [asyncio.run(runner(_example(i))).served_version for i in range(4)]
    finally:
        session.close()
    # settle() before each question: the batch of questions 0-1 is learned before question 2 is asked
    assert served == ["base", "base", "v0001", "v0001"]
    # and never after an answer, before its row is logged: the last answer returned with its batch
    # (questions 2-3) still queued, so a stop or a crash while learning loses no answer
    assert session.registry.current == "v0001" and session.learner.queue.cursor() == 2


def test_schedule_is_checked() -> None:
    with pytest.raises(ValueError, match="schedule must be"):
        OnlineConfig(schedule="sometimes")  # type: ignore[arg-type]
