"""Rejection-sampled supervised data for the executor: logged episodes that followed a plan to a
right answer, turned back into the conversations the executor was served.

Why rejection sampling first (issue 37, the paper's first stage): an untrained 1.5B executor handed
a plan answers worse than alone; its own right plan-following episodes show it how to use a plan
in the exact prompt it is served, with no reward model and no rollouts, at a cost a CPU can pay.

What is kept: the first attempt of an episode whose answer was judged right and was not changed
by a later round (a replan, an evidence round): its turns are what led to the answer; with
`attempts="final"`, the later attempt that reached the right answer instead, in the conversation the
graph served it (`served_turns`). Each
executor turn becomes one prompt-completion row (the conversation so far, then the turn) rendered
by the graph's prompt builder and protocol (`render_turn`), so the policy is trained on the text it
is served and writes. Searches the graph made itself (a plan's first searches, evidence rounds)
stay in the prompt but are never a completion. Questions of the reported splits are excluded by
the caller (`exclude`), never trained on.
"""

from __future__ import annotations

import glob
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from mia.graph.nodes.reflect import shown_in_reflection
from mia.memory import was_cut_for_log
from mia.graph.protocol import cut_before_answer, render_turn
from mia.training.config import SftAttempts
from mia.training.data import open_text
from mia.training.prompts import executor_messages, late_plan_message, observation_message, replan_message

GRAPH_MADE = ("planned", "evidence")  # tool_call contents of searches the graph made, not the executor


@dataclass(frozen=True)
class ServedTurn:
    """One executor turn (`completion`, in the protocol) and the conversation it was served
    (`prompt`); `attempt` counts the later rounds before it; `taught` is False for a search the
    graph made itself."""

    prompt: list[dict[str, str]]
    completion: str
    kind: Literal["tool_call", "answer"]
    attempt: int
    taught: bool


@dataclass(frozen=True)
class Episode:
    """What the SFT rows need of one logged episode (a `mia eval` row or a memory trajectory)."""

    question: str
    plan: str
    steps: tuple[Mapping[str, Any], ...]
    correct: bool
    answer: str
    source: str = ""
    gold: tuple[str, ...] = ()  # the gold answers a `mia eval` row logged (reading rows need them)


def episode_from_record(record: Mapping[str, Any], source: str = "") -> Episode | None:
    """A `mia eval` results row (judge_correct, trajectory) or a memory trajectory line (outcome,
    steps) as an Episode; None when it carries no verdict or no steps."""
    steps = record.get("trajectory") if "trajectory" in record else record.get("steps")
    if not isinstance(steps, list) or not record.get("question"):
        return None
    if "judge_correct" in record:
        verdict = record.get("judge_correct")
    else:
        verdict = {"correct": True, "incorrect": False}.get(str(record.get("outcome")))
    if not isinstance(verdict, bool):
        return None
    return Episode(
        question=str(record["question"]),
        plan=str(record.get("plan") or ""),
        steps=tuple(s for s in steps if isinstance(s, Mapping)),
        correct=verdict,
        answer=str(record.get("answer") or ""),
        source=source,
        gold=_golds(record.get("gold_answers")),
    )


def _golds(value: Any) -> tuple[str, ...]:
    """A row's gold answers (every logged row and trajectory holds a list)."""
    return tuple(g for g in value if isinstance(g, str) and g.strip()) if isinstance(value, list) else ()


def first_answer(steps: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]] | None:
    """The steps up to the first answer, whatever came after; None when no answer was given."""
    for i, step in enumerate(steps):
        if step.get("kind") == "answer":
            return list(steps[: i + 1])
    return None


def first_attempt(steps: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]] | None:
    """The steps up to the first answer, when nothing after it changed the answer (a reflection
    that said "no" is fine); None when the attempt did not end in an answer or a later round ran."""
    found = first_answer(steps)
    if found is None or any(s.get("kind") in ("tool_call", "answer", "replan") for s in steps[len(found) :]):
        return None
    return found


