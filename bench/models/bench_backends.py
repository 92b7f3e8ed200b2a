#!/usr/bin/env python
"""Speed of the embedded models on this CPU: prompt and generation tokens/s through llama.cpp
(xllamacpp, the default backend) and through transformers (the de-quantised weights that training
uses), and the throughput of 4 concurrent requests on llama.cpp's parallel slots vs one at a time.

    python bench/models/bench_backends.py                       # all embedded models, both backends
    python bench/models/bench_backends.py --models qwen-coder-0.5b --no-transformers

Writes bench/models/results.json and results.md. Figures depend on the CPU and its load: the load
average and the CPU model are recorded beside them. Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# ~1,000 tokens of HotpotQA-like text: what one search result block costs the executor.
FILLER = (
    "Arthur's Magazine (1844-1846) was an American literary periodical published in Philadelphia in the "
    "19th century. Edited by Timothy Shay Arthur, it featured work by Edgar A. Poe and others. "
)


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


MEASURE = (
    "import json, sys; sys.path.insert(0, {here!r}); from bench_backends import bench_llamacpp; "
    "print(json.dumps(bench_llamacpp({model!r}, {threads}, {words}, {gen}, concurrency=False, settings={settings!r})))"
)


def measure_in_process(
    model: str, threads: int, words: int, gen: int, settings: dict | None = None, env: dict[str, str] | None = None
) -> dict:
    """`bench_llamacpp` in a fresh process (the llama.cpp build is chosen at import, and a server's
    settings are fixed when it starts): its row, or {"error": the last line of stderr}."""
    here = str(Path(__file__).resolve().parent)
    code = MEASURE.format(here=here, model=model, threads=threads, words=words, gen=gen, settings=settings or {})
    done = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, **(env or {})}, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1]}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def measured_prompts(prompt_words: int) -> list[str]:
    """The two timed prompts of every llama.cpp leg (xllamacpp and llama-server alike): the same
    text with a different first token, so the second cannot reuse the first's cache."""
    text = (FILLER * 200)[: prompt_words * 6]
    return [f"{i} {text}\nSummary:" for i in range(2)]


def open_server(name: str, threads: int, settings: dict | None = None):  # noqa: ANN201 - an xllamacpp.Server
    """An in-process llama.cpp server on the build `llamacpp:` loads (MIA_LLAMACPP_BUILD: the native
    build for this CPU, or the prebuilt wheel), 8,192 context and 4 slots. `settings` are xllamacpp
    CommonParams fields set on top (flash_attn_type, cache_type_k, n_batch...)."""
    from mia.graph.models.embedded import ensure_gguf
    from mia.graph.models.servers import import_xllamacpp

    xlc = import_xllamacpp()
    params = xlc.CommonParams()
    params.model.path = str(ensure_gguf(name))
    params.n_ctx, params.n_parallel, params.warmup, params.verbosity = 8192, 4, False, -1
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = threads
    for key, value in (settings or {}).items():
        if not hasattr(params, key):
            raise ValueError(f"xllamacpp CommonParams has no field {key!r}")
        setattr(params, key, value)
    return xlc.Server(params)


def bench_llamacpp(
    name: str, threads: int, prompt_words: int, gen: int, concurrency: bool = True, settings: dict | None = None
) -> dict:
    """Prompt and generation speed from llama.cpp's own timings (one warm-up request first), on
    `open_server(name, threads, settings)`."""
    from mia.graph.models.native import loaded_build
    from mia.graph.models.servers import import_xllamacpp

    xlc = import_xllamacpp()
    server = open_server(name, threads, settings)
    server.handle_completions({"prompt": "Hello", "max_tokens": 4, "temperature": 0})
    pp, tg = [], []
    for prompt in measured_prompts(prompt_words):
        out = server.handle_completions(
            {
                "prompt": prompt,
                "max_tokens": gen,
                "temperature": 0,
                "ignore_eos": True,
                "cache_prompt": False,
            }
        )
        t = out["timings"]
        pp.append(t["prompt_n"] / (t["prompt_ms"] / 1000))
        tg.append(t["predicted_n"] / (t["predicted_ms"] / 1000))
    prompt_n = out["timings"]["prompt_n"]
    row = {
        "backend": f"llama.cpp (xllamacpp, {loaded_build(xlc)})",
        "model": name,
        "threads": threads,
        "prompt_tokens": prompt_n,
        "prompt_tok_s": statistics.fmean(pp),
        "gen_tok_s": statistics.fmean(tg),
    }
    if not concurrency:
        return row
    # 4 different short questions (300 prompt tokens, 64 new): one at a time, then all at once
    prompts = [f"Question {i}: {(FILLER * 8)[:1500]}\nAnswer briefly:" for i in range(4)]
    req = lambda p: {"prompt": p, "max_tokens": 64, "temperature": 0, "ignore_eos": True, "cache_prompt": False}  # noqa: E731
    started = time.perf_counter()
    for p in prompts:
        server.handle_completions(req(p))
    sequential = time.perf_counter() - started
    started = time.perf_counter()
    workers = [threading.Thread(target=server.handle_completions, args=(req(p),)) for p in prompts]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    concurrent = time.perf_counter() - started
    return {
        **row,
        "four_sequential_s": sequential,
        "four_concurrent_s": concurrent,
        "concurrency_speedup": sequential / concurrent,
    }


