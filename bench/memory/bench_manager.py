#!/usr/bin/env python
"""Which memory manager writes usable workflows from real Qwen agent trajectories, and at what cost.

The trajectories are the ones the embedded-Qwen HotpotQA runs logged (`results/hotpotqa-qwen-n100/
{mia,trajectory-rag}/store/memory/trajectories.jsonl`). Each is compressed by every manager given,
with the compressor the graph uses (`mia.memory.Compressor`, the manager's token cap from
`Context`), and each result is classified: written by the model as is, repaired, or rejected twice
and replaced by the extractive workflow; the first output is checked for a copy of the prompt's
format example. `extractive` (no model) is the baseline: a deterministic workflow from the
trajectory's own steps, in 0 s.

    python bench/memory/bench_manager.py --n 24
    python bench/memory/bench_manager.py --n 24 --managers extractive llamacpp:qwen-coder-0.5b

Writes bench/memory/<name>.json and <name>.md (`--name`, default manager). Seconds depend on the machine's load, which is
recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections import Counter
from pathlib import Path

from tqdm import tqdm

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
LOGS = [
    ROOT / "results/hotpotqa-qwen-n100" / run / "store/memory/trajectories.jsonl" for run in ("mia", "trajectory-rag")
]


def trajectories(n: int) -> list:
    """The first n trajectories, alternating between the two runs' logs (distinct questions)."""
    from mia.memory.trajectory_log import TrajectoryLog

    logs = [list(TrajectoryLog(path)) for path in LOGS if TrajectoryLog(path).exists()]
    mixed, seen = [], set()
    for i in range(max(map(len, logs), default=0)):
        for log in logs:
            if i < len(log) and log[i].question not in seen:
                seen.add(log[i].question)
                mixed.append(log[i])
    return mixed[:n]


def run_manager(spec: str, items: list) -> dict:
    from mia.graph.context import Context
    from mia.graph.models import load_chat_model
    from mia.graph.nodes.calls import count_usage
    from mia.memory import Compressor
    from mia.memory.examples import PromptExample

    context = Context()
    model = (
        None
        if spec == "extractive"
        else load_chat_model(spec, temperature=context.manager_temperature, max_tokens=context.manager_max_tokens)
    )
    compressor = Compressor(model)
    example = PromptExample.whole(compressor.prompts["compress"]["example"])
    rows = []
    if model is not None:
        model.invoke("Hi")  # load the weights outside the timings
    for traj in tqdm(items, desc=spec, unit="trajectory"):
        started = time.perf_counter()
        with count_usage() as counter:
            result = compressor.compress(traj)
        trace = traj.to_trace_text(compressor.max_words_per_observation).lower()
        first = result.raw_outputs[0] if result.raw_outputs else ""
        rows.append(
            {
                "question": traj.question,
                "outcome": traj.outcome,
                "method": result.method,
                "attempts": result.attempts,
                "problems": result.problems,
                "first_output_copies_example": bool(first and example.copied_in(first, trace)),
                "seconds": round(time.perf_counter() - started, 2),
                **counter.as_dict(),
                "workflow_words": len(result.workflow.split()),
                "workflow": result.workflow,
                "raw_outputs": result.raw_outputs,
            }
        )
    methods = Counter(r["method"] for r in rows)
    return {
        "manager": spec,
        "n": len(rows),
        "methods": dict(methods),
        "first_output_copies_example": sum(r["first_output_copies_example"] for r in rows),
        "seconds_median": statistics.median(r["seconds"] for r in rows),
        "seconds_mean": statistics.fmean(r["seconds"] for r in rows),
        "calls_mean": statistics.fmean(r["calls"] for r in rows),
        "prompt_tokens_mean": statistics.fmean(r["input_tokens"] for r in rows),
        "output_tokens_mean": statistics.fmean(r["output_tokens"] for r in rows),
        "workflow_words_mean": statistics.fmean(r["workflow_words"] for r in rows),
        "loadavg": os.getloadavg(),
        "rows": rows,
    }


def markdown(results: list[dict], command: str) -> str:
    lines = [
        "# Memory manager: usable workflows from real Qwen trajectories, and their cost",
        "",
        f"Trajectories logged by the embedded-Qwen HotpotQA runs (`results/hotpotqa-qwen-n100`), "
        f"{results[0]['n']} distinct questions; the graph's compressor and token cap. "
        f"Measured {time.strftime('%Y-%m-%d', time.gmtime())} on {os.cpu_count()} cores.",
        "",
        "| manager | n | model as is | repaired | rejected twice -> extractive | first output copies the example "
        "| calls | prompt tok | output tok | s (median) | s (mean) | words | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        m = r["methods"]
        model = r["manager"] != "extractive"
        lines.append(
            f"| {r['manager']} | {r['n']} | {m.get('model', 0) if model else '-'} | {m.get('repaired', 0) if model else '-'} | "
            f"{m.get('extractive', 0) if model else r['n']} | {r['first_output_copies_example'] if model else '-'} | "
            f"{r['calls_mean']:.2f} | {r['prompt_tokens_mean']:.0f} | {r['output_tokens_mean']:.0f} | "
            f"{r['seconds_median']:.1f} | {r['seconds_mean']:.1f} | {r['workflow_words_mean']:.0f} | {r['loadavg'][0]:.1f} |"
        )
    lines += ["", f"Regenerate: `{command}`. Every workflow and raw output is in the .json beside this file.", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=24, help="trajectories (distinct questions)")
    parser.add_argument(
        "--managers", nargs="+", default=["extractive", "llamacpp:qwen-coder-0.5b", "llamacpp:qwen-coder-1.5b"]
    )
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("--name", default="manager", help="output file stem (<name>.md, <name>.json)")
    args = parser.parse_args()
    items = trajectories(args.n)
    results = [run_manager(spec, items) for spec in args.managers]
    command = (
        f"python bench/memory/bench_manager.py --n {args.n} --managers {' '.join(args.managers)} --name {args.name}"
    )
    (args.out / f"{args.name}.json").write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    (args.out / f"{args.name}.md").write_text(markdown(results, command))
    print(markdown(results, command))


if __name__ == "__main__":
    main()
