"""torch threads for the planner's GRPO policy on 2 idle cores: 1 against 2.

    .venv/bin/python bench/training/bench_torch_threads.py     # needs `mia models fetch qwen-coder-1.5b --convert`

The CPU configs ran torch with one thread because, beside other jobs, two threads spin-waited and
ran several times slower (docs/training.md). A GRPO run alone on the machine uses the CPU in
phases (plan sampling and the gradient step in torch, the episodes in llama.cpp), so this times
the torch phases alone, with the fp32 Qwen2.5-Coder-1.5B the cpu-qwen configs train: a batch of 4
prompts of 400 tokens (forward), a forward and backward pass over 4 x 200 tokens, and a 4 x 300
prefill with 16 decoding steps (sampling). Each thread count runs twice, alternating.
Output: bench/training/torch_threads.md.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def timings(model, threads: int) -> dict[str, float]:
    import torch

    torch.manual_seed(0)
    ids = torch.randint(100, 20000, (4, 400))
    torch.set_num_threads(threads)
    out: dict[str, float] = {}
    start = time.perf_counter()
    with torch.no_grad():
        model(ids)
    out["forward 4x400"] = time.perf_counter() - start
    start = time.perf_counter()
    model(ids[:, :200]).logits.float().mean().backward()
    model.zero_grad(set_to_none=True)
    out["forward+backward 4x200"] = time.perf_counter() - start
    start = time.perf_counter()
    with torch.no_grad():
        past = model(ids[:, :300], use_cache=True).past_key_values
        token = ids[:, 300:301]
        for _ in range(16):
            past = model(token, past_key_values=past, use_cache=True).past_key_values
    out["prefill 4x300 + 16 decode steps"] = time.perf_counter() - start
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=HERE / "torch_threads.md")
    args = parser.parse_args()
    import torch
    from transformers import AutoModelForCausalLM

    from mia.graph.models.convert import ensure_converted

    model = AutoModelForCausalLM.from_pretrained(ensure_converted("qwen-coder-1.5b"), dtype=torch.float32)
    rows = [(threads, timings(model, threads)) for threads in (1, 2, 1, 2)]
    keys = list(rows[0][1])
    lines = ["| threads | " + " | ".join(f"{k} (s)" for k in keys) + " |", "|---" * (len(keys) + 1) + "|"]
    lines += [f"| {t} | " + " | ".join(f"{r[k]:.1f}" for k in keys) + " |" for t, r in rows]
    args.out.write_text(
        "# torch threads for the GRPO policy (fp32 Qwen2.5-Coder-1.5B, 2 cores)\n\n"
        "Command: `python bench/training/bench_torch_threads.py`.\n\n" + "\n".join(lines) + "\n"
    )
    print(args.out.read_text())


if __name__ == "__main__":
    main()
