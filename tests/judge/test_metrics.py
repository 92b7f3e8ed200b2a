"""Metrics checked against values worked out by hand."""

from __future__ import annotations

import pytest

from mia.graph.judge import cover_match, exact_match, extract_answer, f1_score, normalize_answer


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The  Quick, brown fox!", "quick brown fox"),
        ("An apple a day", "apple day"),
        ("Theory of the Anatomy", "theory of anatomy"),  # articles only as whole words
        ("U.S.A.", "usa"),
        ("Rock 'n' Roll", "rock n roll"),
        ("  multiple \t\n spaces ", "multiple spaces"),
        ("“Paris”", "“paris”"),  # the standard script strips ASCII punctuation only
        ("", ""),
    ],
)
def test_normalize_answer(text: str, expected: str) -> None:
    assert normalize_answer(text) == expected


def test_exact_match_articles_punctuation_and_aliases() -> None:
    assert exact_match("The Eiffel Tower.", ["eiffel tower"]) == 1.0
    assert exact_match("new york city", ["NYC", "New York City"]) == 1.0
    assert exact_match("Paris, France", "Paris") == 0.0
    assert exact_match("a", "the") == 1.0  # both normalise to the empty string


def test_metrics_refuse_empty_gold_list() -> None:
    with pytest.raises(ValueError, match="at least one gold"):
        exact_match("x", [])
    with pytest.raises(ValueError):
        f1_score("x", [])
    with pytest.raises(TypeError):
        cover_match("x", [3])  # type: ignore[list-item]


def test_f1_partial_overlap_by_hand() -> None:
    # pred tokens [eiffel, tower, in, paris], gold [eiffel, tower]: P = 2/4, R = 2/2, F1 = 2/3
    assert f1_score("the Eiffel Tower in Paris", "Eiffel Tower") == pytest.approx(2 / 3)
    # gold "john a smith" -> [john, smith]; pred [john, smith, jr]: P = 2/3, R = 1, F1 = 0.8
    assert f1_score("John Smith Jr.", "John a Smith") == pytest.approx(0.8)
    # repeated tokens count once per gold occurrence: common 1, P = 1/2, R = 1 -> 2/3
    assert f1_score("paris paris", "Paris") == pytest.approx(2 / 3)
    # pred [barack, obama, president], gold [president, of, france]: common 1, P = R = 1/3 -> 1/3
    assert f1_score("Barack Obama, president", "President of France") == pytest.approx(1 / 3)
    assert f1_score("London", "Paris") == 0.0


def test_f1_takes_best_alias() -> None:
    # vs "Paris": P = 1/4, R = 1 -> 0.4; vs "Eiffel Tower": 2/3. The max wins.
    assert f1_score("the Eiffel Tower in Paris", ["Paris", "Eiffel Tower"]) == pytest.approx(2 / 3)


def test_f1_yes_no_match_only_exactly() -> None:
    assert f1_score("Yes.", "yes") == 1.0
    assert f1_score("yes it is", "yes") == 0.0  # gold yes/no: partial overlap means nothing
    assert f1_score("no", "no way") == 0.0  # prediction yes/no against a longer gold
    assert f1_score("noanswer", "noanswer") == 1.0
    assert f1_score("yes", ["no", "yes"]) == 1.0


def test_cover_match_is_token_level() -> None:
    assert cover_match("The capital is Paris.", "paris")
    assert cover_match("I live in New York City", ["Boston", "new york"])
    assert not cover_match("I am not sure", "no")  # "no" is not inside "not"
    assert not cover_match("a great party", "art")
    assert not cover_match("york new", "New York")  # order matters
    assert not cover_match("anything", "the")  # a gold that normalises to nothing covers nothing


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<answer>Paris</answer>", "Paris"),
        ("  <answer>  New\n  York </answer> ", "New York"),
        ("<answer>first</answer> then <answer>second</answer>", "second"),
        ("<think>maybe <answer>London</answer></think> so <answer>Paris</answer>", "Paris"),
        ("<think>it is <answer>London</answer></think>\nParis, surely.", "Paris, surely."),
        ("<answer>done</answer> ... <answer>cut off by max tok", "cut off by max tok"),
        ("<answer></answer>", ""),
        ('<tool_call>{"name": "search"}</tool_call>\n<tool_response>docs</tool_response>\nassistant\n Paris ', "Paris"),
        ('<tool_call>{"q": 1}</tool_call>\nassistant\nThe answer is 42', "The answer is 42"),
        ("Just plain text.", "Just plain text."),
        ("", ""),
        ("<think>only thinking</think>", "<think>only thinking</think>"),
    ],
)
def test_extract_answer(text: str, expected: str) -> None:
    assert extract_answer(text) == expected
