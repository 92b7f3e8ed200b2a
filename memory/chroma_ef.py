"""A registered Chroma embedding function that wraps our embedder, so a collection is never
bound to Chroma's default (downloading) one and other processes can rebuild it from its config."""

from __future__ import annotations

from typing import Any

from chromadb import Documents, EmbeddingFunction, Embeddings
from chromadb.utils.embedding_functions import register_embedding_function

from mia.memory.embeddings import PrecomputedEmbedder, SentenceTransformerEmbedder, default_embedder


@register_embedding_function
class MiaEmbeddingFunction(EmbeddingFunction[Documents]):
    """Chroma-facing adapter over an `Embedder`."""

    def __init__(self, embedder: Any = None, name: str = "minilm", path: str = "", dim: int = 0) -> None:
        self.embedder = embedder
        self._name = getattr(embedder, "name", name)
        self._path = getattr(embedder, "path", path)
        self._dim = dim

    def __call__(self, input: Documents) -> Embeddings:  # noqa: A002 - Chroma's signature
        return list(self._embedder().embed_documents(list(input)))

    def _embedder(self) -> Any:
        if self.embedder is None:
            if self._name == "minilm":
                self.embedder = default_embedder()
            elif self._path:
                self.embedder = SentenceTransformerEmbedder(self._path, name=self._name)
            else:
                self.embedder = PrecomputedEmbedder(self._dim, self._name)
        return self.embedder

    @staticmethod
    def name() -> str:
        return "mia-memory-embedder"

    def get_config(self) -> dict[str, Any]:
        return {"name": self._name, "path": self._path, "dim": self._dim}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MiaEmbeddingFunction:
        return MiaEmbeddingFunction(None, **config)

    def default_space(self) -> str:  # type: ignore[override]
        return "cosine"

    def supported_spaces(self) -> list[str]:  # type: ignore[override]
        return ["cosine"]
