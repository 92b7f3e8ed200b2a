"""What `mia ask` shows of a reply while it streams: the text, without the protocol's tags.

The executor writes `<think>...</think>`, `<tool_call>{json}</tool_call>` and
`<answer>...</answer>`. The thought and the answer are shown as plain text; a tool call is shown
once, readably, when its node finishes, so its JSON is hidden here. A tag may arrive split across
tokens (`<tool`, `_call>`), so a possible tag start is held back until it is complete.
"""

from __future__ import annotations

import re

from mia.graph.protocol.tags import TAG_PATTERN as _TAG

_HIDDEN = {"tool_call", "tool_response"}
_LONGEST_TAG = 24
# A tool call written without its tags: what a reply continuing a prefilled "<tool_call>" streams
# (the prefill is not part of the stream). It ends the turn, so everything from it on is hidden.
_BARE_CALL = re.compile(r'\{\s*"name"\s*:')
_LONGEST_BARE = 12


class VisibleText:
    """Feed the chunks of one reply; get back the text to print now."""

    def __init__(self) -> None:
        self._pending = ""
        self._hidden: str | None = None

    def feed(self, chunk: str) -> str:
        text = self._pending + chunk
        out: list[str] = []
        while (match := _TAG.search(text)) is not None:
            if self._hidden is None:
                out.append(text[: match.start()])
            closing, name = match.group(1), match.group(2).lower()
            if not closing and name in _HIDDEN:
                self._hidden = name
            elif closing and name == self._hidden:
                self._hidden = None
            text = text[match.end() :]
        if self._hidden is None and (bare := _BARE_CALL.search(text)) is not None:
            out.append(text[: bare.start()])
            self._hidden, self._pending = "bare_call", ""
            return "".join(out)
        start = text.rfind("<")
        held = text[start:] if start != -1 and ">" not in text[start:] and len(text) - start < _LONGEST_TAG else ""
        brace = text.rfind("{")
        if not held and brace != -1 and len(text) - brace < _LONGEST_BARE and self._hidden is None:
            held = text[brace:]  # maybe the start of a bare tool call: wait for the next token
        self._pending = held
        if self._hidden is None:
            out.append(text[: len(text) - len(held)])
        return "".join(out)

    def flush(self) -> str:
        """The end of the reply: what was held back, unless it is inside a hidden part."""
        rest, self._pending = self._pending, ""
        return "" if self._hidden is not None else rest
