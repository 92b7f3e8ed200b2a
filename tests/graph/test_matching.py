"""The answer matcher (mia.graph.judge.matching): each rule of bench/judge/reference/LABELLING.md on
its own examples and on the answers issue 43 found the embedded grader failing, plus the judge's use
of it (the matcher decides without a model call; only its uncertain answers reach the grader)."""

from __future__ import annotations

import pytest

from mia.graph.judge import JudgeConfig, judge
from mia.graph.judge.matching import Match, match_answer

from .fakes import ScriptedChatModel


def decide(question: str, answer: str, *golds: str) -> Match:
    return match_answer(question, answer, list(golds))


@pytest.mark.parametrize(
    "question, answer, gold, rule",
    [
        # issue 43: graded INCORRECT by the embedded grader, correct by reading
        ("What nationality is the composer of song Right To Dream?", "American", "America", 5),
        ("Where did Richard E. Robbins study?", "Richard E. Robbins graduated from Harvard College.", "Harvard", 6),
        ("When was Mark Scott Travis born?", "Mark Scott Travis was born on September 6, 1961.", "1961", 4),
        ("Who died earlier, Georges Pretre or Laura Riding?", "Laura Riding Jackson", "Laura Riding", 6),
        # issue 43: ended `incorrect` under the metrics contradiction policy (no shared token)
        ("Who was the 35th president of the United States?", "JFK", "John F. Kennedy", 2),
        ("How many children did they have?", "2", "two", 1),
        ("Which country is the film from?", "USA", "United States", 5),
        # LABELLING.md's own examples
        ("Which city is the largest in the state?", "NYC", "New York City", 2),
        ("Which city is the largest in the state?", "New York City", "NYC", 2),
        ("Who was the president?", "J. F. Kennedy", "John F. Kennedy", 2),
        ("How many copies were sold?", "1.5 million", "1,500,000", 3),
        ("When was the bridge opened?", "2 May 1934", "May 2, 1934", 4),
        ("When was the bridge opened?", "May 2, 1934", "2 May 1934", 4),
        ("Where was the father of Adhemar of Salerno born?", "Matera, Italy", "Italian", 5),
        ("Which country is he from?", "Republic of France", "France", 5),
        ("Who designed the casino?", "The Venetian Las Vegas was designed by KlingStubbins.", "KlingStubbins", 7),
        (
            "Which musician is from further north, Matthew Good or Modern Baseball?",
            "Matthew Good is from further north than Modern Baseball.",
            "Matthew Good",
            7,
        ),
        ("Who played with him, a centre-back?", "Rio Ferdinand", "Rio Gavin Ferdinand", 2),
        ("In which season did he blow ten saves?", "2006 St. Louis Cardinals season", "2006 season", 6),
        ("Who was the president?", "Kennedy", "John F. Kennedy", 6),
        ("Where was the director born?", "Pitajanmaki, Helsinki", "Helsinki", 1),
        ("Which director, Chris O'Dea or Lucky McKee, is a graduate of UCLA?", "Lucky McKee", "Edward Lucky McKee", 6),
    ],
)
def test_same_answer_in_another_form_is_correct(question: str, answer: str, gold: str, rule: int) -> None:
    found = decide(question, answer, gold)
    assert (found.decision, found.rule) == ("correct", rule), found.label()


@pytest.mark.parametrize(
    "question, answer, gold",
    [
        (
            "Are the bands Tiger Please and Black Rebel Motorcycle Club from the same country?",
            "No, they are not from the same country.",
            "no",
        ),
        (
            "Were both Eugene Dynkin and Vladimir Voevodsky mathematicians from Russia?",
            "Both were Russian mathematicians.",
            "yes",
        ),
        (
            "Do the movies originate from the same country?",
            "The director of one is Canadian, while the director of the other is British. Therefore, the movies do not "
            "originate from the same country.",
            "no",
        ),
        (
            "Are Donald Fagen and Lauren Laverne of the same nationality?",
            "Donald Fagen is American and Lauren Laverne is English.",
            "no",
        ),
        (
            "Do both Icehouse pieces and El Grande come from the same game?",
            "Both come from the same game, published in German by Hans im Gluck and in English by Rio Grande Games.",
            "yes",
        ),  # languages are not countries asked about
    ],
)
def test_yes_no_by_polarity(question: str, answer: str, gold: str) -> None:
    found = decide(question, answer, gold)
    assert (found.decision, found.rule) == ("correct", 8), found.label()
    opposite = "yes" if gold == "no" else "no"
    assert decide(question, answer, opposite).decision == "incorrect"


