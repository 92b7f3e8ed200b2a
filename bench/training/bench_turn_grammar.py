#!/usr/bin/env python
"""The executor GRPO stage's episodes with and without the served turn grammar: what the policy
would be trained on, on the stage's own config, questions, plans and sampling.

    .venv/bin/python bench/training/bench_turn_grammar.py [--questions 8] [--samples 2]
        [--config training/configs/cpu-qwen-executor-grpo.yaml]

Why: the served executor never samples freely (graph/protocol/grammar.py constrains each turn to
one tool call or one answer, an answer only after the required searches), and a first Qwen smoke
run of the stage, sampling freely, made no valid tool call in any episode (results/training/README.md).
This plays the stage's first `--questions` questions (`data:` of the config, the frozen planner's
greedy plans, cached beside the output) `--samples` times each, at the config's temperature on the
config's policy (its `base_model`, the SFT adapter) on llama.cpp, with `budget.turn_grammar` on and
off, the same rows in the same order, and reports what the reward reads: valid first turns (a
search call), valid calls a turn, format, F1 and the executor reward (first-attempt episodes, no
replan: the replan is the frozen planner's, the same in both). Sampled, so figures move from run to
run. Output: bench/training/turn_grammar.md and .json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default=str(ROOT / "training/configs/cpu-qwen-executor-grpo.yaml"))
    parser.add_argument("--questions", type=int, default=8)
    parser.add_argument("--samples", type=int, default=2)
    args = parser.parse_args()

    from mia.graph.protocol import parse
    from mia.training.config import TrainConfig
    from mia.training.data import executor_rows, load_training_examples
    from mia.training.episodes import Accuracy
    from mia.training.executor_stage import frozen_plans
    from mia.training.policy import load_tokenizer, resolve_weights
    from mia.training.react import ReactBudget, ReactRunner, SandboxSearch
    from mia.training.rewards import CORRECT_AT, executor_format_ok, executor_reward, tool_call_ok, tool_use_score
    from mia.training.served_react import served_generation

    cfg = TrainConfig.from_yaml(args.config, {"data.limit": args.questions})
    out = HERE / "turn_grammar"
    out.mkdir(exist_ok=True)
    examples = load_training_examples(cfg)[: args.questions]
    rows = executor_rows(examples, frozen_plans(cfg, examples, out))
    base, adapter = resolve_weights(cfg.base_model)
    tokenizer = load_tokenizer(base)
    served = served_generation("executor", cfg.base_model, "served", tokenizer)
    assert served is not None  # "served" on a base without a GGUF is refused before this
    served.sync(adapter)
    accuracy = Accuracy(cfg.reward.accuracy, max_chars=cfg.reward.executor.max_answer_chars)
    repeated = [row for row in rows for _ in range(args.samples)]

    report: dict[str, dict[str, float]] = {}
    for grammar in (False, True):
        budget = dataclasses.replace(
            ReactBudget.of(cfg.budget, temperature=cfg.grpo.get("temperature", 1.0)), turn_grammar=grammar
        )
        runner = ReactRunner(None, tokenizer, SandboxSearch(top_k=cfg.budget.search_top_k), budget, generate=served)
        start = time.perf_counter()
        episodes = runner.run_many([r["prompt"] for r in repeated], [r["paragraphs"] for r in repeated], sample=True)
        seconds = time.perf_counter() - start
        first, calls, turns, fmt, f1, right, reward = [], [], 0, [], [], [], []
        for row, ep in zip(repeated, episodes, strict=True):
            kinds = [parse(t, strict=True) for t in ep.turns]
            first.append(bool(kinds) and kinds[0].kind == "tool_call" and tool_call_ok(kinds[0].call))
            calls.append(sum(t.kind == "tool_call" and tool_call_ok(t.call) for t in kinds))
            turns += len(kinds)
            ok = executor_format_ok(ep.turns)
            acc = accuracy(row["question"], ep.answer, row["gold_answers"])
            fmt.append(ok)
            f1.append(acc)
            right.append(acc >= CORRECT_AT)
            reward.append(executor_reward(acc, True, tool_use_score(ep.segments()), ok, cfg.reward.executor))
        report["grammar" if grammar else "free"] = {
            "episodes": len(episodes),
            "first_turn_search": sum(first) / len(first),
            "valid_calls_per_episode": statistics.mean(calls),
            "turns_per_episode": turns / len(episodes),
            "format_ok": sum(fmt) / len(fmt),
            "f1": statistics.mean(f1),
            "right": sum(right) / len(right),
            "reward": statistics.mean(reward),
            "reward_sd": statistics.pstdev(reward),
            "seconds": seconds,
        }
    (HERE / "turn_grammar.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    lines = [
        "# Executor GRPO episodes with and without the served turn grammar",
        "",
        f"`python bench/training/bench_turn_grammar.py --questions {args.questions} --samples {args.samples}` "
        f"({Path(args.config).name}: {cfg.base_model}, temperature {cfg.grpo.get('temperature', 1.0)}, "
        f"{cfg.budget.max_tool_calls} tool calls, {cfg.budget.max_turn_tokens}-token turns, top-{cfg.budget.search_top_k}; "
        f"{time.strftime('%Y-%m-%d', time.gmtime())}). Sampled: figures move from run to run.",
        "",
        "| turns | episodes | first turn a valid search | valid calls/episode | turns/episode | format ok "
        "| F1 | right | executor reward (sd) | seconds |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in report.items():
        lines.append(
            f"| {name} | {r['episodes']:.0f} | {r['first_turn_search']:.0%} | {r['valid_calls_per_episode']:.2f} "
            f"| {r['turns_per_episode']:.2f} | {r['format_ok']:.0%} | {r['f1']:.3f} | {r['right']:.0%} "
            f"| {r['reward']:.3f} ({r['reward_sd']:.3f}) | {r['seconds']:.0f} |"
        )
    (HERE / "turn_grammar.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
