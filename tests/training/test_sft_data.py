"""Executor SFT rows (mia.training.sft_data): a right first attempt becomes the served
conversation, one row per executor turn, written in the protocol the executor is parsed with."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from mia.graph.protocol import parse
from mia.memory import cut_for_log
from mia.training.prompts import executor_messages, observation_message, replan_message
from mia.training.sft_data import (
    Episode,
    conversation_rows,
    episode_from_record,
    read_episodes,
    served_turns,
    sft_rows,
)

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


def test_a_result_the_log_cut_is_restored_from_the_runs_trajectory_log_or_gives_no_row(tmp_path: Path) -> None:
    """The served prompt holds the whole search result: a row the evaluation log cut takes its steps
    from the run's own trajectory log (same question, same kinds of step), or is not taught."""
    whole = {"kind": "observation", "content": "The Duel (2010) is directed by Dover Kosashvili. " * 60}
    cut = {**whole, "content": cut_for_log(whole["content"], 2000)}
    answer = {"kind": "answer", "content": "Tbilisi"}
    run = tmp_path / "run"
    (run / "store" / "memory").mkdir(parents=True)
    with gzip.open(run / "results.jsonl.gz", "wt") as fh:
        fh.write(json.dumps({**record([CALL, cut, answer]), "memory_id": "an-old-record-id"}) + "\n")
    assert conversation_rows(read_episodes(["run/results.jsonl.gz"], root=tmp_path)[0]) == []  # no log yet

    other = {"question": Q, "id": "t2", "steps": [CALL, whole, CALL, whole, answer], "outcome": "correct"}
    same = {"question": Q, "id": "t1", "steps": [CALL, whole, answer], "outcome": "correct"}
    log = run / "store" / "memory" / "trajectories.jsonl"
    log.write_text(json.dumps(other) + "\n")  # the same question, another episode: not restored
    assert conversation_rows(read_episodes(["run/results.jsonl.gz"], root=tmp_path)[0]) == []
    log.write_text(json.dumps(other) + "\n" + json.dumps(same) + "\n")
    (episode,) = read_episodes(["run/results.jsonl.gz"], root=tmp_path)
    first, second = conversation_rows(episode)
    assert second["prompt"][-1] == observation_message(whole["content"])


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


# ---- later attempts (`attempts="final"`): the conversation the graph served after a late plan


def _served(model: object) -> list[list[dict[str, str]]]:
    """The fake executor's prompts as role/content messages (what the SFT rows must equal)."""
    roles = {"system": "system", "human": "user", "ai": "assistant"}
    return [[{"role": roles[m.type], "content": str(m.content)} for m in prompt] for prompt in model.prompts]  # type: ignore[attr-defined]


def test_a_late_plans_second_attempt_is_rebuilt_as_the_graph_served_it() -> None:
    """The graph's defaults (plan_when "failure"): the executor answers alone, the answer names the
    bridge entity, the rule shows the failure, the planner writes the first plan, the executor
    goes on and answers right. Each rebuilt turn's conversation is the one the executor was sent
    (the system prompt's tool listing aside: training lists the sandbox search), and `final` teaches
    the second attempt's two turns, `first` nothing (the first answer was changed)."""
    from mia.graph.builder import build_graph, recursion_limit
    from tests.graph.fakes import ScriptedChatModel, fake_context, make_deps, search_tool

    question = "Where was the director of film The Duel born?"
    plan = '1. Search "Dover Kosashvili place of birth" -> #1\n2. Answer with #1.'
    call = '<think>\nI need facts\n</think>\n<tool_call>\n{{"name": "search", "arguments": {{"query_list": ["{q}"]}}}}\n</tool_call>'
    models = {
        "fake:planner": ScriptedChatModel(script=[plan]),
        "fake:executor": ScriptedChatModel(
            script=[
                call.format(q=question),
                "<answer>Dover Kosashvili</answer>",
                call.format(q="Dover Kosashvili place of birth"),
                "<think>\nFound it.\n</think>\n<answer>Tbilisi</answer>",
            ]
        ),
        "fake:manager": ScriptedChatModel(script=[]),
        "fake:judge": ScriptedChatModel(script=[], fallback="A"),
    }
    tools = [
        search_tool(
            {
                question: "The Duel (2010), directed by Dover Kosashvili.",
                "Dover Kosashvili place of birth": "Dover Kosashvili was born in Tbilisi.",
            }
        )
    ]
    deps, _ = make_deps(models, tools=tools)
    context = fake_context(plan_when="failure")
    out = build_graph(deps=deps).invoke(
        {"question": question}, context=context, config={"recursion_limit": recursion_limit(context)}
    )
    assert out["answer"] == "Tbilisi" and out["plan"] == plan
    ep = episode(list(out["trajectory"]["steps"]), plan=out["plan"], question=question)

    turns = served_turns(ep)
    sent = _served(models["fake:executor"])
    assert turns is not None and len(turns) == len(sent) == 4
    for turn, prompt in zip(turns, sent, strict=True):
        assert turn.prompt[1:] == prompt[1:]  # the question, the turns, the results, what was handed
        assert turn.prompt[0]["role"] == prompt[0]["role"] == "system"
    assert [t.attempt for t in turns] == [0, 0, 1, 1]
    assert "not accepted yet" in turns[2].prompt[-1]["content"] and plan in turns[2].prompt[-1]["content"]

    rows = conversation_rows(ep, max_tool_calls=4, attempts="final")
    assert [r["prompt"] for r in rows] == [t.prompt for t in turns[2:]]
    assert parse(rows[-1]["completion"][0]["content"], strict=True).answer == "Tbilisi"
    assert conversation_rows(ep, max_tool_calls=4, attempts="first") == []


