"""Does following the planner's plan make the executor answer worse? The executor alone, given a
logged MIA run's own plans, against the logged `none` run on the same questions.

    .venv/bin/python bench/e2e/plan_effect.py results/2wiki-qwen-planners/mia-grpo \
        --none results/2wiki-qwen-planners/none --type comparison

Each question of the MIA run (of one question type) runs again through the real graph with its
logged plan as the preset plan (the planner is not called), no memory shown, no reflection, no
judge, nothing memorised, the same search budget: so the only difference from `none` is the plan
in the executor's prompt. Answers are scored by EM and cover match against the gold answers, and
paired with the `none` run's and with the MIA run's own first answers. Writes
bench/e2e/plan-effect.md and plan-effect.jsonl (one line per question).
"""

from __future__ import annotations

from mia.app.evaluation.runlog import read_rows

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from tqdm import tqdm

from mia.app.evaluation.reflection import first_answer

HERE = Path(__file__).resolve().parent


def logged(run: Path) -> dict[str, dict[str, Any]]:
    rows = read_rows(run)
    return {r["id"]: r for r in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a MIA run folder (its plans are replayed)")
    parser.add_argument("--none", type=Path, required=True, help="the `none` run on the same questions")
    parser.add_argument("--type", default="comparison", help="2Wiki question type to replay ('' for all)")
    parser.add_argument("--dataset", default="2wiki")
    parser.add_argument("--max-tool-calls", type=int, default=4)
    parser.add_argument(
        "--yes-no",
        action="store_true",
        help="only yes/no questions (mia.graph.protocol.is_yes_no_question), of any type",
    )
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions")
    parser.add_argument("--out", type=Path, default=HERE / "plan-effect.md")
    args = parser.parse_args()

    from mia.app.evaluation.datasets import load_examples
    from mia.app.evaluation.runner import input_state
    from mia.graph.builder import build_graph, recursion_limit
    from mia.graph.context import Context
    from mia.graph.judge.metrics import cover_match, exact_match
    from mia.graph.protocol import is_yes_no_question

    mia, none = logged(args.run), logged(args.none)
    examples, setting = load_examples(args.dataset)
    by_id = {ex.id: ex for ex in examples}
    ids = [
        i
        for i, r in mia.items()
        if i in none
        and (not args.type or r.get("type") == args.type)
        and (not args.yes_no or is_yes_no_question(r["question"]))
    ][: args.limit]
    graph = build_graph()
    out_rows = []
    with tempfile.TemporaryDirectory() as data_dir:
        context = Context(
            memory_mode="mia",
            max_replans=0,
            judge_mode="off",
            memorise=False,
            max_tool_calls=args.max_tool_calls,
            data_dir=data_dir,
            namespace="plan-effect",
        )
        for qid in tqdm(ids, desc="plan replay", unit="q"):
            state = input_state(by_id[qid], setting, gold=False) | {"plan": mia[qid]["plan"]}
            out = graph.invoke(state, context=context, config={"recursion_limit": recursion_limit(context)})
            golds = mia[qid]["gold_answers"]
            answers = {
                "none": none[qid]["answer"],
                "plan": str(out.get("answer") or ""),
                "mia_first": first_answer(mia[qid]["trajectory"]) or mia[qid]["answer"],
            }
            out_rows.append(
                {
                    "id": qid,
                    "question": mia[qid]["question"],
                    "gold": golds,
                    "answers": answers,
                    "cover": {k: cover_match(a, golds) for k, a in answers.items()},
                    "em": {k: bool(exact_match(a, golds)) for k, a in answers.items()},
                    "tool_calls": out.get("tool_calls"),
                }
            )
    args.out.with_suffix(".jsonl").write_text("".join(json.dumps(r) + "\n" for r in out_rows), encoding="utf-8")
    n = len(out_rows)
    count = lambda metric, key: sum(r[metric][key] for r in out_rows)  # noqa: E731
    only = lambda a, b: sum(r["cover"][a] and not r["cover"][b] for r in out_rows)  # noqa: E731
    lines = ["| answers | cover | EM |", "|---|---|---|"]
    labels = {
        "none": f"`none` as logged ({args.none})",
        "plan": "executor alone with the MIA run's plan (this replay)",
        "mia_first": f"MIA's first answer as logged ({args.run})",
    }
    lines += [f"| {labels[k]} | {count('cover', k)}/{n} | {count('em', k)}/{n} |" for k in labels]
    text = (
        "# The plan's effect on the executor\n\n"
        f"Command: `python bench/e2e/plan_effect.py {args.run} --none {args.none} --type {args.type!r} "
        f"--max-tool-calls {args.max_tool_calls}{' --yes-no' if args.yes_no else ''}`. {n} questions; cover = a gold answer appears in the answer.\n\n"
        + "\n".join(lines)
        + f"\n\nPaired (cover): right only without the plan {only('none', 'plan')}, only with it "
        f"{only('plan', 'none')}. Replay tool calls per question: "
        f"{sum(r['tool_calls'] or 0 for r in out_rows) / max(1, n):.2f}.\n"
    )
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
