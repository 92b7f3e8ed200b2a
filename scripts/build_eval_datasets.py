#!/usr/bin/env python
"""Build the evaluation sets committed under app/evaluation/datasets/ from the shared QA data.

Why a script: the shared folder is not shipped to users, so the product carries a small, normalised,
compressed copy (only the fields the harness reads). Re-running it gives byte-identical files
(sorted keys, gzip mtime 0), so a diff shows real data changes only.

    python scripts/build_eval_datasets.py [--src ../shared/data] [--with-corpus]
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "app" / "evaluation" / "datasets"

# name -> (source file under --src, how many questions to keep, keep paragraphs?)
SETS: dict[str, tuple[str, int, bool]] = {
    "hotpotqa": ("hotpotqa/hotpotqa_dev_distractor.jsonl", 1000, True),
    "2wiki": ("2wikimultihopqa/2wikimultihopqa_dev_distractor.jsonl", 500, True),
    # open setting: search the shared corpus, so the per-question gold paragraphs are not needed
    "2wiki-open": ("2wikimultihopqa/2wikimultihopqa_dev_hipporag1000_opencorpus.jsonl", 1000, False),
    "musique": ("musique/musique_ans_dev.jsonl", 200, True),
}
CORPUS = ("2wikimultihopqa/hipporag_corpus.jsonl", "2wiki-open-corpus")


def normalise(record: dict, keep_paragraphs: bool) -> dict:
    """Keep only the harness's fields: id, question, answer(s), type, paragraphs, gold titles."""
    paragraphs = [{"title": p["title"], "text": p["text"]} for p in record.get("paragraphs") or []]
    return {
        "id": str(record["id"]),
        "question": record["question"],
        "answer": record["answer"],
        "answer_aliases": list(record.get("answer_aliases") or []),
        "type": record.get("type"),
        "paragraphs": paragraphs if keep_paragraphs else [],
        "supporting_titles": list(record.get("supporting_titles") or []),
    }


def write_jsonl_gz(path: Path, rows: list[dict]) -> None:
    """Deterministic gzip (mtime 0, no file name) so rebuilds are byte-identical."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        for row in rows:
            gz.write((json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8"))
    path.write_bytes(buf.getvalue())


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--src", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--with-corpus", action="store_true", help="also write the 6,119-paragraph 2Wiki open corpus")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, (rel, limit, keep) in SETS.items():
        rows = [normalise(r, keep) for r in read_jsonl(args.src / rel)[:limit]]
        write_jsonl_gz(args.out / f"{name}.jsonl.gz", rows)
        print(f"{name}: {len(rows)} questions -> {args.out / (name + '.jsonl.gz')}")
    if args.with_corpus:
        rel, name = CORPUS
        rows = [{"id": r["id"], "title": r["title"], "text": r["text"]} for r in read_jsonl(args.src / rel)]
        write_jsonl_gz(args.out / f"{name}.jsonl.gz", rows)
        print(f"{name}: {len(rows)} paragraphs")


if __name__ == "__main__":
    main()
