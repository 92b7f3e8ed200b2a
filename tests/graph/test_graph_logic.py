"""Graph logic with scripted fake models: every edge of the MIA loop."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from mia.graph.builder import build_graph, recursion_limit
from mia.graph.context import PAPER, Context
from mia.memory.compression import extractive_workflow
from mia.memory.trajectory import Trajectory

from .fakes import FakeStore, ScriptedChatModel, make_deps, memory, search_tool

CALL = '<think>I need facts</think><tool_call>{{"name": "search", "arguments": {{"query_list": ["{q}"]}}}}</tool_call>'


def models(
    planner: list[Any] | None = None,
    executor: list[Any] | None = None,
    manager: list[Any] | None = None,
    judge: list[Any] | None = None,
) -> dict[str, ScriptedChatModel]:
    return {
        "fake:planner": ScriptedChatModel(script=list(planner or [])),
        "fake:executor": ScriptedChatModel(script=list(executor or [])),
        "fake:manager": ScriptedChatModel(script=list(manager or [])),
        "fake:judge": ScriptedChatModel(script=list(judge or []), fallback="A"),
    }


def ctx(**kw: Any) -> Context:
    """The paper's settings (PAPER): these scripts hold the planner's yes/no reflection turn;
    tests/graph/test_ladder_fixes.py covers the defaults that differ."""
    base = dict(
        planner_model="fake:planner",
        executor_model="fake:executor",
        manager_model="fake:manager",
        judge_model="fake:judge",
        tool_protocol="text",
        min_tool_calls=0,  # search policy: test_search_policy
        **PAPER,
    )
    base.update(kw)
    return Context(**base)


def run(deps: Any, context: Context, **inputs: Any) -> dict[str, Any]:
    graph = build_graph(deps=deps)
    inputs.setdefault("question", "Who wrote Hamlet?")
    return graph.invoke(inputs, context=context, config={"recursion_limit": recursion_limit(context)})


def kinds(out: dict[str, Any]) -> list[str]:
    return [s["kind"] for s in out["trajectory"]["steps"]]


def test_tool_call_then_answer_and_no_replan() -> None:
    store = FakeStore(
        positives=[memory("p1", "Who wrote Macbeth?", "1. Search the play (play -> author)", "correct")],
        negatives=[memory("n1", "Who painted X?", "1. Guessed without searching", "incorrect")],
    )
    m = models(
        planner=["<think>private</think>1. Search for the play's author.", "<think>fine</think>no"],
        executor=[CALL.format(q="Hamlet author"), "<think>found it</think><answer>Shakespeare</answer>"],
    )
    deps, seen = make_deps(m, store=store)
    out = run(deps, ctx(), gold_answers=["William Shakespeare"])

    assert out["answer"] == "Shakespeare"
    assert out["plan"] == "1. Search for the play's author."
    assert kinds(out) == ["thought", "tool_call", "observation", "thought", "answer", "reflection"]
    assert out["tool_calls"] == 1 and out["replan"] == ""
    assert out["used_memory_ids"] == ["p1", "n1"]
    assert [(m["id"], m["outcome"]) for m in out["memories"]] == [("p1", "correct"), ("n1", "incorrect")]
    # the planner saw positives and negatives in separate sections
    plan_prompt = m["fake:planner"].prompts[0][1].content
    assert "Successful strategies (1)" in plan_prompt and "Failure lessons (1)" in plan_prompt
    assert plan_prompt.index("Macbeth") < plan_prompt.index("Failure lessons") < plan_prompt.index("painted")
    # the executor saw the plan and the tool result
    exec_prompt = m["fake:executor"].prompts[1]
    assert "1. Search for the play's author." in exec_prompt[1].content
    assert "<tool_response>" in exec_prompt[-1].content and "Doc 1 about Hamlet author" in exec_prompt[-1].content
    # judge, memory and stats
    assert seen["judge"][0]["mode"] == "ground_truth" and seen["judge"][0]["gold_answers"] == ["William Shakespeare"]
    assert out["judgement"]["outcome"] == "correct"
    assert out["memory_id"] == "mem-1"
    traj, compressor = store.memorised[0]
    assert traj.outcome == "correct" and traj.answer == "Shakespeare" and compressor.model is m["fake:manager"]
    assert store.stats == [(["p1", "n1"], True)]
    assert set(out["usage"]) == {"planner", "executor", "manager", "judge"}
    executor = out["usage"]["executor"]
    assert {k: executor[k] for k in ("calls", "input_tokens", "output_tokens", "cached_tokens")} == {
        "calls": 2,
        "input_tokens": 20,
        "output_tokens": 10,
        "cached_tokens": 8,
    }
    assert executor["ms"] >= 0
    assert out["usage"]["planner"]["calls"] == 2 and out["usage"]["judge"]["calls"] == 1


def test_reflection_yes_replans_once_and_continues_the_same_history() -> None:
    m = models(
        planner=["1. Search.", "yes", "<think>missed the year</think>1. Search the year.", "unused"],
        executor=["<answer>guess</answer>", CALL.format(q="year"), "<answer>1603</answer>"],
    )
    deps, seen = make_deps(m, judge_outcome="incorrect")
    store = seen["store"]
    store.positives = [memory("p1", "q", "w", "correct")]
    out = run(deps, ctx())

    assert out["answer"] == "1603"
    assert out["replan"] == "1. Search the year."
    assert kinds(out) == ["answer", "reflection", "replan", "thought", "tool_call", "observation", "answer"]
    # only one reflection although max_replans=1 was used up: the planner got plan, reflect, replan
    assert len(m["fake:planner"].prompts) == 3
    replan_prompt = m["fake:planner"].prompts[2]
    assert [type(x).__name__ for x in replan_prompt] == [
        "SystemMessage",
        "HumanMessage",
        "AIMessage",
        "HumanMessage",
        "AIMessage",
        "HumanMessage",
    ]
    assert "Revised plan" not in replan_prompt[3].content and "Answer: guess" in replan_prompt[3].content
    # the executor continued: its last turn was cut before <answer> and the revised plan appended
    second = m["fake:executor"].prompts[1]
    assert isinstance(second[-2], AIMessage) and "<answer>" not in second[-2].content
    assert isinstance(second[-1], HumanMessage) and "1. Search the year." in second[-1].content
    assert store.stats == [(["p1"], False)]


def test_reflection_unparseable_counts_as_no() -> None:
    m = models(planner=["1. Search.", "<think>hmm</think>"], executor=["<answer>x</answer>"])
    deps, _ = make_deps(m)
    out = run(deps, ctx())
    assert out["answer"] == "x" and out["replan"] == ""
    assert any("unclear reflection" in w for w in out["warnings"])


def test_budget_exhausted_forces_an_answer() -> None:
    m = models(planner=["1. Search a lot."], executor=[CALL.format(q="a"), CALL.format(q="b"), "Answer: forced one"])
    deps, _ = make_deps(m)
    out = run(deps, ctx(max_tool_calls=2, max_replans=0))
    assert out["tool_calls"] == 2
    assert out["answer"] == "forced one"
    assert out["stop_reason"] == "forced:budget"
    last_prompt = m["fake:executor"].prompts[-1]
    assert "used all your tool calls" in last_prompt[-1].content


def test_context_budget_forces_an_answer() -> None:
    tool = search_tool(results={"a": "word " * 3000})
    m = models(planner=["1."], executor=[CALL.format(q="a"), "<answer>short</answer>"])
    deps, _ = make_deps(m, tools=[tool])
    out = run(deps, ctx(max_context_tokens=500, max_observation_words=5000, max_replans=0))
    assert out["stop_reason"] == "forced:context" and out["answer"] == "short"
    assert "too long" in m["fake:executor"].prompts[-1][-1].content


def test_malformed_output_is_asked_again_then_forced() -> None:
    m = models(
        planner=["1."],
        executor=[
            "<think>only thinking",
            "<tool_call>nonsense</tool_call>",
            "",
            "<think>ok</think>still no tags? Answer: 42",
        ],
    )
    deps, _ = make_deps(m)
    out = run(deps, ctx(max_replans=0, max_format_retries=2))
    assert out["answer"] == "42"
    assert out["stop_reason"] == "forced:format"
    prompts = m["fake:executor"].prompts
    assert "did not follow the format" in prompts[1][-1].content
    assert len(prompts) == 4


def test_malformed_once_then_recovers() -> None:
    m = models(planner=["1."], executor=["<tool_call>{broken", "<answer>fine</answer>"])
    deps, _ = make_deps(m)
    out = run(deps, ctx(max_replans=0))
    assert out["answer"] == "fine" and out["stop_reason"] == "answered"


def test_failing_and_unknown_tools_become_observations() -> None:
    m = models(
        planner=["1."],
        executor=[
            CALL.format(q="x"),
            '<tool_call>{"name": "calculator", "arguments": {"x": 1}}</tool_call>',
            "<answer>done</answer>",
        ],
    )
    deps, _ = make_deps(m, tools=[search_tool(fail=True)])
    out = run(deps, ctx(max_replans=0))
    obs = [s["content"] for s in out["trajectory"]["steps"] if s["kind"] == "observation"]
    assert "index is on fire" in obs[0] and "no tool named 'calculator'" in obs[1]
    assert out["answer"] == "done" and out["tool_calls"] == 2


def test_native_tool_calls_use_tool_messages() -> None:
    call = AIMessage(content="", tool_calls=[{"name": "search", "args": {"query_list": ["q"]}, "id": "c1"}])
    m = models(planner=["1."], executor=[call, "<answer>nat</answer>"])
    deps, _ = make_deps(m)
    out = run(deps, ctx(tool_protocol="native", max_replans=0))
    assert out["answer"] == "nat"
    second = m["fake:executor"].prompts[1]
    assert isinstance(second[-1], ToolMessage) and second[-1].tool_call_id == "c1"
    assert m["fake:executor"].bound_tools and m["fake:executor"].bound_tools[0].name == "search"


def test_memory_mode_none_is_plain_react() -> None:
    m = models(executor=[CALL.format(q="x"), "<answer>plain</answer>"])
    deps, seen = make_deps(m)
    out = run(deps, ctx(memory_mode="none"))
    assert out["answer"] == "plain" and m["fake:planner"].prompts == []
    assert seen["store"].retrieve_calls == [] and seen["store"].memorised == [] and out["memory_id"] is None
    assert "reflection" not in kinds(out)


def test_trajectory_rag_pastes_raw_trajectories_and_logs_raw() -> None:
    from mia.memory.trajectory import Trajectory

    store = FakeStore()
    store.logged.append(Trajectory(question="Who wrote Othello?", answer="Shakespeare", outcome="correct"))
    m = models(executor=["<answer>rag</answer>"])
    deps, _ = make_deps(m, store=store)
    out = run(deps, ctx(memory_mode="trajectory-rag"))
    assert out["answer"] == "rag" and m["fake:planner"].prompts == []
    assert "Who wrote Othello?" in m["fake:executor"].prompts[0][1].content
    assert len(store.logged) == 2 and store.memorised == []
    # the output says which trajectories were pasted, without crediting them as workflows
    assert [(x["question"], x["outcome"], x["similarity"]) for x in out["memories"]] == [
        ("Who wrote Othello?", "correct", 1.0)
    ]
    assert out["memories"][0]["id"] == store.logged[0].id and out["used_memory_ids"] == [] and store.stats == []


def test_preset_plan_skips_planner_but_keeps_reflection() -> None:
    m = models(planner=["no"], executor=["<answer>p</answer>"])
    deps, _ = make_deps(m)
    out = run(deps, ctx(), plan="1. Use the preset plan.")
    assert out["plan"] == "1. Use the preset plan."
    assert len(m["fake:planner"].prompts) == 1  # the reflection only
    assert "1. Use the preset plan." in m["fake:executor"].prompts[0][1].content


def test_judge_off_and_no_memorise() -> None:
    m = models(planner=["1.", "no"], executor=["<answer>a</answer>"])
    deps, seen = make_deps(m)
    out = run(deps, ctx(judge_mode="off", memorise=False))
    assert out["judgement"] is None and seen["judge"] == [] and seen["store"].memorised == []


def test_broken_store_and_judge_keep_the_answer() -> None:
    class Broken(FakeStore):
        def retrieve(self, *a: Any, **k: Any) -> Any:
            raise OSError("chroma is corrupt")

        def memorise(self, *a: Any, **k: Any) -> Any:
            raise OSError("disk full")

    m = models(planner=["1.", "no"], executor=["<answer>kept</answer>"])
    deps, _ = make_deps(m, store=Broken())
    deps._judge = lambda **kw: (_ for _ in ()).throw(RuntimeError("judge down"))
    out = run(deps, ctx())
    assert out["answer"] == "kept"
    text = json.dumps(out["warnings"])
    assert "chroma is corrupt" in text and "disk full" in text and "judge down" in text


def test_thread_holds_several_questions_and_resets_per_question() -> None:
    m = models(planner=["1.", "no", "1.", "no"], executor=["<answer>one</answer>", "<answer>two</answer>"])
    deps, _ = make_deps(m)
    graph = build_graph(checkpointer=InMemorySaver(), deps=deps)
    cfg = {"configurable": {"thread_id": "t1"}}
    empty = {"plan": None, "gold_answers": None, "paragraphs": None, "caption": None}
    first = graph.invoke({"question": "Q1", **empty}, cfg, context=ctx())
    second = graph.invoke({"question": "Q2", **empty}, cfg, context=ctx())
    assert first["answer"] == "one" and second["answer"] == "two"
    assert kinds(second) == ["answer", "reflection"]
    assert second["usage"]["executor"]["calls"] == 1
    state = graph.get_state(cfg).values
    assert len(state["messages"]) == 3  # system, question, answer of Q2 only


@pytest.mark.parametrize("mode", ["mia", "none", "trajectory-rag"])
async def test_async_invoke(mode: str) -> None:
    m = models(planner=["1.", "no"], executor=["<answer>async</answer>"])
    deps, _ = make_deps(m)
    out = await build_graph(deps=deps).ainvoke({"question": "Q"}, context=ctx(memory_mode=mode))
    assert out["answer"] == "async"


def test_context_schema_has_descriptions() -> None:
    from dataclasses import fields

    for f in fields(Context):
        assert f.metadata.get("description"), f.name
    assert Context.coerce({"max_tool_calls": 3, "bogus": 1}).max_tool_calls == 3


def test_a_second_question_in_a_thread_does_not_inherit_the_first_ones_inputs() -> None:
    """Defect 12.1: "Capital of Italy?" after "Capital of France?" was planned as "1. Search Paris."
    and graded against ["Paris"]: plan, gold answers, paragraphs and caption leaked."""
    m = models(
        planner=["1. Search Paris.", "no", "1. Search Rome.", "no"],
        executor=["<answer>Paris</answer>", "<answer>Rome</answer>"],
    )
    deps, seen = make_deps(m)
    given: list[Any] = []
    deps._tools_factory = lambda ctx, paragraphs: given.append(paragraphs) or [search_tool()]
    graph = build_graph(checkpointer=InMemorySaver(), deps=deps)
    cfg = {"configurable": {"thread_id": "leak"}}
    graph.invoke(
        {
            "question": "Capital of France?",
            "gold_answers": ["Paris"],
            "caption": "a map of France",
            "paragraphs": [{"title": "France", "text": "Paris is the capital."}],
        },
        cfg,
        context=ctx(),
    )
    second = graph.invoke({"question": "Capital of Italy?"}, cfg, context=ctx())
    assert second["plan"] == "1. Search Rome."
    assert "Capital of Italy?" in m["fake:planner"].prompts[2][-1].content
    assert seen["judge"][1]["gold_answers"] is None
    assert given[-1] is None
    assert second["trajectory"]["caption"] == "" and second["trajectory"]["gold_answers"] == []
    # a preset plan is used for its own question only
    graph.invoke({"question": "Q3", "plan": "1. Preset."}, cfg, context=ctx())
    fourth = graph.invoke(
        {"question": "Q4"},
        cfg,
        context=ctx(),
    )
    assert fourth["plan"] != "1. Preset."


def test_a_question_after_a_run_that_raised_inherits_nothing_from_it() -> None:
    """Issue 38: a run that raises never reaches `close_question`; the next question of the thread
    was graded against the failed one's gold answers, shown its caption and given its plan."""
    m = models(
        planner=["1. Search Paris.", "1. Search Rome.", "no", "1. Search Bern.", "no"],
        executor=["<answer>Rome</answer>", "<answer>Bern</answer>"],
    )
    deps, seen = make_deps(m)
    given: list[Any] = []

    def tools(context: Any, paragraphs: Any) -> list[Any]:
        given.append(paragraphs)
        if len(given) == 1:
            raise RuntimeError("the search backend is down")
        return [search_tool()]

    deps._tools_factory = tools
    graph = build_graph(checkpointer=InMemorySaver(), deps=deps)
    cfg = {"configurable": {"thread_id": "failed"}}
    with pytest.raises(RuntimeError, match="backend is down"):
        graph.invoke(
            {
                "question": "Capital of France?",
                "gold_answers": ["Paris"],
                "caption": "a map of France",
                "paragraphs": [{"title": "France", "text": "Paris is the capital."}],
            },
            cfg,
            context=ctx(),
        )
    assert graph.get_state(cfg).values["plan"] == "1. Search Paris."  # the failed run stopped midway
    second = graph.invoke({"question": "Capital of Italy?"}, cfg, context=ctx())
    assert second["plan"] == "1. Search Rome." and given[-1] is None
    assert seen["judge"][-1]["gold_answers"] is None
    assert second["trajectory"]["caption"] == "" and second["trajectory"]["gold_answers"] == []
    # what a caller gives is used, even the same values as the failed run's
    third = graph.invoke({"question": "Capital of Switzerland?", "gold_answers": ["Paris"]}, cfg, context=ctx())
    assert seen["judge"][-1]["gold_answers"] == ["Paris"] and third["trajectory"]["gold_answers"] == ["Paris"]


