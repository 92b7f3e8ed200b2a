"""Summary of a run, recomputed from its log every time (never updated incrementally).

Why recomputed: resumption, retries and merges then cannot drift from what the log says.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from mia.app.evaluation.records import ROLES, QuestionResult
from mia.app.evaluation.reflection import ReflectionSummary, reflection_lines, summarise_reflection
from mia.app.evaluation.stats import Estimate, bootstrap_mean, mean_ci, wilson


class RoleSummary(BaseModel):
    """Mean calls and tokens per question for one role, and the run's totals."""

    calls: float
    prompt_tokens: float
    completion_tokens: float
    total_prompt_tokens: int
    total_completion_tokens: int
    # None for runs recorded before the cache hits and call times were kept
    cached_prompt_tokens: float | None = None
    model_seconds: float | None = None


class RunSummary(BaseModel):
    """What one configuration achieved and what it cost, with 95% intervals."""

    label: str
    config: dict[str, Any]
    n: int
    errors: int
    warned: int = 0  # questions on which the graph reported a warning (e.g. memorise failed)
    accuracy: Estimate  # LLM-judge accuracy (Wilson); value None when the run used --judge metrics
    em: Estimate  # exact match (Wilson: it is 0/1 per question)
    cover: Estimate  # a gold answer appears, as whole tokens, in the answer (Wilson); robust to verbose answers
    judge_agrees_with_cover: Estimate  # sanity of the judge: how often its verdict equals `cover`
    f1: Estimate  # token F1 (percentile bootstrap: bounded in [0, 1], unlike a t interval)
    tool_calls: Estimate
    llm_calls: Estimate
    prompt_tokens: Estimate
    agent_prompt_tokens: Estimate  # without the judge role: what answering costs, not grading
    completion_tokens: Estimate
    wall_s: Estimate
    per_role: dict[str, RoleSummary]
    total_prompt_tokens: int
    total_completion_tokens: int
    total_wall_s: float
    reflection: ReflectionSummary | None = None  # None: no question was reflected on


def run_label(config: dict[str, Any]) -> str:
    """A short name for tables and plots: the explicit --label, else memory mode (+ model if uniform)."""
    if config.get("label"):
        return str(config["label"])
    models = config.get("models") or {}
    uniq = set(models.values())
    model = f" · {next(iter(uniq))}" if len(uniq) == 1 else ""
    return f"{config.get('memory_mode', '?')}{model}"


def _covered(r: QuestionResult) -> bool:
    from mia.graph.judge import cover_match

    return bool(r.answer) and cover_match(r.answer, r.gold_answers)


def summarise(results: list[QuestionResult], config: dict[str, Any]) -> RunSummary:
    """Every metric of the run from its per-question results."""
    n = len(results)
    covered = {r.id: _covered(r) for r in results}
    judged = [r for r in results if r.judge_correct is not None]
    per_role: dict[str, RoleSummary] = {}
    for role in ROLES:
        used = [r.role(role) for r in results]
        if not any(u.calls for u in used):
            continue
        timed = any(u.ms for u in used)  # runs logged before call times were kept have none
        per_role[role] = RoleSummary(
            calls=sum(u.calls for u in used) / n,
            prompt_tokens=sum(u.input_tokens for u in used) / n,
            completion_tokens=sum(u.output_tokens for u in used) / n,
            total_prompt_tokens=sum(u.input_tokens for u in used),
            total_completion_tokens=sum(u.output_tokens for u in used),
            cached_prompt_tokens=sum(u.cached_tokens for u in used) / n if timed else None,
            model_seconds=sum(u.ms for u in used) / 1000 / n if timed else None,
        )
    return RunSummary(
        label=run_label(config),
        config=config,
        n=n,
        errors=sum(1 for r in results if r.error),
        warned=sum(1 for r in results if r.warnings),
        accuracy=wilson(sum(1 for r in judged if r.judge_correct), len(judged)),
        em=wilson(sum(1 for r in results if r.em >= 1.0), n),
        cover=wilson(sum(covered.values()), n),
        judge_agrees_with_cover=wilson(sum(1 for r in judged if r.judge_correct == covered[r.id]), len(judged)),
        f1=bootstrap_mean([r.f1 for r in results]),
        tool_calls=mean_ci([float(r.tool_calls) for r in results]),
        llm_calls=mean_ci([float(r.llm_calls) for r in results]),
        prompt_tokens=mean_ci([float(r.prompt_tokens) for r in results]),
        agent_prompt_tokens=mean_ci([float(r.prompt_tokens - r.role("judge").input_tokens) for r in results]),
        completion_tokens=mean_ci([float(r.completion_tokens) for r in results]),
        wall_s=mean_ci([r.wall_s for r in results]),
        per_role=per_role,
        total_prompt_tokens=sum(r.prompt_tokens for r in results),
        total_completion_tokens=sum(r.completion_tokens for r in results),
        total_wall_s=sum(r.wall_s for r in results),
        reflection=summarise_reflection(results),
    )