@pytest.mark.parametrize(
    "question, answer, gold, rule",
    [
        ("Are the directors of both films from the same country?", "Italy", "yes", 8),  # a bare country: no polarity
        ("Are both operas in three acts?", "Yes and no", "no", 8),
        ("In which city was the tower built?", "Paris Hilton", "Paris", 10),
        ("In which city was the tower built?", "Paris or Lyon", "Paris", 9),
        ("In which city was the tower built?", "Either Lyon or Paris", "Paris", 9),
        ("Who created Oswald the Lucky Rabbit?", "Ub Iwerks, Charles Mintz, Walt Disney", "Ub Iwerks", 9),
        ("What is the capital of the state?", "Minnesota", "Saint Paul", 0),
        ("What city is the team based in?", "Minnesota", "Saint Paul, Minnesota", 11),
        ("When was it founded?", "the 1840s", "1844", 11),
        ("In what year was the band formed?", "1961-1964", "1961", 10),
        ("How many copies were sold?", "about 2 million", "1,500,000", 3),
        ("What kind of group do they have in common?", "Muse (band)", "band", 10),
        (
            "Which film has the director born first, Condannato A Nozze or All My Lenins?",
            "All My Lenins",
            "Condannato A Nozze",
            12,
        ),
        (
            "Which genus has more species, Dracula or Pistacia?",
            "Pistacia genus has more species with 20 to 25 species compared to Dracula genus.",
            "Dracula",
            12,
        ),
        ("Who is the paternal grandmother of Somerset Butler?", "Lady Margaret Butler", "Eleanor Redman", 0),
        ("Which former senator did Marc Elias help run for office?", "Hugh Rodham", "Hillary Rodham Clinton", 12),
        (
            "Which concentration camp straddled the border?",
            "Esterwegen concentration camp",
            "the Jasenovac concentration camp",
            12,
        ),
        (
            "Jaroslav Kvapil was born in the Kingdom of Bohemia, also referred to by what name?",
            "Kingdom of Bohemia",
            "Czech Kingdom",
            12,
        ),
        ("What nationality is the composer?", "Spanish", "America", 12),
        ("When did she die?", "1780", "5 February 1745", 12),
        ("Where was the director born?", "I don't know.", "Helsinki", 0),
    ],
)
def test_failure_cases_are_incorrect(question: str, answer: str, gold: str, rule: int) -> None:
    found = decide(question, answer, gold)
    assert (found.decision, found.rule) == ("incorrect", rule), found.label()


@pytest.mark.parametrize(
    "question, answer, gold",
    [
        (
            "What sport do they have in common?",
            "Jonathan Toews is a Canadian professional ice hockey centre who plays for the Chicago Blackhawks.",
            "ice hockey",
        ),
        (
            "Why are the songs controversial?",
            "Their explicit themes, particularly homosexuality and gay sex.",
            "men who have sex with men",
        ),
        ("Which genus contains more species, Crowea or Dracula?", "Dracula, Crowea.", "Dracula"),
        (
            "What type of media do they have in common?",
            "The New Criterion is a literary magazine and journal.",
            "journal",
        ),
        (
            "Which film has the director who is older, Colierul De Taica or Leo And Loree?",
            "George Collier is older than Leo And Loree.",
            "Leo And Loree",
        ),  # the gold is the other side of the comparison
        (
            "Where did Xavin first appear?",
            'There are no films where Xavin was portrayed in the Marvel Comics "Runaways" series, it does not say.',
            "Runaways",
        ),
    ],
)
def test_what_the_rules_cannot_decide_is_uncertain(question: str, answer: str, gold: str) -> None:
    assert decide(question, answer, gold).decision == "uncertain"


def test_any_alias_decides_and_a_reason_names_the_rule() -> None:
    found = decide("Which country is the director from?", "He is French.", "France", "French Republic", "fr")
    assert found.decision == "correct" and "rule 5" in found.label()
    with pytest.raises(ValueError):
        decide("Q?", "A", " ")


def test_the_judge_grades_by_the_matcher_without_a_model_call() -> None:
    model = ScriptedChatModel(script=[], fallback="B")
    verdict = judge(model, "Who was the 35th president?", "JFK", gold_answers=["John F. Kennedy"], mode="ground_truth")
    assert (verdict.outcome, verdict.method, verdict.grader_label, verdict.usage.calls) == (
        "correct",
        "match",
        "CORRECT",
        0,
    )
    assert model.prompts == [] and "rule 2" in verdict.feedback
    wrong = judge(model, "In which city?", "Paris Hilton", gold_answers=["Paris"], mode="ground_truth")
    assert (wrong.outcome, wrong.method, wrong.score) == ("incorrect", "match", 0.0)


def test_only_the_uncertain_answers_reach_the_grader() -> None:
    answer = "Jonathan Toews is a Canadian professional ice hockey centre who plays for the Chicago Blackhawks."
    model = ScriptedChatModel(script=["B"])
    verdict = judge(
        model, "What sport do they have in common?", answer, gold_answers=["ice hockey"], mode="ground_truth"
    )
    assert (verdict.outcome, verdict.method, verdict.usage.calls) == ("incorrect", "llm", 1)
    assert "answer matcher uncertain" in verdict.notes[0]
    assert "Gold target: ice hockey" in str(model.prompts[0][0].content)  # the SimpleQA prompt, the default
    rules = ScriptedChatModel(script=["A"])
    verdict = judge(
        rules,
        "What sport do they have in common?",
        answer,
        gold_answers=["ice hockey"],
        mode="ground_truth",
        config=JudgeConfig(grader_prompt="rules"),
    )
    assert verdict.outcome == "correct" and "Paris Hilton" in str(rules.prompts[0][0].content)


def test_the_old_llm_grading_is_one_option_away() -> None:
    model = ScriptedChatModel(script=["B"])
    verdict = judge(
        model,
        "Who was the 35th president?",
        "John F. Kennedy",
        gold_answers=["John F. Kennedy"],
        mode="ground_truth",
        config=JudgeConfig(method="llm", contradiction="llm"),
    )
    assert (verdict.outcome, verdict.method, verdict.usage.calls) == ("incorrect", "llm", 1)
    assert "Malia" in str(model.prompts[0][0].content)  # SimpleQA's examples
