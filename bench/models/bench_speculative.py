#!/usr/bin/env python
"""llama.cpp's draftless speculative decoding on the served prompts (MIA_LLAMACPP_SPEC): generation
speed and whether greedy replies stay the same, each variant in its own process on the real
`llamacpp:` chat model, the same prompts in the same order.

    python bench/models/bench_speculative.py [--model qwen-coder-1.5b] [--questions 6]
        [--variants off ngram-simple ngram-simple:4:16 ngram-mod:4:16]

Why: a 1.5B model on 2 cores generates at about 14 tokens/s and processes prompts at about 60, so
verifying a draft of k tokens in one pass costs far less than k generation steps. The agent's
replies copy from their prompts (a plan repeats the question's names, a search query its words, an
answer the passage's), which an n-gram lookup in the request's own tokens drafts for free.

The prompts are those the graph serves, rebuilt from a logged run's episodes with the prompt
builder: the planner's prompt for each question, and each executor turn of its first attempt (the
conversation so far, as `mia.training.sft_data` rebuilds it). A variant is TYPE or TYPE:N:M
(MIA_LLAMACPP_SPEC, _SPEC_N, _SPEC_M). Figures are llama.cpp's own timings (generation only; the
prompt's processing is the same in every variant). Run it on an otherwise idle machine: the load
average is written beside the figures. Writes bench/models/speculative.json and .md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RUN = ROOT / "results/ttl-2wiki/memory/results.jsonl"
MAX_TOKENS = 384  # the executor's turn budget as served (Context.executor_max_tokens)


def prompts(run: Path, questions: int) -> list[dict]:
    """[{"role": planner|executor, "messages": [...]}] of the first `questions` episodes of `run`."""
    sys.path.insert(0, str(ROOT))
    from mia.training.prompts import planner_messages
    from mia.training.sft_data import conversation_rows, read_episodes

    found: list[dict] = []
    for episode in read_episodes([str(run)])[:questions]:
        found.append({"role": "planner", "messages": planner_messages(episode.question)})
        for row in conversation_rows(dataclasses.replace(episode, correct=True)):  # every first attempt
            found.append({"role": "executor", "messages": row["prompt"]})
    return found


def child(model: str, items: list[dict]) -> dict:
    """Run every prompt greedily on this process's server; the variant is in the environment."""
    from mia.graph.models import load_chat_model

    chat = load_chat_model(f"llamacpp:{model}", temperature=0.0, max_tokens=MAX_TOKENS)
    rows = []
    for item in items:
        started = time.perf_counter()
        reply = chat.invoke(item["messages"])
        timings = (reply.response_metadata or {}).get("timings") or {}
        rows.append(
            {
                "role": item["role"],
                "text": reply.content,
                "wall_s": round(time.perf_counter() - started, 3),
                "predicted_n": timings.get("predicted_n", 0),
                "predicted_ms": timings.get("predicted_ms", 0.0),
                "prompt_ms": timings.get("prompt_ms", 0.0),
                "draft_n": timings.get("draft_n", 0),
                "draft_n_accepted": timings.get("draft_n_accepted", 0),
            }
        )
    return {"rows": rows}


def environment(variant: str) -> dict[str, str]:
    kind, *lengths = variant.split(":")
    env = {**os.environ, "MIA_LLAMACPP_SPEC": kind, "MIA_LLAMACPP_SPEC_N": "", "MIA_LLAMACPP_SPEC_M": ""}
    if lengths:
        env["MIA_LLAMACPP_SPEC_N"], env["MIA_LLAMACPP_SPEC_M"] = lengths
    return env


def run_variant(variant: str, model: str, items: list[dict], scratch: Path) -> dict:
    src = scratch / "prompts.json"
    src.write_text(json.dumps(items))
    out = scratch / f"{variant.replace(':', '_')}.json"
    code = (
        "import json, sys; sys.path.insert(0, {here!r}); from bench_speculative import child; "
        "json.dump(child({model!r}, json.load(open({src!r}))), open({out!r}, 'w'))"
    ).format(here=str(HERE), model=model, src=str(src), out=str(out))
    subprocess.run([sys.executable, "-c", code], check=True, env=environment(variant))
    return json.loads(out.read_text())


