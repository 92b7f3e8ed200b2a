"""Run one evaluation configuration over a dataset: resumable, bounded-concurrent, with progress.

Why this shape: a run is a folder (config.json + results.jsonl). Starting the same command again
continues where it stopped; the summary, table and plot are rebuilt from the log at the end.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, model_validator

from mia.app.evaluation import runlog
from mia.app.evaluation.datasets import OPEN_CORPUS_FILE, Setting, load_examples
from mia.app.evaluation.records import ROLES, EvalExample, QuestionResult
from mia.app.evaluation.runner import GraphRunner, JudgeChoice, QuestionRunner
from mia.app.evaluation.summary import RunSummary, summarise, write_summary
from mia.app.provenance import code_version, llamacpp_build
from mia.graph.context import Context, MemoryMode
from mia.graph.models.defaults import OPTIONAL_ROLES
from mia.graph.models.settings import read_settings
from mia.graph.models.spec import parse_model_spec
from mia.memory import config

# fields that define what a run measures: resuming with any of them changed would mix two experiments
IDENTITY = (
    "dataset",
    "seed",
    "start",
    "memory_mode",
    "models",
    "judge",
    "max_tool_calls",
    "context_overrides",
    "warmup",
)
# an identity field that older run folders do not record, read as its value then
IDENTITY_DEFAULTS: dict[str, Any] = {"start": 0}
WARMUP_DIR = "warmup"  # RUN/warmup/results.jsonl: the warm-up answers, never part of the summary


class EvalConfig(BaseModel):
    """One configuration: which questions, which agent, which budgets."""

    dataset: str = "hotpotqa"
    n: int | None = Field(
        None, ge=0, description="questions to run (None: all; 0 with a warm-up: build the memory only)"
    )
    seed: int = 0
    start: int = Field(
        0,
        ge=0,
        description="first position of the seeded order evaluated: a disjoint split "
        "(tuning 0-99, final rows 100-199) of the same order",
    )
    memory_mode: MemoryMode = "mia"
    models: dict[str, str] = Field(
        default_factory=dict, description="role -> model spec; missing roles use MIA_<ROLE>_MODEL"
    )
    judge: JudgeChoice = "llm"
    max_tool_calls: int | None = Field(None, ge=0)
    context_overrides: dict[str, Any] = Field(
        default_factory=dict, description="other Context fields (max tokens, top-k...)"
    )
    concurrency: int | None = Field(None, ge=1, description="questions in flight (None: 1 for local models, else 4)")
    label: str | None = None
    namespace: str | None = Field(None, description="memory namespace; a fresh one per run when None")
    data_dir: str | None = None
    memory_from: str | None = Field(
        None, description="a previous run folder, or a memory folder, whose memory this run starts from"
    )
    retry_errors: bool = False
    test_time_learning: bool = Field(
        False, description="the planner keeps learning while it answers (mia.training.online)"
    )
    ground_truth: bool = Field(
        True, description="with test-time learning: False = the reviewer panel's verdict is the reward"
    )
    online: dict[str, Any] = Field(
        default_factory=dict,
        description="with test-time learning: OnlineConfig settings (batch_questions, rollouts, dtype, ...)",
    )
    max_consecutive_errors: int = Field(5, ge=1)
    warmup: int = Field(
        0,
        ge=0,
        description="questions answered first to build the memory, disjoint from the "
        "evaluated ones (the paper's setting: memory from other questions); not scored",
    )

    @model_validator(mode="after")
    def _nothing_to_do(self) -> "EvalConfig":
        if self.n == 0 and not self.warmup:
            raise ValueError("--n 0 only builds a warm-up memory: give --warmup N as well")
        if self.online:
            if not self.test_time_learning:
                raise ValueError("--online settings only apply with --test-time-learning")
            from mia.training.online.config import online_config

            online_config(self.online, self.ground_truth)  # refused here, before any question runs
        return self

    def resolved_models(self) -> dict[str, str]:
        """Every role's spec, plus the optional roles (the captioner) where one is configured."""
        settings = read_settings()  # MIA_<ROLE>_MODEL (environment or .env), else the default
        defaults = settings.role_models()
        models = {r: self.models.get(r) or defaults[r] for r in ROLES}
        for role in OPTIONAL_ROLES:
            spec = self.models.get(role) or getattr(settings, f"{role}_model")
            if spec:
                models[role] = spec
        return models

    def resolved_concurrency(self) -> int:
        if self.concurrency:
            return self.concurrency
        return 1 if any(parse_model_spec(m).is_local for m in self.resolved_models().values()) else 4


class RunAborted(RuntimeError):
    """Too many questions in a row failed: the backend is down or misconfigured (the log is kept)."""


RunnerFactory = Callable[[dict[str, Any], Setting], QuestionRunner]


