"""The online learner: a background thread beside the answer path.

The answer path only calls `submit(episode)`: an fsynced append to the episode queue, a reward
credited to the adapter version that served the answer, and a wake-up. It never takes a lock a
training step holds. The thread, every `batch_questions` episodes, asks its `BatchTrainer` for
rollouts and a GRPO step, saves the adapter as a new version, publishes it in the registry and
calls `on_swap(folder, version)` (the served model's `set_adapter`), feeds the rollouts to the
memory loop, and only then moves the queue cursor. Before it publishes, the version that served
while the batch was learned is judged by the registry's rollback rule. A failure in any of that is logged and
retried (then the batch is skipped, its episodes kept in the file), and never reaches the
answer path. After a restart the learner resumes at the cursor.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mia.training.online.episodes import EpisodeQueue, OnlineEpisode
from mia.training.online.gate import AnswerGate
from mia.training.online.layout import LEARNER_LOG
from mia.training.online.registry import AdapterRegistry
from mia.training.online.stopping import LearningStopped
from mia.training.online.trainer import BatchTrainer

log = logging.getLogger(__name__)
SwapFn = Callable[[Path | None, str], None]


@dataclass
class StepEvent:
    """One batch the learner handled (also appended to learner.jsonl)."""

    batch: int
    started: float
    ended: float
    episodes: int
    version: str | None
    stats: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


class OnlineLearner:
    """See the module docstring. `start()` runs the thread; `close()` stops it."""

    def __init__(
        self,
        folder: str | Path,
        trainer: BatchTrainer,
        registry: AdapterRegistry,
        *,
        batch_questions: int = 4,
        memory_loop: Any = None,
        on_swap: SwapFn | None = None,
        max_retries: int = 2,
        poll_s: float = 1.0,
        gate: AnswerGate | None = None,
    ) -> None:
        self.folder = Path(folder).expanduser()
        self.queue = EpisodeQueue(self.folder)
        self.trainer, self.registry, self.memory_loop = trainer, registry, memory_loop
        self.batch_questions, self.on_swap = batch_questions, on_swap
        self.max_retries, self.poll_s = max_retries, poll_s
        self.gate = gate  # with a gate, every unit of a batch waits until no question is being answered
        self.events: list[StepEvent] = []
        self.training = threading.Event()  # set while a batch is being learned from
        self.last_error: str | None = None
        self._wake = threading.Event()
        self._submit_lock = threading.Lock()  # held for an append (ms), never during training
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failures = 0
        self._batches = _batches_learned(self.folder / LEARNER_LOG)  # numbering goes on after a resume

    # ---------------------------------------------------------------- the answer path
    def submit(self, episode: OnlineEpisode) -> None:
        """Hand over one answered question (durable when this returns; never waits on training)."""
        with self._submit_lock:  # the learner sees an episode and its reward together
            self.queue.append(episode)
            if episode.reward is not None:
                try:
                    self.registry.record_reward(episode.adapter_version, episode.reward)
                except Exception as exc:  # noqa: BLE001 - bookkeeping must not cost an answer
                    log.warning("could not record the reward: %s", exc)
        self._wake.set()

    @property
    def served_version(self) -> str:
        return self.registry.current

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> OnlineLearner:
        """Start the background thread (resuming at the queue's cursor)."""
        if self._thread is not None and self._thread.is_alive():
            return self
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="mia-online-learner", daemon=True)
        self._thread.start()
        self._wake.set()
        return self

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def close(self, timeout: float | None = 300.0) -> bool:
        """Stop the thread: a batch in progress ends at its next stop check (a plan group's
        sampling is cut at the next token; a rollout group, at most one question's rollouts, runs
        to its end) and its episodes stay pending. True once the thread has ended; False (logged)
        if it outlived `timeout`."""
        self._stop.set()
        self._wake.set()
        if self._thread is None:
            return True
        self._thread.join(timeout)
        if self._thread.is_alive():
            log.warning(
                "the online learner did not stop within %ss; its batch's episodes stay pending in %s",
                timeout,
                self.queue.path,
            )
            return False
        return True

    def drain(self, timeout: float = 600.0) -> bool:
        """Block until fewer than a batch of episodes is pending (tests, end of an eval run)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.queue.pending()) < self.batch_questions and not self.training.is_set():
                return True
            if not self.alive:
                return False
            time.sleep(0.05)
        return False

    # ---------------------------------------------------------------- the thread
    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.poll_s)
            self._wake.clear()
            try:
                self._maybe_rollback()
                while not self._stop.is_set():
                    with self._submit_lock:  # a consistent view of episodes and their rewards
                        pending = self.queue.pending()
                        back_to = self.registry.check_rollback() if len(pending) >= self.batch_questions else None
                    if back_to is not None:  # never build the next version on one that just failed
                        self._apply_rollback(back_to)
                    if len(pending) < self.batch_questions:
                        break
                    self._learn(pending[: self.batch_questions])
            except Exception as exc:  # noqa: BLE001 - the thread must outlive any failure
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.error("online learner: %s\n%s", self.last_error, traceback.format_exc())
                time.sleep(min(5.0, self.poll_s))

    def _learn(self, batch: list[OnlineEpisode]) -> None:
        started = time.time()
        self.training.set()
        version = None
        try:
            waited = self.gate.waited_s if self.gate is not None else 0.0
            result = self.trainer.learn(batch, should_stop=self._should_stop)
            if self.gate is not None:  # learner.jsonl: how long the batch gave way to answers
                result.stats["waited_for_answers_s"] = round(self.gate.waited_s - waited, 3)
            if self.trainer.parametric and self._failed_while_learning():
                return  # built on a version that failed meanwhile: learned again from its parent
            if self.trainer.parametric and result.updated:
                folder = self.registry.next_dir()
                self.trainer.save(folder)
                _write_meta(folder, result.stats, [e.id for e in batch], self.registry.current)
                version = self.registry.publish(folder, {"stats": result.stats, "episodes": len(batch)})
                self._swap(folder, version)
            if self.memory_loop is not None:
                for episode in batch:
                    self.memory_loop.absorb(episode, result.rollouts.get(episode.id, []))
                self.memory_loop.end_batch(batch[0].namespace if batch else None)
        except LearningStopped:  # closed part-way: not a failure; the batch is learned on resume
            log.info("online learning batch stopped by close(); its %d episodes stay pending", len(batch))
            return
        except Exception as exc:  # noqa: BLE001 - retried, then skipped; never fatal
            self._failures += 1
            self.last_error = f"{type(exc).__name__}: {exc}"
            log.error(
                "online learning batch failed (%d/%d): %s\n%s",
                self._failures,
                self.max_retries + 1,
                self.last_error,
                traceback.format_exc(),
            )
            self._record(StepEvent(self._batches, started, time.time(), len(batch), None, error=self.last_error))
            if self._failures > self.max_retries:
                log.error("skipping %d episodes after repeated failures (they stay in %s)", len(batch), self.queue.path)
                self._record(
                    StepEvent(
                        self._batches,
                        time.time(),
                        time.time(),
                        0,
                        None,
                        stats={"skipped": float(len(batch))},
                        error="skipped",
                    )
                )
                self.queue.advance(len(batch))
                self._failures = 0
            else:
                time.sleep(min(2.0, self.poll_s))
            return
        finally:
            self.training.clear()
        self._failures = 0
        self.queue.advance(len(batch))
        self._batches += 1
        self._record(StepEvent(self._batches, started, time.time(), len(batch), version, stats=result.stats))

    def _should_stop(self) -> bool:
        """The trainer's check between units: wait while a question is answered (with a gate),
        then say whether the learner is closing."""
        if self.gate is not None:
            self.gate.wait_idle(self._stop)
        return self._stop.is_set()

    def _failed_while_learning(self) -> bool:
        """Judge the served version before publishing its successor. A learner that lags behind
        the answers (every CPU run) learns batch after batch; a version that served its rollback
        window during a batch is judged here, or never: checked only between batches, it would
        still have no answers when judged and would be replaced before it had any. When it is
        rolled back, the update trained on it is dropped and the batch stays pending, to be
        learned from the version now served."""
        with self._submit_lock:
            back_to = self.registry.check_rollback()
        if back_to is None:
            return False
        self._apply_rollback(back_to)
        log.info("the batch was learned on a version rolled back meanwhile; it is learned again from %s", back_to)
        return True

    def _swap(self, folder: Path | None, version: str) -> None:
        if self.on_swap is not None:
            self.on_swap(folder, version)

    def _maybe_rollback(self) -> None:
        back_to = self.registry.check_rollback()
        if back_to is not None:
            self._apply_rollback(back_to)

    def _apply_rollback(self, back_to: str) -> None:
        folder = self.registry.path_of(back_to)
        self.trainer.reset_to(folder)
        self._swap(folder, back_to)
        self._record(StepEvent(self._batches, time.time(), time.time(), 0, back_to, stats={"rollback": 1.0}))

    def _record(self, event: StepEvent) -> None:
        self.events.append(event)
        with (self.folder / LEARNER_LOG).open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(event.__dict__, default=str) + "\n")


def _batches_learned(path: Path) -> int:
    """The batches an earlier process learned, from its learner.jsonl (0 for a new learner)."""
    if not path.is_file():
        return 0
    done = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            event = json.loads(line)
        except ValueError:  # a line cut by a kill: the batches before it still count
            continue
        if isinstance(event, dict) and event.get("error") is None and int(event.get("episodes") or 0) > 0:
            done += 1
    return done


def _write_meta(folder: Path, stats: dict[str, Any], episode_ids: list[str], parent: str) -> None:
    """mia_adapter.json (the training package's format), so `hf:<base>+<folder>` works anywhere."""
    from mia.training.artifacts import write_adapter_meta

    base = None
    config = folder / "adapter_config.json"
    if config.is_file():
        base = json.loads(config.read_text()).get("base_model_name_or_path")
    write_adapter_meta(
        folder,
        base_model=str(base or ""),
        stage="planner-online",
        parent=parent,
        episodes=episode_ids,
        reward=stats.get("reward_mean"),
        steps=1,
        stats=stats,
    )