def test_a_role_takes_a_chat_model_object_instead_of_a_spec() -> None:
    """Issue 39: `build_graph(models={...})` hands roles chat model objects; the context's spec
    for those roles is never loaded, a given manager replaces the extractive default, and a bad
    role or a spec string in place of a model is a clear error."""
    from mia.graph.models.spec import EXTRACTIVE

    m = models(planner=["unused"], executor=["unused"])
    mine = {
        "planner": ScriptedChatModel(script=["1. Search the author.", "no"]),
        "executor": ScriptedChatModel(script=[CALL.format(q="Hamlet author"), "<answer>Shakespeare</answer>"]),
        "manager": ScriptedChatModel(script=[]),
    }
    deps, seen = make_deps(m)
    graph = build_graph(deps=deps, models=mine)
    context = ctx(planner_model="nobody:has-this", manager_model=EXTRACTIVE)
    out = graph.invoke(
        {"question": "Who wrote Hamlet?", "gold_answers": ["Shakespeare"]},
        context=context,
        config={"recursion_limit": recursion_limit(context)},
    )
    assert out["answer"] == "Shakespeare" and out["plan"] == "1. Search the author."
    assert not m["fake:planner"].prompts and not m["fake:executor"].prompts  # the specs' models were never asked
    assert len(mine["executor"].prompts) == 2 and seen["compressor"] == [mine["manager"]]
    with pytest.raises(ValueError, match="unknown role 'critic'"):
        build_graph(deps=deps, models={"critic": mine["planner"]})
    with pytest.raises(TypeError, match="a spec string goes in the Context: executor_model"):
        build_graph(deps=deps, models={"executor": "openai:gpt-4.1-mini"})


