"""Would a second call that shortens a sentence answer help? (A negative result, kept so that it
is not tried again blindly.)

Sentence answers lower EM: in the HotpotQA runs of results/hotpotqa-qwen-n100, 34 of 100 `none`
answers and most `mia` answers are longer than 6 words. This asks the embedded Qwen-1.5B to copy
out only the words that answer the question, for every logged answer longer than 6 words, and
scores both forms against the gold answers (EM, F1, cover match).

    python bench/e2e/answer_shortening.py none mia    # writes bench/e2e/answer-shortening.{json,md}
"""

from __future__ import annotations

from mia.app.evaluation.runlog import read_rows

import argparse
import json
import time
from pathlib import Path

from langchain_core.messages import HumanMessage

from mia.graph.judge.metrics import cover_match, exact_match, f1_score
from mia.graph.models.loader import load_chat_model

RUNS = Path("results/hotpotqa-qwen-n100")
OUT = Path(__file__).parent
PROMPT = """Question: {q}
Answer: {a}

Copy from the answer above only the words that answer the question: a name, a date, a number or a short phrase (yes or no only for a yes/no question). Reply with those words only."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("modes", nargs="+", help="run folders under results/hotpotqa-qwen-n100")
    parser.add_argument("--min-words", type=int, default=7, help="shorten answers of at least this many words")
    args = parser.parse_args()
    model = load_chat_model("llamacpp:qwen-coder-1.5b", n_threads=1)
    rows = []
    for mode in args.modes:
        for r in read_rows(RUNS / mode):
            long, gold = r["answer"], r["gold_answers"]
            if len(long.split()) < args.min_words:
                continue
            started = time.perf_counter()
            reply = model.invoke(
                [HumanMessage(content=PROMPT.format(q=r["question"], a=long))], max_tokens=24, stop=["\n"]
            )
            short = str(reply.content).strip().strip('."')
            rows.append(
                {
                    "mode": mode,
                    "id": r["id"],
                    "gold": gold,
                    "long": long,
                    "short": short,
                    "s": round(time.perf_counter() - started, 1),
                    "em": [exact_match(long, gold), exact_match(short, gold)],
                    "f1": [f1_score(long, gold), f1_score(short, gold)],
                    "cover": [cover_match(long, gold), cover_match(short, gold)],
                }
            )
    (OUT / "answer-shortening.json").write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    lines = [
        "# Shortening sentence answers with a second Qwen-1.5B call",
        "",
        f"Answers of at least {args.min_words} words, before -> after (sums over the answers). "
        "Command: `python bench/e2e/answer_shortening.py " + " ".join(args.modes) + "`.",
        "",
        "| run | answers | EM | F1 | cover | mean s per call |",
        "|---|---|---|---|---|---|",
    ]
    for mode in args.modes:
        rs = [x for x in rows if x["mode"] == mode]
        if not rs:
            continue
        cell = {k: f"{sum(x[k][0] for x in rs):.1f} -> {sum(x[k][1] for x in rs):.1f}" for k in ("em", "f1", "cover")}
        lines.append(
            f"| {mode} | {len(rs)} | {cell['em']} | {cell['f1']} | {cell['cover']} | "
            f"{sum(x['s'] for x in rs) / len(rs):.1f} |"
        )
    (OUT / "answer-shortening.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
