"""Where corpora come from: the committed demo corpus, a user's folder, or an index made earlier.

Why here and not in the graph: the graph's Context names a corpus as a string (`demo`, a path, or
a name given to `mia index`), and this is the one place that turns that string into a `Corpus`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from pathlib import Path

import numpy as np

from mia.graph.tools import index_cache
from mia.graph.tools.corpus import OPEN_CORPUS_MIN_RELEVANCE, Corpus
from mia.graph.tools.documents import read_documents
from mia.graph.tools.embedder import MODEL_ID
from mia.graph.tools.paragraphs import INDEX_FORMAT_VERSION, read_jsonl_gz

log = logging.getLogger(__name__)

DEMO_NAME = "demo"
DEMO_PATH = Path(__file__).resolve().parent / "data" / "demo_corpus.jsonl.gz"
# Optional: the demo's embeddings computed once (`scripts/build_demo_corpus.py --embeddings`, best on
# a GPU) and shipped, so a CPU-only first run builds only BM25. Used only if its sidecar matches.
DEMO_EMBEDDINGS = DEMO_PATH.parent / "demo_embeddings.npy"

_loaded: dict[tuple[str, str], Corpus] = {}
_lock = threading.Lock()


def load_demo_corpus(data_dir: str | Path | None = None, *, progress: bool | None = None) -> Corpus:
    """The committed HotpotQA + 2Wiki + MuSiQue paragraphs, indexed on first use and cached on disk
    (and in this process)."""
    key = (DEMO_NAME, str(index_cache.data_dir(data_dir)))
    with _lock:
        if key not in _loaded:
            if not DEMO_PATH.is_file():
                raise FileNotFoundError(f"the demo corpus is missing from the installation: {DEMO_PATH}")
            # Named by the file's bytes, so a reload never parses the 4 MB file (the cache holds the
            # paragraphs in a faster form).
            digest = hashlib.sha256(f"v{INDEX_FORMAT_VERSION}|{MODEL_ID}|".encode() + DEMO_PATH.read_bytes())
            _loaded[key] = open_corpus(
                Corpus.load_or_build(
                    DEMO_NAME,
                    digest.hexdigest()[:16],
                    lambda: read_jsonl_gz(DEMO_PATH),
                    data_dir=data_dir,
                    progress=progress,
                    precomputed=shipped_embeddings,
                )
            )
        return _loaded[key]


def demo_embeddings_sidecar(corpus_file: Path) -> dict:
    """What shipped demo embeddings must have been computed from."""
    return {"corpus_sha256": hashlib.sha256(corpus_file.read_bytes()).hexdigest(), "model": MODEL_ID}


def shipped_embeddings(paragraphs: list) -> np.ndarray | None:
    """The shipped demo embeddings if present and made from this very file and model, else None."""
    sidecar = DEMO_EMBEDDINGS.with_suffix(".json")
    if not (DEMO_EMBEDDINGS.is_file() and sidecar.is_file()):
        return None
    try:
        if json.loads(sidecar.read_text(encoding="utf-8")) != demo_embeddings_sidecar(DEMO_PATH):
            log.warning("ignoring %s: it was computed from another corpus file or model", DEMO_EMBEDDINGS)
            return None
        vectors = np.load(DEMO_EMBEDDINGS, allow_pickle=False).astype(np.float32)
    except (OSError, ValueError) as err:
        log.warning("ignoring unreadable %s (%s)", DEMO_EMBEDDINGS, err)
        return None
    if vectors.shape != (len(paragraphs), 384):
        log.warning("ignoring %s: shape %s does not fit %d paragraphs", DEMO_EMBEDDINGS, vectors.shape, len(paragraphs))
        return None
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def index_path(
    path: str | Path, name: str | None = None, data_dir: str | Path | None = None, *, progress: bool | None = None
) -> Corpus:
    """Index a file or folder of documents (txt, md, jsonl) into the cache; reuse it if unchanged."""
    source = Path(path).expanduser().resolve()
    return Corpus.build(
        read_documents(source), name=name or source.stem or "corpus", data_dir=data_dir, progress=progress
    )


def load_corpus(spec: str, data_dir: str | Path | None = None) -> Corpus:
    """`demo`, a path to documents, or the name of a corpus indexed with `mia index`."""
    spec = (spec or "").strip()
    if not spec or spec == DEMO_NAME:
        return load_demo_corpus(data_dir)
    key = (spec, str(index_cache.data_dir(data_dir)))
    with _lock:
        if key in _loaded:
            return _loaded[key]
    path = Path(spec).expanduser()
    if path.exists():  # not memoised: the files may have changed; the disk cache makes this cheap
        return open_corpus(index_path(path, data_dir=data_dir))
    else:
        folder = index_cache.find_named(spec, data_dir)
        if folder is None:
            raise ValueError(
                f"unknown corpus {spec!r}: not 'demo', not an existing path, and no index named "
                f"{spec!r} under {index_cache.index_root(data_dir)} (create one with `mia index PATH "
                f"--name {spec}`)"
            )
        try:
            corpus = Corpus.open_cached(folder)
        except index_cache.CorruptIndexError as err:
            raise ValueError(
                f"the index of corpus {spec!r} at {folder} is corrupt ({err}); re-run `mia index PATH --name {spec}`"
            ) from err
    with _lock:
        _loaded[key] = open_corpus(corpus)
    return corpus


def open_corpus(corpus: Corpus) -> Corpus:
    """An open corpus (the demo corpus, a path, a named index) shows only hits that pass the
    relevance floor; a question's sandbox paragraphs are not open corpora and keep every hit."""
    corpus.min_relevance = OPEN_CORPUS_MIN_RELEVANCE
    return corpus
