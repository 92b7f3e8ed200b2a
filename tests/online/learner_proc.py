"""A learner in its own process, for the kill test: `python -m tests.online.learner_proc DIR MODE`.

MODE `hang`: submit 4 episodes (K=2), let the first batch be learned, then hang inside the
second batch's training step (the test SIGKILLs us there). MODE `resume`: no new episodes; learn
what is pending, then exit. Each batch the trainer finished is appended to DIR/learned.jsonl.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from mia.training.online.learner import OnlineLearner
from mia.training.online.registry import AdapterRegistry
from tests.online.fakes import GatedTrainer, episode


def main(folder: Path, mode: str) -> None:
    trainer = GatedTrainer(log=folder / "learned.jsonl")
    learner = OnlineLearner(
        folder / "online", trainer, AdapterRegistry(folder / "adapters"), batch_questions=2, poll_s=0.05
    )
    if mode == "hang":
        original = trainer.learn

        def learn(episodes, should_stop=None):
            if trainer.batches:  # the second batch: announce, then hang inside the step
                (folder / "in_step").write_text(",".join(e.id for e in episodes))
                time.sleep(600)
            return original(episodes, should_stop)

        trainer.learn = learn
        for i in range(4):
            learner.submit(episode(i))
        learner.start()
        time.sleep(600)
    else:
        learner.start()
        ok = learner.drain(60)
        learner.close()
        print("drained" if ok else "not drained", learner.queue.cursor(), flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
