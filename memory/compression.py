"""Trajectory -> workflow: the manager model writes numbered abstract steps; bad output is
repaired, then retried; if the model still fails (or there is none) a deterministic extractive
workflow is built from the trajectory itself, so a trajectory is never lost."""

from __future__ import annotations

import logging
import re
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from collections.abc import Callable
from typing import Any

from mia.memory.examples import PromptExample
from mia.memory.trajectory import TRACE_LABELS, Trajectory, TrajectoryStep

log = logging.getLogger(__name__)

PROMPTS_FILE = Path(__file__).with_name("prompts.toml")
_NUMBERED = re.compile(r"^\s*(?:#+\s*)?(?:\*\*)?(?:step\s*)?(\d{1,2})\s*[.):\-]\s*(?:\*\*)?\s*(.+)$", re.IGNORECASE)
_BULLET = re.compile(r"^\s*[-*\u2022]\s+(.+)$")
# A line that replays the transcript (its labels, TRACE_LABELS) or echoes our own prompt.
_ECHO = re.compile(
    r"^\s*("
    + "|".join(
        [re.escape(TRACE_LABELS["round"]) + r" \d+"]
        + [re.escape(label) for key, label in TRACE_LABELS.items() if key != "round"]
        + ["transcript:", "summari[sz]e what the agent did"]
    )
    + ")",
    re.IGNORECASE,
)
_VERDICT = re.compile(r"\b(?:judged|graded|marked)\s+(?:as\s+)?(in)?correct\b", re.IGNORECASE)
_OUTCOME_WORDS = {"correct": "judged correct", "incorrect": "judged incorrect", "unknown": "not judged"}
MAX_WORDS_PER_STEP = 60


@cache
def load_prompts(path: Path = PROMPTS_FILE) -> dict[str, dict[str, str]]:
    """The compression prompts (data, not code)."""
    with path.open("rb") as handle:
        return tomllib.load(handle)


@dataclass
class CompressionResult:
    """The workflow and how it was obtained (model, repaired model output, or extractive)."""

    workflow: str
    method: str
    attempts: int = 0
    problems: list[str] = field(default_factory=list)
    raw_outputs: list[str] = field(default_factory=list)
    model: str = ""  # which model wrote the workflow (provenance); "" when extractive


