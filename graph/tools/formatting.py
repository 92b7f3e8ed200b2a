"""How search results read to the model: numbered `Doc i (Title: ...) text` lines, as in the paper's
Search-R1 style retriever, one block per query, with a character budget.

Why a budget split per query: truncating the joined text would silently drop the last queries'
results; an even share keeps every query answered.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mia.graph.tools.corpus import Hit

QUERY_SEPARATOR = "\n=======\n"
_DOC_MARK = re.compile(r"(?:^|\s)Doc \d+ \(Title: ")


def truncate(text: str, max_chars: int) -> str:
    """Cut text to max_chars, saying how much was cut (the model should know it saw a part)."""
    if max_chars <= 0 or len(text) <= max_chars:
        return text
    marker = f" ...[truncated {len(text) - max_chars} characters]"
    keep = max(0, max_chars - len(marker))
    return text[:keep].rstrip() + marker


def format_hits(hits: Sequence[Hit]) -> str:
    """`Doc 1 (Title: X) text` lines, numbered from 1."""
    return "\n".join(f"Doc {i} (Title: {h.title}) {h.text}" for i, h in enumerate(hits, start=1))


def parse_hits(text: str) -> list[tuple[str, str]]:
    """The (title, text) of every `Doc i (Title: ...)` line in a tool result, in order: the inverse of
    `format_hits`, for checks that read what the agent was shown (a cut block keeps its cut text).
    Splits on the fixed markers only, so it is linear in the text."""
    hits = []
    for block in _DOC_MARK.split(text)[1:]:
        title, _, body = block.partition(") ")
        body = body.split(QUERY_SEPARATOR, 1)[0].split('\nResults for "', 1)[0]
        hits.append((title.strip(), body.strip()))
    return hits


def format_blocks(queries: Sequence[str], bodies: Sequence[str], max_chars: int) -> str:
    """One `Results for "query":` block per query, each within an equal share of max_chars."""
    share = max_chars // max(1, len(queries)) if max_chars > 0 else 0
    blocks = []
    for query, body in zip(queries, bodies, strict=True):
        header = f'Results for "{query}":\n'
        blocks.append(
            header + truncate(body or "No relevant passage found.", max(0, share - len(header)) if share else 0)
        )
    return QUERY_SEPARATOR.join(blocks)


def format_results(queries: Sequence[str], results: Sequence[Sequence[Hit]], max_chars: int) -> str:
    return format_blocks(queries, [format_hits(hits) for hits in results], max_chars)
