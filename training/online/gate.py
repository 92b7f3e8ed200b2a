"""Answers first: the learner pauses while a question is being answered.

Why: on a 2-core CPU the learner's torch work and the answer path's llama.cpp threads share the same
cores, and a learner running beside an answer slowed answers from 108.6 to 173.5 s (issue 37). With
the `between` schedule (OnlineConfig.schedule) the answer path holds `answering()` for each question,
and the learner, which polls its stop check between every unit of a batch (each sampled token, each
rollout group, each sample's backward pass), waits there until no question is in flight. So the
learner takes only the time between questions; a unit already running when a question starts
finishes first (at most one rollout group, usually one token or one backward pass).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class AnswerGate:
    """Counts the questions in flight; `wait_idle` blocks until there are none (or `stop` is set)."""

    def __init__(self) -> None:
        self._in_flight = 0
        self._idle = threading.Condition()
        self.waited_s = 0.0  # how long the learner has waited for answers, in all

    @contextmanager
    def answering(self) -> Iterator[None]:
        """Hold for the length of one answer (never blocks the answer path)."""
        with self._idle:
            self._in_flight += 1
        try:
            yield
        finally:
            with self._idle:
                self._in_flight -= 1
                if self._in_flight == 0:
                    self._idle.notify_all()

    def wait_idle(self, stop: threading.Event | None = None, poll_s: float = 0.5) -> None:
        """Return once no question is in flight, or once `stop` is set."""
        if self._in_flight == 0:  # the learner's fast path: one read per token
            return
        started = time.monotonic()
        with self._idle:
            while self._in_flight > 0 and not (stop is not None and stop.is_set()):
                self._idle.wait(poll_s)
        self.waited_s += time.monotonic() - started
