"""Fakes for the learner's logic tests: a trainer that can be held inside its step, adapter
folders that look real to `check_adapter_dir`, a served planner that records swaps."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from mia.training.online.episodes import OnlineEpisode
from mia.training.online.policy import SampledPlan
from mia.training.online.rollouts import Rollout
from mia.training.online.stopping import ShouldStop, check_stop
from mia.training.online.trainer import BatchResult


def episode(i: int, **kw) -> OnlineEpisode:
    base = dict(
        id=f"e{i}",
        question=f"question {i}?",
        gold_answers=[f"gold {i}"],
        plan=f"plan {i}",
        answer=f"answer {i}",
        outcome="incorrect",
        reward=0.5,
    )
    base.update(kw)
    return OnlineEpisode(**base)


def rollout(plan: str, outcome: str, turns: int = 1, answer: str = "x", feedback: str = "") -> Rollout:
    return Rollout(
        plan=SampledPlan(plan, [1], [2]),
        answer=answer,
        outcome=outcome,
        reward=1.0 if outcome == "correct" else 0.0,
        turns=["turn"] * turns,
        feedback=feedback,
    )


class GatedTrainer:
    """learn() enters, signals `entered`, then waits for `gate` (a training step in progress),
    polling `should_stop` as the real trainer does between its units."""

    parametric = True

    def __init__(self, hold: bool = False, fail_times: int = 0, log: Path | None = None) -> None:
        self.entered = threading.Event()
        self.gate = threading.Event()
        if not hold:
            self.gate.set()
        self.fail_times = fail_times
        self.batches: list[list[str]] = []
        self.steps: list[tuple[float, float]] = []
        self.resets: list[Path | None] = []
        self.log = log

    def learn(self, episodes: Sequence[OnlineEpisode], should_stop: ShouldStop | None = None) -> BatchResult:
        start = time.monotonic()
        self.entered.set()
        deadline = time.monotonic() + 60
        while not self.gate.wait(0.02):
            check_stop(should_stop)
            if time.monotonic() > deadline:
                raise TimeoutError("the test never released the training step")
        if self.fail_times > 0:
            self.fail_times -= 1
            raise RuntimeError("simulated training failure")
        self.batches.append([e.id for e in episodes])
        if self.log is not None:
            with self.log.open("a") as fh:
                fh.write(json.dumps([e.id for e in episodes]) + "\n")
        self.steps.append((start, time.monotonic()))
        rollouts = {e.id: [rollout("good plan", "correct"), rollout("bad plan", "incorrect")] for e in episodes}
        return BatchResult(rollouts=rollouts, stats={"reward_mean": 0.5, "updated": 1.0}, updated=True)

    def save(self, folder: Path) -> None:
        write_fake_adapter(folder)

    def reset_to(self, folder: Path | None) -> None:
        self.resets.append(folder)


def write_fake_adapter(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "/nowhere"}))
    (folder / "adapter_model.safetensors").write_bytes(b"fake")


class SwapRecorder:
    """Stands in for the served planner's set_adapter."""

    def __init__(self) -> None:
        self.swaps: list[tuple[Path | None, str]] = []

    def __call__(self, folder: Path | None, version: str) -> None:
        self.swaps.append((folder, version))
