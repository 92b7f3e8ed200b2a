"""Where a planner's plan ends, for serving and training alike.

Small models go on past the plan with a new "Question: ... Plan:" of their own, a "Final answer:"
(a plan holds no facts; `make demo`'s replan ended with one), or replay the
executor's transcript they were shown ("Round 1 / Tool call: / Tool result:", the labels of
`Trajectory.to_trace_text`, `TRACE_LABELS`). Measured: a Qwen-1.5B replan of 593 tokens, the first plan again
and then 238 words of the transcript (bench/e2e/extractive-manager-run/results.jsonl, question 2).
The same markers are the planner's stop sequences (four: OpenAI's limit), so that the overrun is
not even generated.
"""

from __future__ import annotations

import re

from mia.memory.trajectory import TRACE_LABELS

_ENDS = [TRACE_LABELS[key] for key in ("question", "plan", "final_answer", "tool_call", "tool_result")]
PLAN_STOP = ["\n" + TRACE_LABELS["question"], "\n" + TRACE_LABELS["round"] + " ", "\n" + TRACE_LABELS["tool_call"],
             "\n" + TRACE_LABELS["tool_result"]]
_OVERRUN = re.compile(r"(?im)^[ \t]*(" + "|".join([re.escape(TRACE_LABELS["round"]) + r" \d+\b"]
                                                   + [re.escape(label) for label in _ENDS]) + ")")


def cut_plan_overrun(plan: str) -> str:
    """The plan without what a model wrote after it (an invented question, a transcript replay)."""
    match = _OVERRUN.search(plan)
    return plan[: match.start()].rstrip() if match and match.start() > 0 else plan
