"""The typed record of one episode, as the graph produces it (architecture.md section 2).

It is the unit of the append-only trajectory log (the training data) and the input of
compression; `to_trace_text` is the one rendering both compression and reflection read, so the
observation truncation (MIA uses 512 words in its serving code) lives in one place.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticSerializationError

from mia.memory.text import cleaned_data

#: The line labels of `Trajectory.to_trace_text`, defined once: the compressor (memory) and the
#: planner's stop sequences (graph.protocol.plans) recognise a model replaying a transcript by them.
TRACE_LABELS: dict[str, str] = {
    "question": "Question:",
    "caption": "Image caption:",
    "plan": "Plan:",
    "round": "Round",
    "thought": "Thought:",
    "tool_call": "Tool call:",
    "tool_result": "Tool result:",
    "revised_plan": "Revised plan:",
    "reflection": "Reflection:",
    "answer": "Answer:",
    "final_answer": "Final answer:",
    "judgement": "Judgement:",
}
_L = TRACE_LABELS


Outcome = Literal["correct", "incorrect", "unknown"]
StepKind = Literal["thought", "tool_call", "observation", "answer", "replan", "reflection"]


def new_id() -> str:
    """A random hex id (uuid4), the same kind for trajectories and memories."""
    return uuid.uuid4().hex


def truncate_words(text: str, max_words: int) -> str:
    """Keep the first `max_words` whitespace words and say how many were dropped."""
    words = text.split()
    if max_words <= 0 or len(words) <= max_words:
        return text.strip()
    return " ".join(words[:max_words]) + f" ... [{len(words) - max_words} more words omitted]"


#: How a step's text too long for an evaluation log is cut there (app.evaluation.runner): the text
#: then ends with " …[N chars cut]". A cut step is not what the model was served, so the executor's
#: SFT (training.sft_data) never rebuilds a served prompt from one.
_LOG_CUT = re.compile(r" …\[\d+ chars cut\]$")


def cut_for_log(text: str, max_chars: int) -> str:
    """`text` within max_chars, saying how much was cut (see `was_cut_for_log`)."""
    if len(text) <= max_chars:
        return text
    return text[:max_chars] + f" …[{len(text) - max_chars} chars cut]"


def was_cut_for_log(text: str) -> bool:
    """Whether `text` is a step that `cut_for_log` cut."""
    return bool(_LOG_CUT.search(text))


def _cleaned(cls: type, data: Any) -> Any:
    """A trajectory's every string cleaned (mia.memory.text.clean_text) as it is made: a lone
    surrogate or NUL from any API (the graph cleans at its boundary; the library may not) would
    otherwise make it unloggable, and it would be lost. Steps given as models are checked as data
    too (a step alone is never written: only its trajectory is). The check runs in C first
    (`needs_cleaning`): the log is validated on every read, and walking each string cost 12x."""
    if not isinstance(data, dict):
        return data
    steps = data.get("steps")
    if isinstance(steps, list) and any(isinstance(step, BaseModel) for step in steps):
        data = {**data, "steps": [s.model_dump() if isinstance(s, BaseModel) else s for s in steps]}
    return cleaned_data(data, keep=("namespace",))  # a bad namespace is refused, never rewritten


class TrajectoryStep(BaseModel):
    """One step of an episode: a thought, a tool call (tool + args), its observation, a replan..."""

    model_config = ConfigDict(extra="ignore")

    kind: StepKind
    content: str = ""
    tool: str | None = None
    args: dict[str, Any] | None = None
    #: what an observation's tool read (document titles, URLs): pointers a workflow may keep where
    #: the raw tool text may not (empty for other steps, older logs and tools that do not say)
    sources: list[str] = Field(default_factory=list)

    @property
    def dropped(self) -> bool:
        """A replan the graph did not follow (it only repeated the plan: the answer stood)."""
        return self.kind == "replan" and bool((self.args or {}).get("dropped"))


class Trajectory(BaseModel):
    """One episode: question, plan, steps, answer and judgement, plus what it cost and used."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(default_factory=new_id)
    namespace: str = "default"
    question: str
    caption: str = ""
    plan: str = ""
    replan: str = ""
    steps: list[TrajectoryStep] = Field(default_factory=list)
    answer: str = ""
    outcome: Outcome = "unknown"
    judge_feedback: str = ""
    gold_answers: list[str] = Field(default_factory=list)
    used_memory_ids: list[str] = Field(default_factory=list)
    usage: dict[str, dict[str, int]] = Field(default_factory=dict)
    source: str = ""
    dataset: str = ""
    created_at: float = Field(default_factory=time.time)

    _clean = model_validator(mode="before")(_cleaned)

    def search_queries(self) -> list[str]:
        """The queries of every tool call, in order and without repeats (they are what a
        workflow must keep: MIA's compression prompt asks for the key search keywords)."""
        seen: dict[str, None] = {}
        for step in self.steps:
            if step.kind != "tool_call" or not step.args:
                continue
            for key in ("query_list", "queries", "query"):
                value = step.args.get(key)
                values = value if isinstance(value, list) else [value] if value else []
                for query in values:
                    text = str(query).strip()
                    if text:
                        seen.setdefault(text, None)
        return list(seen)

    def to_trace_text(self, max_words_per_observation: int = 512, include_judgement: bool = True) -> str:
        """Render the episode as text for the manager (compression) and the planner (reflection).

        Tool observations are cut to `max_words_per_observation` words, as in MIA's memory
        service; the initial prompt is not part of a trajectory, so it never appears here.
        """
        lines = [f"{_L['question']} {self.question.strip()}"]
        if self.caption.strip():
            lines.append(f"{_L['caption']} {self.caption.strip()}")
        if self.plan.strip():
            lines += ["", _L["plan"], self.plan.strip()]
        round_no = 0
        for index, step in enumerate(self.steps):
            previous = self.steps[index - 1].kind if index else None
            if step.kind == "thought" or (step.kind == "tool_call" and previous != "thought"):
                round_no += 1
                lines += ["", f"{_L['round']} {round_no}"]
            if step.kind == "thought":
                lines.append(f"{_L['thought']} {step.content.strip()}")
            elif step.kind == "tool_call":
                args = json.dumps(step.args or {}, ensure_ascii=False)
                lines.append(f"{_L['tool_call']} {step.tool or 'tool'}({args})")
            elif step.kind == "observation":
                lines.append(f"{_L['tool_result']} {truncate_words(step.content, max_words_per_observation)}")
            elif step.kind == "replan" and step.dropped:
                lines.append(f"{_L['revised_plan']} (not followed: {(step.args or {})['dropped']})")
            elif step.kind == "replan":
                lines += ["", f"{_L['revised_plan']} {step.content.strip()}"]
            elif step.kind == "reflection":
                lines.append(f"{_L['reflection']} {step.content.strip()}")
            elif step.kind == "answer":
                lines.append(f"{_L['answer']} {step.content.strip()}")
        if self.replan.strip() and not any(s.kind == "replan" for s in self.steps):
            lines += ["", f"{_L['revised_plan']} {self.replan.strip()}"]
        if self.answer.strip():
            lines += ["", f"{_L['final_answer']} {self.answer.strip()}"]
        if include_judgement and (self.outcome != "unknown" or self.judge_feedback.strip()):
            verdict = f"{_L['judgement']} {self.outcome}"
            if self.judge_feedback.strip():
                verdict += f" ({self.judge_feedback.strip()})"
            lines.append(verdict)
        return "\n".join(lines).strip() + "\n"

    def to_json_line(self) -> str:
        """One JSONL line (no newline inside: json escapes them). Text set after construction that
        cannot be encoded is cleaned here, so the log line is never lost."""
        try:
            return self.model_dump_json() + "\n"
        except PydanticSerializationError:
            return type(self).model_validate(self.model_dump()).model_dump_json() + "\n"
