"""Trajectory -> workflow compression: fake models for each repair path, then the real SmolLM2."""

from __future__ import annotations

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from mia.memory import Compressor
from mia.memory.compression import extractive_workflow, load_prompts, parse_steps

from .conftest import make_trajectory

TRAJ = make_trajectory("Which magazine was started first, Arthur's Magazine or First for Women?", answer="Arthur's Magazine",
                       queries=("Arthur's Magazine founded", "First for Women magazine founded"),
                       observation="Arthur's Magazine (1844-1846) was an American literary periodical.")


class BrokenModel(FakeListChatModel):
    """A backend that always fails (network down, missing key...)."""

    def _call(self, *args, **kwargs):  # noqa: D401
        raise ConnectionError("backend unreachable")


def test_prompt_is_data_and_formats():
    prompts = load_prompts()
    text = prompts["compress"]["user"].format(trace="TRACE", max_words=300)
    assert "TRACE" in text and "300" in text and "purpose (input -> output)" in text


def test_good_output_is_kept():
    good = ("1. Identify both magazines (question -> two titles)\n"
            "2. Search founding years (query \"Arthur's Magazine founded\" -> 1844)\n"
            "3. Search the second magazine (query \"First for Women magazine founded\" -> 1989)\n"
            "4. Compare and answer (years -> Arthur's Magazine; judged correct)")
    result = Compressor(FakeListChatModel(responses=[good])).compress(TRAJ)
    assert result.method == "model" and result.attempts == 1
    assert result.workflow == good


def test_messy_output_is_repaired():
    messy = ("<think>let me see</think>Here is the workflow:\n- **Identify the magazines** (question → titles)\n"
             "- Search dates (titles → years)\n- Search dates (titles → years)\n- Answer (years → earlier one)")
    result = Compressor(FakeListChatModel(responses=[messy])).compress(TRAJ)
    assert result.method == "repaired"
    lines = result.workflow.splitlines()
    assert lines[0] == "1. Identify the magazines (question -> titles)"
    assert len(lines) == 4  # the repeated step dropped, the key queries step added
    assert "Arthur's Magazine founded" in result.workflow  # key searches kept even if the model dropped them
    assert lines[-1].endswith("Answer (years -> earlier one)")
    assert {"bullets renumbered", "repeated step dropped", "key search queries added"} <= set(result.problems)


def test_over_long_output_is_cut_to_budget():
    vocab = [f"term{j}" for j in range(400)]
    steps = "\n".join(f"{i}. Check {' '.join(vocab[i * 8:i * 8 + 8])} (\"Arthur's Magazine founded\" -> facts)" for i in range(1, 40))
    result = Compressor(FakeListChatModel(responses=[steps]), max_words=60).compress(TRAJ)
    assert result.method == "repaired" and "cut to the word budget" in result.problems
    assert len(result.workflow.split()) <= 60
    assert result.workflow.splitlines()[-1].startswith(f"{len(result.workflow.splitlines())}.")


def test_garbage_is_retried_then_falls_back_to_extractive():
    model = FakeListChatModel(responses=["1. the the the the the the the the the the the the the the the the the the the the",
                                         "1. Identify the two entities to compare (question -> \"entity A\", \"entity B\")"])
    result = Compressor(model).compress(TRAJ)
    assert result.attempts == 2 and result.method == "extractive"
    assert result.problems == ["it repeats itself", "it copied the format example instead of describing this transcript"]
    assert result.workflow == extractive_workflow(TRAJ)


def test_transcript_echo_and_copied_plan_are_handled():
    echo = ("1. Look up both magazines (query \"Arthur's Magazine founded\" -> 1844)\n2. Answer (dates -> Arthur's)\n"
            "Round 1\nThought: I should search.\nTool call: search(...)\nmore echoed text")
    result = Compressor(FakeListChatModel(responses=[echo])).compress(TRAJ)
    assert result.method == "repaired" and "transcript echo dropped" in result.problems
    assert result.workflow.splitlines()[-1] == "2. Answer (dates -> Arthur's)"
    plan_copy = "1. Search for the entities.\n2. Compare."
    result = Compressor(FakeListChatModel(responses=[plan_copy, plan_copy])).compress(TRAJ)
    assert result.method == "extractive"
    assert result.problems == ["it copied the plan instead of summarising what the agent did"] * 2


def test_real_smollm2_output_that_replays_the_transcript_is_rejected():
    # verbatim from bench/memory/compression.json (SmolLM2-135M, a HotpotQA trajectory)
    traj = make_trajectory("Lisa Raymond and Liezel Huber won which tournament?", queries=("Lisa Raymond doubles",))
    traj.plan = ("1. Identify the entities the question depends on.\n2. Search for each entity and extract the "
                 "linking fact.\n3. Combine the facts and verify them before answering.")
    output = ("1. Identify the entities the question depends on: Lisa Raymond and Liezel Huber\n"
              "2. Search for each entity and extract the linking fact\n3. Combine the facts and verify them before answering\n"
              "4. Output the final answer: 2013 Dubai Tennis Championships\n"
              "5. Round 1: 1. Lisa Raymond has won more Grand than any other woman in women's doubles history\n"
              "6. Round 2: 2. The Williams sisters have achieved their most recent grand slam doubles titles")
    result = Compressor(FakeListChatModel(responses=[output, output])).compress(traj)
    assert result.method == "extractive"
    assert result.problems == ["it copied the plan instead of summarising what the agent did"] * 2


def test_retry_can_succeed():
    model = FakeListChatModel(responses=["", "1. Look up both magazines (query \"Arthur's Magazine founded\" -> 1844)\n2. Answer (dates -> Arthur's)"])
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
    assert "\"Arthur's Magazine founded\"" in flow and "\"First for Women magazine founded\"" in flow
    assert lines[-1] == f"{len(lines)}. Answer from the gathered evidence (evidence -> \"Arthur's Magazine\"; judged correct)"
    many = make_trajectory("q", outcome="incorrect", queries=tuple(f"query {i}" for i in range(40)),
                           observation="word " * 500)
    bounded = extractive_workflow(many, max_words=120)
    assert len(bounded.split()) <= 120 and "judged incorrect: wrong entity" in bounded
    assert "more tool calls" in bounded


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
    print(f"\nreal model: method={result.method} attempts={result.attempts} problems={result.problems}\n{result.workflow}")
