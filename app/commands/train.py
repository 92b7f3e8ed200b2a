"""`mia train planner|executor|executor-sft|alternate --config FILE`: offline GRPO of the planner and
executor LoRA adapters, and the executor's supervised stage (TRL + PEFT). Heavy imports happen inside the commands so `mia --help` stays fast."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

app = typer.Typer(
    help="Train the planner and executor with offline GRPO (LoRA adapters, usable as hf:<base>+<adapter>).",
    no_args_is_help=True,
)

ConfigOpt = Annotated[
    Path, typer.Option("--config", "-c", help="Training YAML (see training/configs/).", exists=True, dir_okay=False)
]
StepsOpt = Annotated[int | None, typer.Option("--max-steps", help="Override grpo.max_steps.")]
OutOpt = Annotated[Path | None, typer.Option("--output-dir", "-o", help="Override output_dir.")]
DataOpt = Annotated[Path | None, typer.Option("--data", help="Override data.path (a QA JSONL file).")]
TrajOpt = Annotated[
    Path | None,
    typer.Option("--trajectories", help="Also train on the questions of a memory trajectory log (trajectories.jsonl)."),
]
FreshOpt = Annotated[bool, typer.Option("--fresh", help="Ignore existing checkpoints instead of resuming.")]
SetOpt = Annotated[
    list[str] | None, typer.Option("--set", help="Override any config key: --set grpo.learning_rate=1e-5")
]


def _load(
    config: Path, output_dir: Path | None, data: Path | None, trajectories: Path | None, sets: list[str] | None
) -> Any:
    from mia.app.commands.key_values import key_values
    from mia.training.config import TrainConfig

    overrides = key_values(sets, "--set")
    if output_dir:
        overrides["output_dir"] = str(output_dir)
    if data:
        overrides["data.path"] = str(data)
    if trajectories:
        overrides["data.trajectories"] = str(trajectories)
    try:
        return TrainConfig.from_yaml(config, overrides)
    except (ValueError, TypeError) as exc:
        raise typer.BadParameter(str(exc), param_hint="--config") from None


def _run(
    stage: str,
    config: Path,
    max_steps: int | None,
    output_dir: Path | None,
    data: Path | None,
    trajectories: Path | None,
    fresh: bool,
    sets: list[str] | None,
    rounds: int = 1,
) -> None:
    from rich.console import Console

    from mia.training.run import run_stage

    cfg = _load(config, output_dir, data, trajectories, sets)
    console = Console()
    console.print(f"[bold]mia train {stage}[/] {cfg.name}: base {cfg.base_model}, output {cfg.output_dir}")
    try:
        results = run_stage(cfg, stage, resume=not fresh, max_steps=max_steps, rounds=rounds)
    except (FileNotFoundError, ValueError, RuntimeError) as exc:  # bad data path, bad spec, no GPU
        console.print(f"[red]mia train {stage} failed:[/] {exc}")
        raise typer.Exit(1) from None
    for res in results:
        reward = "" if res.final_reward is None else f", final reward {res.final_reward:.3f}"
        console.print(
            f"[green]{res.stage}[/] {res.steps} steps{reward}\n"
            f"  adapter: {res.adapter_dir}\n  curve:   {res.curve_path}\n  use as:  {res.spec}"
        )


@app.command("planner")
def planner(
    config: ConfigOpt,
    max_steps: StepsOpt = None,
    output_dir: OutOpt = None,
    data: DataOpt = None,
    trajectories: TrajOpt = None,
    fresh: FreshOpt = False,
    set_: SetOpt = None,
) -> None:
    """Train the planner: its plans are carried out by a frozen executor; the outcome is the reward."""
    _run("planner", config, max_steps, output_dir, data, trajectories, fresh, set_)


@app.command("executor")
def executor(
    config: ConfigOpt,
    max_steps: StepsOpt = None,
    output_dir: OutOpt = None,
    data: DataOpt = None,
    trajectories: TrajOpt = None,
    fresh: FreshOpt = False,
    set_: SetOpt = None,
) -> None:
    """Train the executor: multi-turn search on plans written by a frozen planner."""
    _run("executor", config, max_steps, output_dir, data, trajectories, fresh, set_)


@app.command("executor-sft")
def executor_sft(
    config: ConfigOpt,
    max_steps: StepsOpt = None,
    output_dir: OutOpt = None,
    fresh: FreshOpt = False,
    set_: SetOpt = None,
) -> None:
    """Supervised executor: its right plan-following episodes (sft.episodes), the loss on its turns only."""
    _run("executor-sft", config, max_steps, output_dir, None, None, fresh, set_)


@app.command("alternate")
def alternate(
    config: ConfigOpt,
    max_steps: StepsOpt = None,
    output_dir: OutOpt = None,
    data: DataOpt = None,
    trajectories: TrajOpt = None,
    fresh: FreshOpt = False,
    set_: SetOpt = None,
    rounds: Annotated[int, typer.Option(help="Executor-then-planner rounds.")] = 1,
) -> None:
    """Executor stage, then planner stage against the trained executor (the paper's order)."""
    _run("alternate", config, max_steps, output_dir, data, trajectories, fresh, set_, rounds=rounds)


@app.command("plot")
def plot(
    run_dir: Annotated[Path, typer.Argument(help="A training output folder (holds metrics.jsonl).")],
    out: Annotated[Path | None, typer.Option(help="PNG path (default: <run_dir>/reward_curve.png).")] = None,
) -> None:
    """Redraw the reward curve of a (running or finished) training run."""
    from mia.training.artifacts import CURVE_FILE, METRICS_FILE, plot_reward_curve, read_metrics

    records = read_metrics(run_dir / METRICS_FILE)
    path = plot_reward_curve(records, out or run_dir / CURVE_FILE, title=f"{run_dir.name}: GRPO reward")
    if path is None:
        raise typer.BadParameter(f"no reward logged in {run_dir / METRICS_FILE} yet")
    typer.echo(str(path))


@app.command("eval")
def evaluate(
    config: ConfigOpt,
    planner: Annotated[
        str,
        typer.Option(
            help="Planner spec: an embedded model (local:qwen-coder-1.5b), a trained run (llamacpp:qwen-coder-1.5b+<run>/adapter) or hf:<base>+<adapter>."
        ),
    ],
    executor: Annotated[str | None, typer.Option(help="Frozen executor spec (default: the config's).")] = None,
    limit: Annotated[int | None, typer.Option(help="Held-out questions (default: data.eval_limit).")] = None,
    out: Annotated[Path | None, typer.Option(help="Write the summary and per-question rows here (JSON).")] = None,
    data: DataOpt = None,
    set_: SetOpt = None,
) -> None:
    """Accuracy of planner + frozen executor on the config's held-out slice (greedy, EM/F1)."""
    import json

    from mia.training.data import load_eval_examples
    from mia.training.evaluate import evaluate_planner

    cfg = _load(config, None, data, None, set_)
    examples = load_eval_examples(cfg, limit)
    summary = evaluate_planner(cfg, planner, examples, out_path=out, executor_spec=executor)
    typer.echo(json.dumps(summary, indent=2))
