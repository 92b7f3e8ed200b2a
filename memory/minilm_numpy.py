"""MiniLM (a 6-layer BERT) in NumPy, for installs without torch (`pip install mia-agent`, no `local` extra).

Why: the default embedder must work for API-only users, and sentence-transformers drags in torch
(hundreds of MB). The weights are the same safetensors file sentence-transformers loads, the
tokenizer is the same `tokenizer.json` (Hugging Face `tokenizers`, a Chroma dependency); the
forward pass is BERT's, mean-pooled, so vectors match sentence-transformers' to ~1e-6 (a test
compares them where torch is installed). Only the interface the embedders use is provided:
`encode`, `get_embedding_dimension` and `tokenizer`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

MAX_SEQ_LENGTH = 256


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to 1.5e-7 (Abramowitz & Stegun 7.1.26); NumPy has none and SciPy is not a dependency."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-a * a))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / np.sqrt(2.0)))


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


class NumpyMiniLM:
    """A sentence-transformers BERT folder (Transformer + mean Pooling + Normalize) run with NumPy."""

    def __init__(self, folder: str | Path, max_seq_length: int = MAX_SEQ_LENGTH) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        folder = Path(folder)
        self.config = json.loads((folder / "config.json").read_text())
        if self.config.get("model_type") != "bert":
            raise ValueError(
                f"{folder}: the NumPy encoder runs BERT models only, not {self.config.get('model_type')!r}"
            )
        self.weights = load_file(str(folder / "model.safetensors"))
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=max_seq_length)
        self.tokenizer.enable_padding(pad_id=int(self.config.get("pad_token_id", 0)))
        self.heads = int(self.config["num_attention_heads"])
        self.layers = int(self.config["num_hidden_layers"])
        self.eps = float(self.config.get("layer_norm_eps", 1e-12))

    def get_embedding_dimension(self) -> int:
        return int(self.config["hidden_size"])

    get_sentence_embedding_dimension = get_embedding_dimension

    def _w(self, name: str) -> np.ndarray:
        return self.weights[name]

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self._w(f"{name}.weight").T + self._w(f"{name}.bias")

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Token states (batch, seq, hidden) of BERT's encoder."""
        batch, seq = ids.shape
        x = (
            self._w("embeddings.word_embeddings.weight")[ids]
            + self._w("embeddings.position_embeddings.weight")[:seq][None]
            + self._w("embeddings.token_type_embeddings.weight")[0][None, None]
        )
        x = _layer_norm(x, self._w("embeddings.LayerNorm.weight"), self._w("embeddings.LayerNorm.bias"), self.eps)
        hidden = x.shape[-1]
        size = hidden // self.heads
        bias = np.where(mask[:, None, None, :] > 0, 0.0, np.finfo(np.float32).min).astype(np.float32)
        for i in range(self.layers):
            p = f"encoder.layer.{i}"

            def split(t: np.ndarray) -> np.ndarray:
                return t.reshape(batch, seq, self.heads, size).transpose(0, 2, 1, 3)

            q = split(self._linear(x, f"{p}.attention.self.query"))
            k = split(self._linear(x, f"{p}.attention.self.key"))
            v = split(self._linear(x, f"{p}.attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(size) + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            attn = scores / scores.sum(-1, keepdims=True)
            ctx = (attn @ v).transpose(0, 2, 1, 3).reshape(batch, seq, hidden)
            x = _layer_norm(
                self._linear(ctx, f"{p}.attention.output.dense") + x,
                self._w(f"{p}.attention.output.LayerNorm.weight"),
                self._w(f"{p}.attention.output.LayerNorm.bias"),
                self.eps,
            )
            ff = self._linear(_gelu(self._linear(x, f"{p}.intermediate.dense")), f"{p}.output.dense")
            x = _layer_norm(
                ff + x, self._w(f"{p}.output.LayerNorm.weight"), self._w(f"{p}.output.LayerNorm.bias"), self.eps
            )
        return x

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, normalize_embeddings: bool = True, **_: Any
    ) -> np.ndarray:
        """Mean-pooled sentence vectors (float32), like `SentenceTransformer.encode(convert_to_numpy=True)`."""
        out = np.zeros((len(texts), self.get_embedding_dimension()), dtype=np.float32)
        for start in range(0, len(texts), batch_size):
            encodings = self.tokenizer.encode_batch(list(texts[start : start + batch_size]))
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
            states = self._forward(ids, mask)
            pooled = (states * mask[..., None]).sum(1) / np.clip(mask.sum(1, keepdims=True), 1e-9, None)
            if normalize_embeddings:
                pooled = pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            out[start : start + len(encodings)] = pooled
        return out
