"""Empty model output takes the path other malformed output takes (issue 42.6): no extra model call
in any role (the executor, the planner, the judge's reviewers, the memory manager's compressor), so
under load it costs what a malformed reply costs. Model calls are what a slow path would add on a
real model, and they are deterministic; the seconds are printed for the record (`-s`).

The issue measured up to 28 s for empty output under load. Not reproduced here: Hypothesis runs the
simplest example first, and for the graph suite that is every reply empty, the example that pays
the graph's imports (2.7 s on an idle 2-core machine)."""

from __future__ import annotations

import time

import pytest

from mia.graph.builder import build_graph, recursion_limit
from mia.graph.judge import judge
from mia.memory.compression import Compressor
from tests.graph.fakes import ScriptedChatModel, fake_context, make_deps
from tests.memory.conftest import make_trajectory

MALFORMED = ["<think>", "<tool_call>{broken", "no tags at all", "\x00\x1b", "```json\n{"]
EMPTY = ["", " \n\t"]


def graph_calls(reply: str) -> dict[str, int]:
    """Model calls per role for one question whose every model answers `reply`."""
    models = {f"fake:{role}": ScriptedChatModel(fallback=reply) for role in ("planner", "executor", "manager", "judge")}
    deps, _ = make_deps(models)
    context = fake_context(max_tool_calls=2)
    build_graph(deps=deps).invoke(
        {"question": "Who wrote Hamlet?", "gold_answers": ["Shakespeare"]},
        context=context,
        config={"recursion_limit": recursion_limit(context)},
    )
    calls = {spec.removeprefix("fake:"): len(model.prompts) for spec, model in models.items()}
    reviewers = ScriptedChatModel(fallback=reply)
    judge(reviewers, "Who wrote Hamlet?", "Shakespeare", trace_text="searched", mode="reviewers")
    manager = ScriptedChatModel(fallback=reply)
    Compressor(manager).compress(make_trajectory("Who wrote Hamlet?"))
    return {**calls, "reviewers": len(reviewers.prompts), "compressor": len(manager.prompts)}


def test_empty_output_takes_no_slower_path_than_other_malformed_output(capsys) -> None:
    graph_calls("warm up")  # imports and first-call costs are no reply's
    seconds: dict[str, float] = {}
    calls: dict[str, dict[str, int]] = {}
    for reply in MALFORMED + EMPTY:
        started = time.perf_counter()
        calls[reply] = graph_calls(reply)
        seconds[reply] = time.perf_counter() - started
    slowest = max(seconds, key=seconds.__getitem__)
    with capsys.disabled():
        print(
            f"\nslowest malformed-output case: {slowest!r} {seconds[slowest]:.3f} s; "
            + ", ".join(f"{reply!r} {s:.3f} s" for reply, s in seconds.items())
        )
    most = {role: max(calls[reply][role] for reply in MALFORMED) for role in calls[MALFORMED[0]]}
    for reply in EMPTY:
        more = {role: n for role, n in calls[reply].items() if n > most[role]}
        assert not more, f"{reply!r} makes more model calls than any malformed reply: {more} vs {most}"


@pytest.mark.parametrize("reply", EMPTY)
def test_empty_manager_output_is_not_shown_back_to_the_model(reply: str) -> None:
    """Repairing shows the model its own bad output; an empty one has nothing to show, so the
    extractive workflow is built at once (one model call, not two)."""
    manager = ScriptedChatModel(fallback=reply)
    result = Compressor(manager).compress(make_trajectory("Who wrote Hamlet?"))
    assert result.method == "extractive" and result.workflow and len(manager.prompts) == 1
    assert result.problems == ["empty output"]
