"""A result line or an online episode with text that cannot be encoded (a lone surrogate from a
dataset or a model, a NUL) is cleaned, never lost (issue 42.6): before, append_result raised
PydanticSerializationError and the question's line was not written."""

from __future__ import annotations

import json

from mia.app.evaluation import runlog
from mia.app.evaluation.records import QuestionResult
from mia.training.online.episodes import EpisodeQueue, OnlineEpisode


def test_a_result_with_a_lone_surrogate_is_logged_cleaned(tmp_path) -> None:
    result = QuestionResult(
        id="q1",
        question="Who wrote \ud800 it?\x00",
        gold_answers=["Ann\udc00"],
        answer="bad \ud800 text",
        trajectory=[{"kind": "observation", "content": "half \ud83d", "args": {"\udfff": "\x07x"}}],
    )
    runlog.append_result(tmp_path, result)
    result.warnings.append("set later \ud800")  # no validation on assignment: append_result cleans it
    runlog.append_result(tmp_path, result)
    first, second = runlog.read_results(tmp_path)
    assert first.question == "Who wrote \ufffd it?" and first.gold_answers == ["Ann\ufffd"]
    assert first.answer == "bad \ufffd text" and first.trajectory[0]["args"] == {"\ufffd": "x"}
    assert second.warnings == ["set later \ufffd"]
    plain = QuestionResult(id="q2", question="Who wrote Hamlet?\tTab", gold_answers=["Shakespeare"])
    assert json.loads(plain.model_dump_json())["question"] == "Who wrote Hamlet?\tTab"  # untouched


def test_an_online_episode_with_a_lone_surrogate_is_queued(tmp_path) -> None:
    queue = EpisodeQueue(tmp_path)
    queue.append(OnlineEpisode(question="Who \ud800?", answer="x\x00y", paragraphs=[{"title": "\udc00", "text": "t"}]))
    (episode,) = queue.read_all()
    assert (episode.question, episode.answer, episode.paragraphs[0]["title"]) == ("Who \ufffd?", "xy", "\ufffd")
