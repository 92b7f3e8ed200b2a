"""Trajectory -> workflow compression: fake models for each repair path, then the real SmolLM2."""

from __future__ import annotations

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from mia.memory import Compressor
from mia.memory.compression import extractive_workflow, first_plan_step, load_prompts, parse_steps
from mia.memory.trajectory import Trajectory, TrajectoryStep

from .conftest import make_trajectory

TRAJ = make_trajectory(
    "Which magazine was started first, Arthur's Magazine or First for Women?",
    answer="Arthur's Magazine",
    queries=("Arthur's Magazine founded", "First for Women magazine founded"),
    observation="Arthur's Magazine (1844-1846) was an American literary periodical.",
)


class BrokenModel(FakeListChatModel):
    """A backend that always fails (network down, missing key...)."""

    def _call(self, *args, **kwargs):  # noqa: D401
        raise ConnectionError("backend unreachable")


def test_prompt_is_data_and_formats():
    prompts = load_prompts()
    text = prompts["compress"]["user"].format(trace="TRACE", max_words=300, example=prompts["compress"]["example"])
    assert "TRACE" in text and "300" in text and "purpose (input -> output)" in text
    assert prompts["compress"]["example"] in text


GOOD = (
    "1. Identify both magazines (question -> two titles)\n"
    '2. Search founding years (query "Arthur\'s Magazine founded" -> 1844)\n'
    '3. Search the second magazine (query "First for Women magazine founded" -> 1989)\n'
    "4. Compare and answer (years -> Arthur's Magazine; judged correct)"
)


def test_good_output_is_kept():
    result = Compressor(FakeListChatModel(responses=[GOOD])).compress(TRAJ)
    assert result.method == "model" and result.attempts == 1
    assert result.workflow == GOOD


def test_messy_output_is_repaired():
    messy = (
        "<think>let me see</think>Here is the workflow:\n- **Identify the magazines** (question → titles)\n"
        "- Search dates (titles → years)\n- Search dates (titles → years)\n- Answer (years → earlier one)"
    )
    result = Compressor(FakeListChatModel(responses=[messy])).compress(TRAJ)
    assert result.method == "repaired"
    lines = result.workflow.splitlines()
    assert lines[0] == "1. Identify the magazines (question -> titles)"
    assert len(lines) == 4  # the repeated step dropped, the key queries step added
    assert "Arthur's Magazine founded" in result.workflow  # key searches kept even if the model dropped them
    assert lines[-1].endswith("Answer (years -> earlier one; judged correct)")
    assert {"bullets renumbered", "repeated step dropped", "key search queries added"} <= set(result.problems)


def test_the_visible_text_reader_drops_a_reasoning_models_thoughts():
    """Memory does not parse model markup: the caller says what of a reply is visible (the graph
    passes its protocol's strip_think), so numbered lines inside a thought never become steps."""
    reply = "<think>1. Guess the answer from memory\n2. Skip the search</think>" + GOOD
    hidden = Compressor(FakeListChatModel(responses=[reply]), visible_text=lambda t: t.split("</think>")[-1])
    assert hidden.compress(TRAJ).workflow == GOOD
    raw = Compressor(FakeListChatModel(responses=[reply])).compress(TRAJ)
    assert "Skip the search" in raw.workflow  # without a reader the reply is taken as written


def test_the_graphs_compressor_reads_replies_with_the_protocol() -> None:
    from mia.graph.nodes.deps import Deps

    reply = "<think>1. Guess the answer from memory</think>" + GOOD
    assert Deps().compressor(FakeListChatModel(responses=[reply])).compress(TRAJ).workflow == GOOD


