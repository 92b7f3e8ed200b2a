"""`mia eval` on the real embedded model and the real graph: one question, the full MIA path
(memory retrieval, planner, executor with search, LLM judge, manager compression into Chroma)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mia.app.evaluation import runlog
from mia.app.evaluation.harness import EvalConfig, run_evaluation

pytestmark = pytest.mark.real_model

QUESTION = {
    "id": "real-1",
    "question": "Which magazine was started first, Arthur's Magazine or First for Women?",
    "answer": "Arthur's Magazine",
    "answer_aliases": [],
    "type": "comparison",
    "paragraphs": [
        {
            "title": "Arthur's Magazine",
            "text": "Arthur's Magazine (1844-1846) was an American literary periodical published in Philadelphia.",
        },
        {
            "title": "First for Women",
            "text": "First for Women is a woman's magazine published by Bauer Media Group in the USA. The magazine was started in 1989.",
        },
    ],
    "supporting_titles": ["Arthur's Magazine", "First for Women"],
}


async def test_one_question_through_the_real_graph(tmp_path: Path, data_dir: Path):
    dataset = tmp_path / "one.jsonl"
    dataset.write_text(json.dumps(QUESTION) + "\n")
    cfg = EvalConfig(
        dataset=str(dataset),
        memory_mode="mia",
        models={r: "local:smollm2" for r in ("planner", "executor", "manager", "judge")},
        max_tool_calls=1,
        context_overrides=dict(
            executor_max_tokens=48,
            planner_max_tokens=48,
            manager_max_tokens=48,
            judge_max_tokens=8,
            max_replans=0,
            plan_when="start",  # a plan first: every role runs
            judge_method="llm",
        ),
    )
    out = tmp_path / "run"
    s = await run_evaluation(cfg, out, progress=False)

    assert s.n == 1 and s.errors == 0, runlog.read_results(out)[0].error
    (r,) = runlog.read_results(out)
    # every role that ran reported its tokens; the totals are their sums
    assert r.role("planner").calls >= 1 and r.role("executor").calls >= 1
    # judge_method llm: the grader model grades every answer (an empty one is graded without a model call)
    assert r.role("judge").calls >= (1 if r.answer else 0)
    assert r.prompt_tokens == sum(u.input_tokens for u in r.usage.values()) > 0
    assert s.total_prompt_tokens == r.prompt_tokens and s.llm_calls.value == r.llm_calls
    assert isinstance(r.judge_correct, bool) and s.accuracy.n == 1
    assert 0.0 <= r.f1 <= 1.0 and r.em in (0.0, 1.0) and r.wall_s > 0
    assert r.plan and r.trajectory
    # the episode was memorised in the run's own store
    assert (out / "store" / "memory" / "trajectories.jsonl").is_file()
    assert (out / "plot.png").is_file() and (out / "summary.md").is_file()
    # a second start finds nothing to do (no model call) and rebuilds the same numbers
    again = await run_evaluation(cfg, out, progress=False)
    assert again.total_prompt_tokens == s.total_prompt_tokens and len(runlog.read_results(out)) == 1
