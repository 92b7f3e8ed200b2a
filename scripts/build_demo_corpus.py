"""Build the committed demo corpus (graph/tools/data/demo_corpus.jsonl.gz) from the shared QA sets.

Why a script: the corpus must be reproducible byte for byte from /work/shared/data (or any copy of
it), so that a reviewer can check what is committed. Paragraphs are taken from the HotpotQA
distractor file, the 2WikiMultihopQA distractor file and HippoRAG corpus, and the MuSiQue file, in
that order, deduplicated by (title, text); the first occurrence keeps its dataset and license.

    python scripts/build_demo_corpus.py [--data ../shared/data] [--out graph/tools/data/demo_corpus.jsonl.gz]
    python scripts/build_demo_corpus.py --embeddings-only   # optional: precompute the demo embeddings

`--embeddings` (or `--embeddings-only`, which leaves the corpus file alone) also writes
demo_embeddings.npy (float16, one row per paragraph, in file order) and demo_embeddings.json (the
corpus file's sha256 and the model), which `load_demo_corpus` uses instead of embeddings on a first
run. Minutes on a GPU, hours on a busy CPU.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# (dataset, relative path, kind, license). Order matters: the first occurrence of a paragraph wins.
SOURCES: list[tuple[str, str, str, str]] = [
    ("hotpotqa", "hotpotqa/hotpotqa_dev_distractor.jsonl", "questions", "CC-BY-SA-4.0"),
    ("2wikimultihopqa", "2wikimultihopqa/2wikimultihopqa_dev_distractor.jsonl", "questions", "Apache-2.0"),
    ("2wikimultihopqa", "2wikimultihopqa/hipporag_corpus.jsonl", "paragraphs", "Apache-2.0"),
    ("musique", "musique/musique_ans_dev.jsonl", "questions", "CC-BY-4.0"),
]


def _iter_paragraphs(path: Path, kind: str):
    """Yield (title, text) pairs from a question file (its `paragraphs`) or a paragraph file."""
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            record = json.loads(line)
            items = record["paragraphs"] if kind == "questions" else [record]
            for para in items:
                title, text = para["title"].strip(), para["text"].strip()
                if text:
                    yield title, text


def build(data_dir: Path) -> tuple[list[dict], Counter]:
    """Collect the deduplicated paragraphs; returns them and per-dataset counts."""
    seen: set[tuple[str, str]] = set()
    out: list[dict] = []
    counts: Counter = Counter()
    for dataset, rel, kind, license_ in SOURCES:
        for title, text in _iter_paragraphs(data_dir / rel, kind):
            key = (title, text)
            if key in seen:
                counts["duplicates_skipped"] += 1
                continue
            seen.add(key)
            counts[dataset] += 1
            out.append(
                {"id": f"demo-{len(out):06d}", "title": title, "text": text, "source": dataset, "license": license_}
            )
    return out, counts


def write(paragraphs: list[dict], out: Path) -> None:
    """Write gzip JSONL deterministically (mtime 0, no file name in the header)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        for para in paragraphs:
            gz.write((json.dumps(para, ensure_ascii=False, sort_keys=False) + "\n").encode("utf-8"))
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_bytes(buf.getvalue())
    tmp.replace(out)


def write_embeddings(corpus_file: Path) -> Path:
    """Embed the corpus file's paragraphs exactly as the index does and save them beside it."""
    import json as _json

    import numpy as np

    from mia.graph.tools import embedder
    from mia.graph.tools.loading import demo_embeddings_sidecar
    from mia.graph.tools.paragraphs import index_text, normalise, read_jsonl_gz

    paragraphs = normalise(read_jsonl_gz(corpus_file))
    vectors = embedder.embed([index_text(p) for p in paragraphs], progress=True, desc="embedding demo corpus")
    target = corpus_file.parent / "demo_embeddings.npy"
    np.save(target, vectors.astype(np.float16))
    target.with_suffix(".json").write_text(
        _json.dumps(demo_embeddings_sidecar(corpus_file), indent=2) + "\n", encoding="utf-8"
    )
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=ROOT / "graph" / "tools" / "data" / "demo_corpus.jsonl.gz")
    parser.add_argument("--embeddings", action="store_true", help="also precompute demo_embeddings.npy")
    parser.add_argument("--embeddings-only", action="store_true", help="only (re)compute demo_embeddings.npy")
    args = parser.parse_args()
    if args.embeddings_only:
        print(f"wrote {write_embeddings(args.out)}")
        return
    paragraphs, counts = build(args.data)
    write(paragraphs, args.out)
    size = args.out.stat().st_size
    print(f"wrote {len(paragraphs)} paragraphs to {args.out} ({size / 1e6:.2f} MB)")
    for key, value in sorted(counts.items()):
        print(f"  {key}: {value}")
    if args.embeddings:
        print(f"wrote {write_embeddings(args.out)}")


if __name__ == "__main__":
    main()
