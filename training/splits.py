"""The one seeded question order that evaluation and training both slice.

Why it is shared: `mia eval --seed S --n N --warmup W` answers the first N questions of this order
and warms its memory up on the last W. A planner trained on the file's first questions would meet
some of the evaluated ones again (the first 200 lines hold 15 of `--n 100`'s questions in HotpotQA,
43 in 2WikiMultihopQA), and "unseen questions" would be false. Training with `data.seed: S` slices the same
order instead, so `offset >= N` and `offset + limit <= len - W` keep it off both.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def seeded_order(items: Sequence[T], seed: int) -> list[T]:
    """`items` shuffled by `seed`: the permutation depends only on the seed and the count, so the
    same file gives the same order to `mia eval` and to `mia train`."""
    order = list(items)
    random.Random(seed).shuffle(order)
    return order
