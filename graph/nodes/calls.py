"""Calling a role's chat model and counting what it cost.

Usage is counted with a callback hook registered on a context variable, so calls made inside
other components (the judge, the memory Compressor) are counted for the right role too.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import LLMResult
from langchain_core.tracers.context import register_configure_hook

from mia.graph.judge.verdict import Usage
from mia.graph.protocol import clean_text, clean_value, estimate_tokens


class UsageCounter(BaseCallbackHandler):
    """Counts chat-model calls, tokens (estimated when a backend reports none), prompt-cache hits
    and the wall time spent inside each call."""

    def __init__(self) -> None:
        self.usage = Usage()
        self._started: dict[UUID, tuple[float, int]] = {}

    def on_chat_model_start(
        self, serialized: Any, messages: list[list[BaseMessage]], *, run_id: UUID, **kwargs: Any
    ) -> None:
        estimate = sum(estimate_tokens(str(m.content)) for batch in messages for m in batch)
        self._started[run_id] = (time.perf_counter(), estimate)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        started, estimate = self._started.pop(run_id, (None, 0))
        ms = (time.perf_counter() - started) * 1000 if started is not None else 0.0
        for generations in response.generations:
            for gen in generations[:1]:
                message = getattr(gen, "message", None)
                self.usage.add(
                    getattr(message, "usage_metadata", None),
                    input_estimate=estimate,
                    output_estimate=estimate_tokens(gen.text or ""),
                    ms=ms,
                )

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._started.pop(run_id, None)

    @property
    def calls(self) -> int:
        return self.usage.calls

    def as_dict(self) -> dict[str, int]:
        return self.usage.counts()


_COUNTER: ContextVar[UsageCounter | None] = ContextVar("mia_usage_counter", default=None)
register_configure_hook(_COUNTER, inheritable=True)


@contextmanager
def count_usage() -> Iterator[UsageCounter]:
    """Count every chat-model call made inside the block (this thread/context only)."""
    counter = UsageCounter()
    token = _COUNTER.set(counter)
    try:
        yield counter
    finally:
        _COUNTER.reset(token)


def invoke(model: Any, messages: list[BaseMessage], role: str, **kwargs: Any) -> tuple[AIMessage, dict]:
    """One model call; returns the reply and a `usage` state update for `role`."""
    with count_usage() as counter:
        reply = model.invoke(messages, **kwargs)
    if not isinstance(reply, AIMessage):
        reply = AIMessage(content=clean_text(getattr(reply, "content", reply)))
    return sanitised(reply), {role: counter.as_dict()}


def sanitised(reply: AIMessage) -> AIMessage:
    """The boundary where model text enters the graph: lone surrogates and control characters
    are cleaned once here (content and tool-call arguments), so nothing downstream (the
    trajectory log, the memory store, JSON) can fail on them."""
    content = clean_value(reply.content)
    calls = [
        {**c, "name": clean_text(c.get("name")), "args": clean_value(c.get("args") or {})} for c in reply.tool_calls
    ]
    if content == reply.content and calls == reply.tool_calls:
        return reply
    return reply.model_copy(update={"content": content, "tool_calls": calls})


def text_of(message: BaseMessage) -> str:
    """The text of a reply (content blocks joined)."""
    content = message.content
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)
