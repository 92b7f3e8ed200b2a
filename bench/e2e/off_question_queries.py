"""How often the executor searches for names its question does not contain, and whether those names
(or its answer) come from another question in the run's memory, borrowed from a pasted past trajectory.

    .venv/bin/python bench/e2e/off_question_queries.py results/2wiki-qwen-planners/none \\
        results/2wiki-qwen-planners/trajectory-rag results/2wiki-qwen-planners/mia-base \\
        results/2wiki-qwen-planners/mia-grpo

Why: the seeds' claim is that pasting old trajectories into the context makes the agent worse. One
way it can is visible in the log without calling a model: the executor copies another question's
searches. A query is *off-question* when none of its question's name words (the capitalised words
after the first, less question words) is in it; it is *borrowed* when its name words are in a
question of the run's trajectory log (RUN/store/memory/trajectories.jsonl, the warm-up's and the
run's own earlier questions) and not in its own; an *answer* is borrowed when it is an earlier
question's answer that this question's search results never showed. Writes bench/e2e/off-question-queries.md.
"""

from __future__ import annotations

from mia.app.evaluation.runlog import read_rows

import argparse
import re
from pathlib import Path
from typing import Any

from mia.graph.judge.metrics import cover_match, exact_match, normalize_answer
from mia.graph.nodes.steps import searches_made

HERE = Path(__file__).resolve().parent
WORD = re.compile(r"[A-Za-z0-9À-ÿ'’]+")
NOT_NAMES = {
    "who",
    "what",
    "which",
    "when",
    "where",
    "why",
    "how",
    "is",
    "are",
    "was",
    "were",
    "do",
    "does",
    "did",
    "the",
    "a",
    "an",
    "of",
    "and",
    "or",
    "film",
    "films",
    "movie",
    "movies",
    "both",
}


def tokens(text: str) -> list[str]:
    """Words, a possessive 's cut off ("Durga's" is "Durga")."""
    return [re.sub(r"['’]s$", "", w) for w in WORD.findall(text)]


def words(text: str) -> set[str]:
    return {w.lower() for w in tokens(text)}


def is_name(word: str) -> bool:
    return (word[:1].isupper() or word[:1].isdigit()) and word.lower() not in NOT_NAMES


def name_words(question: str) -> set[str]:
    """Capitalised words (and numbers) after the first: in 2Wiki and HotpotQA questions, the names."""
    return {w.lower() for w in tokens(question)[1:] if is_name(w) and len(w) > 1}


def past_log(run: Path) -> list[dict[str, Any]]:
    """The run's trajectory log, oldest first ([] for a run without memory)."""
    from mia.memory.trajectory_log import TrajectoryLog  # reads a compressed log too

    return [t.model_dump(mode="json") for t in TrajectoryLog(run / "store" / "memory" / "trajectories.jsonl").read()]


def borrowed_answer(row: dict[str, Any], earlier: list[dict[str, Any]]) -> bool:
    """The answer is an earlier question's answer (normalised as EM is) and is nowhere in this
    question's search results."""
    answer = row.get("answer") or ""
    if not normalize_answer(answer) or normalize_answer(answer) in ("yes", "no"):
        return False
    seen = " ".join(s.get("content", "") for s in row.get("trajectory") or [] if s.get("kind") == "observation")
    return not cover_match(seen, [answer]) and any(exact_match(answer, [t.get("answer") or ""]) for t in earlier)


def classify(question: str, query: str, others: list[set[str]]) -> str:
    """on, off (names nothing of its question) or borrowed (names another logged question's words)."""
    own = name_words(question)
    q_words = words(query)
    if not own or own & q_words:
        return "on"
    query_names = {w.lower() for w in tokens(query) if is_name(w)}
    query_names -= words(question)
    if query_names and any(query_names <= other for other in others):
        return "borrowed"
    return "off"


