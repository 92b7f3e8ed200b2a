#!/usr/bin/env python
"""llama.cpp's settings on this CPU (issue 41): prompt and generation tokens/s of one GGUF on the
build `llamacpp:` loads, for each setting that could matter on a small CPU, each as a share of the
CPU's measured peak, in one run, each variant in its own process, in alternating order by round.

    python bench/models/bench_settings.py [--model qwen-coder-1.5b] [--rounds 2] [--threads 2]

Variants (xllamacpp CommonParams fields; `base` is what the backend uses, graph/models/servers.py):
flash attention off and on (auto in base), a q8_0 KV cache, batch/ubatch 256 and 2048 (base 2048/512),
weight repacking off (`no_extra_bufts`), and one thread. Run it on an otherwise idle machine: the load
average before and after is written beside the figures. Writes bench/models/settings.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
Q8_0 = 8  # ggml_type GGML_TYPE_Q8_0 (F16 is 1)
VARIANTS: dict[str, dict] = {
    "base": {},
    "flash attention off": {"flash_attn_type": 0},
    "flash attention on": {"flash_attn_type": 1},
    "KV cache q8_0": {"flash_attn_type": 1, "cache_type_k": Q8_0, "cache_type_v": Q8_0},
    "batch 256 / ubatch 256": {"n_batch": 256, "n_ubatch": 256},
    "batch 2048 / ubatch 2048": {"n_batch": 2048, "n_ubatch": 2048},
    "no weight repacking": {"no_extra_bufts": True},
}
ONE = (
    "import json, sys; sys.path.insert(0, {here!r}); from bench_backends import bench_llamacpp; "
    "print(json.dumps(bench_llamacpp({model!r}, {threads}, {words}, {gen}, concurrency=False, settings={settings!r})))"
)


def one(model: str, threads: int, words: int, gen: int, settings: dict) -> dict:
    code = ONE.format(here=str(HERE), model=model, threads=threads, words=words, gen=gen, settings=settings)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["failed"])[-1]
        return {"error": tail}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen-coder-1.5b")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--prompt-words", type=int, default=700)
    parser.add_argument("--gen", type=int, default=22)
    parser.add_argument("--out", type=Path, default=HERE / "settings")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from bench_backends import _cpu
    from bench_native import PARAMS, matmul_peak

    load_before = os.getloadavg()[0]
    peak = matmul_peak(args.threads)
    plan = [(name, dict(v), args.threads) for name, v in VARIANTS.items()]
    if args.threads > 1:
        plan.append(("1 thread", {}, 1))
    rows = []
    for r in range(args.rounds):  # alternating order: a drift in the machine's load hits every variant
        for name, settings, threads in plan if r % 2 == 0 else list(reversed(plan)):
            row = {
                "variant": name,
                "settings": settings,
                "round": r,
                **one(args.model, threads, args.prompt_words, args.gen, settings),
            }
            if "prompt_tok_s" in row:
                row["prompt_share_of_peak"] = 2 * PARAMS.get(args.model, 0) * row["prompt_tok_s"] / peak
            rows.append(row)
            print(name, r, {k: row.get(k) for k in ("prompt_tok_s", "gen_tok_s", "error")}, flush=True)
    meta = {
        "cpu": _cpu(),
        "model": args.model,
        "threads": args.threads,
        "matmul_peak_gflops": peak / 1e9,
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
        "command": "python bench/models/bench_settings.py " + " ".join(sys.argv[1:]),
    }
    args.out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")

    def mean(name: str, key: str) -> float | None:
        vals = [row[key] for row in rows if row["variant"] == name and key in row]
        return sum(vals) / len(vals) if vals else None

    base = mean("base", "prompt_tok_s") or 1.0
    lines = [
        "# llama.cpp settings on this CPU",
        "",
        f"CPU: {meta['cpu']}; {args.model}, {args.threads} threads, a {args.prompt_words}-word prompt and "
        f"{args.gen} generated tokens, {args.rounds} rounds in alternating order. Load average "
        f"{load_before:.2f} before, {meta['load_after']:.2f} after. Peak (NumPy float32 matmul): "
        f"{meta['matmul_peak_gflops']:.1f} GFLOP/s. Command: `{meta['command']}`.",
        "",
        "| variant | prompt tok/s | vs base | share of peak | generation tok/s |",
        "|---|---|---|---|---|",
    ]
    for name, _, _ in plan:
        pp, tg = mean(name, "prompt_tok_s"), mean(name, "gen_tok_s")
        if pp is None or tg is None:
            errors = {row.get("error") for row in rows if row["variant"] == name}
            lines.append(f"| {name} | failed: {'; '.join(str(e) for e in errors)} | | | |")
            continue
        share = 2 * PARAMS.get(args.model, 0) * pp / peak
        lines.append(f"| {name} | {pp:.1f} | {pp / base:.2f}x | {share:.0%} | {tg:.1f} |")
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