def test_over_long_output_is_cut_to_budget():
    vocab = [f"term{j}" for j in range(400)]
    steps = "\n".join(
        f'{i}. Check {" ".join(vocab[i * 8 : i * 8 + 8])} ("Arthur\'s Magazine founded" -> facts)' for i in range(1, 40)
    )
    result = Compressor(FakeListChatModel(responses=[steps]), max_words=60).compress(TRAJ)
    assert result.method == "repaired" and "cut to the word budget" in result.problems
    assert len(result.workflow.split()) <= 60
    assert result.workflow.splitlines()[-1].startswith(f"{len(result.workflow.splitlines())}.")


def test_garbage_is_retried_then_falls_back_to_extractive():
    model = FakeListChatModel(
        responses=[
            "1. the the the the the the the the the the the the the the the the the the the the",
            '1. Look up the dates (query "<the exact query used>" -> a year)',
        ]
    )
    result = Compressor(model).compress(TRAJ)
    assert result.attempts == 2 and result.method == "extractive"
    assert result.problems == [
        "it repeats itself",
        "it copied the format example instead of describing this transcript",
    ]
    assert result.workflow == extractive_workflow(TRAJ)


def test_transcript_echo_and_copied_plan_are_handled():
    echo = (
        "1. Look up both magazines (query \"Arthur's Magazine founded\" -> 1844)\n2. Answer (dates -> Arthur's)\n"
        "Round 1\nThought: I should search.\nTool call: search(...)\nmore echoed text"
    )
    result = Compressor(FakeListChatModel(responses=[echo])).compress(TRAJ)
    assert result.method == "repaired" and "transcript echo dropped" in result.problems
    assert result.workflow.splitlines()[-1] == "2. Answer (dates -> Arthur's; judged correct)"  # the verdict added
    plan_copy = "1. Search for the entities.\n2. Compare."
    result = Compressor(FakeListChatModel(responses=[plan_copy, plan_copy])).compress(TRAJ)
    assert result.method == "extractive"
    assert result.problems == ["it copied the plan instead of summarising what the agent did"] * 2


def test_real_smollm2_output_that_replays_the_transcript_is_rejected():
    # verbatim from bench/memory/compression.json (SmolLM2-135M, a HotpotQA trajectory)
    traj = make_trajectory("Lisa Raymond and Liezel Huber won which tournament?", queries=("Lisa Raymond doubles",))
    traj.plan = (
        "1. Identify the entities the question depends on.\n2. Search for each entity and extract the "
        "linking fact.\n3. Combine the facts and verify them before answering."
    )
    output = (
        "1. Identify the entities the question depends on: Lisa Raymond and Liezel Huber\n"
        "2. Search for each entity and extract the linking fact\n3. Combine the facts and verify them before answering\n"
        "4. Output the final answer: 2013 Dubai Tennis Championships\n"
        "5. Round 1: 1. Lisa Raymond has won more Grand than any other woman in women's doubles history\n"
        "6. Round 2: 2. The Williams sisters have achieved their most recent grand slam doubles titles"
    )
    result = Compressor(FakeListChatModel(responses=[output, output])).compress(traj)
    assert result.method == "extractive"
    assert result.problems == ["it copied the plan instead of summarising what the agent did"] * 2


def test_the_format_template_copied_with_its_slots_unfilled_is_rejected():
    """The prompt's format is a template with <slots>. Before it was, it was a worked example for
    another question, and both embedded Qwen models copied its steps into 31 of 32 first outputs
    (bench/memory/manager-concrete-example.md). A copy of the template's step purposes or of its
    quoted placeholder describes the template, not the transcript."""
    traj = make_trajectory(
        "Which Argentine telenovela starred Isabel Macedo as Jimena Benitez?",
        outcome="incorrect",
        queries=("Isabel Macedo Jimena Benitez telenovela",),
    )
    template = load_prompts()["compress"]["example"]
    assert "<" in template and "(" in template  # slots, and the purpose (input -> output) form
    unfilled = (
        "1. <what the step was for> (question -> the actress and the role)\n"
        '2. Search <the thing looked up> (query "Isabel Macedo Jimena Benitez telenovela" -> Dulce amor)'
    )
    placeholder = (
        '1. Search the actress (query "<the exact query used>" -> Dulce amor)\n2. Answer (Dulce amor -> Dulce amor)'
    )
    for output in (unfilled, placeholder):
        result = Compressor(FakeListChatModel(responses=[output, output])).compress(traj)
        assert result.method == "extractive"
        assert result.problems == ["it copied the format example instead of describing this transcript"] * 2
    filled = (
        '1. Identify the actress and her role (question -> "Isabel Macedo", "Jimena Benitez")\n'
        '2. Search the actress and role together (query "Isabel Macedo Jimena Benitez telenovela" -> Dulce amor)\n'
        "3. Answer (the search result -> Dulce amor)"
    )
    result = Compressor(FakeListChatModel(responses=[filled])).compress(traj)
    assert result.method == "model" and result.workflow.endswith("(the search result -> Dulce amor; judged incorrect)")


