"""Paragraph records: validation, stable ids, the content hash that names an index, gzip JSONL I/O.

Why a module of its own: the sandbox corpus, the demo corpus and `mia index` all feed the same
`{id, title, text}` records into `Corpus`, and they must agree on what makes two corpora equal
(the content hash), or a cached index would be reused for different text.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypedDict

# Bump when the index layout or the text that gets indexed changes: old caches are then ignored.
INDEX_FORMAT_VERSION = 2


class Paragraph(TypedDict, total=False):
    """One searchable passage. `id`, `title` and `text` are always present after `normalise`."""

    id: str
    title: str
    text: str
    source: str
    license: str


def normalise(paragraphs: Iterable[Mapping[str, Any]], id_prefix: str = "p") -> list[Paragraph]:
    """Check and clean paragraph dicts; give missing ids a positional id.

    Raises ValueError naming the offending item, because a silently skipped record would make a
    user's `mia index` look like it worked while losing text.
    """
    out: list[Paragraph] = []
    for i, para in enumerate(paragraphs):
        if not isinstance(para, Mapping):
            raise ValueError(f"paragraph {i} is a {type(para).__name__}, expected a dict with 'title' and 'text'")
        text = para.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"paragraph {i} has no 'text' string: {dict(para)!r:.200}")
        title = para.get("title") or ""
        if not isinstance(title, str):
            raise ValueError(f"paragraph {i} has a non-string 'title': {title!r:.100}")
        record: Paragraph = {
            "id": str(para.get("id") or f"{id_prefix}{i}"),
            "title": title.strip(),
            "text": text.strip(),
        }
        for key in ("source", "license"):
            if para.get(key):
                record[key] = str(para[key])
        out.append(record)
    return out


def index_text(para: Mapping[str, Any]) -> str:
    """The text both retrievers see: the title matters (HotpotQA questions name entities)."""
    title = para.get("title") or ""
    return f"{title}\n{para['text']}" if title else str(para["text"])


def content_hash(paragraphs: Iterable[Mapping[str, Any]], model_id: str) -> str:
    """A short hash of everything the index depends on: the texts, their order, the model, the format."""
    digest = hashlib.sha256(f"v{INDEX_FORMAT_VERSION}|{model_id}|".encode())
    for para in paragraphs:
        digest.update(str(para.get("id", "")).encode())
        digest.update(b"\x1f")
        digest.update(index_text(para).encode())
        digest.update(b"\x1e")
    return digest.hexdigest()[:16]


def read_jsonl_gz(path: Path) -> list[dict]:
    """Read a (possibly gzipped) JSONL file of paragraph dicts."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def write_json(paragraphs: Iterable[Mapping[str, Any]], path: Path) -> None:
    """The index cache's copy of the paragraphs: one plain JSON array, because a single
    `json.loads` with no decompression is the fastest reload the standard library offers."""
    with open(path, "w", encoding="utf-8") as fh:
        json.dump([dict(p) for p in paragraphs], fh, ensure_ascii=False)


def read_json(path: Path) -> list[Paragraph]:
    with open(path, "rb") as fh:
        raw = fh.read()
    try:  # orjson (already installed with langsmith/chromadb) parses this about 3x faster
        import orjson
    except ImportError:  # pragma: no cover
        return json.loads(raw)
    return orjson.loads(raw)
