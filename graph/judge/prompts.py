"""Loads the judge's prompts from prompts.toml (prompts are data) and fills their placeholders."""

from __future__ import annotations

import re
import tomllib
from functools import lru_cache
from importlib.resources import files
from typing import Any

_PLACEHOLDER = re.compile(r"\{(\w+)\}")


@lru_cache(maxsize=1)
def load_prompts() -> dict[str, Any]:
    """The parsed prompts.toml shipped inside the package."""
    text = files(__package__).joinpath("prompts.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def render(template: str, **values: str) -> str:
    """Fill `{name}` placeholders; other braces (JSON examples) stay as they are.

    Unlike str.format, a brace in the template that is not a known placeholder is never an error,
    and values are inserted verbatim (a question containing "{x}" is safe).
    """

    def fill(match: re.Match[str]) -> str:
        key = match.group(1)
        return values[key] if key in values else match.group(0)

    return _PLACEHOLDER.sub(fill, template).strip()


__all__ = ["load_prompts", "render"]
