#!/usr/bin/env python
"""The prebuilt llama.cpp wheel, this CPU's native build (`mia models build-native`) and llama.cpp's
own `llama-server` built natively (bench/models/llama_server.py), side by side: the same GGUF,
prompts and thread count, llama.cpp's default settings (weights repacked), each in its own process (the build is chosen at import), in alternating
order, and each figure as a share of this CPU's measured roofs.

    python bench/models/bench_native.py [--model qwen-coder-1.5b] [--rounds 2] [--threads 2]
                                        [--no-server | --server-bin PATH]

Roofs, measured on the same threads, best of 5:
- compute, for prompt processing: an int8 matrix multiply (torch's `_int_mm`, oneDNN with VNNI
  where the CPU has it), because llama.cpp's Q4_K/Q8 kernels multiply int8 (weights unpacked,
  activations quantised to 8 bits); prompt processing of a d-parameter model costs about 2 d
  operations a token, so p tokens/s use 2 d p op/s. The float32 matmul peak is recorded too.
- memory bandwidth, for generation: a NumPy copy of 512 MiB (bytes read plus written per second);
  each generated token reads every weight once, so g tokens/s move g x (GGUF size) bytes/s.
Writes bench/models/native.json and native.md (`--out STEM`: STEM.json and STEM.md, for another CPU).
Where torch's int8 matmul is slower than its float32 one (no VNNI kernel: oneDNN falls back to a
reference loop), it is no roof, and the prompt shares are left out rather than shown above 100%.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PARAMS = {"qwen-coder-1.5b": 1.54e9, "qwen-coder-0.5b": 0.49e9, "smollm2": 0.135e9}
PEAKS = """
import json, time, numpy as np
def best(f):
    f(); times = []
    for _ in range(5):
        t = time.perf_counter(); f(); times.append(time.perf_counter() - t)
    return min(times)
n = 2048
a = np.random.rand(n, n).astype(np.float32); b = a.copy()
out = {"f32_flops": 2 * n ** 3 / best(lambda: a @ b)}
src = np.ones(64 * 2 ** 20, dtype=np.float64); dst = np.empty_like(src)
out["copy_bytes_s"] = 2 * src.nbytes / best(lambda: np.copyto(dst, src))
try:
    import torch
    torch.set_num_threads(THREADS)
    x = torch.randint(-128, 127, (n, n), dtype=torch.int8); y = x.clone()
    out["int8_ops"] = 2 * n ** 3 / best(lambda: torch._int_mm(x, y))
except Exception as e:  # no torch, or no int8 matmul on this CPU
    out["int8_ops"] = None; out["int8_why"] = str(e)[:200]
print(json.dumps(out))
"""


def peaks(threads: int) -> dict:
    """The roofs above, in a fresh process (BLAS and torch read their thread count at start)."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    code = PEAKS.replace("THREADS", str(threads))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    roof = dict(json.loads(done.stdout.strip().splitlines()[-1]))
    if roof.get("int8_ops") and roof["int8_ops"] < roof["f32_flops"]:
        roof["int8_why"] = (
            f"torch's int8 matmul ran at {roof['int8_ops'] / 1e9:.1f} GOP/s, slower than float32: "
            "no int8 kernel for this CPU, so no roof"
        )
        roof["int8_ops"] = None
    return roof


def one(build: str, model: str, threads: int, words: int, gen: int) -> dict:
    from bench_backends import measure_in_process

    row = measure_in_process(model, threads, words, gen, env={"MIA_LLAMACPP_BUILD": build})
    if "error" in row:
        raise SystemExit(f"{build}: {row['error']}")
    return row


