"""The learner thread's logic with a fake trainer: answers never wait on a training step, the
adapter version changes during a run, failures are survived, rollback swaps the served adapter."""

from __future__ import annotations

import threading
import time

from mia.training.online.learner import OnlineLearner
from mia.training.online.registry import BASE, AdapterRegistry, RollbackPolicy
from tests.online.fakes import GatedTrainer, SwapRecorder, episode


def wait_for(predicate, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False


def make(tmp_path, trainer, k=2, policy=None, loop=None):
    swaps = SwapRecorder()
    reg = AdapterRegistry(tmp_path / "adapters", policy)
    learner = OnlineLearner(
        tmp_path / "online", trainer, reg, batch_questions=k, on_swap=swaps, memory_loop=loop, poll_s=0.05
    )
    return learner, reg, swaps


def serve_v0001(learner, reg) -> None:
    """Two base answers at 0.9, learned into v0001 (rollback window 2: base's rolling reward 0.9)."""
    learner.submit(episode(0, reward=0.9, adapter_version=BASE))
    learner.submit(episode(1, reward=0.9, adapter_version=BASE))
    assert wait_for(lambda: reg.current == "v0001")


def test_answers_flow_while_a_training_step_is_held_open(tmp_path) -> None:
    trainer = GatedTrainer(hold=True)
    learner, reg, swaps = make(tmp_path, trainer)
    learner.start()
    try:
        learner.submit(episode(0))
        learner.submit(episode(1))
        assert trainer.entered.wait(30), "the learner never started a batch"
        assert learner.training.is_set()
        # The training step is in progress and cannot finish until we open the gate: if the
        # answer path waited on it, this loop would deadlock (and the test time out).
        served: list[str] = []
        for i in range(2, 8):
            served.append(reg.current)  # what the answer path reads to tag its episode
            learner.submit(episode(i, adapter_version=reg.current))
        assert learner.training.is_set() and not trainer.steps, "answers completed while the step was held"
        assert served == [BASE] * 6
        trainer.gate.set()
        assert wait_for(lambda: reg.current == "v0004"), reg.current  # 8 episodes / K=2 = 4 updates
        assert learner.drain(30)
    finally:
        learner.close()
    assert trainer.batches == [["e0", "e1"], ["e2", "e3"], ["e4", "e5"], ["e6", "e7"]]
    assert [v for _, v in swaps.swaps] == ["v0001", "v0002", "v0003", "v0004"]
    assert all((f / "mia_adapter.json").is_file() for f, _ in swaps.swaps)
    assert learner.queue.cursor() == 8


def test_a_failing_step_is_retried_then_skipped_and_the_thread_survives(tmp_path) -> None:
    trainer = GatedTrainer(fail_times=1)
    learner, reg, _ = make(tmp_path, trainer)
    learner.start()
    try:
        learner.submit(episode(0))
        learner.submit(episode(1))
        assert wait_for(lambda: reg.current == "v0001")
        assert "simulated training failure" in (learner.last_error or "")
        assert learner.alive
    finally:
        learner.close()
    assert trainer.batches == [["e0", "e1"]]  # the retried batch, learned once it worked


def test_persistent_failure_skips_the_batch_but_keeps_its_episodes(tmp_path) -> None:
    trainer = GatedTrainer(fail_times=100)
    learner, reg, _ = make(tmp_path, trainer)
    learner.max_retries = 1
    learner.start()
    try:
        learner.submit(episode(0))
        learner.submit(episode(1))
        assert wait_for(lambda: learner.queue.cursor() == 2)
        assert learner.alive and reg.current == BASE
    finally:
        learner.close()
    assert [e.id for e in learner.queue.read_all()] == ["e0", "e1"]


def test_rollback_swaps_the_served_adapter_back_and_resets_the_policy(tmp_path) -> None:
    trainer = GatedTrainer()
    learner, reg, swaps = make(tmp_path, trainer, k=2, policy=RollbackPolicy(window=2, tolerance=0.1, alpha=None))
    learner.start()
    try:
        serve_v0001(learner, reg)
        learner.submit(episode(2, reward=0.0, adapter_version="v0001"))
        learner.submit(episode(3, reward=0.0, adapter_version="v0001"))
        assert wait_for(lambda: any(v == BASE for _, v in swaps.swaps)), swaps.swaps
    finally:
        learner.close()
    assert reg.info("v0001")["status"] == "rolled_back"
    assert (None, BASE) in swaps.swaps and None in trainer.resets


def test_memory_loop_gets_every_episode_with_its_rollouts(tmp_path) -> None:
    seen: list[tuple[str, int]] = []
    ends: list[str | None] = []

    class Loop:
        def absorb(self, ep, rollouts):
            seen.append((ep.id, len(rollouts)))

        def end_batch(self, namespace=None):
            ends.append(namespace)

    learner, _, _ = make(tmp_path, GatedTrainer(), loop=Loop())
    learner.start()
    try:
        for i in range(4):
            learner.submit(episode(i))
        assert wait_for(lambda: learner.queue.cursor() == 4)
    finally:
        learner.close()
    assert seen == [("e0", 2), ("e1", 2), ("e2", 2), ("e3", 2)] and len(ends) == 2


def test_concurrent_submitters_lose_nothing(tmp_path) -> None:
    learner, _, _ = make(tmp_path, GatedTrainer(), k=5)
    learner.start()
    try:
        threads = [
            threading.Thread(target=lambda j=j: [learner.submit(episode(j * 100 + i)) for i in range(10)])
            for j in range(4)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert wait_for(lambda: learner.queue.cursor() == 40)
    finally:
        learner.close()
    assert len({e.id for e in learner.queue.read_all()}) == 40


def test_rollback_fires_with_the_default_settings(tmp_path) -> None:
    """Defect 12.5: with the defaults a version serves batch_questions answers before the next
    update, so the rollback window must fit in them (it used to need 20 answers while updates
    came every 4: the rule could never fire)."""
    import pytest

    from mia.training.online.config import OnlineConfig

    cfg = OnlineConfig()
    assert cfg.rollback_window <= cfg.batch_questions
    with pytest.raises(ValueError, match="rollback could never fire"):
        OnlineConfig(batch_questions=4, rollback_window=20)
    trainer = GatedTrainer()
    learner, reg, swaps = make(
        tmp_path,
        trainer,
        k=cfg.batch_questions,
        policy=cfg.rollback_policy(),
    )
    learner.start()
    try:
        for i in range(cfg.batch_questions):
            learner.submit(episode(i, reward=0.9, adapter_version=BASE))
        assert wait_for(lambda: reg.current == "v0001")
        for i in range(cfg.batch_questions):  # v0001 serves a full batch, much worse than base
            learner.submit(episode(100 + i, reward=0.0, adapter_version="v0001"))
        assert wait_for(lambda: any(v == BASE for _, v in swaps.swaps)), swaps.swaps
    finally:
        learner.close()
    assert reg.info("v0001")["status"] == "rolled_back"


def test_close_stops_a_batch_in_progress_and_a_resumed_learner_learns_it(tmp_path) -> None:
    """Ctrl-C during a batch: close() returns within a stop check (not after the batch, minutes on
    a CPU), nothing is published, the batch's episodes stay pending, and the next learner over
    the same folder learns them and goes on numbering its batches."""
    import json

    trainer = GatedTrainer()
    learner, reg, _ = make(tmp_path, trainer)
    learner.start()
    try:
        learner.submit(episode(0))
        learner.submit(episode(1))
        assert wait_for(lambda: reg.current == "v0001")
        trainer.gate.clear()
        trainer.entered.clear()
        learner.submit(episode(2))
        learner.submit(episode(3))
        assert trainer.entered.wait(30), "the second batch never started"
    finally:
        started = time.monotonic()
        assert learner.close(timeout=30), "the learner outlived close()"
    assert time.monotonic() - started < 5
    assert not learner.alive and reg.current == "v0001" and learner.queue.cursor() == 2
    assert "LearningStopped" not in (learner.last_error or "")  # a stop is not a failure

    trainer2 = GatedTrainer()
    resumed, reg2, _ = make(tmp_path, trainer2)
    resumed.start()
    try:
        assert wait_for(lambda: resumed.queue.cursor() == 4)
    finally:
        resumed.close()
    assert trainer2.batches == [["e2", "e3"]] and reg2.current == "v0002"
    events = [json.loads(line) for line in (tmp_path / "online" / "learner.jsonl").read_text().splitlines()]
    assert [(e["batch"], e["version"]) for e in events] == [(1, "v0001"), (2, "v0002")]


def test_close_reports_a_learner_that_does_not_stop(tmp_path, caplog) -> None:
    """A trainer that ignores the stop flag: close() says so instead of pretending."""

    class Deaf(GatedTrainer):
        def learn(self, episodes, should_stop=None):
            return super().learn(episodes)  # never polls the flag

    trainer = Deaf(hold=True)
    learner, _, _ = make(tmp_path, trainer)
    learner.start()
    learner.submit(episode(0))
    learner.submit(episode(1))
    assert trainer.entered.wait(30)
    with caplog.at_level("WARNING"):
        assert learner.close(timeout=0.2) is False
    assert "did not stop" in caplog.text
    trainer.gate.set()
    assert wait_for(lambda: not learner.alive)


def test_a_version_that_fails_while_the_learner_lags_is_rolled_back(tmp_path) -> None:
    """The learner is always a batch or more behind on CPU: v0001 serves bad answers while the
    next batch is being learned from it. It is judged before that batch's update is published (it
    used to be judged only between batches, when the newest version had served nothing yet, so no
    rollback ever fired in a 104-answer 2Wiki run); the update built on it is dropped and the
    batch is learned again from the base planner."""
    trainer = GatedTrainer()
    learner, reg, swaps = make(tmp_path, trainer, k=2, policy=RollbackPolicy(window=2, tolerance=0.1, alpha=None))
    learner.start()
    try:
        serve_v0001(learner, reg)
        trainer.gate.clear()
        trainer.entered.clear()
        learner.submit(episode(2, reward=0.9, adapter_version=BASE))  # answered before the swap
        learner.submit(episode(3, reward=0.9, adapter_version=BASE))
        assert trainer.entered.wait(30), "the learner never started the second batch"
        learner.submit(episode(4, reward=0.0, adapter_version="v0001"))  # v0001 serves while it learns
        learner.submit(episode(5, reward=0.0, adapter_version="v0001"))
        trainer.gate.set()
        assert wait_for(lambda: learner.queue.cursor() == 6), learner.queue.cursor()
    finally:
        learner.close()
    assert reg.info("v0001")["status"] == "rolled_back"
    assert trainer.batches == [["e0", "e1"], ["e2", "e3"], ["e2", "e3"], ["e4", "e5"]]
    assert reg.info("v0002")["parent"] == BASE and reg.info("v0003")["parent"] == "v0002"
    assert (None, BASE) in swaps.swaps and trainer.resets == [None]
    assert [e.version for e in learner.events if e.stats.get("rollback")] == [BASE]
