"""What test-time learning did during a run: accuracy per window of answers, the adapter
versions that served them, rollbacks, and how far the learner lagged behind the answers.

Why lag matters: the learner trains on a batch of answered questions while answering goes on, so
a version learned from answers 1-4 may be published only after answer 12. If the lag is many
windows long, "learning at test time" mostly means learning after the test. The lag of a batch is
counted from its last answer to the publication of the version learned from it, in answers given
meanwhile and in seconds.

Read from the run folder only: `results.jsonl` (each answer's `finished_at` and `served_version`),
the learner's log `store/online/<namespace>/learner.jsonl` and the adapter registry
`store/adapters/planner/<namespace>/registry.json`.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from mia.app.evaluation.records import QuestionResult
from mia.app.evaluation.runlog import RunDirError, latest_by_id, read_config, read_results
from mia.app.evaluation.stats import Estimate, wilson
from mia.training.online.layout import ADAPTERS_DIR, BASE, LEARNER_LOG, ONLINE_DIR, REGISTRY_FILE
from mia.training.online.registry import MISSING


class LearningWindow(BaseModel):
    """Answers start..end (1-based, in the order they were given)."""

    start: int
    end: int
    correct: int
    accuracy: Estimate
    versions: list[str]  # adapter versions that served these answers, in order of first use


class LearnerBatch(BaseModel):
    """One learner step and how far behind the answers it was."""

    batch: int  # the learned batch this row belongs to (a failed try: the batch being tried)
    kind: str = "step"  # step (a version is published if the groups were not all tied), rollback,
    # failed (a try, retried on the same episodes) or skipped (given up after the retries)
    version: str | None  # a step's new version (None: no update), a rollback's target
    learned_through: int  # the answer (1-based) of the batch's last episode
    seconds: float  # the step's own duration
    lag_answers: int | None  # answers given after that one, before this version was published
    lag_s: float | None  # seconds from that answer to the publication
    first_served: int | None  # the first answer this version served (None: never)
    error: str | None = None


class LearningReport(BaseModel):
    label: str
    n: int
    scored_by: str  # "judge" or "cover match" (no-ground-truth runs have no judge accuracy)
    windows: list[LearningWindow]
    batches: list[LearnerBatch]
    rolled_back: list[str]
    missing: list[str] = []  # versions whose adapter files were lost (the registry served an ancestor instead)
    served: dict[str, int]  # answers per version
    answer_ids: list[str] = []  # the questions, in the order they were answered
    answer_correct: list[bool] = []  # scored as `scored_by` says
    answer_versions: list[str] = []  # the version that served each answer (empty: untracked run)
    tracked: bool = True  # answers say which version served them (runs before that: from the registry)


def _one(found: list[Path], what: str, run_dir: Path) -> Path | None:
    if len(found) > 1:
        raise RunDirError(
            f"{run_dir}: several {what} files ({', '.join(str(p) for p in found)}); one namespace per run"
        )
    return found[0] if found else None


def _learner_log(run_dir: Path) -> list[dict[str, Any]]:
    store = run_dir / "store"
    path = _one(sorted(store.glob(f"{ONLINE_DIR}/**/{LEARNER_LOG}")), LEARNER_LOG, run_dir)
    if path is None:
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:  # a torn last line (killed mid-write) is not fatal
            continue
    return rows


def _registry(run_dir: Path) -> dict[str, Any]:
    path = _one(
        sorted((run_dir / "store").glob("/".join(ADAPTERS_DIR) + f"/**/{REGISTRY_FILE}")), REGISTRY_FILE, run_dir
    )
    if path is None:
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise RunDirError(f"{path}: not valid JSON ({err})") from err


def answers_in_order(run_dir: Path) -> tuple[list[QuestionResult], bool]:
    """A run's answers in the order they were given (a resumed run appends; a retried question
    keeps its last try), and whether they are scored by the judge (else by cover match)."""
    latest = latest_by_id(read_results(Path(run_dir)))
    answers = sorted(latest.values(), key=lambda r: (r.finished_at is None, r.finished_at or 0.0))
    return answers, any(r.judge_correct is not None for r in answers)


def is_correct(r: QuestionResult, by_judge: bool) -> bool:
    if by_judge:
        return bool(r.judge_correct)
    from mia.graph.judge import cover_match

    return bool(r.answer) and cover_match(r.answer, r.gold_answers)


def _first_served_from_registry(infos: dict[str, Any], n: int) -> dict[str, int]:
    """For runs whose answers do not name their version: with no rollback, versions were served in
    the order they were published, each for as many answers as the registry has rewards for."""
    if any(info.get("status") == "rolled_back" for info in infos.values()):
        return {}
    first, given = {}, 0
    for version in sorted(infos, key=lambda v: (v != BASE, v)):
        if given < n:  # a version published after the last answer served none
            first[version] = given + 1
        given += len(infos[version].get("rewards") or [])
    return first


def _batches(
    events: list[dict[str, Any]], answers: list[QuestionResult], first_served: dict[str, int]
) -> list[LearnerBatch]:
    """One row per learner event. Numbered here, in log order: a resumed learner used to number
    from 1 again. Only a learned (or finally skipped) batch moves `learned_through`: a failed try
    is retried on the same episodes."""
    times = [r.finished_at for r in answers]
    out, learned, done = [], 0, 0
    for event in events:
        stats = event.get("stats") or {}
        kind = _kind(event)
        if kind == "step":
            learned += int(event.get("episodes") or 0)
            done += 1
        elif kind == "skipped":
            learned += int(stats.get("skipped") or 0)
        version, ended = event.get("version"), float(event.get("ended") or 0.0)
        last = times[learned - 1] if 0 < learned <= len(times) else None
        first = first_served.get(version) if version else None
        lag_answers = lag_s = None
        if kind == "step" and version is not None:
            if last is not None:
                lag_answers = sum(1 for t in times[learned:] if t is not None and t <= ended)
                lag_s = round(ended - last, 1)
            elif first is not None:  # no timestamps: published before the answer it first served
                lag_answers = max(0, first - 1 - learned)
        out.append(
            LearnerBatch(
                batch=done if kind in ("step", "rollback") else done + 1,
                kind=kind,
                version=version,
                learned_through=learned,
                seconds=round(ended - float(event.get("started") or ended), 1),
                lag_answers=lag_answers,
                lag_s=lag_s,
                first_served=first,
                error=event.get("error"),
            )
        )
    return out


def _kind(event: dict[str, Any]) -> str:
    stats = event.get("stats") or {}
    if stats.get("skipped"):
        return "skipped"
    if event.get("error") is not None:
        return "failed"
    if stats.get("rollback"):
        return "rollback"
    return "step"


def learning_report(run_dir: Path, window: int = 40) -> LearningReport | None:
    """The report of a `mia eval --test-time-learning` run; None for other runs."""
    run_dir = Path(run_dir)
    config = read_config(run_dir) or {}
    if not config.get("test_time_learning"):
        return None
    if window < 1:
        raise ValueError("window must be at least 1")
    answers, by_judge = answers_in_order(run_dir)
    # runs logged before answers carried their version: the registry's per-version rewards still
    # say how many answers each version served, but not which ones
    tracked = any(r.served_version is not None for r in answers)
    windows = []
    for start in range(0, len(answers), window):
        chunk = answers[start : start + window]
        correct = sum(is_correct(r, by_judge) for r in chunk)
        versions = list(dict.fromkeys(r.served_version or BASE for r in chunk)) if tracked else []
        windows.append(
            LearningWindow(
                start=start + 1,
                end=start + len(chunk),
                correct=correct,
                accuracy=wilson(correct, len(chunk)),
                versions=versions,
            )
        )
    registry = _registry(run_dir)
    infos = registry.get("versions") or {}
    served: dict[str, int] = {}
    if tracked:
        for r in answers:
            served[r.served_version or BASE] = served.get(r.served_version or BASE, 0) + 1
    else:
        served = {v: len(info.get("rewards") or []) for v, info in infos.items() if info.get("rewards")}
    rolled = [v for v, info in infos.items() if info.get("status") == "rolled_back"]
    missing = [v for v, info in infos.items() if info.get("status") == MISSING]
    if tracked:
        first_served: dict[str, int] = {}
        for index, r in enumerate(answers, start=1):
            first_served.setdefault(r.served_version or BASE, index)
    else:
        first_served = _first_served_from_registry(infos, len(answers))
    from mia.app.evaluation.summary import run_label

    return LearningReport(
        label=run_label(config),
        n=len(answers),
        scored_by="judge" if by_judge else "cover match",
        windows=windows,
        batches=_batches(_learner_log(run_dir), answers, first_served),
        rolled_back=rolled,
        missing=missing,
        answer_ids=[r.id for r in answers],
        answer_correct=[is_correct(r, by_judge) for r in answers],
        answer_versions=[r.served_version or BASE for r in answers] if tracked else [],
        served=served,
        tracked=tracked,
    )


def render_learning(report: LearningReport) -> str:
    """Markdown: windows, then the learner's batches with their lag."""
    lines = [
        f"### Test-time learning: {report.label}",
        "",
        f"{report.n} answers, scored by {report.scored_by}. Answers per version served"
        + ("" if report.tracked else " (from the registry: this run's answers do not say which version served them)")
        + ": "
        + (", ".join(f"{v} {n}" for v, n in report.served.items()) or "n/a")
        + f". Rolled back: {', '.join(report.rolled_back) or 'none'}."
        + (
            f" Lost (adapter files missing; their newest intact ancestor was served instead): "
            f"{', '.join(report.missing)}."
            if report.missing
            else ""
        ),
        "",
        "| answers | correct | accuracy (95% CI) | versions served |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {w.start}-{w.end} | {w.correct} | {w.accuracy.fmt(3)} | {', '.join(w.versions) or 'n/a'} |"
        for w in report.windows
    ]
    if report.batches:
        lines += [
            "",
            "| batch | version | learned through answer | step s | answers given before it was published | lag s | first served at answer |",
            "|---|---|---|---|---|---|---|",
        ]
        for b in report.batches:
            version = {
                "step": b.version or "no update (tied groups)",
                "rollback": f"rollback to {b.version}",
                "skipped": "skipped after retries",
            }.get(b.kind) or f"failed ({(b.error or '')[:40]})"
            lines.append(
                f"| {b.batch} | {version} | {b.learned_through} | {b.seconds:.0f} | "
                f"{'n/a' if b.lag_answers is None else b.lag_answers} | "
                f"{'n/a' if b.lag_s is None else f'{b.lag_s:.0f}'} | "
                f"{b.first_served if b.first_served is not None else 'never' if report.tracked else 'n/a'} |"
            )
        lagged = [b.lag_answers for b in report.batches if b.lag_answers is not None]
        if lagged:
            lines += [
                "",
                f"Lag: a version was published a median of {statistics.median(lagged):g} answers "
                f"(max {max(lagged)}) after the last answer it learned from. Lag in seconds is wall-clock: "
                "in a run stopped and resumed it includes the time it was stopped.",
            ]
        else:
            lines += ["", "Lag: n/a (this run's answers carry neither timestamps nor versions, and it rolled back)."]
        if not report.tracked and lagged:
            lines[-1] += (
                " This run's answers do not say which version served them: the first answer of each "
                "version is counted from the registry, in publication order, and the lag in seconds is n/a."
            )
    return "\n".join(lines) + "\n"
