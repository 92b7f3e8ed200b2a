"""The text tool protocol on crafted strings: good calls, junk around them, broken JSON, unknown
tools, and the rendering of a conversation into chat-template turns."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from mia.graph.protocol import JSONRepairError, parse_json_loose
from mia.graph.models.tool_protocol import (
    object_prefill,
    parse_tool_output,
    prefill_for,
    to_chat_dicts,
    tools_system_prompt,
)

NAMES = ["search", "calculator"]
SEARCH = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    },
}


@pytest.mark.parametrize(
    ("text", "content", "args"),
    [
        ('<tool_call>\n{"name": "search", "arguments": {"query": "Paris"}}\n</tool_call>', "", {"query": "Paris"}),
        (
            'I will look it up.\n<tool_call>{"name": "search", "arguments": {"query": "Paris"}}</tool_call> extra',
            "I will look it up.",
            {"query": "Paris"},
        ),
        # no closing tag (generation stopped at the stop sequence), trailing comma, single quotes
        ("<tool_call>\n{'name': 'search', 'arguments': {'query': 'Paris',},}", "", {"query": "Paris"}),
        # arguments as a JSON string, OpenAI style
        (
            '<tool_call>{"name": "search", "arguments": "{\\"query\\": \\"Paris\\"}"}</tool_call>',
            "",
            {"query": "Paris"},
        ),
        # truncated mid-object
        ('<tool_call>{"name": "search", "arguments": {"query": "Par', "", {"query": "Par"}),
        # "parameters" instead of "arguments"; a second call is ignored
        (
            '<tool_call>{"name": "search", "parameters": {"query": "a"}}</tool_call><tool_call>{"name": "calculator"}</tool_call>',
            "",
            {"query": "a"},
        ),
        # bare JSON naming a known tool, in a code fence
        ('```json\n{"name": "search", "arguments": {"query": "Paris"}}\n```', "", {"query": "Paris"}),
    ],
)
def test_parses_first_call(text: str, content: str, args: dict) -> None:
    got_content, calls, invalid = parse_tool_output(text, NAMES)
    assert invalid == []
    assert got_content == content
    assert [(c["name"], c["args"]) for c in calls] == [("search", args)]
    assert calls[0]["id"].startswith("call_")


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("<tool_call>not json at all</tool_call>", "no JSON object"),
        ('<tool_call>{"name": "delete_everything", "arguments": {}}</tool_call>', "unknown tool"),
        ('<tool_call>{"arguments": {"query": "x"}}</tool_call>', "no 'name'"),
        ('<tool_call>{"name": "search", "arguments": [1, 2]}</tool_call>', "must be an object"),
    ],
)
def test_junk_becomes_invalid_tool_call(text: str, error: str) -> None:
    _content, calls, invalid = parse_tool_output(text, NAMES)
    assert calls == []
    assert len(invalid) == 1 and error in invalid[0]["error"]


def test_plain_text_is_left_alone() -> None:
    text = "Paris is the capital of France. {not a call}"
    assert parse_tool_output(text, NAMES) == (text, [], [])
    # JSON that does not name a known tool stays text too
    assert parse_tool_output('{"answer": 3}', NAMES) == ('{"answer": 3}', [], [])


def test_chat_rendering_merges_turns_and_wraps_tool_results() -> None:
    history = [
        SystemMessage("Be brief."),
        HumanMessage("Population of Paris?"),
        AIMessage("Let me search.", tool_calls=[{"name": "search", "args": {"query": "Paris"}, "id": "c1"}]),
        ToolMessage("2.1 million", tool_call_id="c1"),
        HumanMessage("And so?"),
    ]
    chat = to_chat_dicts(history, tools_system_prompt([SEARCH]))
    assert [m["role"] for m in chat] == ["system", "user", "assistant", "user"]
    assert chat[0]["content"].startswith("Be brief.") and "<tools>" in chat[0]["content"]
    assert '"name": "search"' in chat[0]["content"]
    assert '<tool_call>\n{"name": "search", "arguments": {"query": "Paris"}}\n</tool_call>' in chat[2]["content"]
    assert "<tool_response>\n2.1 million\n</tool_response>" in chat[3]["content"] and "And so?" in chat[3]["content"]


def test_forced_choice_prefills_the_call() -> None:
    assert prefill_for("search", [SEARCH]) == '<tool_call>\n{"name": "search", "arguments": {"query": "'
    assert prefill_for("auto", [SEARCH]) == ""
    assert "You must call the function search" in tools_system_prompt([SEARCH], "search")
    assert object_prefill({"properties": {"n": {"type": "integer"}}}) == '{"n": '


def test_json_repair() -> None:
    assert parse_json_loose('Sure! ```json\n{"a": 1, "b": [true, null],}\n``` done') == {"a": 1, "b": [True, None]}
    assert parse_json_loose("{'a': 'b', 'c': True, 'd': None}") == {"a": "b", "c": True, "d": None}
    assert parse_json_loose('{"a": {"b": "x') == {"a": {"b": "x"}}
    with pytest.raises(JSONRepairError):
        parse_json_loose("no braces here")
