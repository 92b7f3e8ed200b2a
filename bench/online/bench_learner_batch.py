"""How long one test-time learning batch takes on the embedded Qwen default (CPU).

A batch is what the learner does every `batch_questions` answers: sample `rollouts` plans per
question from its LoRA copy of the planner (transformers, the de-quantised weights llama.cpp
serves), carry each plan out with the frozen executor, score it against the gold answer, and take
one GRPO step. With the default `llamacpp:` executor the rollouts run on its llama.cpp server
through the graph (`training/online/executors.py`).

    mia models fetch qwen-coder-1.5b --convert        # once: the transformers weights of the GGUF
    python bench/online/bench_learner_batch.py --questions 4 --rollouts 4   # writes bench/online/learner_batch.{json,md}
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

OUT = Path(__file__).parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--questions", type=int, default=4, help="questions in the batch (OnlineConfig.batch_questions)"
    )
    parser.add_argument("--rollouts", type=int, default=4, help="plans per question (OnlineConfig.rollouts)")
    parser.add_argument("--planner", default="llamacpp:qwen-coder-1.5b")
    parser.add_argument("--executor", default="llamacpp:qwen-coder-1.5b")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import tempfile

    import torch

    from mia.app.evaluation.datasets import load_examples
    from mia.graph.context import Context
    from mia.training.online import OnlineConfig, OnlineEpisode
    from mia.training.online.session import build_grpo_trainer

    torch.set_num_threads(os.cpu_count() or 1)
    examples, _ = load_examples("hotpotqa", n=args.questions, seed=args.seed)
    cfg = OnlineConfig(batch_questions=args.questions, rollouts=args.rollouts)
    with tempfile.TemporaryDirectory() as data:
        context = Context(planner_model=args.planner, executor_model=args.executor, data_dir=data)
        started = time.perf_counter()
        trainer = build_grpo_trainer(context, cfg, None)
        load_s = time.perf_counter() - started
        episodes = [
            OnlineEpisode(
                question=e.question, gold_answers=e.gold_answers, paragraphs=[p.model_dump() for p in e.paragraphs]
            )
            for e in examples
        ]
        started = time.perf_counter()
        result = trainer.learn(episodes)
        batch_s = time.perf_counter() - started
    rollouts = [r for rs in result.rollouts.values() for r in rs]
    record = {
        "planner": args.planner,
        "executor": args.executor,
        "rollout_path": type(trainer.scorer.executor).__name__,
        "questions": args.questions,
        "rollouts": args.rollouts,
        "load_s": round(load_s, 1),
        "batch_s": round(batch_s, 1),
        "stats": result.stats,
        "updated": result.updated,
        "rollout_tool_calls": sum(r.tool_calls for r in rollouts) / max(1, len(rollouts)),
        "rollout_rewards": [round(r.reward, 3) for r in rollouts],
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "load_average": [round(x, 1) for x in os.getloadavg()],
    }
    (OUT / "learner_batch.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    st = result.stats
    flags = f"--questions {args.questions} --rollouts {args.rollouts}" + "".join(
        f" --{name} {value}"
        for name, value in (("planner", args.planner), ("executor", args.executor))
        if value != parser.get_default(name)
    )
    md = [
        "# One test-time learning batch on the embedded Qwen default",
        "",
        f"Command: `python bench/online/bench_learner_batch.py {flags}`. "
        f"Planner LoRA on `{args.planner}` (transformers, fp32), executor `{args.executor}`, rollouts by "
        f"`{record['rollout_path']}`. Machine: {record['machine']}; load average when written "
        f"{' / '.join(map(str, record['load_average']))}.",
        "",
        "| questions x rollouts | learner load s | whole batch s | plans + rollouts s | of which plan sampling s | "
        "GRPO step s | tool calls per rollout | mean reward | updated |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| {args.questions} x {args.rollouts} | {load_s:.0f} | {batch_s:.0f} | {st.get('rollout_s', 0):.0f} | "
        f"{st.get('sample_s', 0):.0f} | {st.get('step_s', 0):.0f} | {record['rollout_tool_calls']:.2f} | "
        f"{st.get('reward_mean', 0):.3f} | {result.updated} |",
    ]
    (OUT / "learner_batch.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    print("\n".join(md))


if __name__ == "__main__":
    main()
