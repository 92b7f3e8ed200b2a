"""The ground-truth grader with scripted chat models: every reply kind and every fallback."""

from __future__ import annotations

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from mia.graph.judge import JudgeConfig, Verdict, judge

from .conftest import with_usage

Q = "What are the names of Barack Obama's children?"
GOLD = ["Malia and Sasha", "Malia Obama and Sasha Obama"]
# these tests are about the grader model: every answer goes to it (the matcher has tests/graph/test_matching.py)
LLM = JudgeConfig(method="llm")


def test_correct_with_usage(scripted) -> None:
    model = scripted(with_usage("A", inp=812, out=1))
    verdict = judge(model, Q, "<answer>Sasha and Malia</answer>", gold_answers=GOLD, config=LLM)
    assert isinstance(verdict, Verdict)
    assert (verdict.outcome, verdict.score, verdict.method, verdict.mode) == ("correct", 1.0, "llm", "ground_truth")
    assert verdict.grader_label == "CORRECT" and verdict.is_correct
    assert verdict.prediction == "Sasha and Malia"
    assert verdict.em == 0.0 and verdict.f1 == pytest.approx(1.0)  # same tokens, other order
    usage = verdict.usage.model_dump()
    assert usage.pop("ms") >= 0
    assert usage == {"calls": 1, "input_tokens": 812, "output_tokens": 1, "total_tokens": 813, "cached_tokens": 0}
    prompt = model.prompt_texts()[0]
    assert "Question: " + Q in prompt and "Predicted answer: Sasha and Malia" in prompt
    assert "Gold target: Malia and Sasha | Malia Obama and Sasha Obama" in prompt


def test_incorrect(scripted) -> None:
    verdict = judge(scripted("B"), Q, "Malia, Sasha and Susan", gold_answers=GOLD, config=LLM)
    assert (verdict.outcome, verdict.score, verdict.grader_label, verdict.method) == (
        "incorrect",
        0.0,
        "INCORRECT",
        "llm",
    )


def test_not_attempted_is_stored_as_incorrect(scripted) -> None:
    verdict = judge(scripted("C"), Q, "I don't know.", gold_answers=GOLD, config=LLM)
    assert verdict.grader_label == "NOT_ATTEMPTED"
    assert verdict.outcome == "incorrect" and verdict.score == 0.0


def test_fake_list_model_words() -> None:
    model = FakeListChatModel(responses=["The predicted answer is INCORRECT."])
    verdict = judge(model, Q, "Michelle", gold_answers=GOLD, config=LLM)
    assert verdict.grader_label == "INCORRECT" and verdict.method == "llm"


def test_malformed_then_fixed(scripted) -> None:
    model = scripted(with_usage("Well, Malia and Sasha are Obama's daughters.", 800, 12), with_usage("A", 830, 1))
    verdict = judge(model, Q, "Malia and Sasha", gold_answers=GOLD, config=LLM)
    assert verdict.outcome == "correct" and verdict.method == "llm"
    assert verdict.usage.calls == 2 and verdict.usage.input_tokens == 1630
    assert any("re-asked" in note for note in verdict.notes)
    second = model.prompts[1]
    assert [m.type for m in second] == ["human", "ai", "human"]  # the bad reply, then the re-ask
    assert "exactly one letter" in str(second[-1].content)


def test_malformed_hopeless_falls_back_to_cover_match(scripted) -> None:
    verdict = judge(scripted("hmm", "I cannot say"), Q, "They are Malia and Sasha.", gold_answers=GOLD, config=LLM)
    assert verdict.method == "fallback" and verdict.usage.calls == 2
    assert verdict.outcome == "correct" and verdict.cover is True and verdict.score == 1.0
    assert verdict.raw_reply == "I cannot say"
    assert "exact/cover match" in verdict.notes[-1]


def test_malformed_hopeless_wrong_answer_gets_f1_score(scripted) -> None:
    verdict = judge(
        scripted("?", "?"), "Who wrote Hamlet?", "Christopher Marlowe", gold_answers="William Shakespeare", config=LLM
    )
    assert (verdict.outcome, verdict.grader_label, verdict.method) == ("incorrect", "INCORRECT", "fallback")
    assert verdict.score == 0.0


def test_fallback_recognises_refusal(scripted) -> None:
    verdict = judge(scripted("...", "..."), Q, "I don't know, the documents do not say.", gold_answers=GOLD, config=LLM)
    assert verdict.grader_label == "NOT_ATTEMPTED" and verdict.method == "fallback"


def test_model_error_falls_back_without_reask(scripted) -> None:
    model = scripted(RuntimeError("connection reset"))
    verdict = judge(model, Q, "Malia and Sasha", gold_answers=GOLD, config=LLM)
    assert verdict.method == "fallback" and verdict.outcome == "correct" and verdict.em == 1.0
    assert verdict.usage.calls == 1 and "connection reset" in verdict.notes[0]


def test_reask_can_be_disabled(scripted) -> None:
    verdict = judge(scripted("no idea"), Q, "Susan", gold_answers=GOLD, config=JudgeConfig(method="llm", reask=False))
    assert verdict.method == "fallback" and verdict.usage.calls == 1 and verdict.outcome == "incorrect"


def test_runs_at_temperature_zero_without_touching_the_model(scripted) -> None:
    model = scripted("A")
    judge(model, Q, "Malia and Sasha", gold_answers=GOLD, config=LLM)
    assert model.temperatures == [0.0] and model.temperature == 0.7
    warm = scripted("A")
    judge(warm, Q, "Malia and Sasha", gold_answers=GOLD, config=JudgeConfig(method="llm", force_temperature_zero=False))
    assert warm.temperatures == [0.7]


def test_verdict_round_trips_as_json(scripted) -> None:
    verdict = judge(scripted("A"), Q, "Malia and Sasha", gold_answers=GOLD, config=LLM)
    again = Verdict.model_validate_json(verdict.model_dump_json())
    assert again == verdict and again.outcome == "correct"


def test_braces_in_inputs_stay_literal(scripted) -> None:
    model = scripted("B")
    judge(model, "What does {target} mean in {question}?", "{prediction}", gold_answers=['{"a": 1}'], config=LLM)
    prompt = model.prompt_texts()[0]
    assert "Question: What does {target} mean in {question}?" in prompt
    assert "Predicted answer: {prediction}" in prompt and 'Gold target: {"a": 1}' in prompt