def build_context(config: dict[str, Any], setting: str) -> Context:
    """The graph Context of a run (role models, memory mode and namespace, budgets, judge, corpus)."""
    values: dict[str, Any] = {f"{role}_model": spec for role, spec in config["models"].items()}
    values.update(
        memory_mode=config["memory_mode"],
        namespace=config["namespace"],
        memorise=config["memory_mode"] != "none",
        judge_mode="ground_truth" if config["judge"] == "llm" else "off",
    )
    if config.get("max_tool_calls") is not None:
        values["max_tool_calls"] = config["max_tool_calls"]
    if config.get("data_dir"):
        values["data_dir"] = config["data_dir"]
    if setting == "open":
        values["corpus"] = str(OPEN_CORPUS_FILE)
    values.update(config.get("context_overrides") or {})
    return Context(**values)


def roles_used(memory_mode: str, judge: str) -> tuple[str, ...]:
    """The roles a configuration calls: the planner and manager only in MIA, the judge only with --judge llm."""
    roles = ["executor"]
    if memory_mode == "mia":
        roles += ["planner", "manager"]
    if judge == "llm":
        roles.append("judge")
    return tuple(roles)


def graph_runner_factory(config: dict[str, Any], setting: Setting) -> QuestionRunner:
    """The real agent: the compiled MIA graph with this run's context."""
    from mia import build_graph
    from mia.graph.builder import recursion_limit
    from mia.graph.models import check_role_spec

    for role in roles_used(config["memory_mode"], config["judge"]):  # fail before question 1, not at it
        try:
            check_role_spec(role, config["models"][role])
        except ValueError as err:
            err.args = (f"--{role}-model {config['models'][role]!r}: {err}",)
            raise
    context = build_context(config, setting)
    if config.get("test_time_learning"):
        from mia.app.evaluation.learning import learning_runner

        return learning_runner(config, setting, context, recursion_limit(context))
    return GraphRunner(
        graph=build_graph(),
        context=context,
        setting=setting,
        judge=config["judge"],
        config={"recursion_limit": recursion_limit(context)},
    )


def prepare_run_dir(cfg: EvalConfig, out_dir: Path, setting: str) -> tuple[dict[str, Any], bool]:
    """Write config.json on a fresh run; on a resumed run check it measures the same thing.
    Returns the run's config and whether the folder already held the run."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stored = runlog.read_config(out_dir)
    fresh = cfg.model_dump()
    fresh["models"] = cfg.resolved_models()
    fresh["setting"] = setting
    if stored is not None:
        diff = [k for k in IDENTITY if stored.get(k, IDENTITY_DEFAULTS.get(k)) != fresh.get(k)]
        if diff:
            details = "; ".join(f"{k}: {stored.get(k)!r} -> {fresh.get(k)!r}" for k in diff)
            raise runlog.RunDirError(f"{out_dir} holds a different run ({details}); use another --out")
        stored.update(
            n=cfg.n, concurrency=cfg.concurrency, retry_errors=cfg.retry_errors, label=cfg.label or stored.get("label")
        )
        runlog.write_config(out_dir, stored)
        return stored, True
    fresh["started_at"] = _now()
    fresh["code"] = code_version()
    fresh["llamacpp"] = llamacpp_build()
    if cfg.memory_from:
        source, namespace = memory_source(Path(cfg.memory_from))
        seed_memory(source, store_dir(out_dir, fresh))
        fresh["namespace"] = cfg.namespace or namespace  # the copied records live in that namespace
    else:
        fresh["namespace"] = cfg.namespace or f"eval-{cfg.memory_mode}-{uuid.uuid4().hex[:8]}"
    runlog.write_config(out_dir, fresh)
    return fresh, False


def store_dir(run_dir: Path, config: dict[str, Any]) -> Path:
    """The run's own data dir for memory (a fresh store per run): --data-dir, else RUN/store."""
    return Path(config["data_dir"]).expanduser() if config.get("data_dir") else Path(run_dir).resolve() / "store"


def prepare_store(store: Path) -> None:
    """Create the run's data dir; its index/ points at the shared index cache, so a corpus (the 6,119
    paragraphs of 2wiki-open) is embedded once per machine, not once per run."""
    store.mkdir(parents=True, exist_ok=True)
    shared = config.data_dir() / "index"
    link = store / "index"
    if not link.exists() and not link.is_symlink() and shared.resolve() != link.resolve():
        shared.mkdir(parents=True, exist_ok=True)
        link.symlink_to(shared.resolve(), target_is_directory=True)


def is_memory_folder(folder: Path) -> bool:
    """A MemoryStore folder (Chroma in chroma/, the trajectory log beside it), as `mia memory` keeps one."""
    from mia.memory.trajectory_log import TrajectoryLog

    return (folder / "chroma").is_dir() or TrajectoryLog(folder / "trajectories.jsonl").exists()


