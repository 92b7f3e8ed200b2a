"""The reflection section of an evaluation: replans counted against the first answer's
correctness, and what replanning did to it."""

from __future__ import annotations

from mia.app.evaluation.records import QuestionResult
from mia.app.evaluation.reflection import reflection_lines, summarise_reflection
from mia.app.evaluation.summary import render_markdown, summarise


def result(qid: str, first: str, decision: str | None, final: str, gold: str = "Paris") -> QuestionResult:
    steps = [
        {"kind": "tool_call", "tool": "search", "args": {"query_list": ["q"]}, "content": ""},
        {"kind": "answer", "content": first},
    ]
    if decision is not None:
        steps.append({"kind": "reflection", "content": decision})
        if decision == "yes":
            steps += [{"kind": "replan", "content": "1. Search again."}, {"kind": "answer", "content": final}]
    return QuestionResult(id=qid, question="Capital of France?", gold_answers=[gold], answer=final, trajectory=steps)


def test_counts_replans_by_first_answer_and_outcome() -> None:
    rows = [
        result("a", "Lyon", "yes", "Paris"),  # wrong, replanned, fixed
        result("b", "Lyon", "yes", "Marseille"),  # wrong, replanned, still wrong
        result("c", "Lyon", "no", "Lyon"),  # wrong, accepted
        result("d", "Paris", "yes", "Lyon"),  # right, replanned, broken
        result("e", "It is Paris.", "no", "It is Paris."),  # right (cover match), accepted
        result("f", "Paris", None, "Paris"),  # no reflection (none mode): not counted
    ]
    s = summarise_reflection(rows)
    assert s is not None
    assert (s.reflected, s.first_wrong, s.replanned_wrong, s.first_right, s.replanned_right, s.fixed, s.broken) == (
        5,
        3,
        2,
        2,
        1,
        1,
        1,
    )
    assert (
        "replanned 2 of 3 wrong first answers and 1 of 2 right ones; replanning fixed 1 and broke 1"
        in reflection_lines([("mia", s)])
    )


def test_runs_without_reflection_have_no_section() -> None:
    rows = [result("f", "Paris", None, "Paris")]
    assert summarise_reflection(rows) is None and reflection_lines([("none", None)]) == ""
    summary = summarise(rows, {"memory_mode": "none"})
    assert summary.reflection is None and "Reflection" not in render_markdown([summary])
    with_reflection = summarise([result("a", "Lyon", "yes", "Paris")], {"memory_mode": "mia"})
    assert "Reflection" in render_markdown([with_reflection])


def test_a_replan_that_was_not_followed_is_counted() -> None:
    row = result("g", "Paris", "yes", "Paris")
    row.trajectory[3]["args"] = {"dropped": "it repeats the plan"}
    row.trajectory.pop()  # the executor was not run again: no second answer
    s = summarise_reflection([row, result("a", "Lyon", "yes", "Paris")])
    assert s is not None and (s.replanned_right, s.replanned_wrong, s.dropped, s.broken) == (1, 1, 1, 0)
    assert "; 1 replans only repeated the plan and were not followed" in reflection_lines([("mia", s)])


def test_first_answer_is_the_one_before_the_replan() -> None:
    from mia.app.evaluation.reflection import first_answer

    assert first_answer(result("a", "Lyon", "yes", "Paris").trajectory) == "Lyon"
    assert first_answer([{"kind": "tool_call", "content": ""}]) is None