def served_turns(episode: Episode) -> list[ServedTurn] | None:
    """Every turn of the episode with the conversation it was served, rebuilt as the graph builds it
    (graph/nodes/execute.py, reflect.py): the system prompt with the plan the executor started from
    (none when the plan was written after a failed attempt: plan_when "failure"), each turn and tool
    result, and at each later round what the graph handed over: the failed answer cut before its
    <answer> and the late plan, the replan or the settled facts after it; an evidence round takes the
    answer turn out and makes its searches. None when a step cannot be rendered or its text was cut
    by the evaluation log (read_episodes restores such steps where the run's trajectory log has them)."""
    steps = episode.steps
    late = any(s.get("kind") == "replan" and (s.get("args") or {}).get("first_plan") for s in steps)
    messages: list[dict[str, str]] = executor_messages(episode.question, "" if late else episode.plan)
    turns: list[ServedTurn] = []
    think: list[str] = []
    attempt = 0
    for i, step in enumerate(steps):
        kind, content = step.get("kind"), str(step.get("content") or "")
        if kind == "thought":
            think.append(content.strip())
        elif kind == "tool_call":
            args = step.get("args")
            if not step.get("tool") or not isinstance(args, Mapping):
                return None
            text = render_turn("\n".join(think), call=(str(step["tool"]), dict(args)))
            turns.append(ServedTurn(list(messages), text, "tool_call", attempt, taught=content not in GRAPH_MADE))
            messages.append({"role": "assistant", "content": text})
            think = []
        elif kind == "observation":
            if was_cut_for_log(content):  # not what the executor was served
                return None
            messages.append(observation_message(content))
        elif kind == "answer":
            if not content.strip():
                return None
            text = render_turn("\n".join(think), answer=content)
            turns.append(ServedTurn(list(messages), text, "answer", attempt, taught=True))
            messages.append({"role": "assistant", "content": text})
            think = []
        elif kind == "replan":
            handed = _handed(step, shown_in_reflection(list(steps[:i])))
            if handed is None:  # a dropped plan: nothing handed, the answer stands
                continue
            last = turns[-1] if turns else None
            if last is not None and last.kind == "answer" and messages[-1]["content"] == last.completion:
                if handed:  # the failed answer cut before its <answer> (the graph replaces that message)
                    messages[-1] = {"role": "assistant", "content": cut_before_answer(last.completion) or "<think>"}
                else:  # an evidence round: the answer turn leaves the history
                    messages.pop()
            if handed:
                messages.append(handed)
            attempt += 1
    return turns


def _handed(step: Mapping[str, Any], failure: str) -> dict[str, str] | None:
    """The user turn the graph's replan node hands the executor for this replan step: the late
    plan's or the replan's message, or the settled facts (the failure text); {} for an evidence round
    (no message: the graph searches); None for a plan that was dropped (the answer stands)."""
    args = step.get("args") or {}
    plan = str(step.get("content") or "")
    if args.get("dropped"):
        return None
    if args.get("settled"):
        return {} if args.get("unread") else {"role": "user", "content": failure}
    if args.get("first_plan"):
        return late_plan_message(plan, failure)
    return replan_message(plan)


def conversation_rows(
    episode: Episode, max_tool_calls: int | None = None, attempts: SftAttempts = "first"
) -> list[dict[str, Any]]:
    """Prompt-completion rows (TRL's conversational format) of a right episode, one per executor turn
    of the attempt taught: `first`, the first attempt when no later round changed its answer (the
    executor alone, or with the plan it was handed first); `final`, the attempt that gave the right
    answer, later rounds included (after a late plan, a replan or the settled facts, with the earlier
    attempt in the prompt). [] when the episode is not usable (wrong, over the budget, a turn the
    protocol cannot render, no such attempt)."""
    if not episode.correct:
        return []
    steps = first_attempt(episode.steps) if attempts == "first" else list(episode.steps)
    if steps is None:
        return []
    calls = sum(1 for s in steps if s.get("kind") == "tool_call")
    if max_tool_calls is not None and calls >= max_tool_calls:
        return []  # the budget may have forced the answer: a turn the executor did not choose
    turns = served_turns(replace(episode, steps=tuple(steps)))
    if not turns or turns[-1].kind != "answer":
        return []
    last = turns[-1].attempt
    return [
        {"prompt": t.prompt, "completion": [{"role": "assistant", "content": t.completion}]}
        for t in turns
        if t.attempt == last and t.taught
    ]


def own_searches(steps: Sequence[Mapping[str, Any]]) -> int:
    """The searches the executor chose in these steps (not those the graph made for it)."""
    return sum(1 for s in steps if s.get("kind") == "tool_call" and str(s.get("content") or "") not in GRAPH_MADE)


def search_counts(episodes: Iterable[Episode], exclude_questions: Iterable[str] = ()) -> Counter[int]:
    """How many searches of its own the executor made in each right first attempt that the rows
    could come from (every logged one, duplicates included): what rejection sampling can teach.
    On the tuning split's 1,840 logged episodes every one made a single search (results/training)."""
    banned = {question_key(q) for q in exclude_questions}
    counts: Counter[int] = Counter()
    for episode in episodes:
        steps = (
            first_attempt(episode.steps) if episode.correct and question_key(episode.question) not in banned else None
        )
        if steps is not None:
            counts[own_searches(steps)] += 1
    return counts


