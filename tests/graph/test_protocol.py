"""The executor's text protocol parser on the shapes small models really produce."""

from __future__ import annotations

import pytest

from mia.graph.protocol import (
    cut_before_answer,
    drop_repeats,
    extract_final_answer,
    final_answer,
    lenient_json,
    parse_turn,
    parse_yes_no,
    strip_think,
    truncate_words,
)


@pytest.mark.parametrize(
    "text, tool, queries",
    [
        (
            '<think>need facts</think><tool_call>{"name": "search", "arguments": {"query_list": ["a b"]}}</tool_call>',
            "search",
            ["a b"],
        ),
        ("<think>x</think><tool_call>{'name': 'search', 'arguments': {'query': 'Paris'}}", "search", ["Paris"]),
        ('<think>x</think>\n{"name": "search", "arguments": "{\\"query_list\\": [\\"q\\"]}"}', "search", ["q"]),
        ('{"query_list": ["foo"]', "search", ["foo"]),
        (
            '<tool_call>\n```json\n{"name": "search", "arguments": {"queries": ["x", "y"],}}\n```\n</tool_call>',
            "search",
            ["x", "y"],
        ),
        (
            '<tool_call>{"function": {"name": "search", "arguments": {"query_list": "one"}}}</tool_call>',
            "search",
            ["one"],
        ),
        ('<tool_call>{"name": "search", "arguments": {"query_list": ["cut off', "search", ["cut off"]),
    ],
)
def test_tool_calls_are_repaired(text: str, tool: str, queries: list[str]) -> None:
    turn = parse_turn(text)
    assert turn.kind == "tool_call", turn
    assert turn.tool == tool
    assert turn.arguments == {"query_list": queries}


def test_only_the_first_tool_call_is_kept_and_invented_responses_are_cut() -> None:
    text = (
        '<tool_call>{"name": "search", "arguments": {"query_list": ["a"]}}</tool_call>'
        '<tool_response>made up</tool_response><tool_call>{"name": "search", "arguments": {}}</tool_call>'
    )
    turn = parse_turn(text)
    assert turn.arguments == {"query_list": ["a"]}
    assert "made up" not in turn.content and turn.content.endswith("</tool_call>")


@pytest.mark.parametrize(
    "text, answer",
    [
        ("<think>done</think><answer>Paris</answer>", "Paris"),
        ("<think>done</think><answer>Paris", "Paris"),
        ("Thinking...\nAnswer: Paris", "Paris"),
        ("Final answer:\n Paris", "Paris"),
        ('<think>a</think>{"answer": "42"}', "42"),
        ("Paris is the capital.", "Paris is the capital."),
        ("<think>unclosed thinking <answer>1923</answer>", "1923"),
    ],
)
def test_answers(text: str, answer: str) -> None:
    turn = parse_turn(text)
    assert turn.kind == "answer", turn
    assert turn.answer == answer


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "<think>only thinking",
        "<tool_call>not json at all</tool_call>",
        '<tool_call>{"arguments": 5}</tool_call>',
    ],
)
def test_malformed_is_reported_not_raised(text: str) -> None:
    turn = parse_turn(text)
    assert turn.kind == "malformed" and turn.error


def test_a_search_without_query_is_a_call_for_the_node_to_complete() -> None:
    turn = parse_turn('<tool_call>{"name": "search", "arguments": {"query_list": []}}</tool_call>')
    assert (turn.kind, turn.tool) == ("tool_call", "search") and not turn.arguments.get("query_list")


def test_lenient_json_variants() -> None:
    assert lenient_json("{'a': True, 'b': None}") == {"a": True, "b": None}
    assert lenient_json('{a: 1, "b": [1, 2,],}') == {"a": 1, "b": [1, 2]}
    assert lenient_json('prefix {"a": {"b": 1') == {"a": {"b": 1}}
    with pytest.raises(ValueError):
        lenient_json("no json")


def test_yes_no_and_helpers() -> None:
    assert parse_yes_no("<think>the evidence is thin, no doubt</think>Yes.") is True
    assert parse_yes_no("No") is False
    assert parse_yes_no("<think>hmm</think>") is None
    assert strip_think("<think>plan privately</think>1. Search X") == "1. Search X"
    assert cut_before_answer("<think>a</think><answer>b</answer>") == "<think>a</think>"
    assert extract_final_answer("blah\nAnswer: 7") == "7"
    assert extract_final_answer('<tool_call>{"name": "search"}</tool_call>') == ""
    assert truncate_words("a b c d", 2).startswith("a b ...")


