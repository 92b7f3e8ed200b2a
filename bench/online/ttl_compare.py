"""HotpotQA with and without test-time learning on the embedded model (CPU, tight budgets).

    python bench/online/ttl_compare.py --mode ttl  --n 60 --out results/ttl/ttl
    python bench/online/ttl_compare.py --mode base --n 60 --out results/ttl/base
    python bench/online/ttl_compare.py --report results/ttl/base results/ttl/ttl

Both runs answer the same seeded questions in the same order with memory on (the paper's online
memory); `ttl` also runs the online learner (GRPO on the planner LoRA + rollout memories). The
verdict that memory and rewards use is graded against the gold answers by the metrics (the
135M judge model marks nearly everything correct, so it would teach nothing). The report gives
accuracy (exact match, token F1 and "gold contained") per window of 20 questions.
"""

from __future__ import annotations

from mia.app.evaluation.runlog import read_rows

import argparse
import asyncio
import json
from pathlib import Path

BUDGET = {
    "planner_max_tokens": 48,
    "executor_max_tokens": 48,
    "manager_max_tokens": 48,
    "judge_max_tokens": 8,
    "max_replans": 0,
    "search_top_k": 2,
}
ONLINE = {
    "batch_questions": 4,
    "rollouts": 4,
    "plan_max_tokens": 32,
    "learning_rate": 2e-5,
    "consolidate_every": 2,
    "rollback_window": 4,
    "rollback_tolerance": 0.1,
    "budget": {"max_tool_calls": 1, "max_turn_tokens": 32, "max_answer_tokens": 12, "search_top_k": 2},
}


def metrics_judge(**kwargs):
    """The graph's judge with no model: ground truth graded by the metrics (EM / cover / F1)."""
    from mia.graph.judge import judge

    return judge(**{**kwargs, "model": None})


def factory(mode: str):
    def make(config, setting):
        from mia.app.evaluation.harness import build_context
        from mia.app.evaluation.runner import GraphRunner
        from mia.graph.builder import build_graph, recursion_limit
        from mia.graph.nodes.deps import Deps

        context = build_context(config, setting)
        deps = Deps(judge_fn=metrics_judge)
        if mode == "base":
            return GraphRunner(
                graph=build_graph(deps=deps),
                context=context,
                setting=setting,
                judge="llm",
                config={"recursion_limit": recursion_limit(context)},
            )
        from mia.training.online import LearningSession, OnlineConfig
        from mia.app.evaluation.learning import LearningRunner

        from mia.training.config import BudgetConfig

        session = LearningSession(
            context, OnlineConfig(**{**ONLINE, "budget": BudgetConfig(**ONLINE["budget"])}), deps=deps
        )
        return LearningRunner(
            session=session,
            graph=session.graph(),
            setting=setting,
            judge="llm",
            ground_truth=True,
            config={"recursion_limit": recursion_limit(context)},
        )

    return make


def run(mode: str, n: int, out: Path, seed: int) -> None:
    import torch

    from mia.app.evaluation.harness import EvalConfig, run_evaluation

    torch.set_num_threads(1)  # on a shared CPU, oversubscribed torch threads slow generation ~10x

    cfg = EvalConfig(
        dataset="hotpotqa",
        n=n,
        seed=seed,
        memory_mode="mia",
        judge="llm",
        max_tool_calls=1,
        context_overrides=BUDGET,
        concurrency=1,
        label=f"smollm2 {mode}",
        test_time_learning=mode == "ttl",
    )  # config.json says what the run did
    asyncio.run(run_evaluation(cfg, out, runner_factory=factory(mode), progress=True))


def report(runs: list[Path], window: int = 20) -> str:
    from mia.graph.judge import cover_match

    lines = [
        "| run | questions | window | EM | F1 | gold contained | verdict correct | planner versions served |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for run_dir in runs:
        rows = read_rows(run_dir)
        by_id = {r["id"]: r for r in rows}
        rows = list(by_id.values())
        # one queue per namespace (store/online/NS/episodes.jsonl); runs before that: store/online/episodes.jsonl
        found = sorted((run_dir / "store" / "online").glob("**/episodes.jsonl"))
        served = [
            json.loads(line).get("adapter_version")
            for path in found
            for line in path.read_text().splitlines()
            if line.strip()
        ]
        for start in range(0, len(rows), window):
            part = rows[start : start + window]
            em = sum(r["em"] for r in part) / len(part)
            f1 = sum(r["f1"] for r in part) / len(part)
            cover = sum(float(cover_match(r.get("answer") or "", r["gold_answers"])) for r in part) / len(part)
            judged = sum(bool(r.get("judge_correct")) for r in part) / len(part)
            versions = ", ".join(dict.fromkeys(str(v) for v in served[start : start + window])) or "-"
            lines.append(
                f"| {run_dir.name} | {len(rows)} | {start + 1}-{start + len(part)} | {em:.3f} | {f1:.3f} | "
                f"{cover:.3f} | {judged:.3f} | {versions} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=["ttl", "base"])
    parser.add_argument("--n", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--report", type=Path, nargs="*")
    args = parser.parse_args()
    if args.report:
        print(report(args.report))
        return
    if not args.mode or not args.out:
        parser.error("--mode and --out are required (or --report RUN...)")
    run(args.mode, args.n, args.out, args.seed)


if __name__ == "__main__":
    main()
