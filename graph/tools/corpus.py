"""`Corpus`: hybrid search (BM25 + MiniLM embeddings, reciprocal-rank fusion) over paragraphs.

Why hybrid: multi-hop questions name entities (BM25 finds exact titles and rare names) but also
paraphrase relations (dense retrieval finds "born in" for "birthplace"). Reciprocal-rank fusion
(Cormack et al., 2009: score = sum over retrievers of 1 / (60 + rank)) needs no score calibration
between the two, so it works the same on a 10-paragraph sandbox and a 20k-paragraph corpus.
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from mia.graph.tools import embedder, index_cache
from mia.graph.tools.paragraphs import Paragraph, content_hash, index_text, normalise

log = logging.getLogger(__name__)

RRF_K = 60  # the constant from the RRF paper; damps the weight of the very first ranks
#: The MiniLM cosine below which a hit of an open corpus (the demo corpus, a corpus path) is not
#: shown: a query with nothing near it returns no passage instead of the top-k of junk. Chosen on
#: HotpotQA and SimpleQA questions (bench/tools/relevance-floor.md) as the highest floor that keeps
#: 99% of the relevant hits. It refuses almost none of SimpleQA's unanswerable questions: their best
#: hits are topically near (median 0.45), so a cosine floor cannot tell "on topic" from "answers it"
#: (one that refused half of them would drop 14% of the relevant hits). A question's own sandbox
#: paragraphs keep every hit.
OPEN_CORPUS_MIN_RELEVANCE = 0.20
MIN_CANDIDATES = 50  # how deep each retriever's list goes before fusion
STOPWORDS = "en"

IndexSource = Literal["built", "cache", "memory"]


@dataclass(frozen=True)
class Hit:
    """One search result. `score` is the fused RRF score; the per-retriever ranks (1-based, None if
    the paragraph was not in that retriever's candidate list) explain why it was found."""

    id: str
    title: str
    text: str
    score: float
    rank: int
    bm25_rank: int | None = None
    dense_rank: int | None = None
    source: str | None = None


def s_stem(tokens: list[str]) -> list[str]:
    """Harman's "S" stemmer (plural endings only): enough for "quokkas" to match "quokka" without a
    stemming dependency, and too light to conflate unrelated names."""
    out = []
    for tok in tokens:
        if len(tok) > 4 and tok.endswith("ies") and not tok.endswith(("eies", "aies")):
            tok = tok[:-3] + "y"
        elif len(tok) > 3 and tok.endswith("es") and not tok.endswith(("aes", "ees", "oes")):
            tok = tok[:-1]
        elif len(tok) > 3 and tok.endswith("s") and not tok.endswith(("us", "ss")):
            tok = tok[:-1]
        out.append(tok)
    return out


def _tokenize(texts: Sequence[str]) -> list[list[str]]:
    import bm25s

    return bm25s.tokenize(list(texts), stopwords=STOPWORDS, stemmer=s_stem, return_ids=False, show_progress=False)


def _build_bm25(texts: Sequence[str]) -> Any:
    """A bm25s index, or None when no paragraph has a single indexable word (then dense only).
    Its own progress bars stay off: it takes seconds where embedding takes minutes."""
    import bm25s

    tokens = _tokenize(texts)
    if not any(tokens):
        return None
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)
    return retriever


