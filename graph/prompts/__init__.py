"""Prompt templates of the graph, kept as data (`*.toml` beside this file).

`load_prompts("planner")["plan"]` returns one template; templates use `str.format` fields.
The texts paraphrase the MIA paper's prompts (arXiv 2604.04503, reference notes 3.2 and 4.2).
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from typing import Any

_DIR = Path(__file__).parent


@cache
def load_prompts(name: str) -> dict[str, str]:
    """All templates of one prompt file (cached; the files ship inside the package)."""
    path = _DIR / f"{name}.toml"
    if not path.is_file():
        raise FileNotFoundError(f"no prompt file {name!r} in {_DIR}")
    with path.open("rb") as fh:
        return {k: v for k, v in tomllib.load(fh).items() if isinstance(v, str)}


def all_templates() -> list[str]:
    """Every template of every prompt file: what the memory's workflow screen checks stored
    workflows against (a small model copying our examples, e.g. "river A length")."""
    return [text for path in sorted(_DIR.glob("*.toml")) for text in load_prompts(path.stem).values()]


def render(name: str, key: str, **values: Any) -> str:
    """Fill one template; unknown fields are an error (a typo in a prompt must fail loudly)."""
    return load_prompts(name)[key].format(**values).strip()


def caption_line(caption: str | None) -> str:
    """The "Image caption: ..." line shown after a question (empty for a text-only question): one
    wording for the planner, the executor and the memories shown to the planner."""
    from mia.graph.protocol import escape_untrusted

    caption = (caption or "").strip()
    return load_prompts("memory")["caption_line"].format(caption=escape_untrusted(caption)) if caption else ""
