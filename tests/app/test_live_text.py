"""The streamed reply's text without protocol tags, whatever the token boundaries."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mia.app.commands.live_text import VisibleText

REPLY = '<think>I need the author.</think><tool_call>{"name": "search", "arguments": {"query_list": ["x"]}}</tool_call>'
ANSWER = "<think>Found it.</think>\n<answer>Shakespeare wrote it; 3 < 4.</answer>"


def shown(chunks: list[str]) -> str:
    view = VisibleText()
    return "".join(view.feed(c) for c in chunks) + view.flush()


def split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts})
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)])]


@pytest.mark.parametrize(
    ("reply", "visible"),
    [
        (REPLY, "I need the author."),
        (ANSWER, "Found it.\nShakespeare wrote it; 3 < 4."),
        ('<think>ok</think><tool_call>{"name": "search"', "ok"),  # cut at the stop sequence
        ("plain text, no tags", "plain text, no tags"),
        ('I must search first.\n{"name": "search", "arguments": {"query_list": ["x"]}}', "I must search first.\n"),
        ("a set {1, 2} is shown", "a set {1, 2} is shown"),  # braces that are not a tool call stay
    ],
)
def test_tags_are_removed_and_tool_calls_hidden(reply: str, visible: str) -> None:
    assert shown([reply]) == visible
    assert shown(list(reply)) == visible  # one character per token


@given(st.lists(st.integers(min_value=0, max_value=200), max_size=12))
def test_any_token_boundaries_give_the_same_text(cuts: list[int]) -> None:
    for reply in (REPLY, ANSWER, 'I must search first.\n{"name": "search", "arguments": {"query_list": ["x"]}}'):
        assert shown(split(reply, cuts)) == shown([reply])
