"""Running the judge's model calls, sync or async, from one description of the conversation.

The grader and the reviewers are written as generators that yield batches of prompts and receive
the replies ("sans-IO"). The sync driver answers them one by one; the async driver answers a batch
concurrently (the three reviewers run in parallel on API models). Either way the logic exists once.
A failing call becomes a `Reply` with an error, never an exception: the judge must always return
a Verdict, since the graph stores whatever comes back.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage

from mia.graph.protocol import clean_text

from .verdict import Usage

T = TypeVar("T")


@dataclass(frozen=True)
class Reply:
    """One model reply as text, or the error that replaced it."""

    text: str | None
    error: str | None = None


Conversation = list[BaseMessage]
Steps = Generator[list[Conversation], list[Reply], T]


def message_text(message: Any) -> str:
    """The plain text of an AIMessage (content blocks are joined; `.text` is a property in 1.x)."""
    text = getattr(message, "text", None)
    if isinstance(text, str):  # a str subclass in langchain-core 1.x (calling it is deprecated)
        return str(text)
    if callable(text):  # langchain-core 0.3 style method
        text = text()
        if isinstance(text, str):
            return text
    content = getattr(message, "content", message)
    return content if isinstance(content, str) else str(content)


def _to_reply(message: Any, usage: Usage, started: float) -> Reply:
    usage.add(getattr(message, "usage_metadata", None), ms=(time.perf_counter() - started) * 1000)
    return Reply(text=clean_text(message_text(message)))  # the judge model's text enters here


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]


def invoke(model: BaseChatModel, conversation: Conversation, usage: Usage) -> Reply:
    """Call the model once; an exception becomes an error reply (and still counts as a call)."""
    started = time.perf_counter()
    try:
        return _to_reply(model.invoke(conversation), usage, started)
    except Exception as exc:  # any backend failure: network, quota, context length, parse
        usage.calls += 1
        return Reply(text=None, error=_error(exc))


async def ainvoke(model: BaseChatModel, conversation: Conversation, usage: Usage) -> Reply:
    """Async twin of `invoke`."""
    started = time.perf_counter()
    try:
        return _to_reply(await model.ainvoke(conversation), usage, started)
    except Exception as exc:
        usage.calls += 1
        return Reply(text=None, error=_error(exc))


def run_sync(model: BaseChatModel, steps: Steps[T], usage: Usage) -> T:
    """Drive a judging generator with blocking calls, one after another."""
    try:
        batch = next(steps)
        while True:
            batch = steps.send([invoke(model, conversation, usage) for conversation in batch])
    except StopIteration as done:
        return done.value


async def run_async(model: BaseChatModel, steps: Steps[T], usage: Usage) -> T:
    """Drive a judging generator with concurrent async calls per batch."""
    try:
        batch = next(steps)
        while True:
            replies = await asyncio.gather(*(ainvoke(model, conversation, usage) for conversation in batch))
            batch = steps.send(list(replies))
    except StopIteration as done:
        return done.value


def has_native_async(model: Any) -> bool:
    """True when the model implements its own async generation (else ainvoke would use a thread)."""
    own = getattr(type(model), "_agenerate", None)
    return own is not None and own is not BaseChatModel._agenerate


def at_temperature_zero(model: BaseChatModel) -> BaseChatModel:
    """A copy of the model sampling at temperature 0, when it has a temperature field.

    The copy is shallow, so loaded weights and API clients are shared. Models without such a field
    (fakes, custom runnables) are returned unchanged: the caller then owns the temperature.
    """
    fields = getattr(type(model), "model_fields", {})
    if "temperature" not in fields or getattr(model, "temperature", None) in (0, 0.0):
        return model
    try:
        return model.model_copy(update={"temperature": 0.0})
    except Exception:  # an exotic model that refuses copying: judge with it as it is
        return model


def continue_with(conversation: Sequence[BaseMessage], reply: Reply, follow_up: BaseMessage) -> Conversation:
    """The conversation extended by the model's reply and a corrective user turn (a re-ask)."""
    return [*conversation, AIMessage(content=reply.text or ""), follow_up]


__all__ = [
    "Reply",
    "Conversation",
    "Steps",
    "message_text",
    "invoke",
    "ainvoke",
    "run_sync",
    "run_async",
    "has_native_async",
    "at_temperature_zero",
    "continue_with",
]
