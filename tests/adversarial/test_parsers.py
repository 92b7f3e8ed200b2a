"""Generated hostile model output through every parser of model output, and through the graph
with a scripted model (issue 16, fault 1): no uncaught exception, and time linear in the input
(each parser first cuts its input to a length bound, so time is bounded too).

Hypothesis builds texts from protocol fragments (tags in odd spellings, JSON punctuation, doubled
template braces, deep nesting, lone surrogates, control characters) mixed with free text. The
deadline per example is generous; the linear-time check compares 1x and 8x inputs instead of
asserting wall-clock thresholds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mia.graph import protocol
from mia.graph.judge import parsing as judge_parsing
from mia.graph.judge.metrics import extract_answer as judge_extract_answer
from mia.graph.models.tool_protocol import parse_tool_output
from mia.graph.protocol.tags import tags
from mia.training import rewards

SETTINGS = settings(
    max_examples=150,
    deadline=timedelta(seconds=10),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

FRAGMENTS = [
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<answer>",
    "</answer>",
    "<tool_response>",
    "</tool_response>",
    "< THINK >",
    "</ answer>",
    "<Tool_Call>",
    "{",
    "}",
    "[",
    "]",
    "{{",
    "}}",
    '"',
    "'",
    ":",
    ",",
    "\\",
    '"name"',
    '"search"',
    '"arguments"',
    '"query_list"',
    "query_list:",
    "True",
    "None",
    "null",
    "```json\n",
    "```",
    "Answer:",
    "Final answer:",
    "yes",
    "no",
    "A",
    "B",
    "C",
    "CORRECT",
    "score: 7",
    "8/10",
    '{"score": 11, "reason": "x"}',
    "\ud800",
    "\udfff",
    "\x00",
    "\x1b",
    "\u2028",
    "\ufeff",
    "\n",
    " ",
    '{"name": "search", "arguments": {"query_list": ["x"]}}',
    '{{"name": "search", "arguments": {{"query_list": ["x"]}}}}',
]
hostile = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=20)), max_size=60).map("".join)
nested = st.builds(
    lambda opener, n, tail: opener * n + tail,
    st.sampled_from(["{", "[", '{"a":', "[{", "{{"]),
    st.integers(0, 3000),
    st.sampled_from(["", "1", "}", '"x"']),
)
texts = st.one_of(hostile, nested)


def _strict(text: str) -> Any:
    return protocol.parse(text, strict=True)


def _json_values(text: str) -> Any:
    return list(protocol.json_values(text, want=None))


def _lenient_json(text: str) -> Any:
    try:
        return protocol.lenient_json(text)
    except protocol.JSONRepairError:  # its typed failure
        return None


PARSERS: dict[str, Callable[[str], Any]] = {
    "parse": protocol.parse,
    "parse_strict": _strict,
    "parse_calls": protocol.parse_calls,
    "parse_calls_lenient": lambda t: protocol.parse_calls(t, strict=False),
    "extract_final_answer": protocol.extract_final_answer,
    "final_answer": protocol.final_answer,
    "last_answer": protocol.last_answer,
    "parse_yes_no": protocol.parse_yes_no,
    "cut_before_answer": protocol.cut_before_answer,
    "strip_think": protocol.strip_think,
    "json_values": _json_values,
    "lenient_json": _lenient_json,
    "parse_tool_output": lambda t: parse_tool_output(t, ["search"]),
    "judge.parse_grade": judge_parsing.parse_grade,
    "judge.parse_arbiter": judge_parsing.parse_arbiter,
    "judge.parse_review": judge_parsing.parse_review,
    "judge.extract_answer": judge_extract_answer,
    "rewards.executor_format_ok": lambda t: rewards.executor_format_ok([t]),
    "rewards.plan_format_ok": lambda t: rewards.plan_format_ok(t, decision=t, replan=t),
    "rewards.tool_use_score": lambda t: rewards.tool_use_score([[t]]),
}


@pytest.mark.parametrize("name", sorted(PARSERS))
@SETTINGS
@given(text=texts)
def test_every_parser_is_total(name: str, text: str) -> None:
    PARSERS[name](text)  # any exception fails the test; the deadline bounds the time


@SETTINGS
@given(text=texts)
def test_parse_returns_a_well_typed_turn(text: str) -> None:
    for strict in (False, True):
        turn = protocol.parse(text, strict=strict)
        assert turn.kind in ("tool_call", "answer", "malformed")
        assert (turn.kind == "malformed") == bool(turn.error) or strict
        if turn.kind == "tool_call":
            assert isinstance(turn.tool, str) and isinstance(turn.arguments, dict)
        for field in (turn.answer, turn.content, turn.think):
            field.encode("utf-8")  # sanitised: no lone surrogate survives


# --------------------------------------------------------------------------- linear time

PATTERNS = {
    "open braces": "{",
    "open brackets": "[",
    "keyed objects": '{"a":',
    "think tags": "<think>",
    "answer tags": "<answer>",
    "unclosed calls": "<tool_call>{",
    "quotes": '"',
    "grade keys": "grade ",
    "score keys": "score ",
    "blank lines": "\n",
}


def _seconds(fn: Callable[[str], Any], text: str) -> float:
    """CPU seconds of the thread (not wall-clock: the machine is shared), best of three, with
    the tag cache cleared so each run does the whole work."""
    best = float("inf")
    for _ in range(3):
        tags.cache_clear()
        start = time.thread_time()
        fn(text)
        best = min(best, time.thread_time() - start)
    return best


@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_parsers_are_linear_in_the_input(pattern: str) -> None:
    """8x the input must cost well under 64x (what a quadratic parser needs); 24x is generous for
    a linear one on a loaded machine. Inputs reach past the length bound, where time stops growing."""
    unit = PATTERNS[pattern]
    small, large = unit * (3000 // len(unit)), unit * (24000 // len(unit))
    for name, fn in PARSERS.items():
        fn(small)  # warm up
        t_small, t_large = _seconds(fn, small), _seconds(fn, large)
        assert t_large <= 24 * t_small + 0.05, f"{name} on {pattern!r}: {t_small:.4f}s -> {t_large:.4f}s"


def test_the_length_bound_caps_the_work() -> None:
    huge = "<answer>" * (4 * protocol.MAX_TEXT_CHARS // 8)
    bound = "<answer>" * (protocol.MAX_TEXT_CHARS // 8)
    for name in ("parse", "final_answer", "judge.parse_grade"):
        fn = PARSERS[name]
        fn(bound)
        assert _seconds(fn, huge) <= 3 * _seconds(fn, bound) + 0.05, name


# --------------------------------------------------------------------------- regressions (issue 16.1, 12.8)

DOUBLED = '<tool_call>{{"name": "search", "arguments": {{"query_list": ["x"]}}}}</tool_call>'


def test_doubled_template_braces_are_a_call_not_a_crash() -> None:
    turn = protocol.parse_turn(DOUBLED)
    assert (turn.kind, turn.tool, turn.arguments) == ("tool_call", "search", {"query_list": ["x"]})
    _content, calls, invalid = parse_tool_output(DOUBLED, ["search"])
    assert [(c["name"], c["args"]) for c in calls] == [("search", {"query_list": ["x"]})] and invalid == []
    assert protocol.extract_final_answer(DOUBLED) == ""  # a call, not an answer


@pytest.mark.parametrize("text", ["[" * 100000, "{" * 100000, '{"a":' * 50000, "<tool_call>" + "[" * 100000])
def test_deep_nesting_is_a_typed_failure(text: str) -> None:
    with pytest.raises(protocol.JSONRepairError):
        protocol.parse_json_loose(text, want=None)
    assert protocol.parse_turn(text).kind in ("answer", "malformed")
    assert protocol.parse(text, strict=True).kind == "malformed"
    assert judge_parsing.parse_review(text) is None
    assert parse_tool_output(text, ["search"])[1] == []


def test_reviewers_judge_survives_a_deeply_nested_reply() -> None:
    from mia.graph.judge import judge

    from tests.graph.fakes import ScriptedChatModel

    model = ScriptedChatModel(script=[], fallback="[" * 100000)
    verdict = judge(model, "Who wrote Hamlet?", "Shakespeare", trace_text="searched", mode="reviewers")
    assert verdict.outcome in ("correct", "incorrect", "not_attempted", "unknown")


def test_many_braces_parse_quickly() -> None:
    """`parse_turn("{" * 20000)` took 190 s: the repairer rescanned from every `{`."""
    assert _seconds(protocol.parse_turn, "{" * 20000) <= 24 * _seconds(protocol.parse_turn, "{" * 2500) + 0.05


def test_adjacent_string_literals_stay_separate_queries() -> None:
    """ast.literal_eval joined ["a" "b"] into one query "ab"."""
    assert protocol.lenient_json('{"query_list": ["a" "b"]}') == {"query_list": ["a", "b"]}
    turn = protocol.parse_turn('<tool_call>{"name": "search", "arguments": {"query_list": ["a" "b"]}}</tool_call>')
    assert turn.arguments == {"query_list": ["a", "b"]}


def test_lone_surrogates_are_replaced_at_the_boundary() -> None:
    turn = protocol.parse_turn("<answer>Paris \ud800</answer>")
    assert turn.answer == "Paris \ufffd"
    assert protocol.clean_text("a\ud83d\ude00b\x00") == "a\U0001f600b"  # a valid pair is joined, NUL dropped


# --------------------------------------------------------------------------- through the graph


@settings(
    max_examples=25,
    deadline=timedelta(seconds=30),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@given(replies=st.lists(texts, min_size=1, max_size=4), planner=texts)
def test_the_graph_survives_hostile_model_output(replies: list[str], planner: str) -> None:
    from mia.graph.builder import build_graph, recursion_limit

    from tests.graph.fakes import ScriptedChatModel, fake_context, make_deps

    models = {
        "fake:planner": ScriptedChatModel(script=[planner, planner], fallback=planner),
        "fake:executor": ScriptedChatModel(script=list(replies), fallback=replies[-1]),
        "fake:manager": ScriptedChatModel(script=[], fallback=planner),
        "fake:judge": ScriptedChatModel(script=[], fallback=replies[0]),
    }
    deps, _seen = make_deps(models)
    context = fake_context(
        min_tool_calls=0,
        max_tool_calls=2,
        max_format_retries=1,
    )
    out = build_graph(deps=deps).invoke(
        {"question": "Who wrote Hamlet?", "gold_answers": ["Shakespeare"]},
        context=context,
        config={"recursion_limit": recursion_limit(context)},
    )
    assert isinstance(out["answer"], str)
    out["answer"].encode("utf-8")


@settings(
    max_examples=30,
    deadline=timedelta(seconds=30),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(reply=texts, mode=st.sampled_from(["ground_truth", "reviewers"]))
def test_the_judge_never_raises_on_hostile_replies(reply: str, mode: str) -> None:
    from mia.graph.judge import judge

    from tests.graph.fakes import ScriptedChatModel

    model = ScriptedChatModel(script=[], fallback=reply)
    verdict = judge(
        model,
        "Who wrote Hamlet?",
        reply,
        trace_text=reply,
        gold_answers=["Shakespeare"] if mode == "ground_truth" else None,
        mode=mode,
    )
    assert verdict.outcome in ("correct", "incorrect", "unknown")
    verdict.model_dump_json()  # serialisable: nothing un-encodable got through
