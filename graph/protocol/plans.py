"""Where a planner's plan ends, for serving and training alike.

Small models go on past the plan with a new "Question: ... Plan:" of their own, a "Final answer:"
(a plan holds no facts; `make demo`'s replan ended with one), or replay the
executor's transcript they were shown ("Round 1 / Tool call: / Tool result:", the labels of
`Trajectory.to_trace_text`, `TRACE_LABELS`). Measured: a Qwen-1.5B replan of 593 tokens, the first plan again
and then 238 words of the transcript (bench/e2e/extractive-manager-run/results.jsonl, question 2).
The same markers are the planner's stop sequences (four: OpenAI's limit), so that the overrun is
not even generated.

Qwen-1.5B also loops inside a plan until its token limit: the same step again and again, or a pair
of steps written twice (8 of the 50 scored 2WikiMultihopQA plans of results/2wiki-qwen-defaults/mia,
165-409 words each; `cut_plan_loop`). A step repeated elsewhere ("Check if any results are found."
between two searches) is a plan, not a loop, and stays.

And a plan holds no facts, yet on "A or B?" questions it sometimes ends by deciding ("The film
released more recently is Shravana Banthu."), and the executor then answers with that guess: 4 of
the 29 comparison plans of that run and its warm-up, 3 of them wrong (`drop_guessed_answer`); and
twice in the 100 scored plans of results/2wiki-qwen-planners/mia-base, both answered wrong, with the
candidate as the subject: '"Hold Back The Night" has the director who died earlier.', 'The Gaucho
War was directed by John Ford, who died in 1971.'

Asked to replan, Qwen-1.5B mostly writes its plan again: 71 of the 91 replans of the 200 scored
questions of results/2wiki-qwen-planners/mia-grpo and mia-base add nothing (`adds_nothing`: every
step is a step of the plan or names only searches already made). Following one makes the executor
search and answer again; replayed, that changed 14 right answers to wrong and 11 wrong ones to right
(bench/e2e/repeated-replans.md). Dropping them (`Context.drop_repeated_replan`) saves the second
attempt, and its gain, 3 answers in 200, is within noise; the graph follows them by default, as
the paper does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from mia.graph.protocol.questions import question_options
from mia.graph.protocol.tags import strip_think
from mia.memory.compression import step_text
from mia.memory.trajectory import TRACE_LABELS

_ENDS = [TRACE_LABELS[key] for key in ("question", "plan", "final_answer", "tool_call", "tool_result")]
PLAN_STOP = [
    "\n" + TRACE_LABELS["question"],
    "\n" + TRACE_LABELS["round"] + " ",
    "\n" + TRACE_LABELS["tool_call"],
    "\n" + TRACE_LABELS["tool_result"],
]
_OVERRUN = re.compile(
    r"(?im)^[ \t]*("
    + "|".join([re.escape(TRACE_LABELS["round"]) + r" \d+\b"] + [re.escape(label) for label in _ENDS])
    + ")"
)


_HOP_REF = re.compile(r"#\d+(?!\w)")


def unfilled_hop(query: str) -> bool:
    """Whether a search query still holds a hop plan's placeholder ("#1 father"): the executor
    searched the plan's step before filling it with the fact the earlier hop found. On the final
    HotpotQA split `default`'s one search held one on 18 of 100 questions (results/ladder/README.md)."""
    return bool(_HOP_REF.search(query))


_QUOTED = re.compile(r'["\u201c]([^"\u201c\u201d\n]+)["\u201d]')


def plan_queries(plan: str, question: str = "") -> list[str]:
    """The concrete queries of a plan's search steps, in order: the quoted text of each line that
    says "search", without a query that still holds a hop placeholder (`unfilled_hop`), the
    question itself, or a repeat (`query_key`)."""
    seen = {query_key(question)} if question else set()
    out = []
    for line in (plan or "").splitlines():
        if "search" not in line.lower():
            continue
        for match in _QUOTED.finditer(line):
            query = " ".join(match.group(1).split())
            if query and not unfilled_hop(query) and (key := query_key(query)) not in seen:
                seen.add(key)
                out.append(query)
    return out


def _step_key(line: str) -> str:
    """A plan line compared without its numbering, markdown, case, spacing and final punctuation."""
    return step_text(line).lower().strip(" .:")