def test_the_verdict_in_a_workflow_is_the_stores_not_the_models():
    traj = make_trajectory(
        "Which magazine was started first?", outcome="incorrect", queries=("Arthur's Magazine founded",)
    )
    claims_success = (
        '1. Search the first magazine (query "Arthur\'s Magazine founded" -> 1844)\n'
        "2. Answer (years -> First for Women; judged correct)"
    )
    result = Compressor(FakeListChatModel(responses=[claims_success])).compress(traj)
    assert result.method == "repaired" and "outcome claim corrected" in result.problems
    assert result.workflow.endswith("(years -> First for Women; judged incorrect)")
    silent = '1. Search the first magazine (query "Arthur\'s Magazine founded" -> 1844)\n2. Answer (years -> First for Women)'
    result = Compressor(FakeListChatModel(responses=[silent])).compress(traj)
    assert result.method == "model" and result.workflow.endswith("(years -> First for Women; judged incorrect)")
    unjudged = make_trajectory(
        "Which magazine was started first?", outcome="unknown", queries=("Arthur's Magazine founded",)
    )
    result = Compressor(FakeListChatModel(responses=[claims_success])).compress(unjudged)
    assert result.workflow.endswith("(years -> First for Women; not judged)")


def test_a_bulleted_replay_of_the_transcript_is_not_a_workflow():
    # verbatim from the Qwen-0.5B manager (bench/memory/manager.json): our instruction echoed as
    # step 1, then the transcript's tool call and raw tool result as bullets
    traj = make_trajectory(
        "Jamell Anderson plays for the basketball team from what city?",
        outcome="incorrect",
        queries=("Jamell Anderson",),
    )
    replay = (
        "1. Summarize what the agent did as numbered steps:\n"
        '   - Search for the answer to the question "Jamell Anderson plays for the basketball team from what city? "\n'
        '   - Tool call: search({"query_list": ["Jamell Anderson", "basketball team", "city"]})\n'
        '   - Tool result: Results for "Jamell Anderson": Doc 1 (Title: Jamell Anderson) Jamell Anderson (born 6 July '
        "1990) is a British professional basketball player"
    )
    steps, repairs = parse_steps(replay)
    assert steps == [
        'Search for the answer to the question "Jamell Anderson plays for the basketball team from what city? "'
    ]
    assert repairs == ["bullets renumbered", "transcript echo dropped"]
    workflow = Compressor(FakeListChatModel(responses=[replay])).compress(traj).workflow
    assert "Tool result" not in workflow and "born 6 July" not in workflow


def test_retry_can_succeed():
    model = FakeListChatModel(
        responses=[
            "Sure! Here is the workflow you asked for.",  # not empty: an empty reply goes to the fallback at once
            "1. Look up both magazines (query \"Arthur's Magazine founded\" -> 1844)\n2. Answer (dates -> Arthur's)",
        ]
    )
    result = Compressor(model).compress(TRAJ)
    assert result.attempts == 2 and result.method == "model" and result.problems == ["no numbered steps found"]


