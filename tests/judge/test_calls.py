"""The model-call helpers: text extraction, temperature copies, async detection, error replies."""

from __future__ import annotations

from langchain_core.language_models.fake_chat_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage

from mia.graph.judge.calls import at_temperature_zero, has_native_async, invoke, message_text
from mia.graph.judge.verdict import Usage

from .conftest import AsyncRouter


def test_message_text_joins_content_blocks() -> None:
    message = AIMessage(content=[{"type": "text", "text": "A"}, {"type": "text", "text": "!"}])
    assert message_text(message) == "A!" and message_text(AIMessage(content="B")) == "B"


def test_at_temperature_zero_copies_only_when_needed(scripted) -> None:
    hot = scripted("x")
    cold = at_temperature_zero(hot)
    assert cold is not hot and cold.temperature == 0.0 and hot.temperature == 0.7
    assert at_temperature_zero(cold) is cold
    fake = FakeListChatModel(responses=["x"])  # no temperature field: returned as is
    assert at_temperature_zero(fake) is fake


def test_has_native_async() -> None:
    assert has_native_async(AsyncRouter(messages=iter([])))
    assert not has_native_async(GenericFakeChatModel(messages=iter([])))


def test_invoke_turns_errors_into_replies(scripted) -> None:
    usage = Usage()
    reply = invoke(scripted(ValueError("context too long")), [HumanMessage(content="hi")], usage)
    assert reply.text is None and reply.error == "ValueError: context too long" and usage.calls == 1
    empty = invoke(scripted(), [HumanMessage(content="hi")], usage)  # exhausted fake: StopIteration
    assert empty.error is not None and usage.calls == 2
