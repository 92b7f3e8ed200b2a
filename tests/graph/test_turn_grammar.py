"""The executor's turn grammar (`graph.protocol.grammar`): its choices and refusals. That real
decoding under it parses as the turn it allows is tested on llama.cpp in tests/models."""

from __future__ import annotations

import pytest

from mia.graph.protocol.grammar import turn_grammar


def rule(grammar: str, name: str) -> str:
    return next(line for line in grammar.splitlines() if line.startswith(f"{name} ::="))


def test_actions_follow_the_flags() -> None:
    both = turn_grammar(["search", "calculator"])
    assert rule(both, "action") == "action ::= call | answer"
    assert rule(both, "tool") == 'tool ::= "\\"search\\"" | "\\"calculator\\""'
    assert rule(turn_grammar(["search"], answer=False), "action") == "action ::= call"
    only_answer = turn_grammar([], call=False)
    assert rule(only_answer, "action") == "action ::= answer" and "tool ::=" not in only_answer


def test_a_turn_without_thought_is_its_action_alone() -> None:
    forced = turn_grammar(["search"], call=False, think=False)  # the forced last answer, prefilled when served
    assert rule(forced, "root") == "root ::= action" and "think ::=" not in forced
    assert rule(turn_grammar(["search"]), "root") == "root ::= ( think ws )? action"


def test_tool_names_are_escaped_as_json_strings() -> None:
    g = turn_grammar(['we"ird\\name'])
    assert rule(g, "tool") == 'tool ::= "\\"we\\\\\\"ird\\\\\\\\name\\""'


def test_impossible_turns_are_refused() -> None:
    with pytest.raises(ValueError, match="tool name"):
        turn_grammar([], answer=False)
    with pytest.raises(ValueError, match="must allow"):
        turn_grammar(["search"], call=False, answer=False)