def _num(est: Estimate, digits: int = 0) -> str:
    return est.fmt(digits)


def markdown_table(summaries: list[RunSummary]) -> str:
    """One row per configuration: accuracy and cost per question, each with its 95% interval."""
    head = (
        "| run | n | judge accuracy | EM | F1 | cover | tool calls/q | LLM calls/q | prompt tokens/q | "
        "agent prompt tokens/q (no judge) | completion tokens/q | s/q |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    rows = []
    for s in summaries:
        err = "".join(f" ({k} {name})" for k, name in ((s.errors, "err"), (s.warned, "warn")) if k)
        rows.append(
            f"| {s.label} | {s.n}{err} | {s.accuracy.fmt(3)} | {s.em.fmt(3)} | {s.f1.fmt(3)} | {s.cover.fmt(3)} | "
            f"{_num(s.tool_calls, 2)} | {_num(s.llm_calls, 2)} | {_num(s.prompt_tokens)} | {_num(s.agent_prompt_tokens)} | "
            f"{_num(s.completion_tokens)} | {_num(s.wall_s, 1)} |"
        )
    return head + "\n".join(rows) + "\n"


def _opt(value: float | None, digits: int) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def markdown_roles(summaries: list[RunSummary]) -> str:
    """Mean calls and tokens per question, per role: where each configuration spends its budget."""
    head = (
        "| run | role | calls/q | prompt tokens/q | of which cached/q | completion tokens/q | model s/q |\n"
        "|---|---|---|---|---|---|---|\n"
    )
    rows = [
        f"| {s.label} | {role} | {r.calls:.2f} | {r.prompt_tokens:.0f} | {_opt(r.cached_prompt_tokens, 0)} | "
        f"{r.completion_tokens:.0f} | {_opt(r.model_seconds, 1)} |"
        for s in summaries
        for role, r in s.per_role.items()
    ]
    return head + "\n".join(rows) + "\n"


def judge_sanity(summaries: list[RunSummary]) -> str:
    """One line per judged run: a judge that disagrees with cover match often is not grading."""
    lines = [
        f"- {s.label}: the LLM judge agrees with cover match on {s.judge_agrees_with_cover.fmt(2)} of the questions"
        for s in summaries
        if s.judge_agrees_with_cover.value is not None
    ]
    return (
        ("Judge sanity (cover = a gold answer appears in the answer):\n\n" + "\n".join(lines) + "\n") if lines else ""
    )


def reflection_section(summaries: list[RunSummary]) -> str:
    """The reflection section of a table of runs (empty when none reflected)."""
    return reflection_lines([(s.label, s.reflection) for s in summaries])


def body_sections(summaries: list[RunSummary]) -> list[str]:
    """The sections every table of runs has (one run's summary, a comparison): the table, per-role
    costs, judge sanity and reflection."""
    return [
        markdown_table(summaries),
        "Per role (means per question):",
        "",
        markdown_roles(summaries),
        judge_sanity(summaries),
        reflection_section(summaries),
    ]


def render_markdown(summaries: list[RunSummary], title: str = "Evaluation") -> str:
    cfg = summaries[0].config if summaries else {}
    lines = [
        f"# {title}",
        "",
        f"Dataset `{cfg.get('dataset', '?')}` ({cfg.get('setting', '?')} setting), seed {cfg.get('seed', '?')}. "
        "Intervals are 95%: Wilson for accuracy, EM and cover, percentile bootstrap for F1, Student t for the other means.",
        "",
        *body_sections(summaries),
    ]
    return "\n".join(lines)


def write_summary(run_dir: Path, summary: RunSummary) -> None:
    """summary.json and summary.md beside the log. Keys sorted, as in config.json: a summary rebuilt
    from a finished run's files then differs from the first one only where a figure does."""
    run_dir = Path(run_dir)
    text = json.dumps(summary.model_dump(), indent=2, sort_keys=True)
    (run_dir / "summary.json").write_text(text + "\n", encoding="utf-8")
    (run_dir / "summary.md").write_text(render_markdown([summary], f"Evaluation: {summary.label}"), encoding="utf-8")
