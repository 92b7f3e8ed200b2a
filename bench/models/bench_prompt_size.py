#!/usr/bin/env python
"""How much search result the executor should read: accuracy against seconds for the number of
paragraphs per query (search top-k) and the size of a tool result (characters kept).

For each HotpotQA question (distractor sandbox, seed 0), the executor's real prompt (system, tools,
question) is followed by one search for the question itself, formatted as the search tool does
for a given top-k and character budget, and the executor is asked for its answer right away
(the forced-answer message). The search is the same in every setting, so the differences come
from how much of it the model reads.

    python bench/models/bench_prompt_size.py --n 12
    python bench/models/bench_prompt_size.py --n 12 --model llamacpp:qwen-coder-0.5b
    python bench/models/bench_prompt_size.py --recall --n 100   # retrieval recall per top-k, no model

Writes bench/models/prompt_size.json and prompt_size.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SETTINGS = [(1, 4096), (3, 600), (3, 4096), (5, 4096), (10, 8192)]  # (top-k, max chars of the tool result)


def run(n: int, spec: str) -> list[dict]:
    from langchain_core.messages import AIMessage, HumanMessage

    from mia.app.evaluation.datasets import load_examples
    from mia.graph.context import Context
    from mia.graph.judge.metrics import cover_match, exact_match, extract_answer, f1_score
    from mia.graph.models import load_chat_model
    from mia.graph.nodes.execute import initial_messages
    from mia.graph.prompts import render
    from mia.graph.tools.corpus import corpus_from_paragraphs
    from mia.graph.tools.formatting import format_results
    from mia.graph.tools.search_tool import SearchTool

    examples, _ = load_examples("hotpotqa", n=n, seed=0)
    model = load_chat_model(spec, temperature=0.0, max_tokens=48)
    rows = []
    for ex in examples:
        corpus = corpus_from_paragraphs([p.model_dump() for p in ex.paragraphs])
        tool = SearchTool(corpus)
        hits = corpus.search([ex.question], k=max(k for k, _ in SETTINGS))
        base = initial_messages({"question": ex.question}, Context(), [tool], native=False)
        call = AIMessage(
            content='<think>I will search.</think>\n<tool_call>{"name": "search", "arguments": '
            f'{{"query_list": [{json.dumps(ex.question)}]}}}}</tool_call>'
        )
        for k, max_chars in SETTINGS:
            result = format_results([ex.question], [hits[0][:k]], max_chars)
            messages = [
                *base,
                call,
                HumanMessage(
                    content=render("executor", "observation", result=result)
                    + "\n\n"
                    + render("executor", "force_answer", reason="")
                ),
            ]
            started = time.perf_counter()
            reply = model.invoke(messages)
            seconds = time.perf_counter() - started
            answer = extract_answer(str(reply.content))
            rows.append(
                {
                    "id": ex.id,
                    "k": k,
                    "max_chars": max_chars,
                    "seconds": seconds,
                    "prompt_tokens": reply.usage_metadata["input_tokens"],
                    "new_prompt_tokens": (reply.response_metadata.get("timings") or {}).get("prompt_n"),
                    "answer": answer,
                    "em": exact_match(answer, ex.gold_answers),
                    "cover": cover_match(answer, ex.gold_answers),
                    "f1": f1_score(answer, ex.gold_answers),
                    "gold_in_results": any(cover_match(h.text, ex.gold_answers) for h in hits[0][:k]),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    return rows


def recall(n: int, ks: tuple[int, ...] = (1, 2, 3, 5, 10)) -> str:
    """How often one search for the question returns one / both supporting paragraphs (no model)."""
    from mia.app.evaluation.datasets import load_examples
    from mia.graph.tools.corpus import corpus_from_paragraphs

    examples, _ = load_examples("hotpotqa", n=n, seed=0)
    one, both, chars = dict.fromkeys(ks, 0), dict.fromkeys(ks, 0), dict.fromkeys(ks, 0)
    for ex in examples:
        hits = corpus_from_paragraphs([p.model_dump() for p in ex.paragraphs]).search([ex.question], k=max(ks))[0]
        support = set(ex.supporting_titles)
        for k in ks:
            titles = {h.title for h in hits[:k]}
            one[k] += bool(titles & support)
            both[k] += support <= titles
            chars[k] += sum(len(h.text) for h in hits[:k])
    rows = [
        f"| {k} | {one[k]}/{len(examples)} | {both[k]}/{len(examples)} | {chars[k] / len(examples):.0f} |" for k in ks
    ]
    return "\n".join(
        ["| top-k | at least one supporting paragraph | both | characters of results |", "|---|---|---|---|", *rows]
    )


def write(rows: list[dict], spec: str, command: str) -> None:
    (HERE / "prompt_size.json").write_text(json.dumps({"model": spec, "rows": rows}, indent=1) + "\n")
    lines = [
        "# Prompt size: search result length against accuracy and seconds",
        "",
        f"Model `{spec}`; {len({r['id'] for r in rows})} HotpotQA questions (distractor, seed 0); "
        f"load average when written {os.getloadavg()[0]:.1f}. Command: `{command}`.",
        "",
        "| top-k | max chars | exact match | answer contains gold | F1 | gold in the results | prompt tokens | s/answer |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for k, max_chars in SETTINGS:
        sel = [r for r in rows if r["k"] == k and r["max_chars"] == max_chars]
        if not sel:
            continue
        lines.append(
            f"| {k} | {max_chars} | {sum(r['em'] for r in sel):.0f}/{len(sel)} | {sum(r['cover'] for r in sel)}/{len(sel)} | "
            f"{statistics.fmean(r['f1'] for r in sel):.2f} | {sum(r['gold_in_results'] for r in sel)}/{len(sel)} | "
            f"{statistics.fmean(r['prompt_tokens'] for r in sel):.0f} | {statistics.fmean(r['seconds'] for r in sel):.1f} |"
        )
    (HERE / "prompt_size.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=12)
    parser.add_argument("--model", default="llamacpp:qwen-coder-1.5b")
    parser.add_argument("--recall", action="store_true", help="only the retrieval recall table (no model)")
    args = parser.parse_args()
    if args.recall:
        print(recall(args.n))
        return
    rows = run(args.n, args.model)
    write(rows, args.model, f"python bench/models/bench_prompt_size.py --n {args.n} --model {args.model}")


if __name__ == "__main__":
    main()