class Corpus:
    """A searchable set of paragraphs. Build with `Corpus.build`, `corpus_from_paragraphs`,
    `load_corpus` or `load_demo_corpus`; search with `search(queries, k)`."""

    def __init__(
        self,
        paragraphs: list[Paragraph],
        embeddings: np.ndarray,
        bm25: Any,
        *,
        name: str,
        digest: str,
        index_source: IndexSource,
        index_path: Path | None = None,
        min_relevance: float | None = None,
    ) -> None:
        self.paragraphs = paragraphs
        self.embeddings = embeddings
        self.bm25 = bm25
        self.name = name
        self.digest = digest
        self.index_source: IndexSource = index_source  # "cache" proves a reload re-embedded nothing
        self.index_path = index_path
        self.min_relevance = min_relevance  # a hit less similar than this to its query is not shown

    def __len__(self) -> int:
        return len(self.paragraphs)

    def __repr__(self) -> str:
        return f"Corpus(name={self.name!r}, paragraphs={len(self)}, index={self.index_source})"

    # ------------------------------------------------------------------ building
    @classmethod
    def build(
        cls,
        paragraphs: Iterable[Mapping[str, Any]],
        *,
        name: str = "corpus",
        cache: bool = True,
        data_dir: str | Path | None = None,
        progress: bool | None = None,
    ) -> Corpus:
        """Index paragraphs, or reload their index from `$MIA_DATA_DIR/index/<name>-<hash>/`.

        `cache=False` keeps everything in memory (sandbox corpora). A corrupt cache folder is
        reported with a warning, removed and rebuilt.
        """
        paras = normalise(paragraphs)
        if not paras:
            raise ValueError(f"corpus {name!r} has no paragraphs")
        digest = content_hash(paras, embedder.MODEL_ID)
        if not cache:
            embeddings, bm25 = cls._index(paras, len(paras) > 200 if progress is None else progress)
            return cls(paras, embeddings, bm25, name=name, digest=digest, index_source="memory")
        return cls.load_or_build(name, digest, lambda: paras, data_dir=data_dir, progress=progress, known=paras)

    @classmethod
    def load_or_build(
        cls,
        name: str,
        digest: str,
        source: Callable[[], Iterable[Mapping[str, Any]]],
        *,
        data_dir: str | Path | None = None,
        progress: bool | None = None,
        known: list[Paragraph] | None = None,
        precomputed: Callable[[list[Paragraph]], np.ndarray | None] | None = None,
    ) -> Corpus:
        """The cached index `<name>-<digest>` if it loads, else index `source()` and cache it.

        `digest` must change whenever the paragraphs do; callers that can name their content
        cheaply (the demo corpus: a hash of the file's bytes) skip reading it on a cache hit, since
        the cache holds its own copy of the paragraphs. `known` avoids that copy when given.
        `precomputed(paragraphs)` may return their embeddings (a shipped matrix) to skip embedding.
        """
        folder = index_cache.index_dir(name, digest, data_dir)
        if folder.exists():
            try:
                loaded = index_cache.load(folder, with_paragraphs=known is None)
                # The cache stores normalised paragraphs (and load checked their count).
                paras = known if known is not None else loaded.paragraphs or []
                return cls(
                    paras,
                    loaded.embeddings,
                    loaded.bm25,
                    name=name,
                    digest=digest,
                    index_source="cache",
                    index_path=folder,
                )
            except index_cache.CorruptIndexError as err:
                message = f"the search index cache at {folder} is corrupt ({err}); rebuilding it"
                warnings.warn(message, RuntimeWarning, stacklevel=3)
                log.warning(message)
                index_cache.discard(folder)
        paras = known if known is not None else normalise(source())
        if not paras:
            raise ValueError(f"corpus {name!r} has no paragraphs")
        started = time.perf_counter()
        show = len(paras) > 200 if progress is None else progress
        vectors = precomputed(paras) if precomputed is not None else None
        embeddings, bm25 = cls._index(paras, show, desc=f"indexing {name}", embeddings=vectors)
        meta = {
            "name": name,
            "digest": digest,
            "model": embedder.MODEL_ID,
            "build_seconds": round(time.perf_counter() - started, 2),
        }
        index_cache.save(folder, paragraphs=paras, embeddings=embeddings, bm25=bm25, meta=meta)
        return cls(paras, embeddings, bm25, name=name, digest=digest, index_source="built", index_path=folder)

    @classmethod
    def open_cached(cls, folder: Path) -> Corpus:
        """Load a cache folder on its own (a corpus indexed earlier by `mia index`, by name)."""
        loaded = index_cache.load(folder, with_paragraphs=True)
        assert loaded.paragraphs is not None
        return cls(
            loaded.paragraphs,
            loaded.embeddings,
            loaded.bm25,
            name=str(loaded.meta.get("name", folder.name)),
            digest=str(loaded.meta.get("digest", "")),
            index_source="cache",
            index_path=folder,
        )

    @staticmethod
    def _index(
        paras: list[Paragraph], progress: bool, desc: str = "embedding", embeddings: np.ndarray | None = None
    ) -> tuple[np.ndarray, Any]:
        texts = [index_text(p) for p in paras]
        bm25 = _build_bm25(texts)
        if embeddings is None:
            embeddings = embedder.embed(texts, progress=progress, desc=desc)
        return np.ascontiguousarray(embeddings, dtype=np.float32), bm25

    # ------------------------------------------------------------------ searching
    def search(self, queries: Sequence[str], k: int = 3) -> list[list[Hit]]:
        """Top-k paragraphs for each query, best first (fewer if the corpus is smaller than k, or if
        fewer pass the corpus's `min_relevance`)."""
        if isinstance(queries, str):
            queries = [queries]
        queries = [str(q) for q in queries]
        if not queries:
            return []
        k = max(1, min(int(k), len(self)))
        depth = min(len(self), max(MIN_CANDIDATES, 10 * k))
        dense_scores = embedder.embed(queries) @ self.embeddings.T  # cosine: both sides normalised
        tokens = _tokenize(queries)
        return [self._fuse(tokens[i], dense_scores[i], k, depth) for i in range(len(queries))]

    def _fuse(self, tokens: list[str], dense: np.ndarray, k: int, depth: int) -> list[Hit]:
        fused: dict[int, float] = {}
        bm25_rank: dict[int, int] = {}
        dense_rank: dict[int, int] = {}
        token_ids = self.bm25.get_tokens_ids(tokens) if tokens and self.bm25 is not None else []
        if token_ids:
            scores = self.bm25.get_scores(token_ids)
            for rank, idx in enumerate(_top(scores, depth), start=1):
                if scores[idx] <= 0:
                    break  # the rest share no term with the query
                bm25_rank[idx] = rank
                fused[idx] = fused.get(idx, 0.0) + 1.0 / (RRF_K + rank)
        for rank, idx in enumerate(_top(dense, depth), start=1):
            dense_rank[idx] = rank
            fused[idx] = fused.get(idx, 0.0) + 1.0 / (RRF_K + rank)
        # Equal fused scores are common on tiny corpora; the dense similarity breaks the tie.
        order = sorted(fused, key=lambda i: (-fused[i], -float(dense[i]), i))
        if self.min_relevance is not None:
            order = [i for i in order if float(dense[i]) >= self.min_relevance]
        order = order[:k]
        hits = []
        for rank, idx in enumerate(order, start=1):
            para = self.paragraphs[idx]
            hits.append(
                Hit(
                    id=para["id"],
                    title=para["title"],
                    text=para["text"],
                    score=fused[idx],
                    rank=rank,
                    bm25_rank=bm25_rank.get(idx),
                    dense_rank=dense_rank.get(idx),
                    source=para.get("source"),
                )
            )
        return hits


