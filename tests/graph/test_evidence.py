"""The dated-comparison check (mia.graph.nodes.evidence) and what the graph does with it: the
executor's own search results settle the answer, so it answers again with no planner call."""

from __future__ import annotations

from typing import Any

import pytest

from mia.graph.nodes.evidence import contradiction, country_of, year_in
from mia.graph.tools.corpus import Hit
from mia.graph.tools.formatting import format_results, parse_hits

from .fakes import make_deps, search_tool
from .test_graph_logic import CALL, models, run
from .test_ladder_fixes import ctx

FILMS = format_results(
    ["The Open House", "Sons Of Ingmar"],
    [
        [Hit("1", "The Open House", "The Open House is a 2018 American horror film.", 1.0, 1)],
        [
            Hit("2", "Ingmar Bergman", "Ingmar Bergman (14 July 1918 - 30 July 2007) was a director.", 1.0, 1),
            Hit(
                "3", "Sons of Ingmar (film)", "Sons of Ingmar (Swedish: Ingmarssönerna) is a 1919 Swedish film.", 1.0, 2
            ),
        ],
    ],
    4096,
)
PEOPLE = (
    "Doc 1 (Title: Georges Prêtre) Georges Prêtre (14 August 1924 - 4 January 2017) was a French conductor.\n"
    "Doc 2 (Title: Laura Riding) Laura Riding (January 16, 1901 - September 2, 1991) was an American poet."
)


def test_the_results_parse_back_into_their_paragraphs() -> None:
    hits = parse_hits(FILMS)
    assert [title for title, _ in hits] == ["The Open House", "Ingmar Bergman", "Sons of Ingmar (film)"]
    assert hits[2][1].startswith("Sons of Ingmar (Swedish") and "=======" not in hits[0][1]
    assert parse_hits("No relevant passage found.") == []


@pytest.mark.parametrize(
    "text, event, year",
    [
        ("Laura Riding (January 16, 1901 - September 2, 1991) was a poet.", "died", 1991),
        ("Laura Riding (January 16, 1901 - September 2, 1991) was a poet.", "born", 1901),
        ("Max Eastman was a writer who died in Barbados in 1969.", "died", 1969),
        ("Sons of Ingmar (Swedish: Ingmarssönerna) is a 1919 Swedish film.", "first", 1919),
        ("A film with no date.", "first", None),
    ],
)
def test_the_year_a_paragraph_gives(text: str, event: str, year: int | None) -> None:
    assert year_in(text, event) == year


@pytest.mark.parametrize(
    "question, answer, observations, expected",
    [
        # the candidates' own paragraphs date them: the answer contradicts the years
        (
            "Which film was released earlier, The Open House or Sons Of Ingmar?",
            "The Open House",
            [FILMS],
            "Sons Of Ingmar",
        ),
        (
            "Which film was released more recently, The Open House or Sons Of Ingmar?",
            "Sons Of Ingmar",
            [FILMS],
            "The Open House",
        ),
        ("Who died earlier, Georges Prêtre or Laura Riding?", "Georges Prêtre", [PEOPLE], "Laura Riding"),
        ("Who was born first, Georges Prêtre or Laura Riding?", "Georges Prêtre", [PEOPLE], "Laura Riding"),
        ("Who is younger, Georges Prêtre or Laura Riding?", "Laura Riding", [PEOPLE], "Georges Prêtre"),
        # the answer fits the years, names neither, or names both
        ("Which film was released earlier, The Open House or Sons Of Ingmar?", "Sons Of Ingmar", [FILMS], None),
        ("Which film was released earlier, The Open House or Sons Of Ingmar?", "Ingmar Bergman", [FILMS], None),
        # only one candidate dated, no comparison, or the year would be another entity's
        ("Which film was released earlier, The Open House or Hamlet?", "The Open House", [FILMS], None),
        ("Who directed The Open House?", "Sons Of Ingmar", [FILMS], None),
        (
            "Which film has the director born earlier, The Open House or Sons Of Ingmar?",
            "The Open House",
            [FILMS],
            None,
        ),
        ("Is The Open House or Sons Of Ingmar longer?", "The Open House", [FILMS], None),
    ],
)
def test_a_dated_comparison_answered_against_its_years(
    question: str, answer: str, observations: list[str], expected: str | None
) -> None:
    found = contradiction(question, answer, observations)
    assert (found is None) if expected is None else (found is not None and found.expected == expected)


