"""Judging without ground truth: three reviewers score the work, an arbiter decides.

Reviewers (the paper's three evaluators, reference 6.2): reasoning and logic, sources and
hallucination (both see the trajectory), answer validity and completeness (question and answer
only). Each replies with JSON {"score": 1-10, "reason": ...}; malformed replies are repaired,
re-asked once, or recorded as missing. The arbiter is a numeric rule with stated weights (the
paper only wrote its 0.5/0.3/0.2 weights into a prompt) or, optionally, an extra model call whose
reply must be a bare verdict. Reviewers and arbiter are never shown gold answers: the paper's
inference runner passed the gold answer as the "final output", which leaks the label.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from langchain_core.messages import HumanMessage

from mia.graph.protocol import escape_untrusted

from .calls import Conversation, Reply, Steps, continue_with
from .config import JudgeConfig
from .outcome import Outcome
from .parsing import parse_arbiter, parse_review
from .prompts import load_prompts, render
from .verdict import JudgeMethod, Review, ReviewerName

REVIEWERS: tuple[ReviewerName, ...] = ("reasoning", "sources", "validity")


@dataclass
class ReviewResult:
    """The reviews and the arbiter's decision."""

    reviews: list[Review]
    outcome: Outcome
    score: float
    method: JudgeMethod
    decision: str
    raw: str | None = None
    notes: list[str] = field(default_factory=list)


def shorten_middle(text: str, limit: int) -> str:
    """Keep the head and the tail of a long text (the plan and the final steps matter most)."""
    if len(text) <= limit:
        return text
    head = limit // 3
    tail = limit - head
    return f"{text[:head]}\n[... {len(text) - limit} characters omitted ...]\n{text[-tail:]}"


def _evidence(trace: str | None, config: JudgeConfig) -> str:
    prompts = load_prompts()["reviewer"]
    if not trace or not trace.strip():
        return prompts["evidence_without_trace"]
    fenced = escape_untrusted(shorten_middle(trace.strip(), config.max_trace_chars))  # cannot close <trajectory>
    return render(prompts["evidence_with_trace"], trace=fenced)


def reviewer_conversation(
    name: ReviewerName, question: str, prediction: str, trace: str | None, config: JudgeConfig
) -> Conversation:
    """The prompt of one reviewer; only reviewers marked `sees_trace` get the trajectory."""
    prompts = load_prompts()
    spec = prompts["reviewers"][name]
    evidence = _evidence(trace, config) if spec["sees_trace"] else ""
    text = render(
        prompts["reviewer"]["template"],
        role=spec["role"],
        criteria=spec["criteria"].strip(),
        question=question,
        evidence=evidence,
        prediction=prediction[: config.max_answer_chars] or "(empty)",
    )
    return [HumanMessage(content=text)]


def _review_from(name: ReviewerName, reply: Reply, config: JudgeConfig, reasked: bool) -> Review | None:
    """A Review from a reply, or None when the reply has no readable score."""
    spec = load_prompts()["reviewers"][name]
    base = dict(name=name, title=spec["title"], weight=config.weights.get(name, 0.0), reasked=reasked, raw=reply.text)
    if reply.error is not None:
        return Review(**base, missing=True, error=f"call failed: {reply.error}")
    parsed = parse_review(reply.text or "")
    if parsed is None:
        return None
    return Review(**base, score=parsed.score, reason=parsed.reason, repaired=parsed.repaired)


def _missing(name: ReviewerName, reply: Reply, config: JudgeConfig, reasked: bool) -> Review:
    spec = load_prompts()["reviewers"][name]
    return Review(
        name=name,
        title=spec["title"],
        weight=config.weights.get(name, 0.0),
        missing=True,
        reasked=reasked,
        raw=reply.text,
        error="no score could be read from the reply",
    )


def weighted_decision(reviews: list[Review], config: JudgeConfig) -> tuple[Outcome, float, str]:
    """Outcome, score in [0, 1] and a one-line explanation from the reviews present.

    Correct iff the weighted mean score (weights renormalised over the reviews present) reaches
    the threshold and no review falls below the veto. Too few reviews: unknown. Reviews spread over
    `config.disagree_spread` points or more: unknown. A veto against a passing mean is a split
    panel: unknown (`config.split`, the default) or incorrect ("veto"). A mean between
    `config.incorrect_below` and the threshold is unknown.
    """
    # A reviewer weighted 0 is ignored altogether: it neither counts nor vetoes.
    present = [r for r in reviews if not r.missing and r.score is not None and r.weight > 0]
    scores = [r.score for r in present if r.score is not None]  # one per review present
    total = sum(r.weight for r in present)
    if not present:
        return "unknown", 0.0, "no usable review: outcome unknown"
    mean = sum(r.weight * s for r, s in zip(present, scores)) / total
    score = (mean - 1.0) / 9.0
    if len(present) < config.min_reviews:
        return (
            "unknown",
            score,
            (
                f"only {len(present)} usable review(s), {config.min_reviews} needed: outcome unknown "
                f"(weighted score {mean:.1f}/10)"
            ),
        )
    spread = max(scores) - min(scores)
    if config.disagree_spread is not None and spread >= config.disagree_spread:
        return (
            "unknown",
            score,
            f"reviews from {min(scores)} to {max(scores)}/10 (a spread of "
            f"{spread:g} >= {config.disagree_spread:g}): the reviewers disagree, outcome unknown",
        )
    vetoes = [r for r, s in zip(present, scores) if config.veto_below is not None and s < config.veto_below]
    if vetoes:
        names = ", ".join(f"{r.title.lower()} {r.score}/10" for r in vetoes)
        if config.split == "unknown" and mean >= config.threshold:
            return (
                "unknown",
                score,
                f"weighted score {mean:.1f}/10 >= threshold {config.threshold:g}, but {names} below "
                f"{config.veto_below:g}: the reviewers disagree, outcome unknown",
            )
        return "incorrect", score, f"weighted score {mean:.1f}/10, vetoed by {names} (below {config.veto_below:g})"
    if config.incorrect_below is not None and config.incorrect_below <= mean < config.threshold:
        return (
            "unknown",
            score,
            f"weighted score {mean:.1f}/10, between {config.incorrect_below:g} (incorrect below) and the threshold "
            f"{config.threshold:g}: outcome unknown",
        )
    outcome: Outcome = "correct" if mean >= config.threshold else "incorrect"
    relation = ">=" if outcome == "correct" else "<"
    return outcome, score, f"weighted score {mean:.1f}/10 {relation} threshold {config.threshold:g}: {outcome}"


