"""The adversarial suite: generated hostile inputs (Hypothesis) against parsers, stores, the model
server and the prompts, asserting no uncaught exception, a bounded time and no lost record.

One Hypothesis profile for the whole suite, so that it stays fast on a 2-core CI machine and gives
the same cases on every run (derandomised: a failure seen once is seen again). `MIA_HYPOTHESIS=deep`
runs many more examples, randomised, for a local hunt.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,  # time is bounded per input by the tests themselves (timeouts), not by Hypothesis
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)
settings.register_profile(
    "deep",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("MIA_HYPOTHESIS", "ci"))
