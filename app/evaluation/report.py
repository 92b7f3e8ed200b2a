"""Merge several run folders into one comparison table and plot (`mia eval-report DIR...`).

Why from the logs: each run's summary is recomputed from its results.jsonl, so a report of runs
made on different days or machines is computed the same way as a single run's.
"""

from __future__ import annotations

import json
from pathlib import Path

from mia.app.evaluation import runlog
from mia.app.evaluation.learning_report import (
    LearningReport,
    answers_in_order,
    is_correct,
    learning_report,
    render_learning,
)
from mia.app.evaluation.paired import markdown_paired, neighbours
from mia.app.evaluation.summary import RunSummary, body_sections, summarise


def load_run(run_dir: Path, only_ids: set[str] | None = None) -> RunSummary:
    """The summary of one finished (or partial) run folder, optionally over a subset of its questions."""
    run_dir = Path(run_dir)
    config = runlog.read_config(run_dir)
    if config is None:
        raise runlog.RunDirError(f"{run_dir}: no config.json (not a `mia eval` output folder)")
    results = list(runlog.latest_by_id(runlog.read_results(run_dir)).values())
    if only_ids is not None:
        results = [r for r in results if r.id in only_ids]
    if not results:
        raise runlog.RunDirError(
            f"{run_dir}: no results" + (" on the questions all runs share" if only_ids else " yet")
        )
    return summarise(results, config)


def common_ids(run_dirs: list[Path]) -> set[str]:
    """Question ids every run has answered (runs stopped at different points compare fairly on these)."""
    sets = [set(runlog.latest_by_id(runlog.read_results(Path(d)))) for d in run_dirs]
    return set.intersection(*sets) if sets else set()


def compare(
    run_dirs: list[Path],
    out_dir: Path | None = None,
    title: str = "Comparison",
    *,
    common: bool = True,
    window: int = 40,
) -> tuple[list[RunSummary], str]:
    """Summaries of several runs, the merged markdown, and (with out_dir) comparison.{md,json,png}.
    With `common`, every run is summarised over the questions all of them answered. Runs with
    test-time learning get a learning section (accuracy per `window` answers, versions, lag)."""
    for d in run_dirs:
        if runlog.read_config(Path(d)) is None:
            raise runlog.RunDirError(f"{d}: no config.json (not a `mia eval` output folder)")
    only = common_ids(run_dirs) if common and len(run_dirs) > 1 else None
    summaries = [load_run(d, only) for d in run_dirs]
    paired = neighbours(run_dirs, [s.label for s in summaries])
    learning = [learning_report(Path(d), window) for d in run_dirs]
    datasets = sorted({str(s.config.get("dataset")) for s in summaries})
    sizes = sorted({s.n for s in summaries})
    note = "" if len(sizes) == 1 else f" **Runs cover different numbers of questions ({sizes}); compare with care.**"
    if only is not None:
        note += f" Each run is summarised over the {len(only)} questions all runs answered."
    md = "\n".join(
        [
            f"# {title}",
            "",
            f"Dataset(s): {', '.join(datasets)}. 95% intervals: Wilson for accuracy, EM and cover, percentile "
            f"bootstrap for F1, Student t for the other means.{note}",
            "",
            *body_sections(summaries),
            markdown_paired(paired),
            *[render_learning(r) for r in learning if r is not None],
        ]
    )
    if out_dir is not None:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "comparison.md").write_text(md, encoding="utf-8")
        payload = [dict(s.model_dump(), run_dir=str(d)) for s, d in zip(summaries, run_dirs)]
        (out_dir / "comparison.json").write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        pairs = [p.model_dump() for p in paired]
        (out_dir / "paired.json").write_text(json.dumps(pairs, indent=2) + "\n", encoding="utf-8")
        from mia.app.evaluation.plot import plot_runs

        n = summaries[0].n if len(sizes) == 1 else f"{min(sizes)}-{max(sizes)}"
        plot_title = title if title != "Comparison" else ", ".join(datasets)
        plot_runs(summaries, out_dir / "comparison.png", title=f"{plot_title}: accuracy and cost (n={n}, 95% CI)")
        plot_learning_runs(learning, run_dirs, summaries, out_dir)
    return summaries, md


def plot_learning_runs(
    learning: list[LearningReport | None], run_dirs: list[Path], summaries: list[RunSummary], out_dir: Path
) -> list[Path]:
    """learning.png (learning-<label>.png when several): each learning run's accuracy so far,
    beside the other runs of the comparison on the same questions."""
    from mia.app.evaluation.plot import plot_learning

    reports = [r for r in learning if r is not None]
    others: dict[str, dict[str, bool]] = {}
    for r, d, s in zip(learning, run_dirs, summaries):
        if r is None:
            answers, by_judge = answers_in_order(Path(d))
            others[s.label] = {a.id: is_correct(a, by_judge) for a in answers}
    return [
        plot_learning(r, others, Path(out_dir) / ("learning.png" if len(reports) == 1 else f"learning-{r.label}.png"))
        for r in reports
    ]
