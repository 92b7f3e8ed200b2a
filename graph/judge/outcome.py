"""The three-valued outcome a judgement produces: the memory layer's own type.

`mia.memory.Outcome` is `Literal["correct", "incorrect", "unknown"]` (memory records store it), so
verdicts flow into trajectories and records without conversion. `unknown` means nobody could tell:
judging was off, or every reviewer failed.
"""

from __future__ import annotations

from mia.memory import Outcome

CORRECT: Outcome = "correct"
INCORRECT: Outcome = "incorrect"
UNKNOWN: Outcome = "unknown"

__all__ = ["Outcome", "CORRECT", "INCORRECT", "UNKNOWN"]
