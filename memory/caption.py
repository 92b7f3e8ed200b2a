"""Image captions in retrieval (MIA: similarity = 0.8 question + 0.2 caption, reference 2.6).

A record keeps its caption's embedding beside the question's, as a compact base64 float16 string
inside the record (so it travels with export/import and every index implementation). A query with
a caption mixes the two cosines; a record without a caption contributes 0 caption similarity, as
MIA's zero caption vectors do. A query without a caption uses the question alone, so text-only
questions rank exactly as before.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any

import numpy as np

from mia.memory.records import MemoryRecord
from mia.memory.scoring import cosine

DEFAULT_CAPTION_WEIGHT = 0.2


def encode_vector(vector: np.ndarray) -> str:
    """A unit vector as base64 float16 (384-d MiniLM: 1 KB of text, cosine error below 1e-3)."""
    v = np.asarray(vector, dtype=np.float64).ravel()
    norm = np.linalg.norm(v)
    return base64.b64encode((v / norm if norm else v).astype("<f2").tobytes()).decode("ascii")


def decode_vector(text: str, dim: int) -> np.ndarray:
    """The vector back (float64); zeros when absent or damaged (a text-only record)."""
    if text:
        try:
            v = np.frombuffer(base64.b64decode(text, validate=True), dtype="<f2").astype(np.float64)
        except (binascii.Error, ValueError):
            v = np.zeros(0)
        if v.size == dim:
            return v
    return np.zeros(dim)


def mixed_similarity(
    question_sims: np.ndarray, caption_query: np.ndarray | None, caption_vectors: Sequence[str], weight: float
) -> np.ndarray:
    """(1 - weight) * question cosine + weight * caption cosine, for a query with a caption;
    the question cosines unchanged for one without."""
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"caption weight must be between 0 and 1, got {weight}")
    sims = np.asarray(question_sims, dtype=np.float64)
    if caption_query is None or weight == 0.0:
        return sims
    dim = int(np.asarray(caption_query).size)
    matrix = np.stack([decode_vector(v, dim) for v in caption_vectors]) if len(caption_vectors) else np.zeros((0, dim))
    return (1.0 - weight) * sims + weight * cosine(caption_query, matrix)


def add_caption_vectors(embedder: Any, records: list[MemoryRecord]) -> None:
    """Give every captioned record without one its caption's vector (one batch), so retrieval
    never embeds a stored caption again."""
    todo = [r for r in records if r.caption.strip() and not r.caption_vector]
    if todo:
        vectors = embedder.embed_documents([r.caption.strip() for r in todo])
        for rec, vec in zip(todo, vectors):
            rec.caption_vector = encode_vector(vec)
