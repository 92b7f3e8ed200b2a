"""Before/after evaluation of a planner: plan each held-out question greedily, let the frozen
executor carry the plan out, and score the answer (EM and F1). Deterministic (greedy
everywhere), so a difference between two planners comes from the planners alone."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mia.training.config import TrainConfig
from mia.training.data import QAExample


def generate_plans(spec: str, examples: Sequence[QAExample], cfg: TrainConfig, max_new_tokens: int) -> list[str]:
    """Greedy plans of one planner (any trainable spec: local:<embedded>, llamacpp:<embedded>+<adapter>, hf:<base>[+<adapter>])."""
    import torch
    from tqdm.auto import tqdm

    from mia.training.policy import load_model, load_tokenizer, resolve_weights
    from mia.training.prompts import planner_messages
    from mia.graph.protocol import after_last_think

    base, adapter = resolve_weights(spec)
    model, tok = load_model(base, adapter, dtype=cfg.dtype, device=cfg.device), load_tokenizer(base)
    plans = []
    for ex in tqdm(examples, desc=f"plans ({'adapter' if adapter else 'base'})", unit="q"):
        ids = tok.apply_chat_template(
            planner_messages(ex.question, ex.memories, cfg.planner.plan_max_words),
            add_generation_prompt=True,
            return_tensors="pt",
            return_dict=True,
        )
        with torch.no_grad():
            out = model.generate(
                **ids.to(model.device), max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=tok.pad_token_id
            )
        plans.append(after_last_think(tok.decode(out[0, ids["input_ids"].shape[1] :], skip_special_tokens=True)))
    return plans


def evaluate_planner(
    cfg: TrainConfig,
    planner_spec: str,
    examples: Sequence[QAExample],
    out_path: Path | None = None,
    executor_spec: str | None = None,
) -> dict[str, Any]:
    """EM/F1 of planner + frozen executor on `examples`; per-question rows go to `out_path`."""
    from tqdm.auto import tqdm

    from mia.training.planner_stage import make_runner
    from mia.training.rewards import answer_accuracy

    started = time.time()
    plans = generate_plans(planner_spec, examples, cfg, int(cfg.grpo.get("max_completion_length", 64)))
    runner = make_runner(cfg, executor_spec)
    rows: list[dict[str, Any]] = []
    for ex, plan in tqdm(list(zip(examples, plans, strict=True)), desc="episodes", unit="q"):
        outcome = runner.run(ex.question, plan, ex.paragraphs, ex.gold_answers)
        rows.append(
            {
                "qid": ex.id,
                "question": ex.question,
                "gold_answers": ex.gold_answers,
                "plan": plan,
                "answer": outcome.answer,
                "tool_calls": outcome.tool_calls,
                "em": answer_accuracy(outcome.answer, ex.gold_answers, "em"),
                "f1": answer_accuracy(outcome.answer, ex.gold_answers, "f1"),
                "contains": answer_accuracy(outcome.answer, ex.gold_answers, "contains"),
            }
        )
    n = len(rows)
    summary = {
        "planner": planner_spec,
        "executor": executor_spec or cfg.planner.executor_model,
        "n": n,
        "em": sum(r["em"] for r in rows) / n,
        "f1": sum(r["f1"] for r in rows) / n,
        "contains": sum(r["contains"] for r in rows) / n,
        "tool_calls": sum(r["tool_calls"] for r in rows) / n,
        "seconds": round(time.time() - started, 1),
    }
    if out_path is not None:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1) + "\n")
    return summary
