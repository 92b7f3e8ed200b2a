"""Run-time settings of the MIA graph (LangGraph `context_schema`).

Every field is what LangGraph Studio shows in its assistant form; the `description` in the field
metadata becomes the help text there. Values are plain strings/numbers so that a context can be
saved as an assistant, sent over HTTP or given on the command line.
"""

from __future__ import annotations

import difflib
import functools
import logging
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, get_args, get_origin, get_type_hints

from pydantic import ValidationError

from mia.graph.judge.config import Arbiter as JudgeArbiter
from mia.graph.judge.config import Split as JudgeSplit
from mia.graph.judge.config import Contradiction as JudgeContradiction
from mia.graph.judge.config import JudgeConfig
from mia.graph.judge.config import Method as JudgeMethodChoice
from mia.graph.models.defaults import OPTIONAL_ROLES, ROLES, default_model
from mia.graph.models.settings import read_settings
from mia.graph.models.spec import EXTRACTIVE
from mia.memory import config

MemoryMode = Literal["mia", "none", "trajectory-rag"]
JudgeMode = Literal["auto", "ground_truth", "reviewers", "off"]
ToolProtocol = Literal["text", "native", "auto"]
PlanStyle = Literal["hops", "paper"]
ReplanWhen = Literal["failure", "planner"]
MemoryStyle = Literal["strategy", "paper"]
RepeatedSearch = Literal["cached", "run"]
PlanSearches = Literal["executor", "first"]
PlanWhen = Literal["start", "failure"]
Vision = Literal["auto", "on", "off"]

log = logging.getLogger(__name__)


def _f(default: Any, description: str) -> Any:
    return field(default=default, metadata={"description": description})