def test_a_plan_ends_where_the_model_goes_on_with_something_else() -> None:
    from mia.graph.protocol import cut_plan_overrun

    plan = '1. Search "Arthur\'s Magazine founding year".\n2. Compare the two search results.'
    # verbatim from `make demo` (Qwen-1.5B's replan): an answer after the plan
    assert cut_plan_overrun(plan + "\n\nFinal answer: Arthur's Magazine") == plan
    assert cut_plan_overrun(plan + "\n\nRound 1\nTool call: search(...)") == plan
    assert cut_plan_overrun(plan + "\nQuestion: Which is older?\nPlan:") == plan
    assert cut_plan_overrun(plan + "\n3. Answer: the earlier one.") == plan + "\n3. Answer: the earlier one."  # a step
    assert cut_plan_overrun("Final answer: X") == "Final answer: X"  # nothing before it: kept for the caller to judge
    # verbatim shape from results/ladder-tune/2wiki/plan-on-failure: the attempt's results copied into step 1
    copied = '1. Search "Who directed Here Comes The Groom?": Doc 1 (Title: Here Comes the Groom) Here Comes ...'
    assert cut_plan_overrun(copied) == '1. Search "Who directed Here Comes The Groom?"'


# Logged by Qwen-1.5B (results/hotpotqa-qwen-defaults/mia, "Which genus contains more species, Crowea or
# Dracula?"): the answer loops until the token limit.
_LOOP = (
    'The Dracula genus contains more species than the Crowea genus. "Dracula" is a genus of orchids. '
    "The genus contains 118 species. Therefore, the Dracula genus contains more species than the Crowea genus."
)


def test_a_looping_answer_is_cut_where_it_repeats_itself() -> None:
    looped = " ".join([_LOOP] * 4) + ' "Dracula" is a genus'
    assert drop_repeats(looped) == _LOOP
    assert final_answer(f"<think>x</think><answer>{looped}</answer>") == _LOOP
    assert final_answer(f"<answer>{looped}") == _LOOP  # cut by the token limit before </answer>


@pytest.mark.parametrize(
    "text",
    ["Arthur's Magazine", "No. It was started in 1844, before 1989.", "Yes. yes!", "Dr. No and Dr. No's sequel", ""],
)
def test_an_answer_that_does_not_repeat_a_sentence_is_kept(text: str) -> None:
    assert drop_repeats(text) == text


def test_a_repeat_differing_only_in_case_and_spaces_is_a_repeat() -> None:
    assert drop_repeats("It is London. it  is london. More.") == "It is London."


def test_a_looping_plan_is_cut_where_the_loop_starts():
    """Verbatim shapes of Qwen-1.5B plans on 2WikiMultihopQA (results/2wiki-qwen-defaults/mia)."""
    from mia.graph.protocol import cut_plan_overrun

    head = (
        '1. Search "Phelan Beale Jr. uncle".\n2. Check if any results are found.\n'
        '3. If no results are found, search "Phelan Beale Jr. father\'s brother".\n4. Check if any results are found.\n'
        '5. If still no results are found, search "Phelan Beale Jr. grandfather\'s brother".'
    )
    same = '\n6. If still no results are found, search "Phelan Beale Jr. grandfather\'s brother".' * 8
    assert cut_plan_overrun(head + same) == head  # the same step again: cut, the repeated check stays
    pair = (
        '1. Search "Geodeung mother".\n2. Check if any results are found.\n'
        '3. If still no results, search "Geodeung mother occupation".\n4. Check if any results are found.\n'
        '5. If still no results, search "Geodeung mother religion".'
    )
    again = (
        '\n6. Check if any results are found.\n7. If still no results, search "Geodeung mother occupation".'
        "\n8. Check if any results are found."
    )
    assert cut_plan_overrun(pair + again) == pair  # a pair of steps written twice
    markdown = '1. **Search "X release date"**:\n\n2. Search "X release date".\n3. **Search "X release date"**'
    assert cut_plan_overrun(markdown) == '1. **Search "X release date"**:'  # blank lines, markdown and numbers aside
    plain = "1. Search A.\n2. Check if any results are found.\n3. Search B.\n4. Check if any results are found.\n5. Compare."
    assert cut_plan_overrun(plain) == plain


