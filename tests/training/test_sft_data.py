"""Executor SFT rows (mia.training.sft_data): a right first attempt becomes the served
conversation, one row per executor turn, written in the protocol the executor is parsed with."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from mia.graph.protocol import parse
from mia.training.prompts import executor_messages, observation_message
from mia.training.sft_data import Episode, conversation_rows, episode_from_record, read_episodes, sft_rows

Q = "Where was the director of film The Duel born?"
PLAN = '1. Search "The Duel director" -> #1\n2. Search "#1 birthplace"'
CALL = {"kind": "tool_call", "content": "", "tool": "search", "args": {"query_list": ["The Duel director"]}}
OBS = {"kind": "observation", "content": "The Duel (2010) is directed by Dover Kosashvili."}


def record(steps: list[dict], correct: bool = True, plan: str = PLAN, question: str = Q) -> dict:
    return {"question": question, "plan": plan, "trajectory": steps, "judge_correct": correct, "answer": "Tbilisi"}


def episode(steps: list[dict], **kw: object) -> Episode:
    found = episode_from_record(record(steps, **kw))  # type: ignore[arg-type]
    assert found is not None
    return found


def test_a_right_attempt_is_the_served_conversation_one_row_per_turn() -> None:
    steps = [
        {"kind": "thought", "content": "Find the director first."},
        CALL,
        OBS,
        {"kind": "answer", "content": "Tbilisi"},
        {"kind": "reflection", "content": "no"},
    ]
    first, second = conversation_rows(episode(steps))
    assert first["prompt"] == executor_messages(Q, PLAN)
    turn = parse(first["completion"][0]["content"], strict=True)
    assert turn.kind == "tool_call" and turn.think == "Find the director first."
    assert turn.arguments == {"query_list": ["The Duel director"]}
    assert second["prompt"][-1] == observation_message(OBS["content"])
    assert second["prompt"][-2] == first["completion"][0]
    answer = parse(second["completion"][0]["content"], strict=True)
    assert answer.kind == "answer" and answer.answer == "Tbilisi"


@pytest.mark.parametrize(
    "steps, correct",
    [
        ([CALL, OBS, {"kind": "answer", "content": "Tbilisi"}], False),  # wrong
        (
            [
                CALL,
                OBS,
                {"kind": "answer", "content": "Paris"},
                {"kind": "replan", "content": "1. x"},
                CALL,
                OBS,
                {"kind": "answer", "content": "Tbilisi"},
            ],
            True,
        ),  # right only after a replan
        ([CALL, OBS], True),  # no answer
        ([{**CALL, "args": None}, OBS, {"kind": "answer", "content": "Tbilisi"}], True),  # unrenderable call
        ([CALL, OBS] * 4 + [{"kind": "answer", "content": "Tbilisi"}], True),  # the budget forced it
    ],
)
def test_what_is_not_a_right_first_attempt_gives_no_rows(steps: list[dict], correct: bool) -> None:
    assert conversation_rows(episode(steps, correct=correct), max_tool_calls=4) == []


def test_searches_the_graph_made_stay_in_the_prompt_but_are_never_taught() -> None:
    planned = {**CALL, "content": "planned", "args": {"query_list": [Q]}}
    rows = conversation_rows(episode([planned, OBS, {"kind": "answer", "content": "Tbilisi"}]))
    assert len(rows) == 1 and parse(rows[0]["completion"][0]["content"], strict=True).kind == "answer"
    assert parse(rows[0]["prompt"][-2]["content"], strict=True).arguments == {"query_list": [Q]}


def test_one_episode_per_question_plans_first_and_excluded_questions_never() -> None:
    done = [CALL, OBS, {"kind": "answer", "content": "Tbilisi"}]
    planless = episode(done, plan="")
    planned = episode(done)
    other = episode(done, question="Who directed The Duel?")
    rows = sft_rows([planless, planned, other], exclude_questions=["who directed  the duel?"])
    assert {r["question"] for r in rows} == {Q} and all(r["planned"] for r in rows) and len(rows) == 2
    assert sft_rows([planless], plans_only=True) == []
    assert len(sft_rows([planless], plans_only=False)) == 2


def test_memory_trajectories_and_eval_rows_are_read_alike(tmp_path: Path) -> None:
    done = [CALL, OBS, {"kind": "answer", "content": "Tbilisi"}]
    memory_line = {"question": Q, "plan": PLAN, "steps": done, "outcome": "correct", "answer": "Tbilisi"}
    unknown = {**memory_line, "outcome": "unknown"}
    with gzip.open(tmp_path / "results.jsonl.gz", "wt") as fh:
        fh.write(json.dumps(record(done)) + "\n{torn\n")
    (tmp_path / "trajectories.jsonl").write_text(json.dumps(memory_line) + "\n" + json.dumps(unknown) + "\n")
    found = read_episodes(["*.jsonl*"], root=tmp_path)
    assert [e.correct for e in found] == [True, True]  # the unknown verdict and the torn line are skipped
    with pytest.raises(FileNotFoundError, match="no episode file matches"):
        read_episodes(["missing/*.jsonl"], root=tmp_path)


def test_the_committed_tuning_episodes_give_rows_and_none_of_the_final_split() -> None:
    root = Path(__file__).resolve().parents[2]
    final = {e.question for e in read_episodes(["results/ladder/*/none/results.jsonl.gz"], root)}
    rows = sft_rows(read_episodes(["results/*-qwen-planners/mia-base/results.jsonl.gz"], root), exclude_questions=final)
    assert len({r["question"] for r in rows}) >= 20 and not {r["question"] for r in rows} & final
    assert all(parse(r["completion"][0]["content"], strict=True).kind in ("tool_call", "answer") for r in rows)


def test_search_counts_are_the_executors_own_searches_in_right_first_attempts() -> None:
    """What rejection sampling can teach: a search the graph made (a plan's first searches) is not
    the executor's; wrong episodes, later rounds and excluded questions are not counted."""
    from mia.training.sft_data import search_counts

    planned = {**CALL, "content": "planned"}
    answer = {"kind": "answer", "content": "Tbilisi"}
    hop = {**CALL, "args": {"query_list": ["Dover Kosashvili birthplace"]}}
    episodes = [
        episode([CALL, OBS, answer]),
        episode([planned, OBS, CALL, OBS, hop, OBS, answer]),
        episode([planned, OBS, answer]),
        episode([CALL, OBS, hop, OBS, answer], correct=False),
        episode(
            [CALL, OBS, {"kind": "answer", "content": "Paris"}, {"kind": "replan", "content": "1. x"}, hop, answer]
        ),
        episode([CALL, OBS, hop, OBS, answer], question="Who directed The Duel?"),
    ]
    assert search_counts(episodes) == {1: 1, 2: 2, 0: 1}
    assert search_counts(episodes, exclude_questions=["who directed the duel?"]) == {1: 1, 2: 1, 0: 1}