def _top(scores: np.ndarray, n: int) -> list[int]:
    """Indexes of the n largest scores, best first (ties by position, for stable results)."""
    n = min(n, scores.shape[0])
    if n <= 0:
        return []
    part = np.argpartition(-scores, n - 1)[:n] if n < scores.shape[0] else np.arange(scores.shape[0])
    return sorted(part.tolist(), key=lambda i: (-float(scores[i]), i))


# Per-question sandbox corpora repeat (GRPO rollouts share a question): keep a few in memory.
_SANDBOX_CACHE: OrderedDict[str, Corpus] = OrderedDict()
_SANDBOX_MAX = 256
_sandbox_lock = threading.Lock()


def corpus_from_paragraphs(paragraphs: Iterable[Mapping[str, Any]], name: str = "sandbox") -> Corpus:
    """A small in-memory corpus (the distractor setting): no disk cache, one batched embedding
    call with the shared model, memoised by content for repeated questions."""
    paras = normalise(paragraphs)
    if not paras:
        raise ValueError("corpus_from_paragraphs needs at least one paragraph with text")
    digest = content_hash(paras, embedder.MODEL_ID)
    with _sandbox_lock:
        hit = _SANDBOX_CACHE.get(digest)
        if hit is not None:
            _SANDBOX_CACHE.move_to_end(digest)
            return hit
    corpus = Corpus.build(paras, name=name, cache=False, progress=False)
    with _sandbox_lock:
        _SANDBOX_CACHE[digest] = corpus
        while len(_SANDBOX_CACHE) > _SANDBOX_MAX:
            _SANDBOX_CACHE.popitem(last=False)
    return corpus
