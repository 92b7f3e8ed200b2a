"""Where model files live: the data directory. The graph layer reads MIA_DATA_DIR itself so it
works without the app; embedded model files are located by `embedded.py`."""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    """$MIA_DATA_DIR, default ~/.local/share/mia (not created here)."""
    raw = os.environ.get("MIA_DATA_DIR") or "~/.local/share/mia"
    return Path(raw).expanduser()


def is_converted(folder: Path) -> bool:
    """A converted folder is complete when it exists at all: it only appears by an atomic rename."""
    return (folder / "config.json").is_file() and any(folder.glob("*.safetensors"))
