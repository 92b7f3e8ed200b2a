#!/usr/bin/env python
"""End-to-end cost benchmark: seconds and tokens per question of the whole agent (all roles) on the
embedded default model, for each memory configuration. Writes bench/e2e/results.md.

Two ways to get the figures (both are real runs of `mia eval`):

    # run fresh: N HotpotQA questions per configuration, the default models and budgets
    python bench/e2e/bench_e2e.py --n 6 --modes none,mia --max-tool-calls 4
    # the tight budgets the 135M model needed
    python bench/e2e/bench_e2e.py --n 3 --tight
    # an ablation: any Context field set for every run (here: no search required before answering)
    python bench/e2e/bench_e2e.py --n 30 --modes none --set min_tool_calls=0 --max-tool-calls 4
    # throughput: the same questions one at a time and 4 in flight on llama.cpp's parallel slots
    python bench/e2e/bench_e2e.py --n 8 --modes none,mia --concurrency 1,4 --max-tool-calls 4
    # or measure run folders that `mia eval` already wrote (e.g. the 3x30 runs in results/)
    python bench/e2e/bench_e2e.py --from-runs results/hotpotqa-smollm2-n30/{none,trajectory-rag,mia}

Wall time on a shared CPU depends on the load; the load average is recorded next to the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TIGHT = dict(
    max_tool_calls=3,
    context_overrides=dict(
        executor_max_tokens=64, planner_max_tokens=96, manager_max_tokens=96, judge_max_tokens=8, max_replans=0
    ),
)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def run_span_s(results: list) -> float | None:
    """Seconds from the first question's start to the last answer, from the answers' log times (None
    for runs logged before `finished_at` was kept): with questions in flight together, the run's
    throughput is n over this span, not over the sum of per-question walls."""
    if any(r.finished_at is None for r in results):
        return None
    return max(r.finished_at for r in results) - min(r.finished_at - r.wall_s for r in results)


def run_and_rows(spec: str) -> tuple[Path, tuple[int, int] | None]:
    """`FOLDER` or `FOLDER:A-B` (1-based rows A to B of its results.jsonl, e.g. the part of a resumed
    run that ran on an idle machine; row A then counts as the first question, which loads the model)."""
    match = re.fullmatch(r"(.+):(\d+)-(\d+)", spec)
    if not match:
        return Path(spec), None
    first, last = int(match.group(2)), int(match.group(3))
    if not 1 <= first <= last:
        raise SystemExit(f"{spec}: rows A-B need 1 <= A <= B")
    return Path(match.group(1)), (first, last)


def measure(run_dir: Path, rows: tuple[int, int] | None = None) -> dict:
    """Per-question seconds and tokens of one run folder (the first question includes model loading)."""
    from mia.app.evaluation import runlog
    from mia.app.evaluation.summary import summarise

    config = runlog.read_config(run_dir) or {}
    results = runlog.read_results(run_dir)
    if rows:
        results = results[rows[0] - 1 : rows[1]]
    if not results:
        raise SystemExit(f"{run_dir}: no results")
    walls = [r.wall_s for r in results]
    steady = walls[1:] or walls
    completion = sum(r.completion_tokens for r in results)
    # a resumed run's span holds its pauses: no throughput for it
    span = None if config.get("resumed_at") else run_span_s(results)
    concurrency = config.get("concurrency") or 1
    label = config.get("label") or config.get("memory_mode", run_dir.name)
    if rows:
        label += f" (questions {rows[0]}-{rows[0] + len(results) - 1})"
    return {
        "run": label,
        "concurrency": concurrency,
        "span_s": span,
        "questions_per_hour": len(results) * 3600 / span if span else None,
        "n": len(results),
        "first_s": walls[0],
        "mean_s": statistics.fmean(steady),
        "median_s": statistics.median(steady),
        "p90_s": _pct(steady, 0.9),
        "prompt_tok": statistics.fmean(r.prompt_tokens for r in results),
        "completion_tok": statistics.fmean(r.completion_tokens for r in results),
        "llm_calls": statistics.fmean(r.llm_calls for r in results),
        "tool_calls": statistics.fmean(r.tool_calls for r in results),
        "completion_tok_per_s": completion / max(1e-9, span or sum(walls)),
        "models": sorted(set((config.get("models") or {}).values())),
        "budget": {k: config.get(k) for k in ("max_tool_calls", "context_overrides")},
        "summary": summarise(results, {**config, "label": label}),
    }


def run_fresh(n: int, modes: list[str], out_root: Path, budget: dict, concurrencies: list[int]) -> list[Path]:
    """One `mia eval` run per (mode, concurrency), on the same seeded questions. A run with several
    questions in flight is labelled `<mode> x<c>`: its questions share llama.cpp's parallel slots.
    Comparing concurrencies, one unscored question (another seed) loads the models first: the
    server is per process, so otherwise only the first configuration would pay for loading."""
    import shutil

    from mia.app.evaluation.harness import EvalConfig, run_evaluation

    if len(concurrencies) > 1:  # load the models first, so that no configuration's span pays for it
        warm = out_root / "warm-up"
        asyncio.run(
            run_evaluation(
                EvalConfig(dataset="hotpotqa", n=1, seed=1, memory_mode=modes[0], **budget),
                warm,
                progress=False,
                plot=False,
            )
        )
        shutil.rmtree(warm)
    dirs = []
    for mode in modes:
        for c in concurrencies:
            label = mode if len(concurrencies) == 1 else f"{mode} x{c}"
            out = out_root / (mode if len(concurrencies) == 1 else f"{mode}-c{c}")
            cfg = EvalConfig(dataset="hotpotqa", n=n, seed=0, memory_mode=mode, concurrency=c, label=label, **budget)
            asyncio.run(run_evaluation(cfg, out, progress=True, plot=False))
            dirs.append(out)
    return dirs


def render(rows: list[dict], source: str) -> str:
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    lines = [
        "# End-to-end benchmark: seconds and tokens per question",
        "",
        f"Source: {source}. Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
        f"load average when written {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (shared machine: wall times vary).",
        f"Models: {', '.join(sorted({m for r in rows for m in r['models']}))}. Budget: {rows[0]['budget']}.",
        "Seconds are per question, excluding the first question (which loads the model; shown apart). "
        "In flight: questions run at once (each waits for the others on the shared slots, so its own seconds "
        "grow); questions/h: n over the span from the first question's start to the last answer (with several "
        "concurrencies, an unscored question loaded the models before the first run).",
        "",
        "| run | n | in flight | questions/h | first q (s) | mean s/q | median s/q | p90 s/q | prompt tok/q | completion tok/q | LLM calls/q | tool calls/q | completion tok/s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        qph = f"{r['questions_per_hour']:.1f}" if r["questions_per_hour"] else "n/a"
        lines.append(
            f"| {r['run']} | {r['n']} | {r['concurrency']} | {qph} | {r['first_s']:.0f} | {r['mean_s']:.1f} | "
            f"{r['median_s']:.1f} | {r['p90_s']:.1f} | "
            f"{r['prompt_tok']:.0f} | {r['completion_tok']:.0f} | {r['llm_calls']:.2f} | {r['tool_calls']:.2f} | "
            f"{r['completion_tok_per_s']:.2f} |"
        )
    from mia.app.evaluation.summary import markdown_roles

    lines += [
        "",
        "Per role, means per question (model s: wall time inside the role's model calls; cached: prompt",
        "tokens llama.cpp's prompt cache served; n/a for runs recorded before these were kept):",
        "",
        markdown_roles([r["summary"] for r in rows]).rstrip(),
    ]
    return "\n".join(lines) + "\n"


def context_settings(pairs: list[str], parser: argparse.ArgumentParser) -> dict:
    """`--set FIELD=VALUE` pairs, checked against the Context's fields (a typo is an error, not a no-op)."""
    import json

    from dataclasses import fields

    from mia.graph.context import Context

    out = {}
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        if not sep or name not in {f.name for f in fields(Context)}:
            parser.error(f"--set {pair!r}: expected FIELD=VALUE with FIELD a Context field")
        try:
            out[name] = json.loads(raw)
        except json.JSONDecodeError:
            out[name] = raw
    Context(**out)  # the Context's own checks run now, before any model loads
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=3)
    parser.add_argument("--modes", default="none,trajectory-rag,mia")
    parser.add_argument(
        "--from-runs",
        nargs="*",
        metavar="FOLDER[:A-B]",
        help="run folders to measure; FOLDER:A-B keeps its questions A to B (1-based)",
    )
    parser.add_argument("--work", type=Path, default=HERE / ".runs", help="run folders of a fresh benchmark")
    parser.add_argument("--out", type=Path, default=HERE / "results.md")
    parser.add_argument("--max-tool-calls", type=int, default=None, help="tool-call budget (default: the Context's)")
    parser.add_argument("--tight", action="store_true", help="the tight budgets the 135M model needed")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="a Context field for every run (repeatable; the value is read as JSON, else as text)",
    )
    parser.add_argument(
        "--concurrency",
        default="1",
        help="questions in flight, comma-separated (e.g. 1,4: each mode runs once per value)",
    )
    args = parser.parse_args()
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    if any(c < 1 for c in concurrencies):
        parser.error("--concurrency takes positive integers, e.g. 1,4")
    budget = (
        TIGHT if args.tight else ({"max_tool_calls": args.max_tool_calls} if args.max_tool_calls is not None else {})
    )
    if args.set:
        budget = {
            **budget,
            "context_overrides": {**budget.get("context_overrides", {}), **context_settings(args.set, parser)},
        }
    if args.from_runs:
        dirs, source = args.from_runs, "`mia eval` run folders " + ", ".join(f"`{d}`" for d in args.from_runs)
    else:
        start = time.perf_counter()
        dirs = run_fresh(args.n, args.modes.split(","), args.work, budget, concurrencies)
        source = f"fresh run of {args.n} HotpotQA questions per configuration ({time.perf_counter() - start:.0f} s)"
    text = render([measure(*run_and_rows(str(d))) for d in dirs], source)
    args.out.write_text(text, encoding="utf-8")
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
