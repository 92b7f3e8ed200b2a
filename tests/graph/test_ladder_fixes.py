"""The fixes of the ablation ladder (results/ladder), each on its own: hop plans, reflection that
replans only on a failure the trace shows, repeated searches served from the episode, memories shown
as strategies. The paper's settings (`Context.paper()`) keep the published behaviour:
tests/graph/test_graph_logic.py runs its scripts with them."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest

from mia.graph.context import PAPER, Context
from mia.graph.nodes.failure import off_candidates, restates_question, shown_failure, unsupported
from mia.graph.prompts import builder, render
from mia.graph.protocol import plan_queries
from mia.memory.strategy import question_names, strategy_view

from .fakes import FakeStore, fake_context, make_deps, memory, search_tool
from .test_graph_logic import CALL, kinds, models, run

DEFAULTS = {f.name: f.default for f in fields(Context)}


def ctx(**kw: Any) -> Context:
    """The fixes under a plan written at the start (plan_when "start"); the plan_when tests say "failure"."""
    return fake_context(**{"min_tool_calls": 0, "plan_when": "start", **kw})


# ---- the failure rule (pure)


def obs(text: str) -> dict[str, Any]:
    return {"kind": "observation", "content": text}


@pytest.mark.parametrize(
    "steps, answer, stop, expected",
    [
        ([obs("Paris is the capital of France.")], "Paris", "answered", None),
        ([obs("Paris is the capital of France.")], "Lyon", "answered", "no search result supports"),
        ([obs("Paris is the capital of France.")], "", "answered", "no answer"),
        ([obs("Paris is the capital of France.")], "I don't know", "answered", "no answer"),
        ([obs("Paris is the capital of France.")], "Paris", "forced:budget", "ran out of tool calls"),
        ([obs("Error: the tool 'search' failed (boom).")], "Paris", "answered", "a search failed"),
        # an earlier attempt's tool error is not this attempt's failure
        (
            [obs("Error: failed"), {"kind": "replan", "content": "1. Search again"}, obs("Paris is the capital.")],
            "Paris",
            "answered",
            None,
        ),
    ],
)
def test_shown_failure(steps: list[dict[str, Any]], answer: str, stop: str, expected: str | None) -> None:
    got = shown_failure(steps, answer, stop, "What is the capital of France?")
    assert (got is None) if expected is None else (got is not None and expected in got)


def test_yes_no_and_a_named_candidate_are_never_unsupported() -> None:
    assert not unsupported("no", "Are A and B of the same nationality?", ["nothing related"])
    assert not unsupported("Crowea", "Which genus has more species, Crowea or Dracula?", ["nothing"])
    # words of the question do not count as support, nor against
    assert unsupported("the director Ben Verbong", "Who directed the film?", ["The film was shot in 1990."])


@pytest.mark.parametrize(
    "answer, off",
    [
        ("Allan Dwan (3 April 1885 – 28 December 1981)", True),
        ("Hold Back the Night", False),
        ("The Last Night of the Barbary Coast (1913)", False),
        ("Barbary Coast", False),  # part of a candidate's name still names it
        ("", False),
    ],
)
def test_an_answer_naming_neither_candidate(answer: str, off: bool) -> None:
    question = (
        "Which film has the director who died earlier, Hold Back The Night or The Last Night Of The Barbary Coast?"
    )
    assert bool(off_candidates(answer, question)) is off
    failure = shown_failure([obs(f"{answer} directed")], answer, "answered", question)
    assert ("is neither of the two the question names" in (failure or "")) is off
    assert not off_candidates("Allan Dwan", "Who directed Hold Back The Night?")  # no candidates named


@pytest.mark.parametrize(
    "answer, question, expected",
    [
        ("Ruston & Hornsby", "The English company Ruston & Hornsby is now a part of what German company?", True),
        ("ruston and hornsby.", "The English company Ruston & Hornsby is now a part of what German company?", True),
        ("Siemens", "The English company Ruston & Hornsby is now a part of what German company?", False),
        ("Siemens and Ruston & Hornsby", "Ruston & Hornsby is now a part of what German company?", False),
        # the question's own words are the right answer where it offers alternatives
        ("Dracula", "Which genus has more species, Crowea or Dracula?", False),
        ("Hellogoodbye", "Did Franki Valli sing with Hellogoodbye or The Four Seasons?", False),
        ("yes", "Are Paris and Lyon in the same country?", False),
        ("", "Who founded Ruston & Hornsby?", False),
    ],
)
def test_an_answer_that_only_repeats_the_question(answer: str, question: str, expected: bool) -> None:
    assert restates_question(answer, question) is expected
    failure = shown_failure([obs(f"{answer} Siemens")], answer, "answered", question)
    assert ("only repeats a name the question gives" in (failure or "")) is expected


# ---- the graph with the new defaults


def test_a_supported_answer_is_accepted_without_a_reflection_call() -> None:
    m = models(
        planner=['1. Search "Who wrote Hamlet?"\n2. Search "Hamlet author" -> #1\n3. Answer with #1.'],
        executor=[CALL.format(q="Hamlet author Shakespeare"), "<answer>Shakespeare</answer>"],
    )
    deps, _ = make_deps(m)
    out = run(deps, ctx(), gold_answers=["Shakespeare"])
    assert out["answer"] == "Shakespeare"
    assert len(m["fake:planner"].prompts) == 1  # the plan only: no yes/no reflection call
    assert kinds(out)[-1] == "reflection" and out["trajectory"]["steps"][-1]["args"]["failure"] == "none shown"
    plan_prompt = m["fake:planner"].prompts[0][1].content
    assert "chain of hops" in plan_prompt and "-> #1" in plan_prompt  # plan_style hops
    exec_prompt = m["fake:executor"].prompts[0][1].content
    assert 'never with "#1"' in exec_prompt and "skip or change that step" in exec_prompt


def test_an_unsupported_answer_is_replanned_with_its_failure_and_the_replan_is_followed() -> None:
    m = models(
        planner=['1. Search "Hamlet author" -> #1', '1. Search "Hamlet playwright" -> #1'],
        executor=[
            CALL.format(q="Hamlet author"),
            "<answer>Marlowe</answer>",
            CALL.format(q="Hamlet playwright Shakespeare"),
            "<answer>Shakespeare</answer>",
        ],
    )
    deps, _ = make_deps(m)
    out = run(deps, ctx())
    assert out["answer"] == "Shakespeare" and out["replan"].startswith('1. Search "Hamlet playwright"')
    replan_prompt = m["fake:planner"].prompts[1][-1].content
    assert 'no search result supports its answer "Marlowe"' in replan_prompt and "<trajectory>" in replan_prompt
    assert [s["content"] for s in out["trajectory"]["steps"] if s["kind"] == "reflection"] == ["yes"]


def test_an_answer_that_repeats_the_question_is_replanned_to_the_next_hop() -> None:
    question = "Ruston & Hornsby is now a part of what German company?"
    m = models(
        planner=[
            f'1. Search "{question}"\n2. Answer with #1.',
            '1. Search "Ruston & Hornsby German owner" -> #1\n2. Answer with #1.',
        ],
        executor=[
            CALL.format(q=question),
            "<answer>Ruston & Hornsby</answer>",
            CALL.format(q="Ruston & Hornsby German owner"),
            "<answer>Siemens</answer>",
        ],
    )
    deps, _ = make_deps(m)
    out = run(deps, ctx(), question=question)
    assert out["answer"] == "Siemens"
    assert 'its answer "Ruston & Hornsby" only repeats a name' in m["fake:planner"].prompts[1][-1].content


def test_a_repeated_search_is_served_from_the_episode() -> None:
    m = models(
        planner=['1. Search "Hamlet author" -> #1'],
        executor=[CALL.format(q="Hamlet author"), CALL.format(q="hamlet author?"), "<answer>Hamlet author</answer>"],
    )
    deps, _ = make_deps(m)
    tool = deps.tools(ctx(), None)[0]
    out = run(deps, ctx())
    assert tool.metadata["calls"] == [["Hamlet author"]]  # the second, same query never reached the tool
    second = [s for s in out["trajectory"]["steps"] if s["kind"] == "observation"][1]
    assert second["content"].startswith("Already searched above") and '"hamlet author?"' in second["content"]
    # with the paper's settings it runs again
    m = models(
        planner=["1. Search", "no"],
        executor=[CALL.format(q="Hamlet author"), CALL.format(q="Hamlet author"), "<answer>x</answer>"],
    )
    deps, _ = make_deps(m)
    tool = deps.tools(ctx(), None)[0]
    run(deps, ctx(**PAPER))
    assert tool.metadata["calls"] == [["Hamlet author"], ["Hamlet author"]]


def test_memories_below_the_floor_are_not_shown_and_the_rest_are_strategies() -> None:
    store = FakeStore(
        positives=[
            memory(
                "p1",
                "Who is the father of the director of film Gang Of Four?",
                '1. Search for evidence (query "Gang Of Four director" -> found Jacques '
                'Rivette (director))\n2. Search for evidence (query "Jacques Rivette father")\n'
                '3. Answer from the gathered evidence (evidence -> "Andre"; judged correct)',
                "correct",
            ),
            memory("p2", "Which magazine was started first?", "1. Unrelated", "correct").model_copy(
                update={"similarity": 0.3}
            ),
        ]
    )
    m = models(planner=["1. Search"], executor=["<answer>x</answer>"])
    deps, _ = make_deps(m, store=store)
    run(deps, ctx(min_tool_calls=0))
    shown = m["fake:planner"].prompts[0][1].content
    assert "Gang Of Four" not in shown and "Rivette" not in shown and "Andre" not in shown
    assert '"[A] director"' in shown and '"[found] father"' in shown
    assert "magazine" not in shown and "Successful strategies (1)" in shown  # below the 0.5 floor


def test_strategy_view_keeps_the_shape_and_drops_the_names() -> None:
    q = 'Which film came out first, "The Iron Giant" or Toy Story 2?'
    assert question_names(q) == ["The Iron Giant", "Toy Story 2"]
    question, steps = strategy_view(
        '1. Search for evidence (query "The Iron Giant release" -> found The Iron Giant)\n'
        '2. Answer from the gathered evidence (evidence -> "1999"; judged correct)',
        q,
    )
    assert question == 'Which film came out first, "[A]" or [B]?'
    assert steps == '1. Search for evidence (query "[A] release")\n2. Answer from the gathered evidence'


def test_the_paper_is_one_call_away_and_the_builder_defaults_are_the_contexts() -> None:
    paper = Context.paper()
    assert (
        paper.plan_style,
        paper.replan_when,
        paper.drop_repeated_replan,
        paper.min_similarity,
        paper.memory_style,
        paper.repeated_search,
    ) == ("paper", "planner", False, None, "paper", "run")
    assert all(DEFAULTS[k] != v for k, v in PAPER.items())  # PAPER lists only what differs
    assert builder.PLAN_STYLE == DEFAULTS["plan_style"] and builder.MEMORY_STYLE == DEFAULTS["memory_style"]
    assert "chain of hops" not in builder.planner_messages("Q?", style="paper")[1]["content"]


def test_ask_paper_and_drop_repeated_replan_reach_the_context(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    from typer.testing import CliRunner

    from mia.app.cli import app
    from mia.app.commands import agent

    seen: list[Context] = []
    monkeypatch.setattr(agent, "_run", lambda context, *a, **k: seen.append(context))
    runner = CliRunner()
    base = ["ask", "Q?", "--data-dir", str(tmp_path), "--judge-mode", "off"]
    assert runner.invoke(app, base).exit_code == 0
    assert runner.invoke(app, base + ["--paper"]).exit_code == 0
    assert runner.invoke(app, base + ["--paper", "--drop-repeated-replan"]).exit_code == 0
    default, paper, mixed = seen
    assert (default.replan_when, default.drop_repeated_replan, default.min_similarity) == ("failure", True, 0.5)
    assert (paper.replan_when, paper.drop_repeated_replan, paper.min_similarity, paper.plan_style) == (
        "planner",
        False,
        None,
        "paper",
    )
    assert mixed.drop_repeated_replan is True and mixed.replan_when == "planner"


def test_eval_paper_records_the_papers_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """`mia eval --paper` writes the paper's values into the run's config (min_similarity None kept);
    an option beside it wins; a bad value is refused."""
    from typer.testing import CliRunner

    import mia.app.evaluation.harness as harness
    from mia.app.cli import app

    captured: list[Any] = []

    async def fake_run(cfg: Any, out: Any, progress: bool = True) -> Any:
        captured.append(cfg)
        raise SystemExit(0)

    monkeypatch.setattr(harness, "run_evaluation", fake_run)
    runner = CliRunner()
    res = runner.invoke(app, ["eval", "--n", "1", "--out", str(tmp_path / "r"), "--paper", "--plan-style", "hops"])
    assert res.exit_code == 0, res.output
    overrides = captured[0].context_overrides
    assert overrides["min_similarity"] is None and overrides["replan_when"] == "planner"
    assert overrides["plan_style"] == "hops"
    bad = runner.invoke(app, ["eval", "--n", "1", "--out", str(tmp_path / "r"), "--replan-when", "always"])
    assert bad.exit_code == 1 and "--replan-when must be failure or planner" in bad.output
    for flag, value, allowed in (
        ("--memory", "all", "mia, none or trajectory-rag"),
        ("--judge", "gpt", "llm or metrics"),
    ):
        bad = runner.invoke(app, ["eval", "--n", "1", "--out", str(tmp_path / "r"), flag, value])
        assert bad.exit_code == 1 and f"{flag} must be {allowed}, not '{value}'" in bad.output.replace("\n", "")
    assert len(captured) == 1  # no bad option reached a run


def on_the_real_model(
    tmp_path: Any,
    monkeypatch: pytest.MonkeyPatch,
    inputs: dict[str, Any] | None = None,
    deps: Any = None,
    **fields: Any,
) -> dict[str, Any]:
    """One question through `build_graph` on the embedded model (no judge, no memory written, short
    turns); `inputs` default to the first HotpotQA sample with its paragraphs."""
    import json
    from pathlib import Path

    from mia import build_graph
    from mia.graph.builder import recursion_limit

    for role in ("PLANNER", "EXECUTOR", "MANAGER", "JUDGE"):
        monkeypatch.delenv(f"MIA_{role}_MODEL", raising=False)
    if inputs is None:
        record = json.loads((Path(__file__).parent / "data" / "hotpotqa_sample.json").read_text())[0]
        inputs = {"question": record["question"], "paragraphs": record["paragraphs"]}
    context = Context(
        data_dir=str(tmp_path),
        judge_mode="off",
        memorise=False,
        planner_max_tokens=96,
        executor_max_tokens=96,
        **fields,
    )
    graph = build_graph(deps=deps) if deps is not None else build_graph()
    return graph.invoke(inputs, context=context, config={"recursion_limit": recursion_limit(context)})


@pytest.mark.real_model
def test_the_default_graph_on_the_real_model_reflects_by_rule(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The embedded model with a plan written first: one planner call for a hop plan, no yes/no
    reflection call, a reflection step that names the failure it found (or none), and a replan only then."""
    out = on_the_real_model(tmp_path, monkeypatch, max_tool_calls=2, plan_when="start")
    reflection = [s for s in out["trajectory"]["steps"] if s["kind"] == "reflection"]
    assert out["plan"] and len(reflection) == 1 and "failure" in reflection[0]["args"]
    replanned = reflection[0]["content"] == "yes"
    assert out["usage"]["planner"]["calls"] == 1 + replanned  # the plan (and a replan), never a yes/no call
    assert (reflection[0]["args"]["failure"] == "none shown") != replanned


