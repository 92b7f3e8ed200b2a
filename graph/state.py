"""The state one question carries through the MIA graph.

`steps` (the trajectory) and `messages` (the executor conversation) only grow inside a run; the
first node of each run replaces them with LangGraph's `Overwrite` (which bypasses the reducer), so
that a thread (`mia chat`) can hold several questions one after the other. `usage` is merged per role.

Channels hold plain JSON (dicts, lists, strings), not pydantic models, so that every checkpointer
(SQLite, Postgres, in memory) serialises them without custom types. Each typed value has one codec
at the boundary: steps are validated into `TrajectoryStep` by `build_trajectory`; the verdict is
written by `mia.graph.judge.verdict.verdict_to_channel` and read back only through `RunResult`
(`mia.graph.result`), which is also how every consumer reads the output state as a whole.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from langchain_core.messages import AnyMessage
from langgraph.channels import EphemeralValue
from langgraph.graph.message import add_messages
from mia.memory.trajectory import StepKind
from typing_extensions import NotRequired, TypedDict

LastTurn = Literal["", "tool_call", "answer", "retry", "replan", "accept"]
"""How the last executor or reflection turn ended: the graph's routing reads it."""


class Step(TypedDict, total=False):
    """One trajectory step as the channels hold it (a plain dict, so checkpoints stay plain JSON);
    `build_trajectory` validates it into `mia.memory.TrajectoryStep`, the one codec."""

    kind: StepKind
    content: str
    tool: str | None
    args: dict[str, Any] | None
    sources: list[str]


def append_steps(left: list[dict] | None, right: list[dict] | None) -> list[dict]:
    """Append trajectory steps (a `langgraph.types.Overwrite` update replaces the list)."""
    return list(left or []) + list(right or [])


def merge_usage(left: dict | None, right: dict | None) -> dict:
    """Add per-role call and token counts (a `langgraph.types.Overwrite` update replaces them)."""
    right = dict(right or {})
    out = {role: dict(counts) for role, counts in (left or {}).items()}
    for role, counts in right.items():
        mine = out.setdefault(role, {"calls": 0, "input_tokens": 0, "output_tokens": 0})
        for key, value in counts.items():
            mine[key] = mine.get(key, 0) + int(value or 0)
    return out


class InputState(TypedDict):
    """What a caller gives: the question and, optionally, the sandbox, gold answers, a preset plan.

    Gold answers, paragraphs, caption and image are `EphemeralValue` channels: they hold what this
    run's input gave for one step, `prepare` copies them into `inputs`, and then they are empty. A
    value a caller did not give is therefore never the previous question's, even when that run
    raised before its last node (a thread's checkpoint keeps every other channel)."""

    question: str
    gold_answers: NotRequired[Annotated[list[str] | None, EphemeralValue]]
    paragraphs: NotRequired[Annotated[list[dict[str, Any]] | None, EphemeralValue]]
    plan: NotRequired[str | None]
    caption: NotRequired[Annotated[str | None, EphemeralValue]]
    image: NotRequired[Annotated[Any, EphemeralValue]]
    """A path, an http(s) or data URL, or bytes (see mia.graph.images); captioned when no caption is given."""


class QuestionInputs(TypedDict, total=False):
    """This question's inputs as `prepare` kept them (cleaned, the image captioned); nodes read
    them with `given`."""

    gold_answers: list[str]
    paragraphs: list[dict[str, Any]] | None
    caption: str
    image: Any


def given(state: Any, key: Literal["gold_answers", "paragraphs", "caption", "image"]) -> Any:
    """One of this question's inputs (None when the caller did not give it)."""
    return (state.get("inputs") or {}).get(key)


class OutputState(TypedDict, total=False):
    """What a caller gets back."""

    question: str
    answer: str
    plan: str
    replan: str
    trajectory: dict[str, Any]
    memory_text: str
    """The retrieved memories as the planner was shown them (the memory block)."""
    judgement: dict[str, Any] | None
    """A `Verdict` as JSON (`verdict_to_channel`); `RunResult.verdict` is the typed view."""
    usage: Annotated[dict[str, dict[str, int]], merge_usage]
    memory_id: str | None
    used_memory_ids: list[str]
    memories: list[dict[str, Any]]
    tool_calls: int
    stop_reason: str
    warnings: Annotated[list[str], append_steps]


class State(InputState, OutputState, total=False):  # type: ignore[misc]  # LangGraph merges the two schemas' fields
    """Full working state (inputs, executor loop, outputs)."""

    # memory and planning
    inputs: QuestionInputs
    """This question's inputs (see `InputState`), set by `prepare` on every run."""
    closed_plan: str | None
    """The plan this thread last used (a preset or the planner's): a plan still equal to it at the
    next `prepare` is left over, not a preset for the new question (see `fresh_question_state`)."""
    planner_messages: list[dict[str, str]]
    # executor loop
    messages: Annotated[list[AnyMessage], add_messages]
    steps: Annotated[list[Step], append_steps]
    pending_tool: dict[str, Any] | None
    format_retries: int
    replans: int
    reflections: int
    evidence_rounds: int
    """Answers held back to search a comparison's unread names (Context.evidence_search); not reflections."""
    evidence_queries: list[str]
    """The unread names the graph searches at the executor's next turn (an evidence round)."""
    last_turn: LastTurn