def read_episodes(patterns: Iterable[str], root: Path | None = None) -> list[Episode]:
    """Every episode of the `results.jsonl(.gz)` / `trajectories.jsonl(.gz)` files the glob
    patterns name (relative to `root`); unreadable lines are skipped. A results row whose steps the
    evaluation log cut (mia.memory.was_cut_for_log: older runs cut search results at 2,000
    characters) takes its whole steps from the run's own trajectory log (`store/**/trajectories.jsonl`,
    the same episode by its memory id or its question), where there is one; else it stays cut and gives no row."""
    found: list[Episode] = []
    for path in _expand(patterns, root):
        whole: dict[str, list[list[Any]]] | None = None  # the run's trajectory log, read at the first cut row
        for record in _records(path):
            if _cut(record.get("trajectory")):
                whole = _logged_steps(path) if whole is None else whole
                record = _restored(record, whole)
            episode = episode_from_record(record, _named(path, root))
            if episode is not None:
                found.append(episode)
    return found


def _records(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSONL(.gz) file, torn lines skipped."""
    with open_text(path) as fh:
        for line in fh:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict):
                yield record


def _cut(steps: Any) -> bool:
    return isinstance(steps, list) and any(
        isinstance(s, Mapping) and was_cut_for_log(str(s.get("content") or "")) for s in steps
    )


def _logged_steps(results: Path) -> dict[str, list[list[Any]]]:
    """The steps of every episode in the trajectory log beside a run's results file, by id and by
    question (older logs name a row's memory by a record id the log does not use)."""
    steps: dict[str, list[list[Any]]] = {}
    for log in sorted(results.parent.glob("store/**/trajectories.jsonl*")):
        for record in _records(log):
            if isinstance(record.get("steps"), list):
                for key in (str(record.get("id")), question_key(str(record.get("question") or ""))):
                    steps.setdefault(key, []).append(record["steps"])
    return steps


def _restored(record: dict[str, Any], whole: Mapping[str, list[list[Any]]]) -> dict[str, Any]:
    """The results row with its trajectory log's whole steps: the same episode (its memory id, or
    its question), with the same kinds of step in the same order; else the row as it is."""
    kinds = [s.get("kind") if isinstance(s, Mapping) else None for s in record["trajectory"]]
    for key in (str(record.get("memory_id")), question_key(str(record.get("question") or ""))):
        for steps in whole.get(key, []):
            if [s.get("kind") if isinstance(s, Mapping) else None for s in steps] == kinds and not _cut(steps):
                return {**record, "trajectory": steps}
    return record


def _named(path: Path, root: Path | None) -> str:
    """A file's name as rows record it: relative to the root the globs were read from (no machine's
    absolute path in a committed sft_rows.jsonl)."""
    try:
        return str(path.relative_to(root or Path.cwd()))
    except ValueError:
        return str(path)


def _expand(patterns: Iterable[str], root: Path | None) -> list[Path]:
    base = root or Path.cwd()
    paths: list[Path] = []
    for pattern in patterns:
        full = pattern if Path(pattern).is_absolute() else str(base / pattern)
        matched = sorted(Path(p) for p in glob.glob(full, recursive=True))
        if not matched:
            raise FileNotFoundError(f"no episode file matches {pattern!r}")
        paths.extend(p for p in matched if p.is_file() and p not in paths)
    return paths


def sft_rows(
    episodes: Iterable[Episode],
    *,
    exclude_questions: Iterable[str] = (),
    plans_only: bool = True,
    max_tool_calls: int | None = None,
    attempts: SftAttempts = "first",
) -> list[dict[str, Any]]:
    """The rows of every usable episode, one episode per question (several runs answered the same
    question: the first logged one that was handed a plan, else the first), never a question of
    `exclude_questions`."""
    banned = {question_key(q) for q in exclude_questions}
    seen: set[str] = set()
    rows: list[dict[str, Any]] = []
    for episode in sorted(episodes, key=lambda e: not e.plan.strip()):  # stable: log order within each
        key = question_key(episode.question)
        if key in banned or key in seen or (plans_only and not episode.plan.strip()):
            continue
        found = conversation_rows(episode, max_tool_calls, attempts)
        if found:
            seen.add(key)
            planned = bool(episode.plan.strip())
            rows.extend(
                {**row, "question": episode.question, "source": episode.source, "planned": planned} for row in found
            )
    return rows


def question_key(question: str) -> str:
    """One question however it was spaced or cased: runs and splits name questions by it."""
    return " ".join(question.lower().split())


__all__ = [
    "Episode",
    "ServedTurn",
    "conversation_rows",
    "episode_from_record",
    "first_answer",
    "first_attempt",
    "own_searches",
    "question_key",
    "read_episodes",
    "search_counts",
    "served_turns",
    "sft_rows",
]
