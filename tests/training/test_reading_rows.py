"""Reading rows (mia.training.reading_rows): a wrong first answer whose own search results held the
gold becomes the served prompt before that answer and an answer turn quoting the sentences that
give it; anything less certain gives no row."""

from __future__ import annotations

from pathlib import Path

import pytest

from mia.graph.protocol import parse
from mia.training.reading_rows import find_evidence, reading_row, reading_rows
from mia.training.sft_data import Episode, episode_from_record, read_episodes, served_turns

Q = "Where was the director of film The Duel (2010 Film)'s born?"
FILM = (
    "Doc 1 (Title: The Duel (2010 film)) Anton Chekhov's The Duel is a 2010 film. "
    "It was directed by Dover Kosashvili. It stars Andrew Scott."
)
DIRECTOR = (
    "Doc 2 (Title: Dover Kosashvili (director)) Dover Kosashvili (born 1966) is an Israeli director. "
    "He was born in Tbilisi, Georgia."
)
OTHER = "Doc 3 (Title: Tbilisi Opera) The Tbilisi Opera is a theatre in Georgia."


def steps(observation: str, answer: str = "Dover Kosashvili") -> list[dict]:
    return [
        {"kind": "thought", "content": "Search the film."},
        {"kind": "tool_call", "content": "", "tool": "search", "args": {"query_list": ["The Duel 2010 film director"]}},
        {"kind": "observation", "content": f'Results for "The Duel 2010 film director":\n{observation}'},
        {"kind": "answer", "content": answer},
    ]


def episode(trajectory: list[dict], question: str = Q, gold: list[str] | str = ["Tbilisi"]) -> Episode:  # noqa: B006
    found = episode_from_record(
        {"question": question, "plan": "", "trajectory": trajectory, "judge_correct": False, "gold_answers": gold}
    )
    assert found is not None
    return found


def test_a_bridged_gold_is_taught_in_the_served_prompt_with_both_sentences_quoted() -> None:
    ep = episode(steps(f"{FILM}\n{DIRECTOR}"))
    row = reading_row(ep)
    assert row is not None
    assert row["prompt"] == served_turns(ep)[-1].prompt  # the conversation the wrong answer was served
    turn = parse(row["completion"][0]["content"], strict=True)
    assert turn.kind == "answer" and turn.answer == "Tbilisi"
    assert turn.think == (
        '"The Duel (2010 film)": It was directed by Dover Kosashvili. '
        '"Dover Kosashvili (director)": He was born in Tbilisi, Georgia. So the answer is Tbilisi.'
    )


def test_a_result_the_question_names_is_quoted_alone() -> None:
    row = reading_row(
        episode(steps(FILM, "Andrew Scott"), question="Who directed The Duel (2010 Film)?", gold=["Dover Kosashvili"])
    )
    assert row is not None
    turn = parse(row["completion"][0]["content"], strict=True)
    assert (
        turn.think == '"The Duel (2010 film)": It was directed by Dover Kosashvili. So the answer is Dover Kosashvili.'
    )


def test_a_later_round_that_fixed_the_answer_still_teaches_the_first() -> None:
    later = [
        {"kind": "replan", "content": "1. Search the director", "args": {}},
        {"kind": "answer", "content": "Tbilisi"},
    ]
    row = reading_row(episode(steps(f"{FILM}\n{DIRECTOR}") + later))
    assert row is not None and parse(row["completion"][0]["content"], strict=True).answer == "Tbilisi"


@pytest.mark.parametrize(
    "question, observation, answer, gold",
    [
        (Q, f"{FILM}\n{DIRECTOR}", "Tbilisi, Georgia", ["Tbilisi"]),  # the first answer was right
        (Q, FILM, "Dover Kosashvili", ["Tbilisi"]),  # the gold is not in the results
        (Q, f"{FILM}\n{OTHER}", "Dover Kosashvili", ["Tbilisi"]),  # only in a result nothing leads to
        (Q, f"{FILM}\n{DIRECTOR}", "Dover Kosashvili", []),  # no gold logged
        ("Was The Duel directed by an Israeli?", f"{FILM}\n{DIRECTOR}", "no", ["yes"]),  # yes/no
        ("Which film came out first, The Duel or Tbilisi Opera?", f"{FILM}\n{OTHER}", "The Duel", ["Tbilisi Opera"]),
        # the gold is in the question
        ("In Georgia, near Tbilisi, where was the director of The Duel born?", f"{FILM}\n{DIRECTOR}", "X", ["Tbilisi"]),
    ],
)
def test_anything_less_certain_gives_no_row(question: str, observation: str, answer: str, gold: list[str]) -> None:
    assert reading_row(episode(steps(observation, answer), question=question, gold=gold)) is None


def test_one_row_per_question_and_never_a_skipped_question() -> None:
    ep = episode(steps(f"{FILM}\n{DIRECTOR}"))
    assert len(reading_rows([ep, ep])) == 1
    assert reading_rows([ep], skip_questions=[Q.upper()]) == []
    (row,) = reading_rows([ep])
    assert row["reading"] is True and row["question"] == Q and row["planned"] is False


def test_a_result_the_attempts_own_query_names_anchors_the_evidence() -> None:
    """The question names no title; the logged call's query ("The Duel 2010 film director") does."""
    question = "Who directed the 2010 film of Chekhov's novella?"
    observation = f'Results for "The Duel 2010 film director":\n{FILM}'
    assert find_evidence(question, ["Dover Kosashvili"], [], [observation]) is None
    row = reading_row(episode(steps(FILM, "Andrew Scott"), question=question, gold=["Dover Kosashvili"]))
    assert row is not None and parse(row["completion"][0]["content"], strict=True).answer == "Dover Kosashvili"


def test_the_committed_logs_give_reading_rows_and_none_of_the_final_split() -> None:
    root = Path(__file__).resolve().parents[2]
    final = [e.question for e in read_episodes(["results/ladder/*/none/results.jsonl.gz"], root)]
    episodes = read_episodes(["results/two-searches-2wiki/default/results.jsonl*"], root)
    rows = reading_rows(episodes, skip_questions=final)
    assert len(rows) >= 10 and not {r["question"] for r in rows} & set(final)
    for row in rows:
        turn = parse(row["completion"][0]["content"], strict=True)
        assert turn.kind == "answer" and turn.think.endswith(f"So the answer is {turn.answer}.")
        assert row["prompt"][-1]["role"] == "user"  # the last tool result, as the answer was served