@dataclass(kw_only=True)
class Context:
    """What one run of the graph may be configured with (models per role, budgets, memory)."""

    planner_model: str = _f(
        "",
        "Planner model spec (writes the plan, reflects, replans), e.g. llamacpp:qwen-coder-1.5b, "
        "openai:gpt-4.1-mini. "
        f"Empty: $MIA_PLANNER_MODEL (environment or .env), else {default_model('planner')}.",
    )
    executor_model: str = _f(
        "",
        "Executor model spec (the ReAct agent that calls tools and answers). "
        f"Empty: $MIA_EXECUTOR_MODEL (environment or .env), else {default_model('executor')}.",
    )
    manager_model: str = _f(
        "",
        "Memory-manager model spec (compresses a trajectory into a workflow memory). "
        f"Empty: $MIA_MANAGER_MODEL (environment or .env), else {default_model('manager')}.",
    )
    judge_model: str = _f(
        "",
        "Judge model spec (grades the answer, against gold answers when given). "
        f"Empty: $MIA_JUDGE_MODEL (environment or .env), else {default_model('judge')}.",
    )
    captioner_model: str = _f(
        "",
        "Vision model spec that captions a question's image when no caption is given, e.g. "
        "openai:gpt-4o-mini or openai-compatible:Qwen/Qwen2.5-VL-7B-Instruct@http://host:8000/v1. "
        "Empty: $MIA_CAPTIONER_MODEL (environment or .env), else none (an image question then needs a caption).",
    )
    executor_vision: Vision = _f(
        "auto",
        "Give the question's image to the executor too: on, off, or auto (when the executor model's "
        "LangChain profile says it accepts images).",
    )
    caption_weight: float = _f(
        0.2,
        "Weight of caption similarity in memory retrieval for questions with a caption (the question "
        "gets 1 - this; MIA: 0.2). Text-only questions use the question alone.",
    )

    corpus: str = _f(
        "demo",
        "Search corpus: 'demo' (the committed demo corpus) or a path to a corpus file/folder. "
        "Ignored when the input carries paragraphs.",
    )
    search_top_k: int = _f(
        5,
        "Documents returned per search query (bench/models/prompt_size.md: with the "
        "question as the query, 5 finds both HotpotQA supporting paragraphs for 74 of 100 questions, 3 for 50).",
    )
    web_search: bool = _f(False, "Also offer Tavily web search (needs TAVILY_API_KEY).")

    memory_mode: MemoryMode = _f(
        "mia",
        "mia: memory + planner + reflection; none: plain ReAct executor; trajectory-rag: similar "
        "raw past trajectories in the executor's context.",
    )
    namespace: str = _f(
        "",
        "Memory namespace (one per user, task family or experiment). Empty: "
        "$MIA_MEMORY_NAMESPACE (environment or .env), else 'default'.",
    )
    k_pos: int = _f(2, "Successful past workflows shown to the planner.")
    k_neg: int = _f(2, "Failed past workflows shown to the planner.")
    min_similarity: float | None = _f(
        0.5,
        "Past workflows (and, in trajectory-rag, trajectories) whose question cosine to this one is below "
        "this are not shown. None: MIA's rule, the best candidates are shown however unrelated (on HotpotQA "
        "the shown workflows' median cosine was 0.24, and the nearest earlier question's 0.32; on 2Wiki, whose "
        "questions share templates, 0.51: bench/memory/relatedness.md). 0.5 keeps the memories of questions of "
        "the same kind and drops the rest; its effect is measured in results/ladder.",
    )
    memory_style: MemoryStyle = _f(
        "strategy",
        "How a past workflow is shown to the planner. strategy: its steps with the other question's names "
        "replaced by placeholders and without what its searches found or answered (a strategy to reuse, not "
        "names to copy); paper: the stored workflow as it is.",
    )
    memorise: bool = _f(True, "Store this episode in memory after judging it.")

    max_tool_calls: int = _f(30, "Most tool calls per question; then an answer is forced.")
    min_tool_calls: int = _f(
        1,
        "Searches the executor must make before an answer is accepted (capped by max_tool_calls). "
        "An earlier answer or a junk reply is re-asked as a forced search call; 0 lets it answer at once.",
    )
    max_replans: int = _f(1, "Most reflect-and-replan rounds per question (the paper uses 1).")
    plan_when: PlanWhen = _f(
        "failure",
        "failure: the executor first answers alone, as plain ReAct, and the planner (with the retrieved "
        "memories and the failed attempt) writes a plan only when the trace shows a failure (the "
        "replan_when 'failure' rule); an attempt without one costs no planner call. start: a plan "
        "before the executor's first turn, as the paper (under it the defaults lost to plain ReAct: "
        "results/ladder/README.md). Needs max_replans >= 1 to plan at all.",
    )
    plan_style: PlanStyle = _f(
        "hops",
        "hops: the plan is a chain of hops, each finding one fact named #1, #2, ... that later steps use "
        "(the executor fills each from evidence before the next hop); its first step searches the question "
        "itself. paper: the paper's free-form step list (on 2Wiki it folded two hops into one search, "
        "'John A. Thayer father birthplace'; issue 43 found all 8 such questions it checked answered wrong).",
    )
    replan_when: ReplanWhen = _f(
        "failure",
        "failure: replan only on a failure the trace shows (no answer, a forced answer at the budget, a "
        "failed tool call, an answer no search result supports, or one that a dated comparison's years in its own "
        "results contradict, which is settled by telling the executor the years: mia.graph.nodes.evidence), with "
        "no model call otherwise; planner: "
        "the planner reads the trace and says yes or no after every attempt, as the paper does (it replanned "
        "12 of 26 right first answers on HotpotQA and broke more than it fixed: results/hotpotqa-qwen-planners).",
    )
    evidence_search: bool = _f(
        False,
        "When an answer to a question that a lookup settles (a dated comparison, the same country) came "
        "before the results held both names' own paragraphs, hold it back once: the graph searches the unread "
        "names as the executor's next turn (a tool call of the budget; not a reflection round, so the years or "
        "countries are still checked after). Replayed on the tuning split (bench/e2e/comparison-check-replay.md): "
        "in the runs that plan first, 23 wrong and 4 right first answers came from one side, and the searched "
        "facts then contradicted 10 of the wrong ones and none of the right; where the executor answers alone "
        "first (plain ReAct, plan_when 'failure') one-sided answers were rare (3 right, 4 wrong) and it "
        "contradicted none. So it is off by default, and worth turning on with plan_when 'start'.",
    )
    drop_repeated_replan: bool = _f(
        True,
        "Do not follow a supplementary plan that only repeats the plan or searches already made: the "
        "answer stands and the executor's second attempt (about 2.3 turns) is saved (71 of 91 replans on "
        "2Wiki repeated the plan: bench/e2e/repeated-replans.md). Off: follow every replan, as the paper does.",
    )
    repeated_search: RepeatedSearch = _f(
        "cached",
        "cached: a search query already made in this episode is not run again; the executor is told its "
        "result is above (saves the tool call's tokens). run: every query runs, as the paper does.",
    )
    plan_searches: PlanSearches = _f(
        "executor",
        "executor: the executor makes every search. first: before the executor's first turn the graph "
        "runs the question itself, then the plan's concrete search steps (those with no unfilled #N) in "
        "one call, each a tool call of the budget: Qwen-1.5B searched only the plan's first step and "
        "answered (results/ladder-tune/2wiki/default-v1).",
    )
    plan_in_prompt: bool = _f(
        True,
        "Show the plan in the executor's prompt. Off (with plan_searches first): the plan only chooses "
        "searches; Qwen-1.5B answered a plan's guessed fact or candidate as written.",
    )
    max_context_tokens: int = _f(7000, "Estimated executor context size that forces a final answer.")
    max_format_retries: int = _f(
        2, "Times a malformed executor reply is sent back for repair before an answer is forced."
    )
    max_observation_words: int = _f(512, "Words of each tool result kept in the executor context and the trace.")
    tool_protocol: ToolProtocol = _f(
        "auto",
        "text: <tool_call> tags parsed from the reply; native: the backend's tool calling; auto: "
        "native where the backend has it, text for local models.",
    )
    turn_grammar: bool = _f(
        True,
        "In the text protocol, constrain each executor turn to the protocol's grammar (an optional "
        "<think>, then one <tool_call> or <answer>) on backends that support it (llama.cpp). Off: the "
        "reply is parsed and a malformed one re-asked, as on other backends.",
    )

    judge_mode: JudgeMode = _f(
        "auto", "auto: ground truth when gold answers are given, else reviewers; off: no judging (outcome unknown)."
    )
    judge_arbiter: JudgeArbiter = _f(
        "weighted",
        "How the reviewer panel's verdict is reached: weighted (the numeric rule over the three reviews) or "
        "llm (an arbiter model call, falling back to the weighted rule when its reply is not a bare verdict).",
    )
    judge_split: JudgeSplit = _f(
        JudgeConfig.model_fields["split"].default,
        "A reviewer panel split by a veto against a passing score: unknown (stored as neither lesson, no memory "
        "debited; the default) or veto (the paper's rule: incorrect). See JudgeConfig.split.",
    )
    judge_trace_checks: bool = _f(
        JudgeConfig.model_fields["trace_checks"].default,
        "Without gold, an answer whose trace shows a failure (the failure rule reflection uses) is incorrect with no "
        "reviewer call; 90% of the answers it flagged on the ladder's final rows were wrong. See JudgeConfig.trace_checks.",
    )
    judge_threshold: float = _f(
        JudgeConfig.model_fields["threshold"].default,
        "The reviewer panel's weighted mean (1-10) at or above which an answer is correct (JudgeConfig.threshold).",
    )
    judge_incorrect_below: float | None = _f(
        None,
        "A panel mean below this is incorrect and from it up to judge_threshold unknown; None: every mean below "
        "the threshold is incorrect. With judge_threshold 10 and this 1 the panel decides almost nothing itself, "
        "and with the trace check the embedded 1.5B judge's verdicts agreed with labels on 96.4% of held-out "
        "answers, deciding 41% of them, all incorrect (bench/judge/panel-agreement.md); off by default.",
    )
    judge_contradiction: JudgeContradiction = _f(
        JudgeConfig.model_fields["contradiction"].default,
        "When the grader says CORRECT but the answer shares no token with any gold answer: metrics (trust the "
        "metrics; the default, see JudgeConfig.contradiction), llm (trust the grader: 'JFK' for 'John F. "
        "Kennedy') or unknown.",
    )
    judge_method: JudgeMethodChoice = _f(
        JudgeConfig.model_fields["method"].default,
        "How answers are graded against gold answers: match+llm (the answer matcher's rules decide what they are "
        "sure of, the judge model only the rest: 97.8% agreement with 360 answers labelled by reading, 95.8% on "
        "the held-out half, bench/judge/grader-agreement.md) or llm (the judge model grades every answer with the "
        "SimpleQA prompt, as before: 84.4% with the embedded Qwen-1.5B).",
    )
    credit_used_memories: bool = _f(
        True,
        "Credit the memories shown to the planner with this answer's outcome. Test-time learning turns it off: "
        "its learner credits them once per question, from the rollouts' majority.",
    )

    planner_max_tokens: int = _f(512, "Most new tokens per planner call.")
    executor_max_tokens: int = _f(384, "Most new tokens per executor turn.")
    manager_max_tokens: int = _f(384, "Most new tokens for a memory compression.")
    judge_max_tokens: int = _f(128, "Most new tokens per judge call.")
    captioner_max_tokens: int = _f(160, "Most new tokens for an image caption.")
    planner_temperature: float = _f(0.0, "Planner sampling temperature (0 = greedy).")
    executor_temperature: float = _f(0.0, "Executor sampling temperature.")
    manager_temperature: float = _f(0.0, "Memory-manager sampling temperature.")
    judge_temperature: float = _f(0.0, "Judge sampling temperature.")
    captioner_temperature: float = _f(0.0, "Captioner sampling temperature.")

    data_dir: str = _f(
        "",
        "Data directory (memory, indexes, models). Empty: $MIA_DATA_DIR (environment or .env), else "
        "~/.local/share/mia.",
    )

    def __post_init__(self) -> None:
        """Every value is checked here, so a bad one is a one-line ValueError naming its field at
        construction, not a surprise mid-run (choices, budgets, the shape of a model spec); blank
        fields take the settings (MIA_* from the environment or `.env`), as the CLI does, so Studio,
        `langgraph dev` and a plain `graph.invoke` behave like `mia ask`."""
        check_values(self)
        blank = [f"{role}_model" for role in ROLES + OPTIONAL_ROLES if not getattr(self, f"{role}_model")]
        if blank or not self.namespace:
            settings = read_settings()
            for name in blank:
                setattr(self, name, getattr(settings, name))
            self.namespace = self.namespace or settings.memory_namespace

    @classmethod
    def paper(cls, **overrides: Any) -> Context:
        """The paper's settings (PAPER), with `overrides` on top: MIA as published, one call away."""
        return cls(**{**PAPER, **overrides})

    def model_for(self, role: str) -> tuple[str, float, int]:
        """(spec, temperature, max_tokens) of one role."""
        if role not in ROLES + OPTIONAL_ROLES:
            raise ValueError(f"unknown role {role!r}; expected one of {ROLES + OPTIONAL_ROLES}")
        if role in OPTIONAL_ROLES and not getattr(self, f"{role}_model"):
            raise ValueError(f"no {role} model is configured (set {role}_model or MIA_{role.upper()}_MODEL)")
        return (
            getattr(self, f"{role}_model"),
            float(getattr(self, f"{role}_temperature")),
            int(getattr(self, f"{role}_max_tokens")),
        )

    def judge_config(self) -> JudgeConfig:
        """The judge's settings this run chose (the arbiter, the contradiction rule, the grading method)."""
        return JudgeConfig(
            arbiter=self.judge_arbiter,
            contradiction=self.judge_contradiction,
            method=self.judge_method,
            split=self.judge_split,
            threshold=self.judge_threshold,
            incorrect_below=self.judge_incorrect_below,
            trace_checks=self.judge_trace_checks,
        )

    def resolved_data_dir(self) -> Path:
        """The data directory this run reads and writes."""
        return config.data_dir(self.data_dir or None)

    @classmethod
    def from_env(cls, **overrides: Any) -> Context:
        """A context from the given values, the others from the settings (None means unset)."""
        return cls(**{k: v for k, v in overrides.items() if v is not None})

    @classmethod
    def coerce(cls, value: Any) -> Context:
        """Accept a Context, a dict (HTTP / Studio), None, or a parent graph's context object. A
        dict's keys that name no field are left out with a warning (a typo must not pass unseen)."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        names = {f.name for f in fields(cls)}
        if isinstance(value, dict):
            unknown = sorted(str(k) for k in value if k not in names)
            if unknown:
                hints = {k: difflib.get_close_matches(k, names, n=1) for k in unknown}
                log.warning(
                    "context keys that name no Context field were ignored: %s",
                    ", ".join(f"{k} (did you mean {h[0]}?)" if h else k for k, h in hints.items()),
                )
            return cls(**{k: v for k, v in value.items() if k in names})
        # another graph's context (mia as a subgraph of an app with its own context_schema):
        # the fields that share a name with ours carry over, the rest keep their defaults
        return cls(**{name: getattr(value, name) for name in names if hasattr(value, name)})


_ANY = float("inf")
#: The allowed (least, greatest) value of each numeric field: budgets, sizes and token limits count
#: something; caption_weight is a weight; min_similarity a cosine (None: no floor).
RANGE: dict[str, tuple[float, float]] = {
    "search_top_k": (1, _ANY),
    "k_pos": (0, _ANY),
    "k_neg": (0, _ANY),
    "max_tool_calls": (0, _ANY),
    "min_tool_calls": (0, _ANY),
    "max_replans": (0, _ANY),
    "max_context_tokens": (1, _ANY),
    "max_format_retries": (0, _ANY),
    "max_observation_words": (1, _ANY),
    "caption_weight": (0.0, 1.0),
    "min_similarity": (-1.0, 1.0),
    "judge_threshold": (1.0, 10.0),
    "judge_incorrect_below": (1.0, 10.0),
    **{f"{role}_max_tokens": (1, _ANY) for role in ROLES + OPTIONAL_ROLES},
    **{f"{role}_temperature": (0.0, _ANY) for role in ROLES + OPTIONAL_ROLES},
}
NULLABLE = frozenset({"min_similarity", "judge_incorrect_below"})
_SPEC_SHAPE = re.compile(r"[^\s:]+:\S.*")


def check_values(ctx: Context) -> None:
    """Raise ValueError, naming the field, for a value outside its Literal's choices, a number outside
    its RANGE (or not a number), or a model spec that is not `<backend>:<model>` (which backend
    exists is the model loader's question: a Deps model factory may serve its own names)."""
    hints = _hints()
    for f in fields(ctx):
        value, kind = getattr(ctx, f.name), hints[f.name]
        if get_origin(kind) is Literal and value not in get_args(kind):
            raise ValueError(f"{f.name} must be one of {', '.join(map(str, get_args(kind)))}, not {value!r}")
        if f.name in RANGE and not (value is None and f.name in NULLABLE):
            low, high = RANGE[f.name]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{f.name} must be a number, not {value!r}")
            if not low <= value <= high:
                bound = f"at least {low:g}" if high == _ANY else f"between {low:g} and {high:g}"
                raise ValueError(f"{f.name} must be {bound}, not {value!r}")
        if f.name.endswith("_model") and value and value != EXTRACTIVE and not _SPEC_SHAPE.fullmatch(str(value)):
            raise ValueError(
                f"{f.name} {value!r} is not a model spec: write <backend>:<model>, "
                "e.g. llamacpp:qwen-coder-1.5b or openai:gpt-4.1-mini"
            )
    try:  # the judge's own rules (JudgeConfig's validators: one definition), as one line
        ctx.judge_config()
    except ValidationError as exc:
        raise ValueError(f"judge settings: {exc.errors()[0]['msg'].removeprefix('Value error, ')}") from None


@functools.cache
def _hints() -> dict[str, Any]:
    return get_type_hints(Context)


PAPER: dict[str, Any] = {
    "plan_when": "start",
    "plan_style": "paper",
    "replan_when": "planner",
    "drop_repeated_replan": False,
    "repeated_search": "run",
    "min_similarity": None,
    "memory_style": "paper",
}
"""The fields whose defaults differ from the MIA paper's settings, at the paper's values
(`mia ask --paper`, `mia eval --paper`, `Context.paper()`); results/ladder/README.md has the figures
behind each default."""


def paper_values(given: dict[str, Any]) -> dict[str, Any]:
    """The PAPER values of the fields `given` leaves unset (None): what `--paper` adds to a
    command line's options (an option given beside it wins)."""
    return {name: value for name, value in PAPER.items() if given.get(name) is None}


def field_choices(name: str) -> tuple[str, ...]:
    """The allowed values of a Context field with a Literal type (() for any other field or name):
    what a command line checks its free-text options against, before a run starts."""
    kind = _hints().get(name)
    return tuple(map(str, get_args(kind))) if get_origin(kind) is Literal else ()