def run_stats(run: Path, n: int | None, against: dict[str, bool] | None = None) -> dict[str, Any]:
    """Counts for one run; `against` (question id -> judged right in a reference run) scores the
    reference run on the same two groups of questions."""
    rows = read_rows(run)
    rows = rows[:n] if n else rows
    ref = {"borrowed": 0, "other": 0}
    log = past_log(run)  # in the order they were answered: the warm-up's, then the run's
    position = {t.get("question", ""): i for i, t in reversed(list(enumerate(log)))}
    log_words = [words(t.get("question", "")) for t in log]
    counts = {"on": 0, "off": 0, "borrowed": 0}
    questions_off = questions_borrowed = right_borrowed = right_other = answers_borrowed = 0
    examples: list[tuple[str, str]] = []
    for row in rows:
        before = position.get(row["question"], 0)  # only what was in memory before it
        others = log_words[:before]
        answers_borrowed += borrowed_answer(row, log[:before])
        asked = searches_made(row.get("trajectory") or [])
        kinds = [classify(row["question"], q, others) for q in asked]
        for kind in kinds:
            counts[kind] += 1
        questions_off += any(k != "on" for k in kinds)
        if "borrowed" in kinds:
            questions_borrowed += 1
            right_borrowed += bool(row.get("judge_correct"))
            ref["borrowed"] += bool((against or {}).get(row["id"]))
            if len(examples) < 3:
                examples.append((row["question"], asked[kinds.index("borrowed")]))
        else:
            right_other += bool(row.get("judge_correct"))
            ref["other"] += bool((against or {}).get(row["id"]))
    return {
        "run": str(run),
        "questions": len(rows),
        "queries": sum(counts.values()),
        **counts,
        "questions_off": questions_off,
        "questions_borrowed": questions_borrowed,
        "right_when_borrowed": right_borrowed,
        "right_other": right_other,
        "answers_borrowed": answers_borrowed,
        "reference": ref if against is not None else None,
        "examples": examples,
        "memory_log": len(log),
    }


def render(stats: list[dict[str, Any]], command: str, against: Path | None = None) -> str:
    lines = [
        "# Off-question and borrowed search queries",
        "",
        f"Command: `{command}`. No model is called.",
        "",
        "| run | questions | queries | off-question | borrowed | questions with a borrowed query (judged right) | the other questions (judged right) | answers borrowed | trajectories in the log |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in stats:
        lines.append(
            f"| {s['run']} | {s['questions']} | {s['queries']} | {s['off'] + s['borrowed']} | {s['borrowed']} | "
            f"{s['questions_borrowed']} ({s['right_when_borrowed']}) | "
            f"{s['questions'] - s['questions_borrowed']} ({s['right_other']}) | {s['answers_borrowed']} | {s['memory_log']} |"
        )
    if against is not None:
        lines += [
            "",
            f"The same questions in `{against}` (judged right): "
            + "; ".join(
                f"{Path(s['run']).name}'s {s['questions_borrowed']} with a borrowed query "
                f"{s['reference']['borrowed']}, its other {s['questions'] - s['questions_borrowed']} "
                f"{s['reference']['other']}"
                for s in stats
                if s["questions_borrowed"]
            )
            + ".",
        ]
    lines += [
        "",
        "Off-question counts the borrowed queries too. An answer is borrowed when it is an earlier",
        "question's logged answer and appears nowhere in this question's search results (yes/no left out).",
        "",
        "Examples of borrowed queries:",
        "",
    ]
    for s in stats:
        for question, query in s["examples"]:
            lines.append(f'- {Path(s["run"]).name}: "{question}" searched "{query}"')
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("runs", nargs="+", type=Path, help="run folders (results.jsonl, store/memory/trajectories.jsonl)")
    ap.add_argument("--n", type=int, default=100, help="the first N answers of each run (0: all)")
    ap.add_argument("--against", type=Path, help="a reference run (no memory): its judged answers on the same groups")
    ap.add_argument("--out", type=Path, default=HERE / "off-question-queries.md")
    args = ap.parse_args()
    against = {r["id"]: bool(r.get("judge_correct")) for r in read_rows(args.against)} if args.against else None
    stats = [run_stats(run, args.n or None, against) for run in args.runs]
    command = (
        "python bench/e2e/off_question_queries.py "
        + " ".join(str(r) for r in args.runs)
        + ("" if args.n == 100 else f" --n {args.n}")
        + (f" --against {args.against}" if args.against else "")
        + ("" if args.out == ap.get_default("out") else f" --out {args.out}")
    )
    text = render(stats, command, args.against)
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
