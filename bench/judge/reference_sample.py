"""Draw the grader's reference set: (question, gold, answer) triples from every committed run.

Why: every accuracy here is graded by a model, and the ladder (results/ladder) compares rows whose
differences are a few questions; the grading method is chosen by its agreement with answers a
person labelled by reading them (bench/judge/reference/LABELLING.md). This script only draws the
triples; the labels live in reference/labels.jsonl, written by reading, never by a program.

    python bench/judge/reference_sample.py            # writes bench/judge/reference/triples.jsonl

Deterministic (seeded): distinct (question, answer) pairs from every run folder's results.jsonl
under results/ and bench/e2e/, at least a third of them long or qualified answers (more than four
words), every memory mode represented.
"""

from __future__ import annotations

from mia.app.evaluation.runlog import read_rows

import argparse
import hashlib
import json
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent / "reference" / "triples.jsonl"


def is_long(answer: str) -> bool:
    """A long or qualified answer: a sentence or a hedged phrase rather than a bare name or date."""
    return len(answer.split()) > 4


def run_folders() -> list[Path]:
    found = sorted(
        {
            p.parent
            for base in ("results", "bench/e2e")
            for pattern in ("results.jsonl", "results.jsonl.gz")
            for p in (ROOT / base).rglob(pattern)
            if "store" not in p.parts and "ladder" not in p.parts
        }
    )
    return found


def mode_of(folder: Path) -> str:
    cfg = folder / "config.json"
    if not cfg.is_file() and (folder.parent / "config.json").is_file():  # a warm-up split
        cfg = folder.parent / "config.json"
    try:
        return str(json.loads(cfg.read_text()).get("memory_mode", "?"))
    except (OSError, ValueError):
        return "?"


def triples() -> list[dict]:
    seen: set[tuple[str, str]] = set()
    rows: list[dict] = []
    for folder in run_folders():
        mode = mode_of(folder)
        for r in read_rows(folder):
            answer = (r.get("answer") or "").strip()
            if r.get("error") or not answer:
                continue
            key = (r["question"].strip().lower(), " ".join(answer.lower().split()))
            if key in seen:
                continue
            seen.add(key)
            rid = hashlib.sha1(f"{key[0]}\n{key[1]}".encode()).hexdigest()[:12]
            rows.append(
                {
                    "rid": rid,
                    "run": str(folder.relative_to(ROOT)),
                    "mode": mode,
                    "id": r["id"],
                    "question": r["question"],
                    "gold_answers": r["gold_answers"],
                    "answer": answer,
                    "type": r.get("type"),
                    "logged_grade": r.get("judge_grade"),
                    "em": r.get("em"),
                    "f1": r.get("f1"),
                }
            )
    return rows


def draw(rows: list[dict], n: int, long_share: float, seed: int) -> list[dict]:
    """n triples, at least `long_share` of them long, spread over the memory modes."""
    rng = random.Random(seed)
    long_rows = [r for r in rows if is_long(r["answer"])]
    short_rows = [r for r in rows if not is_long(r["answer"])]
    rng.shuffle(long_rows)
    rng.shuffle(short_rows)
    n_long = min(len(long_rows), max(int(n * long_share) + 1, n // 3 + 1))
    chosen = long_rows[:n_long] + short_rows[: n - n_long]
    rng.shuffle(chosen)
    return sorted(chosen, key=lambda r: r["rid"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=360)
    ap.add_argument("--long-share", type=float, default=0.4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    rows = draw(triples(), args.n, args.long_share, args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    modes: dict[str, int] = {}
    for r in rows:
        modes[r["mode"]] = modes.get(r["mode"], 0) + 1
    print(f"{len(rows)} triples ({sum(is_long(r['answer']) for r in rows)} long) by mode {modes} -> {args.out}")


if __name__ == "__main__":
    main()