def test_failing_backend_never_loses_the_trajectory():
    result = Compressor(BrokenModel(responses=["x"])).compress(TRAJ)
    assert result.method == "extractive" and result.attempts == 2
    assert all("backend unreachable" in p for p in result.problems)
    assert Compressor(None).compress(TRAJ).method == "extractive"


def test_extractive_workflow_is_deterministic_complete_and_bounded():
    flow = extractive_workflow(TRAJ)
    assert flow == extractive_workflow(TRAJ)
    lines = flow.splitlines()
    assert lines[0].startswith("1. Plan the approach")
    assert '"Arthur\'s Magazine founded"' in flow and '"First for Women magazine founded"' in flow
    assert (
        lines[-1]
        == f'{len(lines)}. Answer from the gathered evidence (evidence -> "Arthur\'s Magazine"; judged correct)'
    )
    many = make_trajectory(
        "q", outcome="incorrect", queries=tuple(f"query {i}" for i in range(40)), observation="word " * 500
    )
    bounded = extractive_workflow(many, max_words=120)
    assert len(bounded.split()) <= 120 and "judged incorrect: wrong entity" in bounded
    assert "more tool calls" in bounded


def test_extractive_workflow_names_the_sources_found_not_the_raw_tool_text():
    """A search step keeps the titles the tool read; raw result text stays out (2Wiki warm-up
    workflows of 2 Dec 2026 read 'query "X" -> Results for "X": Doc 1 (Title: ...')."""
    raw = (
        'Results for "Cass director": Doc 1 (Title: Cass (film)) Cass is a 2008 British film directed by Jon S. Baird.'
    )
    steps = [
        TrajectoryStep(kind="tool_call", tool="search", args={"query_list": ["Cass director"]}),
        TrajectoryStep(
            kind="observation",
            content=raw,
            tool="search",
            sources=["Cass (film)", "Jon S. Baird", "Cass Pennant", "Cass Elliot"],
        ),
        TrajectoryStep(kind="tool_call", tool="search", args={"query_list": ["Jon S. Baird born"]}),
        TrajectoryStep(kind="observation", content="Error: the search tool failed (timeout).", tool="search"),
        TrajectoryStep(kind="tool_call", tool="lookup", args={"key": "x"}),
        TrajectoryStep(kind="observation", content="a tool that names no sources answers this", tool="lookup"),
    ]
    # the planner copied a retrieved workflow's first step, markdown included, into its plan
    plan = '1. **Plan the approach (question -> Plan the approach (question -> Search "Cass director".))**:\n2. Answer.'
    flow = extractive_workflow(
        Trajectory(
            question="Where was the director of Cass born?", plan=plan, steps=steps, answer="Glasgow", outcome="correct"
        )
    )
    lines = flow.splitlines()
    assert lines[0] == '1. Plan the approach (question -> Search "Cass director".)'
    assert (
        lines[1]
        == '2. Search for evidence (query "Cass director" -> found Cass (film); Jon S. Baird; Cass Pennant and 1 more)'
    )
    assert lines[2] == '3. Search for evidence (query "Jon S. Baird born" -> the tool failed)'
    assert lines[3] == "4. Call lookup (query {'key': 'x'} -> a tool that names no sources answers this)"
    assert "Results for" not in flow and "Doc 1" not in flow


@pytest.mark.parametrize(
    "plan, first",
    [
        ('1. Search "Adam And Eve director".\n2. Check.', 'Search "Adam And Eve director".'),
        ('1. **Search "Dharkan director birthdate"**:\n   - This will...', 'Search "Dharkan director birthdate"'),
        ('- Search "X (film)" director', 'Search "X (film)" director'),
        ('\n\n1. Plan the approach (question -> 1. Search "Cass director".)', 'Search "Cass director".'),
        ("", ""),
    ],
)
def test_first_plan_step(plan, first):
    assert first_plan_step(plan) == first