@pytest.mark.real_model
def test_plan_first_on_the_real_model(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The embedded model with plan_searches "first": the graph's searches come before any executor
    turn (the question first, then the plan's concrete queries, if the real plan has any), the plan
    stays out of the executor's prompt, and the executor still answers."""
    import json
    from pathlib import Path

    record = json.loads((Path(__file__).parent / "data" / "hotpotqa_sample.json").read_text())[0]
    out = on_the_real_model(
        tmp_path, monkeypatch, max_tool_calls=3, plan_when="start", plan_searches="first", plan_in_prompt=False
    )
    calls = [s for s in out["trajectory"]["steps"] if s["kind"] == "tool_call"]
    planned = [c for c in calls if c["content"] == "planned"]
    assert planned and planned[0]["args"]["query_list"] == [record["question"].strip()]
    assert calls[: len(planned)] == planned  # the graph's searches come first
    assert len(planned) == 1 + bool(plan_queries(out["plan"], record["question"]))
    assert out["answer"] and out["stop_reason"]


def test_the_hop_example_follows_the_questions_form() -> None:
    """A small planner copies its example's last step: a "who" question never sees the yes/no example."""
    bridge = builder.planner_messages("Who starred in the film The Human Factor alongside Derek Jacobi?")[1]["content"]
    compare = builder.planner_messages("Are Donald Fagen and Lauren Laverne of the same nationality?")[1]["content"]
    assert "#3 place of birth" not in bridge and "#2 place of birth" in bridge and "Answer yes if" not in bridge
    assert "Answer yes if #1 and #2 are the same" in compare and "place of birth" not in compare
    # a question naming two candidates is answered with one of them, not yes or no
    choice = builder.planner_messages("Which band was formed first, Wavves or Social Code?")[1]["content"]
    assert "Answer A or B" in choice and "Answer yes if" not in choice and "place of birth" not in choice


def test_only_the_repeated_queries_of_a_search_are_dropped() -> None:
    from mia.graph.nodes.tools import drop_repeated_queries

    earlier = [{"kind": "tool_call", "args": {"query_list": ["Hamlet author"]}}]
    args, repeated = drop_repeated_queries({"query_list": ["hamlet author?", "Hamlet year"]}, earlier)
    assert args == {"query_list": ["Hamlet year"]} and repeated == ["hamlet author?"]
    assert drop_repeated_queries({"query_list": ["new"]}, earlier) == ({"query_list": ["new"]}, [])


def test_a_query_with_an_unfilled_hop_is_not_run_and_the_executor_is_told_to_fill_it() -> None:
    m = models(
        planner=['1. Search "Who wrote Hamlet?"\n2. Search "#1 birthplace" -> #2\n3. Answer with #2.'],
        executor=[
            '<tool_call>{"name": "search", "arguments": {"query_list": ["Who wrote Hamlet?", "#1 birthplace"]}}'
            "</tool_call>",
            CALL.format(q="#2"),
            CALL.format(q="Shakespeare birthplace"),
            "<answer>Shakespeare birthplace</answer>",
        ],
    )
    deps, _ = make_deps(m)
    tool = deps.tools(ctx(), None)[0]
    out = run(deps, ctx())
    assert tool.metadata["calls"] == [["Who wrote Hamlet?"], ["Shakespeare birthplace"]]
    first, second = [s["content"] for s in out["trajectory"]["steps"] if s["kind"] == "observation"][:2]
    assert first.startswith('Not searched: "#1 birthplace". Replace each #N') and "Who wrote Hamlet?" in first
    assert second.startswith('Not searched: "#2"') and out["answer"] == "Shakespeare birthplace"
    # the paper's plans have no placeholders: its executor's queries run as written
    m = models(planner=["1. Search", "no"], executor=[CALL.format(q="#1 birthplace"), "<answer>x</answer>"])
    deps, _ = make_deps(m)
    tool = deps.tools(ctx(**PAPER), None)[0]
    run(deps, ctx(**PAPER))
    assert tool.metadata["calls"] == [["#1 birthplace"]]
    # nor does plain ReAct's, which has no plan
    m = models(executor=[CALL.format(q="#1 birthplace"), "<answer>x</answer>"])
    deps, _ = make_deps(m)
    tool = deps.tools(ctx(memory_mode="none"), None)[0]
    run(deps, ctx(memory_mode="none"))
    assert tool.metadata["calls"] == [["#1 birthplace"]]


@pytest.mark.parametrize(
    "query, expected",
    [
        ("#1 father", True),
        ("father of #12", True),
        ("#1's birthplace", True),
        ("C# language", False),
        ("Apollo #1a", False),
        ("number 1 hit", False),
    ],
)
def test_unfilled_hop(query: str, expected: bool) -> None:
    from mia.graph.protocol import unfilled_hop

    assert unfilled_hop(query) is expected


def test_the_graph_makes_the_plans_searches_before_the_executors_first_turn() -> None:
    question = "Which film has the director born earlier, A Film or B Film?"
    plan = (
        f'1. Search "{question}"\n2. Search "A Film director" -> #1\n3. Search "B Film director" -> #2\n'
        '4. Search "#1 birth date" -> #3\n5. Answer: A Film has the director born earlier.'
    )
    m = models(planner=[plan], executor=[CALL.format(q="Ann Lee birth date"), "<answer>A Film</answer>"])
    deps, _ = make_deps(m)
    tool = deps.tools(ctx(), None)[0]
    out = run(deps, ctx(plan_searches="first", plan_in_prompt=False), question=question)
    # the question with the whole result budget, then the plan's concrete queries in one call
    assert tool.metadata["calls"] == [[question], ["A Film director", "B Film director"], ["Ann Lee birth date"]]
    calls = [s for s in out["trajectory"]["steps"] if s["kind"] == "tool_call"]
    assert [c["content"] for c in calls] == ["planned", "planned", ""] and out["tool_calls"] == 3
    assert len(m["fake:executor"].prompts) == 2  # no model call for the planned searches
    first = m["fake:executor"].prompts[0]
    assert "born earlier." not in first[1].content  # the plan's guess is not shown
    assert '"A Film director"' in first[-2].content and "Doc 1 about B Film director" in first[-1].content
    assert out["answer"] == "A Film"
    # the executor's own turn first when the plan has no search steps (the question is still searched)
    m = models(planner=["1. Answer from memory."], executor=["<answer>B Film</answer>"])
    deps, _ = make_deps(m)
    tool = deps.tools(ctx(), None)[0]
    run(deps, ctx(plan_searches="first"), question=question)
    assert tool.metadata["calls"] == [[question]]


# ---- answers of the wrong kind (pure)


@pytest.mark.parametrize(
    "question, answer, observations, kind",
    [
        ("Did the movies Laserblast and Juanita originate from the same country?", "USA", [], "yes_no"),
        ("Did the movies Laserblast and Juanita originate from the same country?", "No, they did not.", [], ""),
        # the judge's reading: a sentence that asserts "both" is a yes
        ("Were both A and B mathematicians from Russia?", "A and B were both Russian mathematicians.", [], ""),
        ("When did Margaret Verney's father die?", "Sir Ralph Verney", [], "date"),
        ("When did Margaret Verney's father die?", "10 September 1859", [], ""),
        ("What is the date of death of the composer of film X?", "in the 19th century", [], ""),
        (
            "Where was the director of film The Duel born?",
            "Dover Kosashvili",
            ["The Duel, directed by Dover Kosashvili."],
            "place",
        ),
        (
            "Where was the director of film The Duel born?",
            "Otakar Vávra",
            ["Otakar Vávra (28 February 1911) was a director."],
            "place",
        ),
        ("Where was the founder of Brand New Immortals born?", "He was born on April 19, 1968.", [], "place"),
        ("Where was the director of film The Duel born?", "Tbilisi", ["Dover Kosashvili (born in Tbilisi)."], ""),
        ("Where was the director of film The Duel born?", "He was born in Tbilisi, Georgia.", [], ""),
        ("What nationality is the director of film This Ain't Avatar XXX?", "Alexel Braun", [], "nationality"),
        ("What nationality is the director of film X?", "Italian", [], ""),
        ("Which country is the director of film X from?", "He was from Canada.", [], ""),
        # a question that names its candidates is the neither-candidate rule's
        ("Which film came out first, A or B?", "1999", [], ""),
        ("Who directed The Duel?", "Dover Kosashvili", ["directed by Dover Kosashvili"], ""),
    ],
)
def test_an_answer_of_the_wrong_kind(question: str, answer: str, observations: list[str], kind: str) -> None:
    from mia.graph.nodes.failure import wrong_kind

    assert wrong_kind(answer, question, observations) == kind
    failure = shown_failure([obs(o) for o in observations or [answer]], answer, "answered", question)
    if kind:
        assert failure is not None and answer[:20] in failure


# ---- plan_when "failure": plain ReAct first, the planner only after a failure the trace shows


def test_plan_when_failure_makes_no_planner_call_on_an_answer_without_a_failure() -> None:
    m = models(planner=[], executor=[CALL.format(q="Hamlet author"), "<answer>Hamlet author</answer>"])
    store = FakeStore(positives=[memory("p1", "Who wrote Macbeth?", "1. Search the play", "correct")])
    deps, _ = make_deps(m, store=store)
    out = run(deps, ctx(plan_when="failure"))
    assert out["answer"] == "Hamlet author" and not out["plan"]
    assert m["fake:planner"].prompts == [] and out["usage"]["planner"]["calls"] == 0
    # the executor's prompt is plain ReAct's: no plan, no memory
    none_prompt = models(executor=[CALL.format(q="x"), "<answer>x</answer>"])
    run(make_deps(none_prompt)[0], ctx(memory_mode="none"))
    assert m["fake:executor"].prompts[0][1].content == none_prompt["fake:executor"].prompts[0][1].content
    assert [s["args"]["failure"] for s in out["trajectory"]["steps"] if s["kind"] == "reflection"] == ["none shown"]
    assert out["used_memory_ids"] == []  # retrieved, never shown to a planner: nothing to credit


def test_plan_when_failure_plans_after_a_shown_failure_with_memory_and_the_attempt() -> None:
    question = "Where was the director of film The Duel born?"
    plan = '1. Search "Dover Kosashvili place of birth" -> #1\n2. Answer with #1.'
    m = models(
        planner=[plan],
        executor=[
            CALL.format(q=question),
            "<answer>Dover Kosashvili</answer>",
            CALL.format(q="Dover Kosashvili place of birth"),
            "<answer>Tbilisi</answer>",
        ],
    )
    store = FakeStore(
        positives=[memory("p1", "Where was the director of film X born?", "1. Search the director", "correct")]
    )
    tools = [
        search_tool(
            {
                question: "The Duel (2010), directed by Dover Kosashvili.",
                "Dover Kosashvili place of birth": "Dover Kosashvili was born in Tbilisi.",
            }
        )
    ]
    deps, _ = make_deps(m, store=store, tools=tools)
    out = run(deps, ctx(plan_when="failure"), question=question)
    assert out["answer"] == "Tbilisi" and out["plan"] == plan
    (prompt,) = m["fake:planner"].prompts  # one planner call: the first plan, after the failure
    request = prompt[-1].content
    assert "already tried this question without a plan" in request and "stopped one hop early" in request
    assert "directed by Dover Kosashvili" in request  # the attempt, its search result included
    assert "Search the director" in request  # the retrieved memory
    handed = m["fake:executor"].prompts[2][-1].content
    assert "not accepted yet" in handed and plan in handed
    assert "<answer>" not in str(m["fake:executor"].prompts[2][-2].content)  # the failed answer is held back
    steps = out["trajectory"]["steps"]
    assert [s for s in steps if s["kind"] == "replan"][0]["args"] == {"first_plan": True}
    assert out["trajectory"]["plan"] == plan
    assert out["used_memory_ids"] == ["p1"]  # the late plan was written with it: credited by the verdict


def test_plan_when_failure_does_not_follow_a_plan_that_only_repeats_the_searches() -> None:
    question = "Where was the director of film The Duel born?"
    m = models(
        planner=[f'1. Search "{question}"\n2. Answer with the place.'],
        executor=[CALL.format(q=question), "<answer>Dover Kosashvili</answer>"],
    )
    tools = [search_tool({question: "The Duel (2010), directed by Dover Kosashvili."})]
    deps, _ = make_deps(m, tools=tools)
    out = run(deps, ctx(plan_when="failure"), question=question)
    assert out["answer"] == "Dover Kosashvili" and len(m["fake:executor"].prompts) == 2
    (replan,) = [s for s in out["trajectory"]["steps"] if s["kind"] == "replan"]
    assert replan["args"]["dropped"] and out["usage"]["planner"]["calls"] == 1


def test_plan_when_is_checked_and_the_paper_plans_at_the_start() -> None:
    from mia.graph.context import check_values

    with pytest.raises(ValueError, match="plan_when must be one of start, failure"):
        check_values(Context(plan_when="sometimes"))  # type: ignore[arg-type]
    assert Context.paper().plan_when == "start"


@pytest.mark.real_model
def test_plan_when_failure_on_the_real_model(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The embedded model with plan_when "failure": the first search fails, so the attempt shows a
    failure whatever the executor does next (the failed search, or no answer at all: which one
    depends on the model's sampling on this CPU); the real planner then writes the first plan from
    that attempt (one planner call), and the executor goes on to an answer (searching again or not:
    that also depends on the CPU)."""
    from langchain_core.tools import StructuredTool

    from mia.graph.nodes.deps import Deps

    calls: list[list[str]] = []

    def search(query_list: list[str]) -> str:
        """Search the corpus."""
        calls.append(query_list)
        if len(calls) == 1:
            raise RuntimeError("the index is busy")
        return "The Duel is a 2010 film directed by Dover Kosashvili. Dover Kosashvili was born in Tbilisi, Georgia."

    tool = StructuredTool.from_function(search, name="search", description="Search the corpus with queries.")
    deps = Deps(tools_factory=lambda ctx, paragraphs: [tool])
    question = {"question": "Where was the director of film The Duel born?"}
    out = on_the_real_model(tmp_path, monkeypatch, question, deps, max_tool_calls=4, plan_when="failure")
    steps = out["trajectory"]["steps"]
    reflection = [s for s in steps if s["kind"] == "reflection"]
    shown = {render("planner", "failure_tool"), render("planner", "failure_no_answer")}
    assert reflection and reflection[0]["content"] == "yes" and reflection[0]["args"]["failure"] in shown
    (late,) = [s for s in steps if s["kind"] == "replan"]
    assert late["args"]["first_plan"] and late["content"]
    assert out["usage"]["planner"]["calls"] == 1
    assert out["plan"] == ("" if late["args"].get("dropped") else late["content"])
    # After the late plan the executor goes on: it searches again or answers (from the model's own
    # prior on some CPUs); either way a step follows the plan and the run ends with an answer.
    after = steps[steps.index(late) + 1 :]
    assert out["answer"] and any(s["kind"] in ("tool_call", "answer") for s in after)
