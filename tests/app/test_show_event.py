"""`mia ask` says why the judge decided (issue 38): the deciding line, not a bare score."""

from __future__ import annotations

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from rich.console import Console

from mia.app.commands.agent import show_event
from mia.graph.judge import judge
from mia.graph.judge.verdict import verdict_to_channel


def printed(verdict: object) -> str:
    console = Console(record=True, width=400)
    show_event(console, "judge", {"judgement": verdict_to_channel(verdict)})
    return console.export_text()


def test_the_judge_line_names_the_failure_the_trace_shows() -> None:
    failure = 'no search result supports its answer "[Paris]"'  # brackets must not be read as markup
    no_calls = FakeListChatModel(responses=[])  # the trace check decides before any reviewer call
    verdict = judge(no_calls, "Where is the Louvre?", "Paris", mode="reviewers", trace_failure=failure)
    assert printed(verdict).strip() == f"judge incorrect (score 0.00): the trace shows a failure: {failure}"


def test_the_judge_line_says_how_gold_decided() -> None:
    verdict = judge(None, "Where is the Louvre?", "Paris", gold_answers=["Paris"])  # no model: the metrics
    assert printed(verdict).startswith("judge correct (score 1.00): Graded CORRECT by matching the gold answer(s)")
