"""Where model files live: the data directory (its one definition is mia.memory.config.data_dir);
embedded model files are located by `embedded.py`."""

from __future__ import annotations

from pathlib import Path

from mia.memory.config import data_dir

__all__ = ["data_dir", "is_converted"]


def is_converted(folder: Path) -> bool:
    """A converted folder is complete when it exists at all: it only appears by an atomic rename."""
    return (folder / "config.json").is_file() and any(folder.glob("*.safetensors"))