def server_leg(binary: Path, model: str, threads: int, words: int, gen: int) -> dict:
    from bench_backends import measured_prompts
    from llama_server import bench_server

    from mia.graph.models.embedded import ensure_gguf

    return bench_server(binary, ensure_gguf(model), threads, measured_prompts(words), gen)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen-coder-1.5b", choices=sorted(PARAMS))
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--prompt-words", type=int, default=700)
    parser.add_argument("--gen", type=int, default=22)
    parser.add_argument("--no-server", action="store_true", help="leave llama-server out")
    parser.add_argument("--server-bin", type=Path, help="a llama-server built natively (default: build it, cached)")
    parser.add_argument("--out", type=Path, default=HERE / "native", help="STEM of STEM.json and STEM.md")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from bench_backends import _cpu
    from llama_server import build_server

    from mia.graph.models.embedded import ensure_gguf
    from mia.graph.models.native import cpu_signature, find_build, unused_features
    from mia.graph.models.settings import read_settings

    data_dir = read_settings().data_dir
    build = find_build(data_dir)
    if build is None:
        raise SystemExit("no native build for this CPU: run `mia models build-native` first")
    server = None if args.no_server else args.server_bin or build_server(data_dir, log=HERE / "llama-server-build.log")
    legs = ["prebuilt", "native"] + ([] if server is None else ["llama-server"])
    load_before = os.getloadavg()[0]
    roof = peaks(args.threads)
    gguf_bytes = ensure_gguf(args.model).stat().st_size
    rows = []
    for r in range(args.rounds):  # alternating order: a drift in the machine's load hits every leg
        for kind in legs if r % 2 == 0 else legs[::-1]:
            started = time.perf_counter()
            if kind == "llama-server":
                assert server is not None
                row = server_leg(server, args.model, args.threads, args.prompt_words, args.gen)
            else:
                row = one(kind, args.model, args.threads, args.prompt_words, args.gen)
            row.update(build=kind, round=r, wall_s=round(time.perf_counter() - started, 1))
            if roof.get("int8_ops"):
                row["prompt_share_of_int8_peak"] = 2 * PARAMS[args.model] * row["prompt_tok_s"] / roof["int8_ops"]
            row["gen_share_of_bandwidth"] = gguf_bytes * row["gen_tok_s"] / roof["copy_bytes_s"]
            rows.append(row)
            print(
                f"{kind:12} round {r}: prompt {row['prompt_tok_s']:.1f} tok/s, generation {row['gen_tok_s']:.1f} tok/s"
            )
    meta = {
        "cpu": _cpu(),
        "signature": cpu_signature(),
        "unused_by_prebuilt": unused_features(),
        "native_build_seconds": build.seconds,
        "server": str(server) if server else None,
        "gguf_bytes": gguf_bytes,
        "peaks": roof,
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
        "command": "python bench/models/bench_native.py " + " ".join(sys.argv[1:]),
    }
    args.out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(report(meta, rows, args.threads))
    print(report(meta, rows, args.threads))


def report(meta: dict, rows: list[dict], threads: int) -> str:
    def mean(kind: str, key: str) -> float:
        vals = [r[key] for r in rows if r["build"] == kind and r.get(key) is not None]
        return sum(vals) / len(vals) if vals else float("nan")

    roof = meta["peaks"]
    int8 = f"{roof['int8_ops'] / 1e9:.0f} GOP/s" if roof.get("int8_ops") else f"not measured ({roof.get('int8_why')})"
    kinds = list(dict.fromkeys(r["build"] for r in rows))
    share = lambda r, k: f"{r[k]:.0%}" if r.get(k) is not None else "-"  # noqa: E731
    return "\n".join(
        [
            "# llama.cpp builds on this CPU: the prebuilt wheel, a native build, and llama-server",
            "",
            f"CPU: {meta['cpu']}, {threads} threads; features the prebuilt wheel leaves unused: "
            f"{', '.join(meta['unused_by_prebuilt']) or 'none'}; native build made in "
            f"{meta['native_build_seconds']:.0f} s. Load average {meta['load_before']:.2f} before, "
            f"{meta['load_after']:.2f} after. Roofs on {threads} threads: int8 matmul {int8} (prompt "
            f"processing), memory copy {roof['copy_bytes_s'] / 1e9:.1f} GB/s (generation reads the "
            f"{meta['gguf_bytes'] / 1e9:.2f} GB GGUF once a token); float32 matmul "
            f"{roof['f32_flops'] / 1e9:.0f} GFLOP/s for reference. Command: `{meta['command']}`.",
            "",
            "| build | round | prompt tokens | prompt tok/s | share of int8 peak | generation tok/s | share of bandwidth |",
            "|---|---|---|---|---|---|---|",
            *[
                f"| {r['build']} | {r['round']} | {r['prompt_tokens']} | {r['prompt_tok_s']:.1f} | "
                f"{share(r, 'prompt_share_of_int8_peak')} | {r['gen_tok_s']:.1f} | {share(r, 'gen_share_of_bandwidth')} |"
                for r in rows
            ],
            "",
            "Means: "
            + "; ".join(
                f"{k} {mean(k, 'prompt_tok_s'):.1f} prompt tok/s "
                f"({mean(k, 'prompt_tok_s') / mean('prebuilt', 'prompt_tok_s'):.2f}x prebuilt), "
                f"{mean(k, 'gen_tok_s'):.1f} generation tok/s"
                for k in kinds
            )
            + ".",
            "",
        ]
    )


if __name__ == "__main__":
    main()
