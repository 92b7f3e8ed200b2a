"""Bounded retries for network tools. Why: a transient DNS/TCP failure should not cost the agent a
turn, but a model in a loop must not wait minutes either, so attempts and back-off are small."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def with_retries(
    fn: Callable[[], T],
    *,
    attempts: int = 3,
    backoff: float = 0.5,
    retryable: Callable[[BaseException], bool] = lambda err: True,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Call fn up to `attempts` times (waits backoff, 2*backoff, ...); re-raise the last error."""
    attempts = max(1, attempts)
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except Exception as err:  # the caller decides what is retryable
            if attempt == attempts or not retryable(err):
                raise
            sleep(backoff * 2 ** (attempt - 1))
    raise AssertionError("unreachable")
