"""The embedded model for real (SmolLM2-135M on CPU): generation, usage, stop sequences,
streaming, async with the per-model lock, tools and structured output."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from pydantic import BaseModel

pytestmark = pytest.mark.real_model


@tool
def search(query: str) -> str:
    """Search the encyclopedia for a query and return matching paragraphs."""
    return "no results"


class Person(BaseModel):
    name: str
    age: int


QUESTION = "What is the capital of France?"


@pytest.fixture(scope="module")
def paris(local_model) -> AIMessage:
    """One greedy answer, reused by the tests that compare against it."""
    return local_model.invoke(QUESTION)


@pytest.fixture(scope="module")
def paris_cut(local_model) -> AIMessage:
    return local_model.invoke(QUESTION, stop=[" of"])


def test_generates_with_usage(paris: AIMessage) -> None:
    msg = paris
    assert isinstance(msg, AIMessage)
    assert "Paris" in msg.content
    usage = msg.usage_metadata
    assert usage["input_tokens"] > 10 and 0 < usage["output_tokens"] <= 24
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    assert msg.response_metadata["finish_reason"] in ("stop", "length")


def test_greedy_is_deterministic_and_stop_truncates(local_model, paris, paris_cut) -> None:
    full = paris.content
    assert local_model.invoke(QUESTION).content == full
    cut = paris_cut
    assert " of" in full and " of" not in cut.content and full.startswith(cut.content)
    assert cut.response_metadata["finish_reason"] == "stop"
    short = local_model.invoke("Tell me a long story about a dragon.", max_tokens=3)
    assert short.usage_metadata["output_tokens"] == 3 and short.response_metadata["finish_reason"] == "length"


def test_sampling_parameters_are_honoured(local_model) -> None:
    msg = local_model.invoke("Name a colour.", temperature=1.0, top_p=0.9, max_tokens=5)
    assert 0 < msg.usage_metadata["output_tokens"] <= 5


def test_stream_matches_invoke_and_reports_usage(local_model, paris, paris_cut) -> None:
    chunks = list(local_model.stream(QUESTION))
    assert len(chunks) > 2
    assert "".join(c.content for c in chunks) == paris.content
    assert chunks[-1].usage_metadata == paris.usage_metadata
    stopped = "".join(c.content for c in local_model.stream(QUESTION, stop=[" of"]))
    assert stopped == paris_cut.content


async def test_async_calls_share_weights_and_take_turns(local_model) -> None:
    from mia.graph.models import load_chat_model

    other = load_chat_model("local:smollm2", max_tokens=8, device="cpu")
    assert other.backend is local_model.backend  # one copy of the weights per process
    a, b = await asyncio.gather(
        local_model.ainvoke([HumanMessage(QUESTION)]),
        other.ainvoke([HumanMessage(QUESTION)]),
    )
    assert b.content and a.content.startswith(b.content)  # greedy: same prefix, other is shorter
    assert b.usage_metadata["output_tokens"] <= 8


def test_forced_tool_call_with_real_model(local_model) -> None:
    bound = local_model.bind_tools([search], tool_choice="search")
    msg = bound.invoke("Find out who wrote the novel Dracula.")
    assert msg.invalid_tool_calls == []
    assert len(msg.tool_calls) == 1
    call = msg.tool_calls[0]
    assert call["name"] == "search" and isinstance(call["args"]["query"], str) and call["args"]["query"]
    assert msg.response_metadata["finish_reason"] == "tool_calls"
    assert msg.usage_metadata["output_tokens"] > 0


def test_auto_tool_output_is_always_parsed_safely(local_model) -> None:
    msg = local_model.bind_tools([search]).invoke("Use the search tool to find who wrote Dracula.", max_tokens=16)
    # whatever the 135M model writes, the result is a well-formed message: a call, an invalid call, or text
    assert isinstance(msg, AIMessage)
    assert msg.tool_calls or msg.invalid_tool_calls or msg.content
    for call in msg.tool_calls:
        assert call["name"] == "search" and isinstance(call["args"], dict)


def test_tool_result_round_trip(local_model) -> None:
    history = [
        HumanMessage("Who wrote Dracula?"),
        AIMessage("", tool_calls=[{"name": "search", "args": {"query": "Dracula author"}, "id": "c1"}]),
        ToolMessage("Dracula is an 1897 novel by Bram Stoker.", tool_call_id="c1"),
    ]
    msg = local_model.bind_tools([search]).invoke(history, max_tokens=8)
    assert isinstance(msg, AIMessage) and msg.usage_metadata["input_tokens"] > 50


def test_structured_output_json_mode(local_model) -> None:
    got = local_model.with_structured_output(Person).invoke("Alice is 30 years old. Extract her name and age.")
    assert got == Person(name="Alice", age=30)
    raw = local_model.with_structured_output(Person, include_raw=True).invoke("Bob is 41 years old.")
    assert set(raw) == {"raw", "parsed", "parsing_error"} and raw["raw"].usage_metadata
    assert raw["parsing_error"] is None and raw["parsed"].name == "Bob"


def test_structured_output_reports_unparseable_text(local_model) -> None:
    from langchain_core.exceptions import OutputParserException

    parse = local_model.with_structured_output(Person).steps[-1]  # the parser, fed a junk message
    with pytest.raises(OutputParserException, match="did not answer with JSON"):
        parse.invoke(AIMessage("I cannot do that."))
