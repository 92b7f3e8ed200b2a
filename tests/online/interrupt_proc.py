"""A test-time-learning session on the real embedded model, interrupted by SIGINT while its
learner samples plans: `python -m tests.online.interrupt_proc DIR`.

The served planner (llama.cpp) answers once, an episode is submitted, and the learner starts a
batch whose sampling is made long (`min_new_tokens`); DIR/in_batch says it has begun. On Ctrl-C
the process closes the session as `mia eval` does and prints what close() saw as JSON.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from mia.graph.context import Context
from mia.training.config import BudgetConfig
from mia.training.online import LearningSession, OnlineConfig, OnlineEpisode

LONG = 4000  # new tokens a plan sampling is forced to: minutes on a CPU unless the stop cuts it


def main(folder: Path) -> None:
    import torch

    torch.set_num_threads(1)
    ctx = Context(
        planner_model="llamacpp:smollm2",
        executor_model="llamacpp:smollm2",
        memory_mode="none",
        planner_max_tokens=4,
        data_dir=str(folder),
    )
    cfg = OnlineConfig(
        batch_questions=1,
        rollouts=2,
        plan_max_tokens=LONG,
        sample_on="learner",  # the learner's torch copy samples (llama.cpp would serve the plans otherwise)
        budget=BudgetConfig(max_tool_calls=1, max_turn_tokens=8, max_answer_tokens=4, search_top_k=1),
    )
    session = LearningSession(ctx, cfg)
    session.planner.invoke("Name the capital of France.")  # a llama.cpp server is up, as in a run
    policy = session.trainer.policy
    generate = policy.generate_from_prompt

    def long_generate(ids, n, **kwargs):
        (folder / "in_batch").write_text("sampling")
        return generate(ids, n, **{**kwargs, "min_new_tokens": LONG})

    policy.generate_from_prompt = long_generate
    try:
        session.learner.submit(
            OnlineEpisode(
                question="What is the capital of France?",
                gold_answers=["Paris"],
                reward=0.5,
                adapter_version=session.served_version,
            )
        )
        while True:
            time.sleep(0.05)
    except KeyboardInterrupt:
        started = time.monotonic()
        closed = session.close(timeout=120)
        print(
            json.dumps(
                {
                    "closed": closed,
                    "close_s": round(time.monotonic() - started, 2),
                    "cursor": session.learner.queue.cursor(),
                    "pending": len(session.learner.queue.pending()),
                    "current": session.registry.current,
                    "last_error": session.learner.last_error,
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