def test_parse_steps_variants():
    steps, repairs = parse_steps("Step 1: a b c\nStep 2) d e f\n  continued here\n3. g h")
    assert steps == ["a b c", "d e f continued here", "g h"] and repairs == []
    prose = "The agent looked for the magazine. It was founded in 1844 by John A. Smith. Then it answered."
    assert parse_steps(prose) == ([], [])  # prose is retried, not accepted


@pytest.mark.real_model
def test_compression_with_the_real_embedded_model():
    loader = pytest.importorskip("mia.graph.models.loader", reason="mia.graph.models is not available yet")
    import torch

    model = loader.load_chat_model("local:smollm2", temperature=0.0, max_tokens=128)
    compressor = Compressor(model, max_words=100, max_attempts=1)
    previous = torch.get_num_threads()
    torch.set_num_threads(1)  # on a loaded 2-core box, 2 spinning OpenMP threads are many times slower
    try:
        result = compressor.compress(TRAJ)
    finally:
        torch.set_num_threads(previous)
    assert result.attempts == 1 and result.raw_outputs and result.raw_outputs[0].strip()  # the model really answered
    assert result.method in {"model", "repaired", "extractive"}
    steps = result.workflow.splitlines()
    assert steps and all(line.split(".", 1)[0].isdigit() for line in steps)
    assert len(result.workflow.split()) <= 100
    assert "Arthur's Magazine founded" in result.workflow or "First for Women magazine founded" in result.workflow
    print(
        f"\nreal model: method={result.method} attempts={result.attempts} problems={result.problems}\n{result.workflow}"
    )


@pytest.mark.real_model
def test_the_embedded_qwen_manager_fills_the_format_template_instead_of_copying_it():
    """With a worked example in the prompt, both embedded Qwen models copied it into 31 of 32 first
    outputs (bench/memory/manager-concrete-example.md); with the template, 0 of 32 (manager.md)."""
    from mia.graph.models import load_chat_model
    from mia.memory.examples import PromptExample

    model = load_chat_model("llamacpp:qwen-coder-0.5b", temperature=0.0, max_tokens=192)
    compressor = Compressor(model, max_attempts=1)
    result = compressor.compress(TRAJ)
    assert result.raw_outputs and result.raw_outputs[0].strip()  # the model really answered
    template = PromptExample.whole(compressor.prompts["compress"]["example"])
    trace = TRAJ.to_trace_text(compressor.max_words_per_observation)
    assert template.copied_in(result.raw_outputs[0], trace) is None, result.raw_outputs[0]
    assert result.workflow.splitlines()[-1].endswith("judged correct)")  # the store's verdict, whoever wrote it


def test_a_hop_plan_is_kept_as_the_workflows_decomposition() -> None:
    """Context.plan_style "hops": the chain of hops is what the workflow keeps of the plan (the part
    another question reuses), and the strategy view shows it with placeholders."""
    from mia.memory.compression import extractive_workflow, plan_hops
    from mia.memory.strategy import strategy_view

    plan = (
        '1. Search "Where was the father of the director of film Cass born?"\n2. Search "director of film Cass" -> #1\n'
        '3. Search "#1 father" -> #2\n4. Answer with #2.'
    )
    assert plan_hops(plan) == 'Search "director of film Cass" -> #1; Search "#1 father" -> #2'
    assert plan_hops("1. Search X.\n2. Answer.") == ""
    traj = Trajectory(
        question="Where was the father of the director of film Cass born?", plan=plan, answer="Leeds", outcome="correct"
    )
    first = extractive_workflow(traj).splitlines()[0]
    assert first == '1. Plan the hops (question -> Search "director of film Cass" -> #1; Search "#1 father" -> #2)'
    _, shown = strategy_view(extractive_workflow(traj), traj.question)
    assert shown.splitlines()[0] == '1. Plan the hops (Search "director of film [A]" -> #1; Search "#1 father" -> #2)'