def model_name(model: Any) -> str:
    """A LangChain chat model's name for provenance: its model id when it has one."""
    for attr in ("model_name", "model", "model_id", "repo_id"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return f"{type(model).__name__}:{value}"[:120]
    return type(model).__name__


def word_count(text: str) -> int:
    return len(text.split())


def _message_text(message: Any) -> str:
    content = getattr(message, "content", message)
    if isinstance(content, list):  # content blocks (Anthropic, Gemini)
        return "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)
    return str(content or "")


def parse_steps(text: str) -> tuple[list[str], list[str]]:
    """Extract workflow steps from model text; returns (steps, repairs applied)."""
    repairs: list[str] = []
    cleaned = text.replace("```", "\n")
    if cleaned != text:
        repairs.append("stripped code fences")
    steps: list[str] = []
    numbered = bullets = 0
    echo = False
    for line in cleaned.splitlines():
        if _ECHO.match(line):  # the model is replaying the transcript: drop it up to the next step
            echo = True
            repairs.append("transcript echo dropped")
        elif (match := _NUMBERED.match(line)) or (match := _BULLET.match(line)):
            step = match.group(match.lastindex or 1)  # the text after "5." or "-"
            if _ECHO.match(step):  # "5. Round 1: ..." or "- Tool result: ..." is the transcript again
                echo = True
                repairs.append("transcript echo dropped")
                continue
            steps.append(step)
            numbered += match.re is _NUMBERED
            bullets += match.re is _BULLET
            echo = False
        elif steps and not echo and line.strip() and not line.strip().lower().startswith("workflow"):
            steps[-1] += " " + line.strip()  # a wrapped step line
    if bullets and not numbered:
        repairs.append("bullets renumbered")
    # Prose is not split into steps: with the 135M manager, prose answers were hallucinated
    # narratives ("founded in 1844 by John A. Smith"), worse than the extractive fallback.
    normalised: list[str] = []
    seen: set[str] = set()
    for step in steps:
        step = re.sub(r"\s+", " ", step.replace("\u2192", "->").replace("**", "")).strip(" .")
        key = step.lower()
        if not step or key in seen:
            if step:
                repairs.append("repeated step dropped")
            continue
        seen.add(key)
        words = step.split()
        if len(words) > MAX_WORDS_PER_STEP:
            step = " ".join(words[:MAX_WORDS_PER_STEP]) + " ..."
            repairs.append("long step cut")
        normalised.append(step)
    return normalised, sorted(set(repairs))


def state_outcome(steps: list[str], outcome: str) -> tuple[list[str], bool]:
    """The verdict is a fact the store already has: a model's claim about it ("judged correct"
    copied into a failed episode's workflow) is replaced by the true one, and a workflow that
    never says it gets it on its last step. Returns (steps, whether a wrong claim was corrected)."""
    truth = _OUTCOME_WORDS[outcome]
    claims = [m.group(0).lower() for step in steps for m in _VERDICT.finditer(step)]
    if claims:
        wrong = any(claim != truth for claim in claims)
        return ([_VERDICT.sub(truth, step) for step in steps] if wrong else steps), wrong
    last = steps[-1]
    last = last[:-1] + f"; {truth})" if last.endswith(")") else f"{last} ({truth})"
    return steps[:-1] + [last], False


def render_steps(steps: list[str]) -> str:
    return "\n".join(f"{number}. {step}" for number, step in enumerate(steps, 1))


def fit_budget(steps: list[str], max_words: int) -> tuple[list[str], bool]:
    """Drop trailing steps (keeping the last, which holds the answer) until the budget holds."""

    def total(items: list[str]) -> int:
        return sum(len(s.split()) + 1 for s in items)

    if total(steps) <= max_words:
        return steps, False
    head, last = steps[:-1], steps[-1:]
    while head and total(head + last) > max_words:
        head.pop()
    kept = head + last
    while kept and total(kept) > max_words:  # a single step longer than the budget
        words = kept[-1].split()
        kept[-1] = " ".join(words[: max(1, len(words) - (total(kept) - max_words) - 1)]) + " ..."
        if len(kept[-1].split()) <= 2:
            break
    return kept, True


class Compressor:
    """Compress trajectories with a LangChain chat model (the 'manager' role).

    `max_attempts` model calls at most (the second one shows the model its bad output and
    the problem); then the extractive fallback. Empty output goes to the fallback at once: a repair
    would show the model nothing, and cost a whole call (up to 28 s under load, issue 42.6).
    """

    def __init__(
        self,
        model: Any | None,
        max_words: int = 300,
        max_attempts: int = 2,
        max_words_per_observation: int = 512,
        prompts: dict[str, dict[str, str]] | None = None,
        visible_text: Callable[[str], str] | None = None,
    ) -> None:
        self.model = model
        # The reply's visible part (a reasoning model's thoughts removed). Memory does not parse
        # model markup: the graph passes its protocol's reader (mia.graph.protocol.strip_think).
        self.visible_text = visible_text
        self.max_words = max_words
        self.max_attempts = max_attempts
        self.max_words_per_observation = max_words_per_observation
        self.prompts = prompts or load_prompts()
        self.example = PromptExample.whole(self.prompts["compress"]["example"])

    def compress(self, trajectory: Trajectory) -> CompressionResult:
        """Return a workflow of at most `max_words` words; never raises for bad model output."""
        trace = trajectory.to_trace_text(self.max_words_per_observation)
        result = CompressionResult(workflow="", method="extractive")
        previous, problem = "", ""
        for attempt in range(self.max_attempts if self.model is not None else 0):
            result.attempts = attempt + 1
            try:
                text = self._call(trace, previous, problem)
            except Exception as err:  # noqa: BLE001 - a failing backend must not lose the trajectory
                problem = f"model call failed: {type(err).__name__}: {err}"
                result.problems.append(problem)
                log.warning("compression attempt %d: %s", attempt + 1, problem)
                continue
            result.raw_outputs.append(text)
            if not text.strip():  # nothing to show the model in a repair: the fast path, at once
                result.problems.append("empty output")
                break
            workflow, repairs, problem = self.validate(text, trajectory)
            if workflow:
                result.workflow = workflow
                result.method = "repaired" if repairs else "model"
                result.model = model_name(self.model)
                result.problems += repairs
                return result
            result.problems.append(problem)
            previous = text
        result.workflow = extractive_workflow(trajectory, self.max_words)
        result.method = "extractive"
        return result

    def _call(self, trace: str, previous: str, problem: str) -> str:
        from langchain_core.messages import HumanMessage, SystemMessage

        if previous or problem:
            user = self.prompts["repair"]["user"].format(
                trace=trace,
                max_words=self.max_words,
                problem=problem or "the model call failed",
                previous=previous[:2000] or "(nothing)",
            )
        else:
            user = self.prompts["compress"]["user"].format(
                trace=trace, max_words=self.max_words, example=self.prompts["compress"]["example"]
            )
        messages = [SystemMessage(self.prompts["compress"]["system"]), HumanMessage(user)]
        if self.model is None:
            raise ValueError("the extractive compressor has no model to call")
        text = _message_text(self.model.invoke(messages))
        return self.visible_text(text) if self.visible_text is not None else text

    def validate(self, text: str, trajectory: Trajectory) -> tuple[str, list[str], str]:
        """(workflow, repairs, '') when usable, else ('', [], problem)."""
        steps, repairs = parse_steps(text)
        if not steps:
            return "", [], "no numbered steps found"
        lowered = " ".join(steps).lower()
        trace_lower = trajectory.to_trace_text(self.max_words_per_observation).lower()
        if self.example and self.example.copied_in("\n".join(steps), context=trace_lower):
            return "", [], "it copied the format example instead of describing this transcript"
        plan_lines = {step_text(ln).strip(" .").lower() for ln in trajectory.plan.splitlines() if ln.strip()}
        if plan_lines and sum(step.lower().strip(" .:") in plan_lines for step in steps) * 2 >= len(steps):
            return "", [], "it copied the plan instead of summarising what the agent did"
        words = lowered.split()
        if len(words) < 4:
            return "", [], "too short to be a workflow"
        if len(words) >= 20 and len(set(words)) / len(words) < 0.25:
            return "", [], "it repeats itself"
        queries = trajectory.search_queries()
        if queries and not any(q.lower() in lowered for q in queries):
            quoted = "; ".join(f'"{q}"' for q in queries[:3])
            steps.insert(max(len(steps) - 1, 0), f"Key searches (queries {quoted} -> evidence)")
            repairs.append("key search queries added")
        steps, corrected = state_outcome(steps, trajectory.outcome)
        if corrected:  # adding a missing verdict is not a repair of the model's output
            repairs.append("outcome claim corrected")
        steps, cut = fit_budget(steps, self.max_words)
        if cut:
            repairs.append("cut to the word budget")
        return render_steps(steps), repairs, ""


def _short(text: str, words: int) -> str:
    parts = re.sub(r"\s+", " ", text).strip().split(" ")
    return " ".join(parts[:words]) + (" ..." if len(parts) > words else "")


#: a workflow step the planner copied from a retrieved memory into its plan ("1. Plan the approach
#: (question -> ...)"): unwrapped, or the next workflow nests it again
_COPIED_WRAPPER = re.compile(r"^plan the approach \(question ->\s*", re.IGNORECASE)
_LIST_MARK = re.compile(r"^\s*(?:\d+[.)]|[-*#])\s*")


def step_text(line: str) -> str:
    """A plan or workflow line as plain words: its number or bullet, markdown emphasis and extra
    spaces removed (the one reading of a step line, for compression and the graph's plan cuts)."""
    return " ".join(_LIST_MARK.sub("", line.replace("**", "").replace("__", "")).split())


def first_plan_step(plan: str) -> str:
    """The plan's first step in plain words, without a trailing colon or a copied workflow wrapper."""
    text = step_text(next((line for line in plan.splitlines() if line.strip()), "")).rstrip(":").strip()
    while match := _COPIED_WRAPPER.match(text):
        text = text[match.end() :].strip()
        text = step_text(text[:-1] if text.endswith(")") else text)
    return text


def _found(step: TrajectoryStep, shown: int = 3) -> str:
    """What a tool call found, without its raw text: the sources it names, else whether it failed,
    else (a tool that names no sources) the start of its result."""
    if step.sources:
        more = f" and {len(step.sources) - shown} more" if len(step.sources) > shown else ""
        return "found " + "; ".join(_short(source, 8) for source in step.sources[:shown]) + more
    if step.content.lstrip().lower().startswith("error"):
        return "the tool failed"
    return _short(step.content, 10)


_HOP = re.compile(r"->\s*#\d+")


def plan_hops(plan: str) -> str:
    """A hop plan's chain (the steps that name a fact #N, Context.plan_style "hops") on one line, or
    "" for a plan without hops: the decomposition is the part of a workflow another question reuses."""
    hops = [step_text(line) for line in plan.splitlines() if _HOP.search(line)]
    return "; ".join(h.rstrip(".") for h in hops if h) if len(hops) >= 1 else ""


def extractive_workflow(trajectory: Trajectory, max_words: int = 300) -> str:
    """A deterministic workflow built from the trajectory's own structure: the plan's first
    step, each tool call with its query and the sources it found (titles, URLs; the start of the
    result only for a tool that names none), replans, the answer and the judgement. Used when
    there is no model or its output is unusable."""
    steps: list[str] = []
    if hops := plan_hops(trajectory.plan):
        steps.append(f"Plan the hops (question -> {_short(hops, 40)})")
    elif first := first_plan_step(trajectory.plan):
        steps.append(f"Plan the approach (question -> {_short(first, 16)})")
    pending: str | None = None
    for step in trajectory.steps:
        if step.kind == "tool_call":
            if pending:
                steps.append(pending + " -> no result)")
            args = step.args or {}
            query = args.get("query_list") or args.get("queries") or args.get("query")
            if isinstance(query, list):
                query = "; ".join(f'"{q}"' for q in query)
            elif query:
                query = f'"{query}"'
            else:
                query = _short(str(args), 12) if args else "no arguments"
            purpose = "Search for evidence" if (step.tool or "search") == "search" else f"Call {step.tool}"
            pending = f"{purpose} (query {query}"
        elif step.kind == "observation" and pending:
            steps.append(f"{pending} -> {_found(step)})")
            pending = None
        elif step.kind == "replan" and not step.dropped:
            steps.append(f"Revise the plan (failed attempt -> {_short(step.content, 14)})")
    if pending:
        steps.append(pending + " -> no result)")
    if trajectory.replan.strip() and not any(s.kind == "replan" for s in trajectory.steps):
        steps.append(f"Revise the plan (failed attempt -> {_short(trajectory.replan, 14)})")
    verdict = {"correct": "judged correct", "incorrect": "judged incorrect", "unknown": "not judged"}[
        trajectory.outcome
    ]
    if trajectory.outcome == "incorrect" and trajectory.judge_feedback.strip():
        verdict += f": {_short(trajectory.judge_feedback, 16)}"
    answer = _short(trajectory.answer, 12) if trajectory.answer.strip() else "no answer"
    steps.append(f'Answer from the gathered evidence (evidence -> "{answer}"; {verdict})')
    if len(steps) > 12:  # keep the first and last searches, fold the middle ones
        middle = steps[4:-4]
        steps = steps[:4] + [f"Repeat similar searches ({len(middle)} more tool calls -> more evidence)"] + steps[-4:]
    steps, _ = fit_budget(steps, max_words)
    return render_steps(steps)