def memory_source(source: Path) -> tuple[Path, str]:
    """The memory folder `--memory-from` copies, and the namespace its records live in.

    Why both kinds: a run folder is what `mia eval` leaves; a bare memory folder is what a warm-up
    store committed for training is (results/training/2wiki-warmup-store), and starting several runs
    from the very memory a planner was trained with makes them differ in the planner alone."""
    src = runlog.read_config(source)
    if src is not None:
        memory = store_dir(source, src) / "memory"
        if not memory.is_dir():
            raise runlog.RunDirError(f"--memory-from: {memory} does not exist (was that run made with --memory none?)")
        return memory, src["namespace"]
    if not is_memory_folder(source):
        raise runlog.RunDirError(
            f"--memory-from {source}: neither an eval run folder (config.json) nor a memory "
            "folder (chroma/, trajectories.jsonl)"
        )
    from mia.memory import MemoryStore, MemoryStoreError
    from mia.memory.trajectory_log import TrajectoryLog

    # the namespaces of its records and of its log (a folder of the log alone is rebuilt from it:
    # seed_memory), so a log that holds a namespace its Chroma files lack is not read as one namespace
    found: set[str] = set()
    try:
        if (source / "chroma").is_dir():
            with MemoryStore.open(source, snapshot=True) as store:  # leaves the source byte for byte
                found.update(store.namespaces())
        if (trajectories := TrajectoryLog(source / "trajectories.jsonl")).exists():
            found.update(t.namespace for t in trajectories.read())
    except MemoryStoreError as err:
        raise runlog.RunDirError(f"--memory-from {source}: {err}") from err
    namespaces = sorted(found)
    if len(namespaces) != 1:
        raise runlog.RunDirError(
            f"--memory-from {source}: the folder holds {len(namespaces)} namespaces "
            f"({', '.join(namespaces) or 'none'}); a run starts from exactly one"
        )
    return source, namespaces[0]


def seed_memory(source: Path, target_store: Path) -> None:
    """Copy a memory folder into the run's store; the source is left untouched. A folder that keeps
    only its trajectory log (a committed study: results keep text, never Chroma files) is rebuilt
    from it, in order, with the memories' usage credited as the run that wrote it did."""
    target_store.mkdir(parents=True, exist_ok=True)
    # the source's locks and owner file belong to whoever holds the source, not to this run
    shutil.copytree(source, target_store / "memory", ignore=shutil.ignore_patterns("*.lock", ".mia-memory.owner"))
    rebuild_if_log_only(target_store / "memory")


def rebuild_if_log_only(memory: Path) -> None:
    """A memory folder that holds its trajectory log but no Chroma files (a study as git keeps it)
    gets its memories back from the log, in order, with the credits the run gave them."""
    from mia.memory import MemoryStore
    from mia.memory.trajectory_log import TrajectoryLog

    if TrajectoryLog(memory / "trajectories.jsonl").exists() and not (memory / "chroma").is_dir():
        with MemoryStore.open(memory) as store:
            store.rebuild_from_log()


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _progress(total: int, initial: int, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, disable=not enabled, unit="q", dynamic_ncols=True, desc="eval")


def _running_accuracy(results: dict[str, QuestionResult]) -> str:
    done = list(results.values())
    judged = [r.judge_correct for r in done if r.judge_correct is not None]
    if judged:
        return f"acc={sum(judged) / len(judged):.3f}"
    return f"em={sum(r.em for r in done) / max(1, len(done)):.3f}"