COUNTRIES = (
    "Doc 1 (Title: Laserblast) Laserblast is a 1978 American science fiction film. It was shot in California.\n"
    "Doc 2 (Title: The Life of Juanita Castro) The Life of Juanita Castro is a 1965 American film by Andy Warhol.\n"
    "Doc 3 (Title: Patti, Dashtiari) Patti is a village in Dashtiari County, Iran.\n"
    "Doc 4 (Title: Alofau) Alofau is a village on the border of France and Germany."
)


@pytest.mark.parametrize(
    "question, answer, expected",
    [
        ("Did the movies Laserblast and The Life Of Juanita Castro, originate from the same country?", "No", "yes"),
        ("Were Laserblast and The Life Of Juanita Castro from the same country?", "no, they were not", "yes"),
        ("Are Laserblast and Patti, Dashtiari located in the same country?", "Yes", "no"),
        ("Did the movies Laserblast and The Life Of Juanita Castro, originate from the same country?", "Yes", None),
        # a first sentence with two countries decides nothing; nor does a question about others
        ("Are Alofau and Laserblast located in the same country?", "No", None),
        ("Do the directors of Laserblast and The Life Of Juanita Castro have the same nationality?", "No", None),
        ("Is Laserblast longer than The Life Of Juanita Castro?", "No", None),
    ],
)
def test_a_same_country_question_answered_against_its_countries(
    question: str, answer: str, expected: str | None
) -> None:
    found = contradiction(question, answer, [COUNTRIES])
    assert (found is None) if expected is None else (found is not None and found.expected == expected)


def test_the_country_of_a_paragraph_is_the_one_its_first_sentence_names() -> None:
    assert country_of("Max Eastman (1883-1969) was an American writer. He lived in Mexico.") == "united_states"
    assert country_of("A British-American film.") is None and country_of("A film.") is None
    assert country_of("An English actor.") == country_of("A British actor.") == country_of("A Welsh band.")


def test_the_executor_is_told_the_countries() -> None:
    question = "Did the movies Laserblast and The Life Of Juanita Castro, originate from the same country?"
    m = models(executor=[CALL.format(q="Laserblast"), "<answer>No</answer>", "<answer>Yes</answer>"])
    deps, _ = make_deps(m, tools=[search_tool({"Laserblast": COUNTRIES})])
    out = run(deps, ctx(plan_when="failure"), question=question)
    handed = m["fake:executor"].prompts[2][-1].content
    assert "Laserblast the country United States" in handed and "the answer is yes" in handed
    assert out["answer"] == "Yes" and out["usage"]["planner"]["calls"] == 0


def test_the_executor_answers_again_from_its_own_years_with_no_planner_call() -> None:
    question = "Which film was released earlier, The Open House or Sons Of Ingmar?"
    m = models(
        planner=[],
        executor=[
            CALL.format(q="The Open House"),
            "<answer>The Open House</answer>",
            "<think>1919 is before 2018</think><answer>Sons Of Ingmar</answer>",
        ],
    )
    deps, _ = make_deps(m, tools=[search_tool({"The Open House": FILMS})])
    out = run(deps, ctx(plan_when="failure"), question=question)
    assert out["answer"] == "Sons Of Ingmar" and m["fake:planner"].prompts == []
    handed = m["fake:executor"].prompts[2][-1].content
    assert "The Open House the year 2018" in handed and "Sons Of Ingmar the year 1919" in handed
    assert "by those years it is Sons Of Ingmar" in handed
    steps: list[dict[str, Any]] = out["trajectory"]["steps"]
    (reflection,) = [s for s in steps if s["kind"] == "reflection"]
    assert reflection["args"]["settled"] is True
    (replan,) = [s for s in steps if s["kind"] == "replan"]
    assert replan["args"] == {"settled": True} and not out["plan"] and out["usage"]["planner"]["calls"] == 0


