"""Bytes and tokens per stored memory against the raw trajectory (the compression ratio).

    nice .venv/bin/python bench/memory/bench_compression.py --questions 200 --model-questions 6

Real agent trajectories were not available when this was written, so realistic ones are built
from HotpotQA dev questions (../shared/data): per supporting title, a thought, a `search` call
with a query made of the title and question words, and an observation of three retrieved
paragraphs (the gold one and two distractors, rendered like the search tool's "Doc i (Title)"
output); then the answer (gold for two thirds, a distractor title for the rest, judged
incorrect). Every trajectory is compressed by the extractive fallback; a subset also by the
real SmolLM2-135M manager model (`local:smollm2`) when `mia.graph.models` is available.
Tokens are MiniLM WordPiece tokens (a model-neutral yardstick). Output: compression.json and a
section appended by bench_store's results.md renderer is not needed: compression.md is separate.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

from mia.memory import Compressor, Trajectory, TrajectoryStep
from mia.memory.compression import extractive_workflow
from mia.memory.embeddings import count_tokens
from mia.memory.store import record_from_trajectory
from mia.memory.trajectory_log import TrajectoryLog

HERE = Path(__file__).resolve().parent
DATA = (
    Path(os.environ.get("MIA_SHARED_DATA", HERE.parents[2] / "shared" / "data"))
    / "hotpotqa"
    / "hotpotqa_dev_distractor.jsonl"
)
STOP = set(
    "the a an of in on for to and or is was were which who what when where did does do by with from as at that this".split()
)


def keywords(question: str, n: int = 4) -> str:
    words = [w for w in re.findall(r"[A-Za-z0-9']+", question) if w.lower() not in STOP]
    return " ".join(words[:n])


def build_trajectory(row: dict, index: int) -> Trajectory:
    paragraphs = row["paragraphs"]
    gold = [p for p in paragraphs if p["title"] in row["supporting_titles"]]
    other = [p for p in paragraphs if p["title"] not in row["supporting_titles"]]
    correct = index % 3 != 2
    steps: list[TrajectoryStep] = []
    for hop, para in enumerate(gold):
        query = f"{para['title']} {keywords(row['question'])}"
        steps.append(
            TrajectoryStep(
                kind="thought",
                content=f"Step {hop + 1} of the plan: I need facts about {para['title']} "
                "to answer the question, so I will search for it.",
            )
        )
        steps.append(TrajectoryStep(kind="tool_call", tool="search", args={"query_list": [query]}))
        docs = [para] + other[2 * hop : 2 * hop + 2]
        steps.append(
            TrajectoryStep(
                kind="observation",
                content="\n".join(f"Doc {i + 1} (Title: {d['title']}) {d['text']}" for i, d in enumerate(docs)),
            )
        )
    answer = row["answer"] if correct else (other[0]["title"] if other else "unknown")
    steps.append(TrajectoryStep(kind="thought", content="I have gathered enough evidence to answer."))
    steps.append(TrajectoryStep(kind="answer", content=answer))
    plan = (
        "1. Identify the entities the question depends on.\n2. Search for each entity and extract the "
        "linking fact.\n3. Combine the facts and verify them before answering."
    )
    return Trajectory(
        id=f"hotpot-{row['id']}",
        question=row["question"],
        plan=plan,
        steps=steps,
        answer=answer,
        outcome="correct" if correct else "incorrect",
        judge_feedback="matches the gold answer" if correct else f"gold answer is {row['answer']}",
        gold_answers=[row["answer"]],
        source="bench-compression",
        dataset="hotpotqa-dev-distractor",
    )


def measure(traj: Trajectory, workflow: str, method: str) -> dict:
    from mia.memory.compression import CompressionResult

    rec = record_from_trajectory(traj, CompressionResult(workflow=workflow, method=method))
    trace = traj.to_trace_text()
    stored = len(rec.to_json().encode()) + len(rec.question.encode()) + 384 * 4
    return {
        "raw_json_bytes": len(traj.model_dump_json().encode()),
        "trace_bytes": len(trace.encode()),
        "trace_tokens": count_tokens(trace),
        "workflow_bytes": len(workflow.encode()),
        "workflow_tokens": count_tokens(workflow),
        "workflow_words": len(workflow.split()),
        "stored_record_bytes": stored,
    }


def summarise(rows: list[dict]) -> dict:
    if not rows:
        return {}
    out = {key: float(np.mean([r[key] for r in rows])) for key in rows[0] if isinstance(rows[0][key], (int, float))}
    out["n"] = len(rows)
    out["token_ratio"] = out["trace_tokens"] / out["workflow_tokens"]
    out["byte_ratio_raw_json_to_stored"] = out["raw_json_bytes"] / out["stored_record_bytes"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--model-questions", type=int, default=6)
    parser.add_argument("--out", type=Path, default=HERE / "compression.json")
    parser.add_argument("--threads", type=int, default=1, help="torch threads for the manager model")
    parser.add_argument(
        "--from-stores",
        type=Path,
        nargs="+",
        default=None,
        metavar="DIR",
        help="Measure the memories that real agent runs stored (memory folders holding "
        "trajectories.jsonl and chroma/) instead of built trajectories; writes compression-real.*",
    )
    args = parser.parse_args()
    if args.from_stores:
        real = measure_stores(args.from_stores)
        out = args.out.with_name("compression-real.json")
        out.write_text(json.dumps(real, indent=2))
        out.with_suffix(".md").write_text(render_real(real))
        print(render_real(real))
        return
    rows = [json.loads(line) for line, _ in zip(DATA.open(), range(args.questions))]
    trajectories = [build_trajectory(row, i) for i, row in enumerate(rows)]
    extractive = [measure(t, extractive_workflow(t), "extractive") for t in trajectories]
    model_rows, methods, examples = [], {}, []
    if args.model_questions:
        try:
            from mia.graph.models import load_chat_model

            compressor = Compressor(load_chat_model("local:smollm2", temperature=0.0, max_tokens=320), max_words=200)
        except Exception as err:  # noqa: BLE001
            print("real model not available:", err, file=sys.stderr)
            compressor = None
        if compressor is not None:
            import torch

            torch.set_num_threads(args.threads)  # 2 spinning OpenMP threads crawl on a loaded 2-core box
            for traj in trajectories[: args.model_questions]:
                t = time.perf_counter()
                result = compressor.compress(traj)
                methods[result.method] = methods.get(result.method, 0) + 1
                row = measure(traj, result.workflow, result.method)
                row["seconds"] = time.perf_counter() - t
                model_rows.append(row)
                examples.append(
                    {
                        "question": traj.question,
                        "method": result.method,
                        "problems": result.problems,
                        "raw_output": (result.raw_outputs or [""])[0][:1500],
                        "workflow": result.workflow,
                    }
                )
                print(f"{result.method:10s} {row['seconds']:.0f}s {traj.question[:60]}", file=sys.stderr, flush=True)
    results = {
        "source": str(DATA.name),
        "questions": len(trajectories),
        "extractive": summarise(extractive),
        "model": summarise(model_rows),
        "model_methods": methods,
        "model_examples": examples,
        "loadavg": os.getloadavg(),
        "measured_at": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
    }
    args.out.write_text(json.dumps(results, indent=2))
    args.out.with_suffix(".md").write_text(render(results))
    print(render(results))


def measure_stores(folders: list[Path]) -> dict:
    """Real agent runs: each stored memory against the raw trajectory it was made from (the
    trajectory log beside the store), grouped by how the workflow was made."""
    from mia.memory import MemoryStore

    rows: dict[str, list[dict]] = {}
    sources = []
    for folder in folders:
        logged = {}
        for traj in TrajectoryLog(folder / "trajectories.jsonl").read():  # a compressed log too
            logged[traj.id] = traj
        with MemoryStore.open(folder) as store:
            records = [r for ns in store.namespaces() for r in store.list(ns)]
        matched = 0
        for rec in records:
            traj = logged.get(rec.trajectory_id)
            if traj is None:
                continue
            matched += 1
            rows.setdefault(rec.compression, []).append(measure(traj, rec.workflow, rec.compression))
        sources.append(
            {"folder": str(folder), "trajectories": len(logged), "memories": len(records), "matched": matched}
        )
    return {
        "sources": sources,
        "by_method": {m: summarise(r) for m, r in rows.items()},
        "all": summarise([row for r in rows.values() for row in r]),
        "measured_at": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
    }


def render_real(r: dict) -> str:
    lines = [
        "# Compression on real agent trajectories",
        "",
        "Memories stored by real runs of the graph (SmolLM2-135M as every role, HotpotQA distractor, tight "
        "budgets), each measured against the raw trajectory it was made from (the append-only trajectory log). "
        "Tokens: MiniLM WordPiece.",
        "",
        "| workflow made by | memories | raw trajectory JSON bytes | trace tokens | workflow tokens | workflow words "
        "| stored record bytes | token ratio | raw JSON / stored bytes |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, s in [*sorted(r["by_method"].items()), ("all", r["all"])]:
        if s:
            lines.append(
                f"| {name} | {s['n']} | {s['raw_json_bytes']:.0f} | {s['trace_tokens']:.0f} | {s['workflow_tokens']:.0f} "
                f"| {s['workflow_words']:.0f} | {s['stored_record_bytes']:.0f} | {s['token_ratio']:.1f}x "
                f"| {s['byte_ratio_raw_json_to_stored']:.1f}x |"
            )
    lines += ["", "Sources:", ""] + [
        f"- `{x['folder']}`: {x['trajectories']} trajectories, {x['memories']} memories, "
        f"{x['matched']} matched to their trajectory"
        for x in r["sources"]
    ]
    lines += [
        "",
        "The runs' budgets are tight (48 tokens per role, one search), so these trajectories are short; "
        "the built trajectories of compression.md (a search per hop, three paragraphs each) are closer to a "
        "full-budget run.",
        "",
    ]
    return "\n".join(lines)


def render(r: dict) -> str:
    lines = [
        "# Compression: bytes and tokens per memory against the raw trajectory",
        "",
        f"Trajectories: {r['questions']} realistic ones built from HotpotQA dev ({r['source']}): real questions and "
        "paragraphs, a search per supporting title returning 3 paragraphs, gold or distractor answer. "
        "**Not real agent trajectories** (none existed yet when measured). Tokens: MiniLM WordPiece.",
        "",
        "| compressor | n | raw trajectory JSON bytes | trace tokens | workflow tokens | workflow words "
        "| stored record bytes (JSON + question + 384-d float32) | token ratio | raw JSON / stored bytes |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in ("extractive", "model"):
        s = r.get(name) or {}
        if s:
            lines.append(
                f"| {name} | {s['n']} | {s['raw_json_bytes']:.0f} | {s['trace_tokens']:.0f} | {s['workflow_tokens']:.0f} "
                f"| {s['workflow_words']:.0f} | {s['stored_record_bytes']:.0f} | {s['token_ratio']:.1f}x "
                f"| {s['byte_ratio_raw_json_to_stored']:.1f}x |"
            )
    if r.get("model_methods"):
        lines += [
            "",
            f"Real SmolLM2-135M manager: outcome of each compression {r['model_methods']} "
            "(model = used as written, repaired = fixed by the parser, extractive = fallback after 2 attempts). "
            f"Mean {r['model'].get('seconds', 0):.0f} s per compression (load average {r['loadavg'][0]:.1f}).",
        ]
        for ex in r.get("model_examples", [])[:2]:
            lines += ["", f"Example ({ex['method']}): {ex['question']}", "", "```", ex["workflow"], "```"]
    lines += [
        "",
        "Chroma's own on-disk cost per memory (HNSW graph, SQLite rows and indexes) is in results.md "
        "(disk / memory column).",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