async def run_evaluation(
    cfg: EvalConfig,
    out_dir: Path,
    *,
    runner_factory: RunnerFactory | None = None,
    progress: bool = True,
    plot: bool = True,
) -> RunSummary:
    """Run (or continue) one configuration and write summary.json, summary.md and plot.png."""
    out_dir = Path(out_dir)
    examples, setting = load_examples(cfg.dataset, cfg.n, cfg.seed, cfg.start)
    warmup = warmup_split(cfg, examples)
    out_dir.mkdir(parents=True, exist_ok=True)
    with runlog.RunLock(out_dir):
        config, resumed = prepare_run_dir(cfg, out_dir, setting)
        done = runlog.latest_by_id(runlog.read_results(out_dir, repair=True))
        wanted = {ex.id for ex in examples}
        done = {k: v for k, v in done.items() if k in wanted}
        todo = [ex for ex in examples if ex.id not in done or (cfg.retry_errors and done[ex.id].error)]
        warm_dir = out_dir / WARMUP_DIR
        warm_done = runlog.latest_by_id(runlog.read_results(warm_dir, repair=True)) if warm_dir.is_dir() else {}
        warm_todo = [ex for ex in warmup if ex.id not in warm_done]
        if todo or warm_todo:
            if resumed:  # a resume that answers questions: say which code answered them
                note_resume(out_dir, config)
            store = store_dir(out_dir, config)
            if resumed and done:
                check_memory_kept(store, config, len(done))
                rebuild_if_log_only(store / "memory")  # a run resumed from a clone: git kept the log
            prepare_store(store)
            runner = (runner_factory or graph_runner_factory)({**config, "data_dir": str(store)}, setting)
            try:
                if warm_todo:  # memory first, from questions that are not evaluated
                    warm_dir.mkdir(exist_ok=True)
                    await _run_all(runner, warm_todo, warm_dir, warm_done, cfg, total=len(warmup), progress=progress)
                await _run_all(runner, todo, out_dir, done, cfg, total=len(examples), progress=progress)
            finally:
                if hasattr(runner, "close"):  # test-time learning: stop the learner thread
                    runner.close()
        final = runlog.latest_by_id(runlog.read_results(out_dir))
        results = [final[ex.id] for ex in examples if ex.id in final]
        summary = summarise(results, config)
        write_summary(out_dir, summary)
        if plot and results:
            from mia.app.evaluation.plot import plot_runs

            plot_runs([summary], out_dir / "plot.png")
        return summary


def check_memory_kept(store: Path, config: dict[str, Any], answered: int) -> None:
    """Refuse to resume a memory run whose store is gone (a run folder copied or checked out without
    its ignored store/): the remaining questions would meet an empty memory, and the row would mix
    two memories without saying so."""
    if config["memory_mode"] != "none" and not store.is_dir():
        raise runlog.RunDirError(
            f"{store} is missing, but {answered} answers are logged with that memory: resuming would answer "
            "the rest from an empty one. Restore the store, or start again with a new --out"
        )


def note_resume(out_dir: Path, config: dict[str, Any]) -> None:
    """Record when and with which code a run was continued. Only a resume that answers questions
    is recorded: rebuilding a finished run's summary runs no code that the results depend on."""
    config["resumed_at"] = _now()
    config.setdefault("resumed_code", []).append(
        {"at": config["resumed_at"], **code_version(), "llamacpp": llamacpp_build()}
    )
    runlog.write_config(out_dir, config)


def warmup_split(cfg: EvalConfig, examples: list[EvalExample]) -> list[EvalExample]:
    """`cfg.warmup` questions of the same dataset that are never evaluated: the last ones of the
    seeded order whose first n are evaluated. So the evaluated questions are the same with or without
    a warm-up (runs compare question by question), and extending n later cannot reach them unless
    n + warmup exceeds the dataset (refused)."""
    if not cfg.warmup:
        return []
    pool, _ = load_examples(cfg.dataset, None, cfg.seed)
    if cfg.start + len(examples) + cfg.warmup > len(pool):
        from mia.app.evaluation.datasets import DatasetError

        where = f" from position {cfg.start}" if cfg.start else ""
        raise DatasetError(
            f"--warmup {cfg.warmup} with {len(examples)} evaluated questions needs "
            f"{cfg.start + len(examples) + cfg.warmup}{where}; {cfg.dataset} has {len(pool)}"
        )
    return pool[len(pool) - cfg.warmup :]


async def _run_all(
    runner: QuestionRunner,
    todo: list[EvalExample],
    out_dir: Path,
    done: dict[str, QuestionResult],
    cfg: EvalConfig,
    *,
    total: int,
    progress: bool,
) -> None:
    """Bounded concurrency; each result is logged the moment it is ready (in completion order)."""
    limit = asyncio.Semaphore(cfg.resolved_concurrency())
    bar = _progress(total, total - len(todo), progress)
    streak = 0
    logged: set[str] = set()

    async def one(ex: EvalExample) -> QuestionResult:
        async with limit:
            return await runner(ex)

    tasks = [asyncio.create_task(one(ex)) for ex in todo]
    try:
        for next_done in asyncio.as_completed(tasks):
            result = await next_done
            runlog.append_result(out_dir, result)
            logged.add(result.id)
            done[result.id] = result
            streak = streak + 1 if result.error else 0
            bar.update(1)
            bar.set_postfix_str(f"{_running_accuracy(done)} err={sum(1 for r in done.values() if r.error)}")
            if streak >= cfg.max_consecutive_errors:
                raise RunAborted(
                    f"{streak} questions in a row failed (last: {result.error}); the log in {out_dir} is kept, "
                    "fix the backend and run the same command again to continue"
                )
    finally:
        for t in tasks:  # keep what finished but was not consumed yet (e.g. on Ctrl-C), drop the rest
            if t.done() and not t.cancelled() and t.exception() is None and t.result().id not in logged:
                runlog.append_result(out_dir, t.result())
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        bar.close()