ANSWER = {"kind": "answer", "content": "Tbilisi"}
WRONG = {"kind": "answer", "content": "Dover Kosashvili"}
HOP = {**CALL, "args": {"query_list": ["Dover Kosashvili birthplace"]}}
HOP_OBS = {"kind": "observation", "content": "Dover Kosashvili was born in Tbilisi."}


def _reflection(failure: str, **args: object) -> dict:
    return {"kind": "reflection", "content": "yes", "args": {"failure": failure, **args}}


def test_a_settled_correction_hands_the_facts_and_an_evidence_round_drops_the_answer() -> None:
    facts = "The results settle it: Tbilisi."
    settled = [
        CALL,
        OBS,
        WRONG,
        _reflection(facts, settled=True),
        {"kind": "replan", "content": "", "args": {"settled": True}},
        ANSWER,
    ]
    turns = served_turns(episode(settled))
    assert turns is not None and [t.attempt for t in turns] == [0, 0, 1]
    assert turns[-1].prompt[-1] == {"role": "user", "content": facts}
    assert turns[-1].prompt[-2] == {"role": "assistant", "content": "<think>"}  # the answer cut before <answer>
    evidence_call = {**HOP, "content": "evidence"}
    replan = {"kind": "replan", "content": "", "args": {"settled": True, "unread": ["Dover Kosashvili"]}}
    evidence = [
        CALL,
        OBS,
        WRONG,
        _reflection("one-sided", unread=["Dover Kosashvili"]),
        replan,
        evidence_call,
        HOP_OBS,
        ANSWER,
    ]
    turns = served_turns(episode(evidence))
    assert turns is not None and [t.taught for t in turns] == [True, True, False, True]
    last = turns[-1].prompt
    assert last[-1] == observation_message(HOP_OBS["content"]) and "Dover Kosashvili</answer>" not in str(last)
    rows = conversation_rows(episode(evidence), max_tool_calls=4, attempts="final")
    assert len(rows) == 1 and parse(rows[0]["completion"][0]["content"], strict=True).answer == "Tbilisi"


def test_a_dropped_plan_leaves_the_first_attempt_and_a_replan_hands_the_replan() -> None:
    dropped = [
        CALL,
        OBS,
        ANSWER,
        _reflection("x"),
        {"kind": "replan", "content": "1. Same", "args": {"dropped": "it repeats the plan"}},
    ]
    assert len(conversation_rows(episode(dropped), attempts="final")) == 2  # the answer stood: its attempt
    replanned = [
        CALL,
        OBS,
        WRONG,
        {"kind": "reflection", "content": "yes"},
        {"kind": "replan", "content": "1. Search the birthplace"},
        HOP,
        HOP_OBS,
        ANSWER,
    ]
    rows = conversation_rows(episode(replanned), max_tool_calls=4, attempts="final")
    assert len(rows) == 2 and rows[0]["prompt"][-1] == replan_message("1. Search the birthplace")
    assert rows[0]["prompt"][0] == executor_messages(Q, PLAN)[0]  # a replan keeps the plan it started from
    assert conversation_rows(episode(replanned, correct=False), attempts="final") == []
    over = [CALL, OBS, WRONG, {"kind": "replan", "content": "1. x"}, HOP, HOP_OBS, HOP, HOP_OBS, HOP, HOP_OBS, ANSWER]
    assert conversation_rows(episode(over), max_tool_calls=4, attempts="final") == []  # the budget forced it