def cut_plan_loop(plan: str) -> str:
    """The plan up to where it starts looping: a step that repeats the step just before it, or a
    pair of consecutive steps written a second time."""
    lines = plan.splitlines()
    steps = [(i, key) for i, line in enumerate(lines) if (key := _step_key(line))]  # (line number, key)
    pairs: set[tuple[str, str]] = set()
    for (start, before), (line, key) in zip(steps, steps[1:]):
        if key == before:  # the step again: keep the first
            return "\n".join(lines[:line]).rstrip()
        if (before, key) in pairs:  # two steps again: keep them once
            return "\n".join(lines[:start]).rstrip()
        pairs.add((before, key))
    return plan


#: A search result copied into a plan (the tools' `Doc i (Title: ...)` lines): a 1.5B planner shown
#: the failed attempt continued its transcript, results and all, inside step 1 (2Wiki tuning split).
_COPIED_RESULT = re.compile(r"\bDoc \d+ \(Title:")


def cut_plan_overrun(plan: str) -> str:
    """The plan without what a model wrote after it (an invented question, a transcript replay, a
    copied search result) or after it began to loop."""
    cuts = [m.start() for m in (_OVERRUN.search(plan), _COPIED_RESULT.search(plan)) if m and m.start() > 0]
    return cut_plan_loop(plan[: min(cuts)].rstrip(" \t\n:") if cuts else plan)


_SENTENCES = re.compile(r"(?<=[.!])\s+")
_CONDITIONAL = re.compile(r"\b(if|whether|unless|either)\b", re.IGNORECASE)


def drop_guessed_answer(plan: str, question: str) -> str:
    """The plan without sentences that decide a comparison question before any search: "... is
    A" / "... was B" / "A has ..." for the question's own candidates, unless the sentence is a condition or a
    comparison still to make ("If A is later than B, ..."). A line left empty goes with it."""
    options = question_options(question)
    if not options:
        return plan
    names = "|".join(re.escape(option) for option in options)
    decided = re.compile(
        r"\b(?:is|was|are|were)\s+(?:the\s+film\s+|the\s+one\s+)?[\"'*]*(?:" + names + r")\b"
        # or an option as the subject: '"Hold Back The Night" has the director who died earlier.'
        r"|^[\s\-*\d.:]*[\"'*]*(?:" + names + r")[\"'*]*\s+(?:is|was|has|had)\b",
        re.IGNORECASE,
    )
    kept_lines = []
    for line in plan.splitlines():
        sentences = _SENTENCES.split(line)
        kept = [s for s in sentences if not (decided.search(s) and not _CONDITIONAL.search(s))]
        if len(kept) == len(sentences):
            kept_lines.append(line)
        elif "".join(kept).strip(" -*:"):
            kept_lines.append(" ".join(kept))
    return "\n".join(kept_lines).rstrip()


def query_key(query: str) -> str:
    """A search query compared without case, punctuation and spacing (repeated searches, repeated replans)."""
    return " ".join(re.sub(r"[^\w\s]", " ", query.lower()).split())


def adds_nothing(replan: str, plan: str, searches_made: Iterable[str]) -> bool:
    """True when a supplementary plan only repeats: each of its steps is a step of the plan, or
    names only searches already made (in quotes, as the plan prompt's example writes them). An
    empty replan adds nothing either; a step that is new in any other way counts as new."""
    done = {query_key(q) for q in searches_made}
    planned = {_step_key(line) for line in plan.splitlines()} - {""}
    for line in replan.splitlines():
        key = _step_key(line)
        if not key or key in planned:
            continue
        queries = [query_key(q) for q in _QUOTED.findall(line)]
        if not queries or any(q not in done for q in queries):
            return False
    return True


def searches_added(plan: str, searches_made: Iterable[str]) -> list[str]:
    """The quoted queries of a plan's search steps that the episode has not made yet (a hop's "#1
    father" counts: it is a search to come): none means the plan would only repeat."""
    done = {query_key(q) for q in searches_made}
    return [
        query
        for line in (plan or "").splitlines()
        if "search" in line.lower()
        for query in (" ".join(m.group(1).split()) for m in _QUOTED.finditer(line))
        if query and query_key(query) not in done
    ]


def served_plan(raw: str, question: str) -> str:
    """What a planner's reply becomes as a plan, in serving and training alike: the visible text,
    cut where the model went on or began to loop, without a guessed answer."""
    text = strip_think(raw) or (raw or "").strip()
    return drop_guessed_answer(cut_plan_overrun(text), question)