def arbiter_conversation(
    question: str, prediction: str, trace: str | None, reviews: list[Review], config: JudgeConfig
) -> Conversation:
    """The LLM arbiter's prompt: the work, plus every review with its weight."""
    text = render(
        load_prompts()["arbiter"]["template"],
        question=question,
        evidence=_evidence(trace, config),
        prediction=prediction[: config.max_answer_chars] or "(empty)",
        reviews="\n".join(f"- {review.line()}" for review in reviews),
    )
    return [HumanMessage(content=text)]


def review_steps(question: str, prediction: str, trace: str | None, config: JudgeConfig) -> Steps[ReviewResult]:
    """Run the three reviewers (one batch, re-asking the hopeless ones once), then the arbiter."""
    notes: list[str] = []
    conversations = [reviewer_conversation(n, question, prediction, trace, config) for n in REVIEWERS]
    replies = yield conversations
    reviews: dict[ReviewerName, Review] = {}
    retry: list[int] = []
    for i, (name, reply) in enumerate(zip(REVIEWERS, replies)):
        review = _review_from(name, reply, config, reasked=False)
        if review is not None:
            reviews[name] = review
        elif config.reask:
            retry.append(i)
        else:
            reviews[name] = _missing(name, reply, config, reasked=False)
    if retry:
        follow_up = HumanMessage(content=load_prompts()["reviewer"]["reask"])
        second = yield [continue_with(conversations[i], replies[i], follow_up) for i in retry]
        for i, reply in zip(retry, second):
            name = REVIEWERS[i]
            reviews[name] = _review_from(name, reply, config, reasked=True) or _missing(
                name, reply, config, reasked=True
            )
    ordered = [reviews[name] for name in REVIEWERS]
    for review in ordered:
        if review.missing:
            notes.append(
                f"{review.name} review missing: {review.error}" + (" (after a re-ask)" if review.reasked else "")
            )
        elif review.reasked:
            notes.append(f"{review.name} review was malformed; re-asked once and the second reply was read")
        elif review.repaired:
            notes.append(f"{review.name} review was repaired (reply was not clean JSON)")

    outcome, score, decision = weighted_decision(ordered, config)
    if outcome == "unknown":
        return ReviewResult(ordered, outcome, score, "fallback", decision, notes=notes)
    if config.arbiter == "weighted":  # decided by the numeric rule over the reviews, not by a model call
        return ReviewResult(ordered, outcome, score, "weighted", decision, notes=notes)

    conversation = arbiter_conversation(question, prediction, trace, ordered, config)
    (reply,) = yield [conversation]
    for attempt in (1, 2):
        verdict = parse_arbiter(reply.text or "") if reply.error is None else None
        if verdict is not None:
            if attempt == 2:
                notes.append("arbiter reply was not a bare verdict; re-asked once and the second reply was read")
            llm_outcome: Outcome = "correct" if verdict else "incorrect"
            return ReviewResult(
                ordered, llm_outcome, score, "llm", f"arbiter model: {llm_outcome} ({decision})", reply.text, notes
            )
        if reply.error is not None or attempt == 2 or not config.reask:
            break
        follow_up = HumanMessage(content=load_prompts()["arbiter"]["reask"])
        (reply,) = yield [continue_with(conversation, reply, follow_up)]
    why = (
        f"call failed ({reply.error})"
        if reply.error is not None
        else f"reply was not a bare verdict ({(reply.text or '')[:80]!r})"
    )
    notes.append(f"arbiter {why}; decided by the weighted rule instead")
    return ReviewResult(ordered, outcome, score, "fallback", decision, reply.text, notes)


__all__ = [
    "REVIEWERS",
    "ReviewResult",
    "shorten_middle",
    "reviewer_conversation",
    "weighted_decision",
    "arbiter_conversation",
    "review_steps",
]
