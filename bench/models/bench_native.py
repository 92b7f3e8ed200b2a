#!/usr/bin/env python
"""The prebuilt llama.cpp wheel against this CPU's native build (`mia models build-native`), side by
side: the same GGUF, prompt and thread count, each in its own process (the build is chosen at
import), in alternating order, and each figure as a share of this CPU's measured matmul peak.

    python bench/models/bench_native.py [--model qwen-coder-1.5b] [--rounds 2] [--threads 2]

Peak: NumPy's float32 matrix multiply (OpenBLAS) on the same threads, the best of 5, as FLOP/s.
Prompt processing of a d-parameter model costs about 2 d FLOPs a token, so a prompt speed of p
tokens/s uses 2 d p FLOP/s. Writes bench/models/native.json and native.md.
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
ONE = (
    "import json, sys; sys.path.insert(0, {here!r}); from bench_backends import bench_llamacpp; "
    "print(json.dumps(bench_llamacpp({model!r}, {threads}, {words}, {gen}, concurrency=False)))"
)


NOTE = (
    "A share above 100% is not an error: the peak is float32 FLOP/s, while llama.cpp's Q4_K/Q8 kernels "
    "multiply int8 (with AVX-512 VNNI, four int8 products per float32 lane), so the float32 matmul is a "
    "floor of what the CPU can do here, not its roof; the ratio between the builds is the figure to read."
)


def matmul_peak(threads: int, n: int = 2048) -> float:
    """FLOP/s of a float32 n x n matmul on `threads` threads (a fresh process: BLAS reads its
    thread count at import)."""
    code = (
        "import time, numpy as np; a = np.random.rand({n}, {n}).astype(np.float32); b = a.copy(); a @ b; best = 1e9\n"
        "for _ in range(5):\n    t = time.perf_counter(); a @ b; best = min(best, time.perf_counter() - t)\n"
        "print(2 * {n} ** 3 / best)"
    ).format(n=n)
    env = {**os.environ, "OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    return float(
        subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    )


def one(build: str, model: str, threads: int, words: int, gen: int) -> dict:
    env = {**os.environ, "MIA_LLAMACPP_BUILD": build}
    code = ONE.format(here=str(HERE), model=model, threads=threads, words=words, gen=gen)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{build}: {done.stderr.strip().splitlines()[-1]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen-coder-1.5b", choices=sorted(PARAMS))
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--prompt-words", type=int, default=700)
    parser.add_argument("--gen", type=int, default=22)
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from bench_backends import _cpu

    from mia.graph.models.native import cpu_signature, find_build, unused_features
    from mia.graph.models.settings import read_settings

    build = find_build(read_settings().data_dir)
    if build is None:
        raise SystemExit("no native build for this CPU: run `mia models build-native` first")
    load_before = os.getloadavg()[0]
    peak = matmul_peak(args.threads)
    rows = []
    for r in range(args.rounds):  # alternating order: a drift in the machine's load hits both
        for kind in ("prebuilt", "native") if r % 2 == 0 else ("native", "prebuilt"):
            started = time.perf_counter()
            row = one(kind, args.model, args.threads, args.prompt_words, args.gen)
            row.update(build=kind, round=r, wall_s=round(time.perf_counter() - started, 1))
            row["prompt_share_of_peak"] = 2 * PARAMS[args.model] * row["prompt_tok_s"] / peak
            rows.append(row)
            print(
                f"{kind:9} round {r}: prompt {row['prompt_tok_s']:.1f} tok/s, generation {row['gen_tok_s']:.1f} tok/s"
            )
    meta = {
        "cpu": _cpu(),
        "signature": cpu_signature(),
        "unused_by_prebuilt": unused_features(),
        "native_build_seconds": build.seconds,
        "matmul_peak_gflops": peak / 1e9,
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
        "command": "python bench/models/bench_native.py " + " ".join(sys.argv[1:]),
    }
    (HERE / "native.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")

    def mean(kind: str, key: str) -> float:
        vals = [r[key] for r in rows if r["build"] == kind]
        return sum(vals) / len(vals)

    lines = [
        "# The prebuilt llama.cpp wheel against this CPU's native build",
        "",
        f"CPU: {meta['cpu']}, {args.threads} threads; features the prebuilt wheel leaves unused: "
        f"{', '.join(meta['unused_by_prebuilt']) or 'none'}; native build made in {build.seconds:.0f} s. "
        f"Load average {load_before:.2f} before, {meta['load_after']:.2f} after. Peak (NumPy float32 matmul): "
        f"{meta['matmul_peak_gflops']:.1f} GFLOP/s. Command: `{meta['command']}`.",
        "",
        "| build | round | prompt tokens | prompt tok/s | share of peak | generation tok/s |",
        "|---|---|---|---|---|---|",
        *[
            f"| {r['build']} | {r['round']} | {r['prompt_tokens']} | {r['prompt_tok_s']:.1f} | "
            f"{r['prompt_share_of_peak']:.0%} | {r['gen_tok_s']:.1f} |"
            for r in rows
        ],
        "",
        f"Mean prompt speed: prebuilt {mean('prebuilt', 'prompt_tok_s'):.1f}, native {mean('native', 'prompt_tok_s'):.1f} "
        f"tok/s ({mean('native', 'prompt_tok_s') / mean('prebuilt', 'prompt_tok_s'):.2f}x); generation "
        f"{mean('prebuilt', 'gen_tok_s'):.1f} vs {mean('native', 'gen_tok_s'):.1f} tok/s.",
        "",
        NOTE,
    ]
    (HERE / "native.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