def bench_transformers(name: str, threads: int, prompt_words: int, gen: int) -> dict:
    """Prompt (one forward pass) and greedy generation speed of the de-quantised fp32 weights."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from mia.graph.models.convert import ensure_converted

    torch.set_num_threads(threads)
    folder = ensure_converted(name)
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    text = (FILLER * 200)[: prompt_words * 6]
    ids = tok(f"0 {text}\nSummary:", return_tensors="pt").input_ids
    with torch.inference_mode():
        model(ids[:, :16])  # warm-up
        started = time.perf_counter()
        model(ids)
        pp = ids.shape[1] / (time.perf_counter() - started)
        short = ids[:, :64]
        started = time.perf_counter()
        out = model.generate(
            short, max_new_tokens=gen, min_new_tokens=gen, do_sample=False, pad_token_id=tok.eos_token_id
        )
        tg = (out.shape[1] - short.shape[1]) / (time.perf_counter() - started)
    return {
        "backend": "transformers (fp32)",
        "model": name,
        "threads": threads,
        "prompt_tokens": int(ids.shape[1]),
        "prompt_tok_s": pp,
        "gen_tok_s": tg,
    }


def write(rows: list[dict], meta: dict) -> None:
    (HERE / "results.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    lines = [
        "# Embedded models: speed on this CPU",
        "",
        f"CPU: {meta['cpu']}, {meta['cores']} cores; load average before the run {meta['load_before']}, "
        f"after {meta['load_after']}. Command: `{meta['command']}`.",
        "",
        "| backend | model | threads | prompt tokens | prompt tok/s | generation tok/s | 4 requests one by one (s) | 4 concurrent (s) | speed-up |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        seq = f"{r['four_sequential_s']:.1f}" if "four_sequential_s" in r else "-"
        con = f"{r['four_concurrent_s']:.1f}" if "four_concurrent_s" in r else "-"
        sp = f"{r['concurrency_speedup']:.2f}x" if "concurrency_speedup" in r else "-"
        lines.append(
            f"| {r['backend']} | {r['model']} | {r['threads']} | {r['prompt_tokens']} | "
            f"{r['prompt_tok_s']:.1f} | {r['gen_tok_s']:.1f} | {seq} | {con} | {sp} |"
        )
    (HERE / "results.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="smollm2,qwen-coder-0.5b,qwen-coder-1.5b")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--prompt-words", type=int, default=700, help="prompt length (about 1,000 tokens)")
    parser.add_argument("--gen", type=int, default=64, help="generated tokens per request")
    parser.add_argument("--no-transformers", action="store_true", help="skip the transformers rows")
    args = parser.parse_args()
    meta = {
        "cpu": _cpu(),
        "cores": os.cpu_count(),
        "load_before": os.getloadavg()[0],
        "command": "python bench/models/bench_backends.py "
        + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if v not in (False, None)),
    }
    rows = []
    for name in args.models.split(","):
        rows.append(bench_llamacpp(name, args.threads, args.prompt_words, args.gen))
        print(rows[-1], flush=True)
        if not args.no_transformers:
            rows.append(bench_transformers(name, args.threads, args.prompt_words, args.gen))
            print(rows[-1], flush=True)
    meta["load_after"] = os.getloadavg()[0]
    write(rows, meta)


if __name__ == "__main__":
    main()