def test_a_replan_adds_nothing_when_it_repeats_the_plan_or_searches_already_made() -> None:
    from mia.graph.protocol import adds_nothing

    plan = '1. **Search "Life Is Hot In Cracktown director birthdate"**:\n2. Compare the birthdates.\n3. Answer.'
    searches = ["Life Is Hot In Cracktown director birthdate", "Between Maybes director birthdate"]
    # the verbatim shape of Qwen-1.5B's replans: the plan again, other markdown and numbering
    assert adds_nothing(
        '1. Search "Life Is Hot In Cracktown director birthdate".\n\n2. compare the birthdates', plan, searches
    )
    assert adds_nothing(
        "1. Search \u201cBetween Maybes director birthdate\u201d again.", plan, searches
    )  # already made
    assert adds_nothing("", plan, searches)
    # something new: another query, or a step that is neither in the plan nor a search
    assert not adds_nothing('1. Search "Between Maybes director".', plan, searches)
    assert not adds_nothing(
        '1. Search "Between Maybes director birthdate".\n2. Check the director\'s name.', plan, searches
    )
    assert not adds_nothing("1. Search the director's biography.", plan, searches)


@pytest.mark.parametrize(
    "question, plan, expected",
    [
        # verbatim Qwen-1.5B plans (results/2wiki-qwen-defaults/mia): the last step decides the answer
        (
            "Which film was released more recently, Shravana Banthu or Hitler'S Folly?",
            '1. **Search "Shravana Banthu release date"**\n2. **Compare the two search results**:\n'
            "   - If the release date of Shravana Banthu is later than that of Hitler's Folly, then Shravana Banthu was released more recently.\n"
            "4. **Answer with the result**:\n   - The film released more recently is Shravana Banthu.",
            '1. **Search "Shravana Banthu release date"**\n2. **Compare the two search results**:\n'
            "   - If the release date of Shravana Banthu is later than that of Hitler's Folly, then Shravana Banthu was released more recently.\n"
            "4. **Answer with the result**:",
        ),
        (
            "Which film was released earlier, The Open House or Sons Of Ingmar?",
            '3. Compare the dates. The film that was released earlier is "The Open House".',
            "3. Compare the dates.",
        ),
        (
            "Which film has the director who died earlier, Hold Back The Night or The Last Night Of The Barbary Coast?",
            "3. **Compare the two search results**:\n   - If the death date of Hold Back The Night is earlier, then Hold Back "
            'The Night has the director who died earlier.\n4. **Answer with the result**:\n   - "Hold Back The Night" has the '
            "director who died earlier.",
            "3. **Compare the two search results**:\n   - If the death date of Hold Back The Night is earlier, then Hold Back "
            "The Night has the director who died earlier.\n4. **Answer with the result**:",
        ),
        # not a comparison question, or no decision: unchanged
        (
            "Who is Phelan Beale Jr.'s uncle?",
            "1. Search X.\n2. The uncle is John.",
            "1. Search X.\n2. The uncle is John.",
        ),
        (
            "Which came first, A or B?",
            "1. Search A.\n2. Search B.\n3. Answer which is earlier.",
            "1. Search A.\n2. Search B.\n3. Answer which is earlier.",
        ),
    ],
)
def test_a_plan_does_not_decide_a_comparison_question(question, plan, expected):
    from mia.graph.protocol import drop_guessed_answer, served_plan

    assert drop_guessed_answer(plan, question) == expected
    assert served_plan("<think>A is older.</think>" + plan + "\nQuestion: another?", question) == expected


@pytest.mark.parametrize(
    "question, options",
    [
        # verbatim questions of app/evaluation/datasets/: titles with commas, colons, "?" and a capital "Or"
        (
            "Which film has the director born later, A Demon For Trouble or Now, Voyager?",
            ["A Demon For Trouble", "Now, Voyager"],
        ),
        (
            "Which film has the director who was born earlier, Angélique, Marquise Des Anges or That Man George?",
            ["Angélique, Marquise Des Anges", "That Man George"],
        ),
        (
            "Which film has the director born first, Killer: Dead Or Alive or Adultery: A User'S Guide?",
            ["Killer: Dead Or Alive", "Adultery: A User'S Guide"],
        ),
        (
            "Which film has the director born earlier, Whoever Slew Auntie Roo? or Places In The Heart?",
            ["Whoever Slew Auntie Roo?", "Places In The Heart"],
        ),
        # HotpotQA: the question goes on after the candidates, or opens with a colon
        (
            "Which battle, the Battle of Cold Harbor, or the Second Battle of Bull Run, was fought first?",
            ["the Battle of Cold Harbor", "the Second Battle of Bull Run"],
        ),
        (
            "Which director, Chris O'Dea or Lucky McKee, is a Master of Fine Arts graduate of the UCLA School of Theater, Film and Television?",
            ["Chris O'Dea", "Lucky McKee"],
        ),
        ("Q: Who had more solo albums, Marty Raybon or Greg Graffin?", ["Marty Raybon", "Greg Graffin"]),
        (
            "Which case came first, Craig v. Boren or United States v. Paramount Pictures, Inc.?",
            ["Craig v. Boren", "United States v. Paramount Pictures, Inc."],
        ),
        ("In 2010, which city was larger, Leeds or Sheffield?", ["Leeds", "Sheffield"]),
        ("Who was born first: Yanka Dyagileva or Alexander Bashlachev?", ["Yanka Dyagileva", "Alexander Bashlachev"]),
        # not a choice between two named candidates
        ("Who is Phelan Beale Jr.'s uncle?", []),
        ("Are Kiss Or Kill and Heat both films?", []),
        ("Which is older, the cathedral or the castle", []),  # no question mark: not read
        ("Where, which city or which town, was he born?", []),
        ("x, " + "a or " * 5000 + "b?", []),  # past MAX_QUESTION_CHARS: not read
    ],
)
def test_a_comparison_question_names_its_candidates(question, options):
    from mia.graph.protocol import question_options

    assert question_options(question) == options