def summary(variant: str, rows: list[dict], reference: list[dict]) -> dict:
    gen_n = sum(r["predicted_n"] for r in rows)
    gen_ms = sum(r["predicted_ms"] for r in rows)
    drafted = sum(r["draft_n"] for r in rows)
    out = {
        "variant": variant,
        "replies": len(rows),
        "generated_tokens": gen_n,
        "generation_s": round(gen_ms / 1000, 2),
        "tokens_per_s": round(gen_n / (gen_ms / 1000), 2) if gen_ms else None,
        "prompt_s": round(sum(r["prompt_ms"] for r in rows) / 1000, 2),
        "wall_s": round(sum(r["wall_s"] for r in rows), 2),
        "drafted": drafted,
        "accepted": sum(r["draft_n_accepted"] for r in rows),
        "same_text": sum(a["text"] == b["text"] for a, b in zip(rows, reference, strict=True)),
    }
    for role in ("planner", "executor"):
        mine = [r for r in rows if r["role"] == role]
        n, ms = sum(r["predicted_n"] for r in mine), sum(r["predicted_ms"] for r in mine)
        out[f"{role}_tokens_per_s"] = round(n / (ms / 1000), 2) if ms else None
    return out


def write(results: list[dict], meta: dict) -> None:
    (HERE / "speculative.json").write_text(json.dumps({"meta": meta, "variants": results}, indent=2) + "\n")
    base = results[0]
    lines = [
        "# Draftless speculative decoding on the served prompts (MIA_LLAMACPP_SPEC)",
        "",
        f"`python bench/models/bench_speculative.py --questions {meta['questions']}` on {meta['cpu']}, "
        f"{meta['model']}, greedy, {meta['replies']} replies ({meta['questions']} questions of "
        f"`{meta['run']}`: each planner prompt and each executor turn of the first attempt); load average "
        f"before {meta['load_before']}, after {meta['load_after']}. Generation only (llama.cpp's timings); "
        "the prompts' processing is the same in every variant.",
        "",
        "| variant | generation tok/s | planner tok/s | executor tok/s | generation s | x `off` | "
        "drafted / accepted | same reply as `off` |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        speed = base["generation_s"] / r["generation_s"] if r["generation_s"] else float("nan")
        lines.append(
            f"| {r['variant']} | {r['tokens_per_s']} | {r['planner_tokens_per_s']} | {r['executor_tokens_per_s']} | "
            f"{r['generation_s']} | {speed:.2f} | {r['drafted']} / {r['accepted']} | {r['same_text']} of {r['replies']} |"
        )
    (HERE / "speculative.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen-coder-1.5b")
    ap.add_argument("--questions", type=int, default=6)
    ap.add_argument("--run", type=Path, default=RUN)
    ap.add_argument("--variants", nargs="+", default=["off", "ngram-simple", "ngram-simple:4:16", "ngram-mod:4:16"])
    args = ap.parse_args()
    if args.variants[0] != "off":
        ap.error("the first variant is the reference: off")
    sys.path.insert(0, str(HERE))
    from bench_backends import _cpu

    items = prompts(args.run, args.questions)
    scratch = ROOT / "runs" / "bench-speculative"
    scratch.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()[0]
    outputs = []
    for variant in args.variants:
        print(f"{variant}: {len(items)} replies", flush=True)
        outputs.append(run_variant(variant, args.model, items, scratch)["rows"])
    results = [summary(v, rows, outputs[0]) for v, rows in zip(args.variants, outputs, strict=True)]
    meta = {
        "cpu": _cpu(),
        "model": args.model,
        "questions": args.questions,
        "replies": len(items),
        "run": str(args.run.relative_to(ROOT)) if args.run.is_relative_to(ROOT) else str(args.run),
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }
    write(results, meta)
    print((HERE / "speculative.md").read_text())


if __name__ == "__main__":
    main()