def test_memory_that_cannot_work_in_this_install_is_loudly_off(tmp_path, monkeypatch) -> None:
    """Issue 39: with no embedding model, the graph answered with memory failing into
    `warnings` only; now the run stops before any model call with one line that says what to do,
    and `memory_mode="none"` still answers."""
    from mia.memory import EmbeddingModelMissingError, MemoryStore

    monkeypatch.setenv("MIA_EMBEDDING_MODEL", str(tmp_path / "no-such-model"))
    m = models(planner=["1. Search.", "no"], executor=["<answer>Shakespeare</answer>"])
    deps, _ = make_deps(m, store_factory=lambda path: MemoryStore.open(tmp_path / "memory"))
    with pytest.raises(EmbeddingModelMissingError, match="not 'minilm' and not a local folder"):
        run(deps, ctx())
    assert not any(model.prompts for model in m.values())
    assert run(deps, ctx(memory_mode="none"))["answer"] == "Shakespeare"
    # the base install (no `local` extra, MiniLM not fetched): the line says what to run
    import mia.memory.embeddings as embeddings

    monkeypatch.setattr(embeddings.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setenv("MIA_DATA_DIR", str(tmp_path / "data"))
    with pytest.raises(EmbeddingModelMissingError, match="run `mia models fetch minilm`"):
        embeddings.minilm_path()


def test_the_graphs_store_flags_copies_of_its_own_prompt_examples(tmp_path, monkeypatch) -> None:
    """The default store is opened with the graph's prompt templates: a workflow copying the
    planner's worked example ("river A length") is stored flagged and never retrieved."""
    from mia.graph.nodes.deps import Deps
    from mia.memory import MemoryRecord

    monkeypatch.setenv("MIA_CHROMA_MODE", "persistent")
    store = Deps().memory_store(Context(data_dir=str(tmp_path)))
    try:
        copied = MemoryRecord(
            namespace="n",
            question="Which river is longer, the Po or the Rhine?",
            outcome="correct",
            workflow='1. Search "river A length".\n2. Search "river B length".\n3. Compare the two search results.',
        )
        clean = MemoryRecord(
            namespace="n",
            question="Which river is longer, the Elbe or the Oder?",
            outcome="correct",
            workflow='1. Search "Elbe length".\n2. Search "Oder length".\n3. Compare the lengths.',
        )
        store.add_many([copied, clean])
        assert store.get(copied.id, "n").flags and not store.get(clean.id, "n").flags
        got = store.retrieve("Which river is longer, the Po or the Rhine?", namespace="n", k_pos=2, k_neg=0)
        assert [m.record.id for m in got.positives] == [clean.id]
    finally:
        store.close()


def test_the_extractive_manager_stores_a_workflow_without_a_model_call() -> None:
    """`manager_model="extractive"`: the trajectory is compressed by the deterministic workflow,
    no manager model is built or called (the embedded models copied the prompt's format instead of
    summarising: bench/memory/manager*.md)."""
    from mia.memory import Compressor

    m = models(
        planner=["1. Search the author.", "no"],
        executor=[CALL.format(q="Hamlet author"), "<answer>Shakespeare</answer>"],
    )
    del m["fake:manager"]  # building it would fail the test
    deps, seen = make_deps(m, compressor_factory=Compressor)
    out = run(deps, ctx(manager_model="extractive"), question="Who wrote Hamlet?", gold_answers=["Shakespeare"])
    assert seen["compressor"] == [None]
    traj, compressor = seen["store"].memorised[0]
    assert compressor.model is None and compressor.compress(traj).method == "extractive"
    assert out["usage"]["manager"]["calls"] == 0 and out["memory_id"] == "mem-1" and not out.get("warnings")


def test_an_answer_that_loops_is_cut_before_it_is_judged_and_stored() -> None:
    """Qwen-1.5B looped inside its answer until the token limit (1,467 characters on HotpotQA); the
    graph's answer, the trajectory the manager stores and the judge's input keep the first pass."""
    loop = "Dracula has more species. Crowea has three species. "
    m = models(
        planner=["1. Search both genera.", "no"],
        executor=[CALL.format(q="Dracula genus"), "<answer>" + loop * 5 + "Dracula has</answer>"],
    )
    deps, seen = make_deps(m)
    out = run(deps, ctx(), gold_answers=["Dracula"])
    assert out["answer"] == loop.strip()
    assert out["trajectory"]["answer"] == loop.strip()
    traj, _ = seen["store"].memorised[0]
    assert traj.answer == loop.strip()


@pytest.mark.parametrize("floor, shown", [(None, ["p1", "n1"]), (0.5, ["p1", "n1"]), (0.9, [])])
def test_the_similarity_floor_decides_which_memories_reach_the_planner(floor: float | None, shown: list[str]) -> None:
    store = FakeStore(
        positives=[memory("p1", "Who wrote Macbeth?", "1. Search the play's author", "correct")],
        negatives=[memory("n1", "Who painted X?", "1. Guessed without searching", "incorrect")],
    )
    m = models(
        planner=["1. Search the author.", "no"],
        executor=[CALL.format(q="Hamlet author"), "<answer>Shakespeare</answer>"],
    )
    deps, seen = make_deps(m, store=store)
    out = run(deps, ctx(min_similarity=floor))
    assert out["used_memory_ids"] == shown
    planner_prompt = " ".join(str(msg.content) for msg in m["fake:planner"].prompts[0])
    assert ("Guessed without searching" in planner_prompt) == bool(shown)
    assert [mem["similarity"] for mem in out["memories"]] == [0.8] * len(shown)


def test_a_similarity_floor_outside_the_cosine_range_is_refused() -> None:
    with pytest.raises(ValueError, match="min_similarity"):
        ctx(min_similarity=1.5)


def test_a_replan_that_only_repeats_the_plan_is_not_followed_and_the_answer_stands() -> None:
    """Asked to replan, small planners often write their plan again; the executor would only search
    and answer again, so with `drop_repeated_replan` the first answer stands and the replan is
    recorded as dropped."""
    plan = '1. Search "Hamlet author".\n2. Answer with the author.'
    m = models(
        planner=[plan, "yes", '1. **Search "Hamlet author"**\n2. Answer with the author.', "unused"],
        executor=[CALL.format(q="Hamlet author"), "<answer>Shakespeare</answer>", "<answer>unused</answer>"],
    )
    deps, _ = make_deps(m)
    out = run(deps, ctx(drop_repeated_replan=True))

    assert out["answer"] == "Shakespeare" and out["replan"] == ""
    assert kinds(out) == ["thought", "tool_call", "observation", "answer", "reflection", "replan"]
    dropped = out["trajectory"]["steps"][-1]
    assert dropped["args"] == {"dropped": "it repeats the plan"}
    assert len(m["fake:executor"].prompts) == 2 and out["tool_calls"] == 1  # the executor was not run again
    assert "not followed: it repeats the plan" in Trajectory.model_validate(out["trajectory"]).to_trace_text()
    assert "Revise the plan" not in extractive_workflow(Trajectory.model_validate(out["trajectory"]))


def test_a_repeated_replan_is_followed_with_the_papers_settings() -> None:
    plan = '1. Search "Hamlet author".'
    m = models(
        planner=[plan, "yes", plan],
        executor=[CALL.format(q="Hamlet author"), "<answer>Marlowe</answer>", "<answer>Shakespeare</answer>"],
    )
    deps, _ = make_deps(m)
    out = run(deps, ctx())
    assert out["answer"] == "Shakespeare" and out["replan"] == plan
    assert kinds(out)[-2:] == ["replan", "answer"] and len(m["fake:executor"].prompts) == 3
