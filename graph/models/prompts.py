"""Loads prompts.toml (prompts are data, kept beside the code that fills them)."""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from typing import Any


@cache
def prompts() -> dict[str, Any]:
    """The parsed prompts.toml of this package."""
    return tomllib.loads((Path(__file__).with_name("prompts.toml")).read_text(encoding="utf-8"))
