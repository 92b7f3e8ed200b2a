"""CLI commands: `mia eval` (measure one configuration on a QA set), `mia eval-report` (compare runs) and
`mia eval-regrade` (grade finished runs again with today's ground-truth judge).

Heavy imports (the graph, torch, matplotlib) happen inside the commands so `mia --help` stays instant.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Optional

import typer

from mia.graph.models.defaults import DEFAULT_MODELS


def _fail(message: str, code: int = 1) -> None:
    from rich.console import Console

    Console(stderr=True).print(f"[bold red]error:[/] {message}", highlight=False)
    raise typer.Exit(code)


def eval_command(
    dataset: Annotated[
        str, typer.Option(help="hotpotqa | 2wiki | 2wiki-open | musique, or a normalised .jsonl(.gz) file.")
    ] = "hotpotqa",
    n: Annotated[
        Optional[int],
        typer.Option(
            "--n",
            min=0,
            help="Number of questions (a seeded sample; all when omitted). 0 with --warmup: only build the memory, a folder later runs start from with --memory-from.",
        ),
    ] = None,
    memory: Annotated[
        str, typer.Option(help="none: plain executor; trajectory-rag: raw past trajectories; mia: memory + planner.")
    ] = "mia",
    seed: Annotated[int, typer.Option(help="Sampling seed: same seed, same questions in the same order.")] = 0,
    start: Annotated[
        int,
        typer.Option(
            min=0,
            help="First position of the seeded order to evaluate: a split disjoint from another run's (tune on --start 0, report on --start 100).",
        ),
    ] = 0,
    out: Annotated[
        Optional[Path],
        typer.Option(help="Run folder (default eval-runs/<dataset>-<memory>-seed<seed>). Re-running resumes it."),
    ] = None,
    planner_model: Annotated[
        Optional[str],
        typer.Option(help=f"Planner model spec (default $MIA_PLANNER_MODEL, else {DEFAULT_MODELS['planner']})."),
    ] = None,
    executor_model: Annotated[
        Optional[str],
        typer.Option(help=f"Executor model spec (default $MIA_EXECUTOR_MODEL, else {DEFAULT_MODELS['executor']})."),
    ] = None,
    manager_model: Annotated[
        Optional[str],
        typer.Option(help=f"Memory-manager model spec (default $MIA_MANAGER_MODEL, else {DEFAULT_MODELS['manager']})."),
    ] = None,
    judge_model: Annotated[
        Optional[str],
        typer.Option(
            help=f"Judge model spec, grades answers against the gold ones (default $MIA_JUDGE_MODEL, else {DEFAULT_MODELS['judge']})."
        ),
    ] = None,
    judge: Annotated[
        str,
        typer.Option(
            help="llm: SimpleQA-style grader by the judge role (the paper's accuracy); metrics: EM/F1 only, no judge calls."
        ),
    ] = "llm",
    max_tool_calls: Annotated[
        Optional[int], typer.Option(min=0, help="Most tool calls per question (graph default 30).")
    ] = None,
    min_tool_calls: Annotated[
        Optional[int],
        typer.Option(
            min=0, help="Searches required before an answer is accepted (graph default 1; 0: may answer at once)."
        ),
    ] = None,
    planner_max_tokens: Annotated[Optional[int], typer.Option(min=1, help="Most new tokens per planner call.")] = None,
    executor_max_tokens: Annotated[
        Optional[int], typer.Option(min=1, help="Most new tokens per executor turn.")
    ] = None,
    manager_max_tokens: Annotated[
        Optional[int], typer.Option(min=1, help="Most new tokens per memory compression.")
    ] = None,
    judge_max_tokens: Annotated[Optional[int], typer.Option(min=1, help="Most new tokens per judge call.")] = None,
    search_top_k: Annotated[Optional[int], typer.Option(min=1, help="Documents per search query.")] = None,
    judge_arbiter: Annotated[
        Optional[str],
        typer.Option(
            help="Reviewer verdicts (--no-ground-truth): weighted (the numeric rule) or llm (an arbiter call)."
        ),
    ] = None,
    judge_method: Annotated[
        Optional[str],
        typer.Option(
            help="How --judge llm grades against the gold answers: match+llm (default: the answer matcher's rules, the judge model only for the answers they are unsure of; bench/judge/grader-agreement.md) or llm (the judge model grades every answer, as before)."
        ),
    ] = None,
    judge_contradiction: Annotated[
        Optional[str],
        typer.Option(
            help="When the judge model's grade contradicts the metrics: metrics (default, trust the metrics), llm (trust the grader: 'JFK' for 'John F. Kennedy') or unknown."
        ),
    ] = None,
    max_replans: Annotated[
        Optional[int], typer.Option(min=0, help="Reflect-and-replan rounds (the paper uses 1).")
    ] = None,
    drop_repeated_replan: Annotated[
        Optional[bool],
        typer.Option(
            help="Do not follow a replan that only repeats the plan or its searches: the answer stands (graph default: on; --paper: off, every replan is followed)."
        ),
    ] = None,
    evidence_search: Annotated[
        Optional[bool],
        typer.Option(
            help="Before accepting an answer to a dated comparison or a same-country question, search the names whose own article the results lack (graph default: off)."
        ),
    ] = None,
    min_similarity: Annotated[
        Optional[float],
        typer.Option(
            min=-1.0,
            max=1.0,
            help="Show only memories whose question cosine to this one is at least this (graph default 0.5; --paper: none, MIA's rule; see bench/memory/relatedness.md).",
        ),
    ] = None,
    paper: Annotated[
        bool,
        typer.Option(
            "--paper",
            help="The MIA paper's settings (mia.graph.context.PAPER): free-form plans, the planner's yes/no reflection after every attempt, every replan followed, every search run, memories shown as stored whatever their similarity. Options given beside it win.",
        ),
    ] = False,
    plan_style: Annotated[
        Optional[str],
        typer.Option(
            help="hops (default: a chain of hops #1, #2 whose first step searches the question) or paper (free-form steps)."
        ),
    ] = None,
    replan_when: Annotated[
        Optional[str],
        typer.Option(
            help="failure (default: replan only on a failure the trace shows, no model call otherwise) or planner (the planner's yes/no after every attempt, as the paper)."
        ),
    ] = None,
    memory_style: Annotated[
        Optional[str],
        typer.Option(
            help="strategy (default: workflows with the other question's names as placeholders, no findings) or paper (as stored)."
        ),
    ] = None,
    repeated_search: Annotated[
        Optional[str],
        typer.Option(help="cached (default: a query already made in the episode is not run again) or run."),
    ] = None,
    plan_searches: Annotated[
        Optional[str],
        typer.Option(
            help="executor (default: the executor makes every search) or first (the graph searches the question, "
            "then the plan's concrete queries, before the executor's first turn)."
        ),
    ] = None,
    plan_when: Annotated[
        Optional[str],
        typer.Option(
            help="failure (default: the executor answers alone first; the planner plans only after a failure "
            "the trace shows) or start (a plan before the executor's first turn, as the paper)."
        ),
    ] = None,
    plan_in_prompt: Annotated[
        Optional[bool],
        typer.Option(help="Show the plan in the executor's prompt (default: on; off: the plan only chooses searches)."),
    ] = None,
    k_pos: Annotated[
        Optional[int],
        typer.Option(
            min=0,
            help="Successful past workflows shown to the planner (default 2; 0 with --k-neg 0: the planner without memory).",
        ),
    ] = None,
    k_neg: Annotated[
        Optional[int], typer.Option(min=0, help="Failed past workflows shown to the planner (default 2).")
    ] = None,
    turn_grammar: Annotated[
        Optional[bool],
        typer.Option(help="Constrain executor turns to the protocol's grammar on llama.cpp (graph default: on)."),
    ] = None,
    concurrency: Annotated[
        Optional[int], typer.Option(min=1, help="Questions in flight (default 1 for local models, 4 for APIs).")
    ] = None,
    memory_from: Annotated[
        Optional[Path],
        typer.Option(
            help="Start from a copy of the memory a previous run folder built, or of a memory folder (chroma/ + trajectories.jsonl) holding one namespace; the source is not changed."
        ),
    ] = None,
    warmup: Annotated[
        int,
        typer.Option(
            min=0,
            help="Answer N other questions of the dataset first, to build the memory (not scored; disjoint from the evaluated ones).",
        ),
    ] = 0,
    label: Annotated[Optional[str], typer.Option(help="Name of this configuration in tables and plots.")] = None,
    retry_errors: Annotated[
        bool, typer.Option(help="On resume, run again the questions that failed with an error.")
    ] = False,
    progress: Annotated[bool, typer.Option(help="Show a progress bar with the running accuracy.")] = True,
    test_time_learning: Annotated[
        bool,
        typer.Option(
            "--test-time-learning",
            help="The planner keeps learning while it answers: a GRPO update of its LoRA every few questions, adapters versioned under RUN/store/adapters/planner (memory-only for API planners and GGUF files without transformers weights). See docs/test_time_learning.md.",
        ),
    ] = False,
    no_ground_truth: Annotated[
        bool,
        typer.Option(
            "--no-ground-truth",
            help="With --test-time-learning: the agent never sees the gold answers; a panel of reviewers decides success (the reward); gold answers only grade the report (EM/F1).",
        ),
    ] = False,
    online: Annotated[
        Optional[list[str]],
        typer.Option(
            "--online",
            help="With --test-time-learning, a learner setting as KEY=VALUE (repeatable): batch_questions=8, rollouts=4, dtype=bfloat16, learning_rate=1e-5, schedule=between ... See docs/test_time_learning.md.",
        ),
    ] = None,
) -> None:
    """Evaluate the agent on a multi-hop QA set: LLM-judge accuracy, EM/F1, tool and LLM calls, tokens
    per role, wall time, with 95% intervals. Writes results.jsonl (the checkpoint), summary.md/json, plot.png."""
    from mia.app.evaluation.datasets import DatasetError
    from pydantic import ValidationError

    from mia.app.evaluation.harness import EvalConfig, RunAborted, run_evaluation
    from mia.app.evaluation.runlog import RunDirError
    from mia.app.evaluation.summary import render_markdown
    from mia.graph.models.errors import BackendError

    given = {
        "min_tool_calls": min_tool_calls,
        "planner_max_tokens": planner_max_tokens,
        "executor_max_tokens": executor_max_tokens,
        "manager_max_tokens": manager_max_tokens,
        "judge_max_tokens": judge_max_tokens,
        "search_top_k": search_top_k,
        "max_replans": max_replans,
        "drop_repeated_replan": drop_repeated_replan,
        "evidence_search": evidence_search,
        "min_similarity": min_similarity,
        "judge_arbiter": judge_arbiter,
        "judge_method": judge_method,
        "judge_contradiction": judge_contradiction,
        "turn_grammar": turn_grammar,
        "plan_style": plan_style,
        "replan_when": replan_when,
        "memory_style": memory_style,
        "repeated_search": repeated_search,
        "plan_searches": plan_searches,
        "plan_when": plan_when,
        "plan_in_prompt": plan_in_prompt,
        "k_pos": k_pos,
        "k_neg": k_neg,
    }
    from mia.app.commands.context_options import OptionError, context_overrides
    from mia.app.commands.key_values import key_values
    from mia.app.evaluation.runner import JUDGE_CHOICES

    if judge not in JUDGE_CHOICES:  # the run's judge (EvalConfig), not a Context field
        _fail(f"--judge must be {' or '.join(JUDGE_CHOICES)}, not {judge!r}")
    try:  # --paper: the paper's values (min_similarity None among them) where no option was given
        context_overrides({"memory_mode": memory}, flags={"memory_mode": "--memory"})
        overrides = context_overrides(given, paper=paper)
    except OptionError as err:
        _fail(str(err))
    models = {"planner": planner_model, "executor": executor_model, "manager": manager_model, "judge": judge_model}
    try:
        cfg = EvalConfig(
            dataset=dataset,
            n=n,
            seed=seed,
            start=start,
            memory_mode=memory,
            models={k: v for k, v in models.items() if v},
            judge=judge,
            max_tool_calls=max_tool_calls,
            context_overrides=overrides,
            concurrency=concurrency,
            label=label,
            memory_from=str(memory_from) if memory_from else None,
            warmup=warmup,
            retry_errors=retry_errors,
            test_time_learning=test_time_learning,
            ground_truth=not no_ground_truth,
            online=key_values(online, "--online"),
        )
    except ValidationError as err:  # EvalConfig says what is inconsistent (--n 0 without --warmup...)
        _fail("; ".join(e["msg"].removeprefix("Value error, ") for e in err.errors()))
    if no_ground_truth and not test_time_learning:
        _fail("--no-ground-truth only applies with --test-time-learning")
    stem = Path(dataset).name.split(".")[0] if ("/" in dataset or dataset.endswith((".jsonl", ".gz"))) else dataset
    ttl = ("-ttl" if test_time_learning else "") + ("-nogt" if no_ground_truth else "")
    split = f"-from{start}" if start else ""
    out = out or Path("eval-runs") / f"{stem}-{memory}{ttl}-seed{seed}{split}"
    try:
        summary = asyncio.run(run_evaluation(cfg, out, progress=progress))
    except (DatasetError, RunDirError, RunAborted, BackendError) as err:
        _fail(str(err))
    typer.echo(render_markdown([summary], f"Evaluation: {summary.label}"))
    typer.echo(f"Run folder: {out} (results.jsonl, summary.md, summary.json, plot.png)")


def report_command(
    runs: Annotated[list[Path], typer.Argument(help="Run folders written by `mia eval`.")],
    out: Annotated[
        Optional[Path], typer.Option(help="Where to write comparison.md/json/png (default: print only).")
    ] = None,
    title: Annotated[str, typer.Option(help="Title of the table and plot.")] = "Comparison",
    common: Annotated[
        bool, typer.Option(help="Summarise every run over the questions all runs answered (fair for partial runs).")
    ] = True,
    window: Annotated[
        int, typer.Option(min=1, help="Test-time learning runs: answers per accuracy window in the learning section.")
    ] = 40,
) -> None:
    """Merge several `mia eval` runs (e.g. none vs trajectory-rag vs mia) into one table and plot."""
    from mia.app.evaluation.report import compare
    from mia.app.evaluation.runlog import RunDirError

    import time

    started = time.time() - 1.0
    try:
        _, md = compare(runs, out, title, common=common, window=window)
    except RunDirError as err:
        _fail(str(err))
    typer.echo(md)
    if out:
        written = sorted(p.name for p in Path(out).iterdir() if p.is_file() and p.stat().st_mtime >= started)
        typer.echo(f"Wrote {out}/: {', '.join(written)}")


def regrade_command(
    runs: Annotated[list[Path], typer.Argument(help="Run folders written by `mia eval` (or their results.jsonl).")],
    llm: Annotated[
        bool,
        typer.Option(
            "--llm",
            help="Send the answers the matcher is unsure of to the judge model (else they keep their logged grade).",
        ),
    ] = False,
    judge_model: Annotated[
        Optional[str],
        typer.Option(help=f"Judge model spec for --llm (default $MIA_JUDGE_MODEL, else {DEFAULT_MODELS['judge']})."),
    ] = None,
) -> None:
    """Re-grade finished runs with the answer matcher (judge method match+llm) without running the agent:
    rewrites judge_correct/judge_grade in results.jsonl (the first logged grade kept in judge_grade_logged,
    so re-running is idempotent) and rebuilds each run's summary."""
    from mia.app.evaluation.regrade import regrade_run
    from mia.app.evaluation.runlog import RunDirError
    from mia.graph.models.errors import BackendError

    model = None
    if llm:
        from mia.graph.context import Context
        from mia.graph.models import load_chat_model

        try:
            spec, temperature, max_tokens = Context.from_env(judge_model=judge_model).model_for("judge")
            model = load_chat_model(spec, temperature=temperature, max_tokens=max_tokens)
        except BackendError as err:
            _fail(str(err))
    for run in runs:
        try:
            typer.echo(regrade_run(run, model).line())
        except RunDirError as err:
            _fail(str(err))


def register(app: typer.Typer) -> None:
    """Add `mia eval`, `mia eval-report` and `mia eval-regrade` to the root app."""
    app.command("eval")(eval_command)
    app.command("eval-report")(report_command)
    app.command("eval-regrade")(regrade_command)