def test_an_answer_the_years_support_is_accepted() -> None:
    question = "Which film was released earlier, The Open House or Sons Of Ingmar?"
    m = models(executor=[CALL.format(q="The Open House"), "<answer>Sons Of Ingmar</answer>"])
    deps, _ = make_deps(m, tools=[search_tool({"The Open House": FILMS})])
    out = run(deps, ctx(plan_when="failure"), question=question)
    assert out["answer"] == "Sons Of Ingmar" and len(m["fake:executor"].prompts) == 2
    assert not [s for s in out["trajectory"]["steps"] if s["kind"] == "replan"]


def test_plain_react_is_never_corrected() -> None:
    question = "Which film was released earlier, The Open House or Sons Of Ingmar?"
    m = models(executor=[CALL.format(q="The Open House"), "<answer>The Open House</answer>"])
    deps, _ = make_deps(m, tools=[search_tool({"The Open House": FILMS})])
    out = run(deps, ctx(memory_mode="none"), question=question)
    assert out["answer"] == "The Open House" and len(m["fake:executor"].prompts) == 2


@pytest.mark.real_model
def test_the_real_executor_answers_again_from_the_years(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """The embedded executor, handed the years after a scripted wrong first answer, names the
    candidate they pick. (Its own first answer cannot be made wrong on demand, so the first two
    turns are scripted; the turn after the correction is the real model's, with the graph's prompt.)"""
    from mia.graph.context import Context
    from mia.graph.nodes.deps import Deps
    from mia.graph.nodes.execute import TEXT_STOP

    for role in ("PLANNER", "EXECUTOR", "MANAGER", "JUDGE"):
        monkeypatch.delenv(f"MIA_{role}_MODEL", raising=False)
    real = Deps().chat_model(Context(data_dir=str(tmp_path), executor_max_tokens=96), "executor")
    question = "Which film was released earlier, The Open House or Sons Of Ingmar?"
    m = models(
        executor=[
            CALL.format(q="The Open House"),
            "<answer>The Open House</answer>",
            lambda messages: str(real.invoke(messages, stop=TEXT_STOP).content),
        ]
    )
    deps, _ = make_deps(m, tools=[search_tool({"The Open House": FILMS})])
    out = run(deps, ctx(plan_when="failure"), question=question)
    assert [s["args"] for s in out["trajectory"]["steps"] if s["kind"] == "replan"] == [{"settled": True}]
    assert "Ingmar" in out["answer"] and "Open House" not in out["answer"], out["answer"]


# ---- evidence_search: an answer given before both names' own paragraphs were read

OPEN_HOUSE = "Doc 1 (Title: The Open House) The Open House is a 2018 American horror film."
INGMAR = "Doc 1 (Title: Sons of Ingmar (film)) Sons of Ingmar (Swedish: Ingmarssönerna) is a 1919 Swedish film."
EARLIER = "Which film was released earlier, The Open House or Sons Of Ingmar?"


def test_what_is_unread_is_the_name_whose_own_paragraph_gave_no_fact() -> None:
    from mia.graph.nodes.evidence import unread

    assert unread(EARLIER, [OPEN_HOUSE]) == ["Sons Of Ingmar"]
    assert unread(EARLIER, []) == ["The Open House", "Sons Of Ingmar"]
    assert unread(EARLIER, [OPEN_HOUSE, INGMAR]) == []
    # not a question a lookup settles: through another entity, or no two candidates
    assert unread("Which film has the director born earlier, The Open House or Sons Of Ingmar?", []) == []
    assert unread("Who wrote Hamlet?", []) == []


def test_an_answer_from_one_side_is_held_back_until_the_other_is_searched() -> None:
    """One paragraph read, an answer; the graph searches the other name as the executor's next turn
    (the answer turn leaves the history), the executor answers the same again, and the years it now
    has settle it: no planner call, and the trace keeps every step."""
    m = models(
        executor=[
            CALL.format(q="The Open House"),
            "<answer>The Open House</answer>",
            "<answer>The Open House</answer>",
            "<answer>Sons Of Ingmar</answer>",
        ]
    )
    tool = search_tool({"The Open House": OPEN_HOUSE, "Sons Of Ingmar": INGMAR})
    deps, _ = make_deps(m, tools=[tool])
    out = run(deps, ctx(plan_when="failure", evidence_search=True, max_tool_calls=4), question=EARLIER)
    assert tool.metadata["calls"] == [["The Open House"], ["Sons Of Ingmar"]]
    after_search = m["fake:executor"].prompts[2]
    said = [str(x.content) for x in after_search if x.type == "ai"]
    assert "1919" in after_search[-1].content and not any("<answer>" in text for text in said)
    steps = out["trajectory"]["steps"]
    assert [s["content"] for s in steps if s["kind"] == "tool_call"][1] == "evidence"
    replans = [s["args"] for s in steps if s["kind"] == "replan"]
    assert replans == [{"settled": True, "unread": ["Sons Of Ingmar"]}, {"settled": True}]
    assert out["answer"] == "Sons Of Ingmar" and out["usage"]["planner"]["calls"] == 0
    assert out["tool_calls"] == 2


@pytest.mark.parametrize(
    "overrides",
    [{}, {"evidence_search": True, "max_tool_calls": 1}, {"evidence_search": True, "memory_mode": "none"}],
    ids=["off-by-default", "no-tool-call-left", "plain-react"],
)
def test_an_answer_from_one_side_stands_when_the_round_is_off_or_cannot_search(overrides: dict[str, Any]) -> None:
    m = models(executor=[CALL.format(q="The Open House"), "<answer>The Open House</answer>"])
    deps, _ = make_deps(m, tools=[search_tool({"The Open House": OPEN_HOUSE})])
    out = run(deps, ctx(**{"plan_when": "failure", "max_tool_calls": 4, **overrides}), question=EARLIER)
    assert out["answer"] == "The Open House" and len(m["fake:executor"].prompts) == 2


@pytest.mark.real_model
def test_the_real_executor_answers_from_both_sides(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """The embedded executor after a scripted one-sided wrong answer: the graph searches the other
    film, and the real model's next answer (with the years checked after it) names the earlier film."""
    from mia.graph.context import Context
    from mia.graph.nodes.deps import Deps
    from mia.graph.nodes.execute import TEXT_STOP

    for role in ("PLANNER", "EXECUTOR", "MANAGER", "JUDGE"):
        monkeypatch.delenv(f"MIA_{role}_MODEL", raising=False)
    real = Deps().chat_model(Context(data_dir=str(tmp_path), executor_max_tokens=96), "executor")
    reply = lambda messages: str(real.invoke(messages, stop=TEXT_STOP).content)  # noqa: E731
    m = models(executor=[CALL.format(q="The Open House"), "<answer>The Open House</answer>", reply, reply])
    tool = search_tool({"The Open House": OPEN_HOUSE, "Sons Of Ingmar": INGMAR})
    deps, _ = make_deps(m, tools=[tool])
    out = run(deps, ctx(plan_when="failure", evidence_search=True, max_tool_calls=4), question=EARLIER)
    assert tool.metadata["calls"][:2] == [["The Open House"], ["Sons Of Ingmar"]]
    assert "Ingmar" in out["answer"] and "Open House" not in out["answer"], out["answer"]
