"""A Context checks its values when it is made: a bad choice, a negative budget, a value that is not
a number or a model spec that is not `<backend>:<model>` is one ValueError naming the field; a dict's
unknown keys are ignored with a warning that suggests the field meant."""

from __future__ import annotations

import logging

import pytest

from mia.graph.context import Context


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"memory_mode": "bogus"}, "memory_mode must be one of mia, none, trajectory-rag, not 'bogus'"),
        ({"judge_mode": "maybe"}, "judge_mode must be one of"),
        ({"plan_style": "free"}, "plan_style must be one of hops, paper"),
        ({"max_tool_calls": -5}, "max_tool_calls must be at least 0, not -5"),
        ({"search_top_k": 0}, "search_top_k must be at least 1"),
        ({"executor_max_tokens": 0}, "executor_max_tokens must be at least 1"),
        ({"planner_temperature": -0.1}, "planner_temperature must be at least 0"),
        ({"k_pos": "two"}, "k_pos must be a number, not 'two'"),
        ({"max_replans": True}, "max_replans must be a number"),
        ({"planner_model": "not a spec"}, "planner_model 'not a spec' is not a model spec"),
        ({"judge_model": ":judge"}, "judge_model ':judge' is not a model spec"),
        ({"caption_weight": 1.5}, "caption_weight must be between 0 and 1, not 1.5"),
        ({"min_similarity": -2}, "min_similarity must be between -1 and 1, not -2"),
        ({"judge_threshold": 11}, "judge_threshold must be between 1 and 10, not 11"),
        ({"judge_incorrect_below": 0}, "judge_incorrect_below must be between 1 and 10, not 0"),
        ({"judge_incorrect_below": 7}, "judge settings: incorrect_below (7) must not exceed the threshold (6)"),
    ],
)
def test_a_bad_value_is_one_error_naming_its_field(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(")", r"\)")) as info:
        Context(**kwargs)
    assert "\n" not in str(info.value)


def test_good_values_and_any_backend_name_pass() -> None:
    ctx = Context(
        planner_model="fake:planner",
        manager_model="extractive",
        max_tool_calls=0,
        min_similarity=None,
        executor_model="openai-compatible:Qwen/Qwen2.5-7B@http://host:8000/v1",
        judge_model="hf:/my models/x",
    )
    assert ctx.max_tool_calls == 0 and ctx.manager_model == "extractive"


def test_unknown_dict_keys_are_ignored_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="mia.graph.context"):
        ctx = Context.coerce({"max_tool_call": 3, "memory_mode": "none"})
    assert ctx.memory_mode == "none" and ctx.max_tool_calls == Context().max_tool_calls
    assert "max_tool_call (did you mean max_tool_calls?)" in caplog.text