def test_the_measured_candidates_are_the_gold_answers():
    """Held to the figure in mia.graph.protocol.questions: on the bundled 2WikiMultihopQA set the
    candidates read are the gold answer's for every comparison question (194 of 500)."""
    import gzip
    import json
    from pathlib import Path

    from mia.graph.judge.metrics import normalize_answer
    from mia.graph.protocol import question_options

    path = Path(__file__).parents[2] / "app" / "evaluation" / "datasets" / "2wiki.jsonl.gz"
    rows = [json.loads(line) for line in gzip.open(path, "rt", encoding="utf-8")]
    read = [(question_options(row["question"]), [row["answer"], *row.get("answer_aliases", [])]) for row in rows]
    read = [(options, golds) for options, golds in read if options]
    assert len(read) == 194
    assert all({normalize_answer(g) for g in golds} & {normalize_answer(o) for o in options} for options, golds in read)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Are Royal St. George'S College and Branksome Hall both located in the same country?", True),
        ("Do both films, Kaalapani and Leaving Home, have directors from the same country?", True),
        ("  was   Pikahsso from the USA?", True),  # spacing and case
        ("Are Kiss Or Kill and Heat both films?", True),  # a capitalised "Or" is a title's
        ("Was David Fennario or Peter Emanuel Falck born first?", False),  # an alternative: a name answers it
        ("Is Rice University or Stanford University further west?", False),
        ("Which film came out first, Heat or Ronin?", False),
        ("Who directed Heat?", False),
        ("Island of the Blue Dolphins: is it a novel?", False),  # "Is" must open the question
        ("", False),
    ],
)
def test_a_yes_no_question_is_read_from_its_wording(question, expected):
    from mia.graph.protocol import is_yes_no_question

    assert is_yes_no_question(question) is expected


@pytest.mark.parametrize(("name", "yes_no", "read"), [("2wiki", 43, 43), ("hotpotqa", 63, 62)])
def test_the_measured_yes_no_questions_are_the_gold_ones(name, yes_no, read):
    """Held to the figures in mia.graph.protocol.questions: every question read as yes/no on the
    bundled sets has the gold answer "yes" or "no", and all but one of those questions are read."""
    import gzip
    import json
    from pathlib import Path

    from mia.graph.protocol import is_yes_no_question

    path = Path(__file__).parents[2] / "app" / "evaluation" / "datasets" / f"{name}.jsonl.gz"
    rows = [json.loads(line) for line in gzip.open(path, "rt", encoding="utf-8")]
    gold = {i for i, row in enumerate(rows) if row["answer"].strip().lower() in {"yes", "no"}}
    found = {i for i, row in enumerate(rows) if is_yes_no_question(row["question"])}
    assert (len(gold), len(found)) == (yes_no, read)
    assert found <= gold


def test_render_turn_writes_what_strict_parse_reads_back() -> None:
    from mia.graph.protocol import parse, render_turn

    call = parse(render_turn(" Look it up. ", call=("search", {"query_list": ['a "quoted" name']})), strict=True)
    assert (call.kind, call.think, call.arguments) == ("tool_call", "Look it up.", {"query_list": ['a "quoted" name']})
    answer = parse(render_turn(answer=" Tbilisi "), strict=True)
    assert (answer.kind, answer.think, answer.answer) == ("answer", "", "Tbilisi")
    for bad in ({}, {"call": ("search", {}), "answer": "x"}):
        with pytest.raises(ValueError, match="one tool call or one answer"):
            render_turn("x", **bad)  # type: ignore[arg-type]
