#!/usr/bin/env python
"""What the executor SFT's data holds (issue 37): how many of the committed adapter's rows were
rebuilt from a search result the evaluation log had cut, and what a config's episodes give now
(the cut steps restored from the runs' trajectory logs), with `sft.attempts: final` and the reading
rows (`sft.reading`) added one at a time. No model runs; a tokenizer is not needed (no length cut).

    python bench/training/sft_data_report.py [--config training/configs/cpu-qwen-executor-sft.yaml]
        [--adapter results/training/executor-sft-qwen] [--extra 'results/two-searches-2wiki/*/results.jsonl*']

Writes bench/training/sft-data.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def trained_on_cut(adapter: Path) -> tuple[int, int]:
    """(rows, rows whose prompt held a cut search result) of an adapter's sft_rows.jsonl, read
    against the results files as they are committed (not restored): a question's rows are its first
    attempt's taught turns in order, and a turn's prompt holds every result before it."""
    from mia.app.evaluation.runlog import read_rows
    from mia.memory import was_cut_for_log
    from mia.training.sft_data import GRAPH_MADE, first_attempt, question_key

    rows = [json.loads(line) for line in (adapter / "sft_rows.jsonl").read_text(encoding="utf-8").splitlines()]
    after_cut: dict[tuple[str, str], list[bool]] = {}  # (source, question): per taught turn, a cut result before it
    for source in {r["source"] for r in rows}:
        # the committed file names its sources by the training machine's absolute paths
        run = (ROOT / "results" / source.split("/results/", 1)[1] if "/results/" in source else ROOT / source).parent
        for logged in read_rows(run):
            seen_cut, turns = False, []
            for step in first_attempt(logged.get("trajectory") or []) or []:
                kind, content = step.get("kind"), str(step.get("content") or "")
                seen_cut |= kind == "observation" and was_cut_for_log(content)
                if kind == "answer" or (kind == "tool_call" and content not in GRAPH_MADE):
                    turns.append(seen_cut)
            after_cut.setdefault((source, question_key(logged["question"])), turns)
    cut, index = 0, 0
    for i, row in enumerate(rows):
        same = i > 0 and (rows[i - 1]["source"], rows[i - 1]["question"]) == (row["source"], row["question"])
        index = index + 1 if same else 0
        turns = after_cut.get((row["source"], question_key(row["question"])), [])
        cut += index < len(turns) and turns[index]
    return len(rows), cut


def misses_with_gold_in_results(run: Path) -> dict[str, tuple[int, int]]:
    """Per question type, (wrong answers that are not yes/no, of which a gold answer's words stand
    in a row in the run's own search results): what reading rows are for."""
    from mia.app.evaluation.runlog import read_rows
    from mia.graph.judge.polarity import is_yes_no
    from mia.graph.judge.surface import find, tokens

    counts: dict[str, tuple[int, int]] = {}
    for row in read_rows(run):
        golds = [g for g in row.get("gold_answers") or [] if tokens(g)]
        if row.get("judge_correct") is not False or not golds or is_yes_no(golds):
            continue
        seen = [tokens(str(s.get("content") or "")) for s in row["trajectory"] if s.get("kind") == "observation"]
        held = any(find(tokens(g), words) for g in golds for words in seen)
        wrong, found = counts.get(row.get("type") or "", (0, 0))
        counts[row.get("type") or ""] = (wrong + 1, found + held)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="training/configs/cpu-qwen-executor-sft.yaml")
    parser.add_argument("--adapter", default="results/training/executor-sft-qwen")
    parser.add_argument("--extra", action="append", default=[], help="more episode globs (the last rows)")
    parser.add_argument("--misses", default="results/two-searches-2wiki/default", help="a run whose misses are counted")
    parser.add_argument("--out", type=Path, default=HERE / "sft-data.md")
    args = parser.parse_args()
    from mia.memory import was_cut_for_log
    from mia.training.config import TrainConfig
    from mia.training.reading_rows import reading_rows
    from mia.training.sft_data import read_episodes, sft_rows
    from mia.training.sft_stage import read_sft_episodes

    cfg = TrainConfig.from_yaml(ROOT / args.config)
    episodes, banned = read_sft_episodes(cfg, ROOT)
    rows_v1, cut_v1 = trained_on_cut(ROOT / args.adapter)
    still_cut = sum(1 for e in episodes if any(was_cut_for_log(str(s.get("content") or "")) for s in e.steps))

    def count(eps: list, attempts: str, reading: bool) -> tuple[int, int, int]:
        rows = sft_rows(
            eps,
            exclude_questions=banned,
            plans_only=cfg.sft.plans_only,
            max_tool_calls=cfg.sft.max_tool_calls,
            attempts=attempts,  # type: ignore[arg-type]
        )
        extra = reading_rows(eps, skip_questions=[*banned, *(r["question"] for r in rows)]) if reading else []
        return len(rows) + len(extra), len({r["question"] for r in rows + extra}), len(extra)

    more = episodes + (read_episodes(args.extra, ROOT) if args.extra else [])
    table = [
        ("the config's episodes, first attempts (as the committed adapter)", count(episodes, "first", False)),
        ("+ `attempts: final`", count(episodes, "final", False)),
        ("+ `reading: true`", count(episodes, "final", True)),
    ]
    if args.extra:
        table += [
            (f"+ {', '.join(args.extra)}", count(more, "final", False)),
            ("+ `reading: true`", count(more, "final", True)),
        ]
    misses = misses_with_gold_in_results(ROOT / args.misses)
    wrong, held = (sum(v[i] for v in misses.values()) for i in (0, 1))
    by_type = ", ".join(f"{t or 'untyped'} {f} of {w}" for t, (w, f) in sorted(misses.items()))
    command = "python bench/training/sft_data_report.py " + " ".join(f"'{a}'" if "*" in a else a for a in sys.argv[1:])
    lines = [
        "# The executor SFT's data",
        "",
        f"Command: `{command.strip()}`. Config `{args.config}`: {len(episodes)} logged episodes, "
        f"{len(set(banned))} questions excluded (the ladder's final split). No length cut here (the stage "
        "drops rows over `sft.max_length` tokens).",
        "",
        f"- The committed adapter (`{args.adapter}`) trained on {rows_v1} rows; **{cut_v1} of them** had "
        "in their prompt a search result the log had cut at 2,000 characters (the evaluation log's old "
        "`MAX_STEP_CHARS`; a search returns up to 4,096): prompts the executor was never served.",
        f"- Read now, cut steps are restored from each run's own trajectory log; {still_cut} of the "
        f"{len(episodes)} episodes have none to restore from (runs without memory) and give no row.",
        "",
        f"- What reading rows are for: of the {wrong} wrong answers that are not yes/no in `{args.misses}`, "
        f"**{held}** had a gold answer in the executor's own search results as logged ({by_type}; the run's log "
        "cut a result at 2,000 characters, so this is a lower bound).",
        "",
        "| episodes and settings | rows | questions | of which reading rows |",
        "|---|---|---|---|",
        *[f"| {name} | {r} | {q} | {n} |" for name, (r, q, n) in table],
        "",
    ]
    args.out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
