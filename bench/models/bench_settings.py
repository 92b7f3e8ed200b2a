#!/usr/bin/env python
"""llama.cpp's settings on this CPU (issue 41): prompt and generation tokens/s of one GGUF on the
build `llamacpp:` loads, for each setting that could matter on a small CPU, each as a share of the
CPU's measured peak, in one run, each variant in its own process, in alternating order by round.

    python bench/models/bench_settings.py [--model qwen-coder-1.5b] [--rounds 2] [--threads 2]

Variants (xllamacpp CommonParams fields; `base` is what the backend uses, graph/models/servers.py):
flash attention off and on (auto in base), a q8_0 KV cache, batch/ubatch 256 and 2048 (base 2048/512),
weight repacking off (`no_extra_bufts`; base repacks, as llama.cpp does by default; the backend's
MIA_LLAMACPP_REPACK=auto repacks only on the prebuilt wheel), and one thread; then prompt-cache reuse as the roles use it
(the three reviewers, or the executor's next turn, send a prompt whose first ~1,000 tokens the slot
already holds): the second call's seconds with `cache_prompt` on against off. Shares are of the roofs
bench_native.py measures (int8 matmul for prompts, memory bandwidth for generation). Run it on an
otherwise idle machine: the load average before and after is written beside the figures. Writes
bench/models/settings.json and .md.
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
CACHE = (
    "import json, sys, time; sys.path.insert(0, {here!r}); from bench_backends import measured_prompts, open_server\n"
    "server = open_server({model!r}, {threads})\n"
    "prefix = measured_prompts({words})[0]\n"
    "out = {{}}\n"
    "for cache in (False, True, False, True):\n"
    "    server.handle_completions({{'prompt': prefix + ' First', 'max_tokens': 1, 'temperature': 0, 'cache_prompt': cache}})\n"
    "    t = time.perf_counter()\n"
    "    r = server.handle_completions({{'prompt': prefix + ' Second, a different ending', 'max_tokens': 1, 'temperature': 0, 'cache_prompt': cache}})\n"
    "    out.setdefault(str(cache), []).append((time.perf_counter() - t, r['timings']['prompt_n']))\n"
    "print(json.dumps(out))"
)


def prompt_cache(model: str, threads: int, words: int) -> dict:
    """Seconds and prompt tokens evaluated for a prompt that shares its prefix with the slot's last one."""
    code = CACHE.format(here=str(HERE), model=model, threads=threads, words=words)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1]}
    runs = json.loads(done.stdout.strip().splitlines()[-1])
    mean = lambda key, i: sum(r[i] for r in runs[key]) / len(runs[key])  # noqa: E731
    return {
        "off_s": mean("False", 0),
        "off_tokens": mean("False", 1),
        "on_s": mean("True", 0),
        "on_tokens": mean("True", 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen-coder-1.5b")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--prompt-words", type=int, default=700)
    parser.add_argument("--gen", type=int, default=22)
    parser.add_argument("--out", type=Path, default=HERE / "settings")
    parser.add_argument("--variants", help="comma-separated variant names to run (default: all)")
    parser.add_argument("--no-cache-test", action="store_true", help="leave the prompt-cache measurement out")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from bench_backends import _cpu, measure_in_process
    from bench_native import PARAMS, peaks

    from mia.graph.models.embedded import ensure_gguf

    load_before = os.getloadavg()[0]
    roof = peaks(args.threads)
    gguf_bytes = ensure_gguf(args.model).stat().st_size
    int8 = roof.get("int8_ops")
    plan = [(name, dict(v), args.threads) for name, v in VARIANTS.items()]
    if args.threads > 1:
        plan.append(("1 thread", {}, 1))
    if args.variants:
        wanted = [v.strip() for v in args.variants.split(",")]
        unknown = set(wanted) - {name for name, _, _ in plan}
        if unknown:
            raise SystemExit(f"unknown variants {sorted(unknown)}; known: {[name for name, _, _ in plan]}")
        plan = [step for step in plan if step[0] in wanted]
    rows = []
    for r in range(args.rounds):  # alternating order: a drift in the machine's load hits every variant
        for name, settings, threads in plan if r % 2 == 0 else list(reversed(plan)):
            row = {
                "variant": name,
                "settings": settings,
                "round": r,
                **measure_in_process(args.model, threads, args.prompt_words, args.gen, settings),
            }
            if "prompt_tok_s" in row:
                row["prompt_share_of_int8_peak"] = (
                    2 * PARAMS.get(args.model, 0) * row["prompt_tok_s"] / int8 if int8 else None
                )
                row["gen_share_of_bandwidth"] = gguf_bytes * row["gen_tok_s"] / roof["copy_bytes_s"]
            rows.append(row)
            print(name, r, {k: row.get(k) for k in ("prompt_tok_s", "gen_tok_s", "error")}, flush=True)
    cache = {"skipped": True} if args.no_cache_test else prompt_cache(args.model, args.threads, args.prompt_words)
    print("prompt cache", cache, flush=True)
    meta = {
        "cpu": _cpu(),
        "model": args.model,
        "threads": args.threads,
        "backend": next((row["backend"] for row in rows if "backend" in row), None),
        "peaks": roof,
        "gguf_bytes": gguf_bytes,
        "prompt_cache": cache,
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
        f"CPU: {meta['cpu']}; {meta['backend']}; {args.model}, {args.threads} threads, a {args.prompt_words}-word prompt and "
        f"{args.gen} generated tokens, {args.rounds} rounds in alternating order. Load average "
        f"{load_before:.2f} before, {meta['load_after']:.2f} after. Roofs: int8 matmul "
        f"{f'{int8 / 1e9:.0f} GOP/s' if int8 else 'none (' + str(roof.get('int8_why')) + ')'}, memory copy {roof['copy_bytes_s'] / 1e9:.1f} GB/s (bench_native.py says "
        f"why these). Command: `{meta['command']}`.",
        "",
        "| variant | prompt tok/s | vs base | share of int8 peak | generation tok/s | share of bandwidth |",
        "|---|---|---|---|---|---|",
    ]
    for name, _, _ in plan:
        pp, tg = mean(name, "prompt_tok_s"), mean(name, "gen_tok_s")
        if pp is None or tg is None:
            errors = {row.get("error") for row in rows if row["variant"] == name}
            lines.append(f"| {name} | failed: {'; '.join(str(e) for e in errors)} | | | | |")
            continue
        share = f"{2 * PARAMS.get(args.model, 0) * pp / int8:.0%}" if int8 else "-"
        bandwidth = gguf_bytes * tg / roof["copy_bytes_s"]
        lines.append(f"| {name} | {pp:.1f} | {pp / base:.2f}x | {share} | {tg:.1f} | {bandwidth:.0%} |")
    if cache.get("skipped"):
        lines += ["", "Prompt cache: not measured (--no-cache-test)."]
    elif "error" in cache:
        lines += ["", f"Prompt cache: failed ({cache['error']})."]
    else:
        lines += [
            "",
            f"Prompt cache (a prompt sharing its first {args.prompt_words} words with the slot's last one, the "
            f"reviewers' and the executor's turns' pattern): {cache['off_s']:.2f} s and {cache['off_tokens']:.0f} "
            f"prompt tokens evaluated with `cache_prompt` off, {cache['on_s']:.2f} s and {cache['on_tokens']:.0f} "
            f"with it on ({cache['off_s'] / max(cache['on_s'], 1e-9):.1f}x).",
        ]
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
