"""Scripted chat models for the judge's unit tests (the real model has its own test file)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult


class RecordingFake(GenericFakeChatModel):
    """GenericFakeChatModel that keeps every prompt it was sent; an Exception item is raised."""

    prompts: list[list[BaseMessage]] = []
    temperature: float = 0.7
    temperatures: list[float] = []
    delay: float = 0.0

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.prompts.append(list(messages))
        self.temperatures.append(self.temperature)
        if self.delay:
            time.sleep(self.delay)
        item = next(self.messages)
        if isinstance(item, Exception):
            raise item
        message = AIMessage(content=item) if isinstance(item, str) else item
        return ChatResult(generations=[ChatGeneration(message=message)])

    def prompt_texts(self) -> list[str]:
        return ["\n".join(str(m.content) for m in prompt) for prompt in self.prompts]


class AsyncRouter(GenericFakeChatModel):
    """Natively async fake: replies by matching the prompt, counts concurrent calls."""

    routes: dict[str, str] = {}
    in_flight: int = 0
    max_in_flight: int = 0

    def _reply(self, messages: list[BaseMessage]) -> str:
        text = str(messages[-1].content)
        for key, reply in self.routes.items():
            if key in text:
                return reply
        raise AssertionError(f"no route for prompt: {text[:200]}")

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self._reply(messages)))])

    async def _agenerate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        await asyncio.sleep(0.05)
        self.in_flight -= 1
        return self._generate(messages)


def with_usage(text: str, inp: int = 100, out: int = 3) -> AIMessage:
    return AIMessage(
        content=text, usage_metadata={"input_tokens": inp, "output_tokens": out, "total_tokens": inp + out}
    )


@pytest.fixture
def scripted():
    """scripted(*replies, **fields) -> a RecordingFake that answers with the replies in order."""

    def make(*replies: Any, **fields: Any) -> RecordingFake:
        return RecordingFake(messages=iter(replies), prompts=[], temperatures=[], **fields)

    return make
