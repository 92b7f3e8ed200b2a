"""A test-time learning session: the served graph, its planner, and the learner beside it.

    session = LearningSession(context, OnlineConfig(ground_truth=False))
    graph = session.graph()                      # build_graph(deps=...) whose planner is swappable
    result = run_question(graph, state, session.context)   # a RunResult
    session.submit(state, result)                # the episode goes to the learner; returns at once
    session.close()

Answers come first by default (`OnlineConfig.schedule` "between", training/online/gate.py): run each
question inside `with session.answering():` and the learner waits while it is answered; a caller
that answers questions back to back (an evaluation) calls `session.settle()` after `submit`, so the
learner learns a ready batch before the next question instead of never.

The planner role of the graph is one `LocalChatModel` owned by the session; every update the
learner publishes reaches it through `set_adapter` (atomic: a generation in progress finishes
with the old adapter). A closed planner (API model or GGUF) cannot be fine-tuned: the session
then learns in memory only and says so in `notice`.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from mia.graph.context import Context
from mia.graph.nodes.deps import Deps, default_deps
from mia.graph.result import RunResult
from mia.memory.namespaces import namespace_folder
from mia.memory.trajectory import TrajectoryStep
from mia.training.online.config import OnlineConfig, is_closed_model, rollout_budget
from mia.training.online.episodes import OnlineEpisode
from mia.training.online.gate import AnswerGate
from mia.training.online.learner import OnlineLearner
from mia.training.online.layout import adapters_folder, online_folder
from mia.training.rewards import CORRECT_AT
from mia.training.online.registry import AdapterRegistry
from mia.training.online.trainer import BatchTrainer, MemoryOnlyTrainer

log = logging.getLogger(__name__)
MEMORY_ONLY_NOTICE = (
    "Test-time learning: the planner {spec!r} cannot be fine-tuned here (API models and GGUF files have no "
    "trainable weights), so learning is memory-only: every answer and its verdict still go into memory, "
    "and the memory is consolidated as it grows; the planner's weights do not change."
)


class LearningDeps(Deps):
    """The graph's Deps, except that the planner role is the session's swappable model."""

    def __init__(self, inner: Deps, planner: Any) -> None:
        super().__init__()
        self._inner, self._planner = inner, planner

    def chat_model(self, context: Context, role: str) -> Any:
        if role == "planner" and self._planner is not None:
            return self._planner
        return self._inner.chat_model(context, role)

    def memory_store(self, context: Context) -> Any:
        return self._inner.memory_store(context)

    def usable_memory_store(self, context: Context) -> tuple[Any, str | None]:
        return self._inner.usable_memory_store(context)  # the inner Deps own (and reopen) the stores

    def tools(self, context: Context, paragraphs: Any) -> Any:
        return self._inner.tools(context, paragraphs)

    def judge(self, **kwargs: Any) -> Any:
        return self._inner.judge(**kwargs)

    def compressor(self, model: Any) -> Any:
        return self._inner.compressor(model)


def paragraphs_from_steps(steps: list[TrajectoryStep], limit: int = 12) -> list[dict[str, str]]:
    """Without a sandbox (`mia ask`/`chat`), the rollouts search what the answer's own searches
    found: each `[title] text` block of its observations becomes a paragraph."""
    out: list[dict[str, str]] = []
    for step in steps:
        if step.kind != "observation":
            continue
        for block in step.content.split("\n"):
            block = block.strip()
            if len(block) < 20:
                continue
            title, text = "", block
            if block.startswith("[") and "]" in block:
                title, text = block[1 : block.index("]")], block[block.index("]") + 1 :].strip()
            out.append({"title": title, "text": text})
    unique = list({(p["title"], p["text"]): p for p in out}.values())
    return unique[:limit]


class LearningSession:
    """See the module docstring."""

    def __init__(
        self,
        context: Context,
        cfg: OnlineConfig | None = None,
        *,
        deps: Deps | None = None,
        trainer: BatchTrainer | None = None,
        served_planner: Any = None,
        start: bool = True,
    ) -> None:
        # the planner learns from the plan of every question it serves: plans come first here, whatever
        # the graph's default (plan_when "failure" would plan only after a shown failure)
        self.context, self.cfg = dataclasses.replace(context, plan_when="start"), cfg or OnlineConfig()
        self.inner = deps or default_deps()
        data_dir = context.resolved_data_dir()
        # one episode queue and one adapter history per memory namespace: a tenant's answers never
        # train (or roll back) another tenant's planner
        ns = namespace_folder(context.namespace)
        self.folder = online_folder(data_dir, ns)
        self.registry = AdapterRegistry(adapters_folder(data_dir, ns), self.cfg.rollback_policy())
        self.parametric = not is_closed_model(context.planner_model) if trainer is None else trainer.parametric
        self.notice = "" if self.parametric else MEMORY_ONLY_NOTICE.format(spec=context.planner_model)
        if self.notice:
            log.warning(self.notice)
        self.planner = served_planner
        if self.planner is None and self.parametric:
            from mia.graph.models import load_chat_model

            spec, temperature, max_tokens = context.model_for("planner")
            self.planner = load_chat_model(spec, temperature=temperature, max_tokens=max_tokens)
        self._version_lock = threading.Lock()
        self.deps = LearningDeps(self.inner, self.planner if self.parametric else None)
        if trainer is None and self.parametric:  # the learner continues from the version being served
            trainer = build_grpo_trainer(
                context,
                self.cfg,
                self.registry.current_path(),
                learner_placement(self.planner, self.cfg),
                served=self.planner,
            )
        elif trainer is None:
            trainer = MemoryOnlyTrainer()
        elif self.registry.current_path() is not None:
            trainer.reset_to(self.registry.current_path())
        self.trainer = trainer
        from mia.training.online.memory_loop import MemoryLoop

        self.store = self.deps.memory_store(context) if context.memory_mode != "none" else None
        loop = (
            MemoryLoop(self.store, self.folder, consolidate_every=self.cfg.consolidate_every, seed=self.cfg.seed)
            if self.store is not None and self.cfg.store_rollouts
            else None
        )
        if loop is not None and self.parametric:  # the memory loop credits the shown memories, once per question
            self.context = dataclasses.replace(self.context, credit_used_memories=False)
        self.gate = AnswerGate()
        self.learner = OnlineLearner(
            self.folder,
            trainer,
            self.registry,
            batch_questions=self.cfg.batch_questions,
            memory_loop=loop,
            on_swap=self._swap,
            gate=self.gate if self.cfg.schedule == "between" else None,
        )
        self._served_version = self.registry.current
        if self.parametric and self.registry.current_path() is not None:
            self._swap(self.registry.current_path(), self.registry.current)  # resume serving the latest version
        if start:
            self.learner.start()

    # ---------------------------------------------------------------- serving
    def graph(self, **kwargs: Any) -> Any:
        """The compiled MIA graph whose planner is this session's swappable model."""
        from mia.graph.builder import build_graph

        return build_graph(deps=self.deps, **kwargs)

    @property
    def served_version(self) -> str:
        with self._version_lock:
            return self._served_version

    def _swap(self, folder: Path | None, version: str) -> None:
        if self.planner is not None and hasattr(self.planner, "set_adapter"):
            self.planner.set_adapter(folder)
        with self._version_lock:
            self._served_version = version
        log.info("planner now serves adapter %s", version)

    def answering(self) -> AbstractContextManager[None]:
        """Hold while one question is answered (with the `between` schedule the learner waits)."""
        return self.gate.answering()

    def settle(self, timeout: float = 3600.0) -> bool:
        """With the `between` schedule, let the learner learn what is ready before the next
        question (answers back to back would leave it no time); True at once otherwise."""
        if self.cfg.schedule != "between":
            return True
        return self.learner.drain(timeout)

    # ---------------------------------------------------------------- episodes
    def episode(self, state: dict[str, Any], result: RunResult, version: str | None = None) -> OnlineEpisode:
        """An answered question as the learner's episode (see `episode_from_result`)."""
        return episode_from_result(state, result, self.cfg, self.context.namespace, version or self.served_version)

    def submit(self, state: dict[str, Any], result: RunResult, version: str | None = None) -> OnlineEpisode:
        """Hand one answered question (the graph's input state and its `RunResult`) to the learner
        (returns at once; durable on return)."""
        episode = self.episode(state, result, version)
        self.learner.submit(episode)
        return episode

    def close(self, drain: bool = False, timeout: float = 600.0) -> bool:
        """Stop the learner (after learning from what is pending when `drain`). A batch in
        progress ends at its next stop check and stays pending. True once the thread ended."""
        if drain:
            self.learner.drain(timeout)
        return self.learner.close(timeout)


def served_reward(result: RunResult, gold: list[str], cfg: OnlineConfig) -> tuple[str, float | None, str]:
    """(outcome, reward, feedback) of the answer the user got: the graph's verdict (ground truth,
    or the reviewer panel without it) turned into the planner reward used for rollback."""
    from mia.training.rewards import answer_accuracy, plan_format_ok

    outcome, feedback = result.outcome, result.feedback
    fmt = float(plan_format_ok(result.plan))
    if cfg.ground_truth and gold:
        acc = answer_accuracy(result.answer, gold, cfg.metric)
        if outcome == "unknown":
            outcome = "correct" if acc >= CORRECT_AT else "incorrect"
        w = cfg.weights
        return outcome, w.final * acc + w.first * acc + w.format * fmt, feedback
    if outcome == "unknown":
        return outcome, None, feedback
    v = cfg.nogt_verdict_weight
    return outcome, v * float(outcome == "correct") + (1 - v) * fmt, feedback


def episode_from_result(
    state: dict[str, Any], result: RunResult, cfg: OnlineConfig, namespace: str, version: str | None
) -> OnlineEpisode:
    """Build the learner's episode from the graph's input state and its typed result. The memory
    block is the one the planner was shown (the result keeps it), so the learner trains on the
    prompt that was served."""
    gold = [g for g in (state.get("gold_answers") or []) if isinstance(g, str) and g.strip()]
    paragraphs = [
        {"title": str(p.get("title", "")), "text": str(p.get("text", ""))} for p in (state.get("paragraphs") or [])
    ] or paragraphs_from_steps(result.steps)
    outcome, reward, feedback = served_reward(result, gold, cfg)
    return OnlineEpisode(
        question=str(state["question"]),
        gold_answers=gold if cfg.ground_truth else [],
        paragraphs=paragraphs,
        memories=result.memory_block,
        used_memory_ids=list(result.used_memory_ids),
        plan=result.plan,
        answer=result.answer,
        outcome=outcome,
        feedback=feedback,
        reward=reward,
        adapter_version=version,
        namespace=namespace,
    )


def served_placement(planner: Any) -> tuple[str, str]:
    """(device, dtype name) of the served planner: a transformers planner says its device; others
    (llama.cpp) run where MIA_DEVICE says (auto: CUDA when torch sees it). The dtype is the one
    local weights are served in on that device (bf16/fp16 on CUDA, fp32 on CPU)."""
    from mia.graph.models.device import resolve_device
    from mia.graph.models.weights import dtype_for

    device = getattr(planner, "device", None)
    device = resolve_device(device if isinstance(device, str) and device else None)
    return device, str(dtype_for(device)).removeprefix("torch.")


def learner_placement(planner: Any, cfg: OnlineConfig) -> tuple[str, str]:
    """The served planner's device, in the dtype the config asks for (auto: the served one)."""
    device, dtype = served_placement(planner)
    return device, dtype if cfg.dtype == "auto" else cfg.dtype


def build_grpo_trainer(
    context: Context,
    cfg: OnlineConfig,
    start_adapter: Path | None,
    placement: tuple[str, str] = ("cpu", "float32"),
    served: Any = None,
) -> BatchTrainer:
    """The learner's planner copy (from the served planner's weights, or the latest published
    version) on the served planner's device and dtype (`placement`), a frozen executor (the
    executor role's weights when local, else the planner's base; the planner's own base weights
    are shared, not copied), and, without ground truth, a reviewer panel on that frozen model.
    The plans are sampled on the `served` planner where `cfg.sample_on` allows (sampling.py)."""
    from mia.training.online.policy import PlannerPolicy
    from mia.training.online.rollouts import RolloutScorer
    from mia.training.online.trainer import GRPOBatchTrainer
    from mia.training.policy import load_model, load_tokenizer, resolve_weights
    from mia.training.react import ReactBudget, ReactRunner, SandboxSearch

    device, dtype = placement
    base, adapter = resolve_weights(context.planner_model)
    policy = PlannerPolicy(
        base,
        start_adapter or adapter,
        lora=cfg.lora,
        learning_rate=cfg.learning_rate,
        max_grad_norm=cfg.max_grad_norm,
        seed=cfg.seed,
        device=device,
        dtype=dtype,
    )
    b = rollout_budget(cfg, context)
    sampler = plan_sampler(cfg, served, policy)
    if served_rollouts(context):
        # the executor role's llama.cpp server carries out the rollouts (see executors.py); the
        # reviewer panel, without ground truth, is the judge role's own model
        from mia.graph.models import load_chat_model
        from mia.training.online.executors import GraphRollouts

        rollouts = GraphRollouts(
            dataclasses.replace(
                context,
                max_tool_calls=b.max_tool_calls,
                executor_max_tokens=b.max_turn_tokens,
                search_top_k=b.search_top_k,
            ),
            concurrency=cfg.rollouts,
        )
        judge_spec, _, judge_tokens = context.model_for("judge")
        judge_model = (
            None if cfg.ground_truth else load_chat_model(judge_spec, temperature=0.0, max_tokens=judge_tokens)
        )
        return GRPOBatchTrainer(
            policy, RolloutScorer(rollouts, cfg, judge_model), cfg, plan_style=context.plan_style, sampler=sampler
        )
    exec_spec = context.executor_model if not is_closed_model(context.executor_model) else context.planner_model
    exec_base, exec_adapter = resolve_weights(exec_spec)
    if exec_adapter is None and adapter is None and Path(exec_base).resolve() == Path(base).resolve():
        executor: Any = policy.frozen_base()  # the same weights: one copy on the device, not two
    else:
        executor = load_model(exec_base, exec_adapter, dtype=dtype, device=device)
    tokenizer = load_tokenizer(exec_base)
    react = ReactRunner(executor, tokenizer, SandboxSearch(top_k=b.search_top_k), ReactBudget.of(b))
    judge_model = None
    if not cfg.ground_truth:
        judge_model = private_judge_model(context, executor, tokenizer, exec_base)
    return GRPOBatchTrainer(
        policy, RolloutScorer(react, cfg, judge_model), cfg, plan_style=context.plan_style, sampler=sampler
    )


def plan_sampler(cfg: OnlineConfig, served: Any, policy: Any) -> Any:
    """The served planner's sampler when `cfg.sample_on` asks for it or, on auto, when llama.cpp
    serves the planner; else None (the learner's copy samples). "served" on a planner that cannot
    sample for the learner is refused in one line."""
    from mia.training.online.sampling import ServedSampler, served_sampling

    if cfg.sample_on == "learner" or (cfg.sample_on == "auto" and not served_sampling(served)):
        return None
    if not served_sampling(served):
        raise ValueError(
            f"sample_on='served' needs a planner served by llama.cpp, not {type(served).__name__}: "
            "use sample_on='learner'"
        )
    return ServedSampler(served, policy, concurrency=cfg.rollouts)


def served_rollouts(context: Context) -> bool:
    """Whether rollouts go through the executor role's llama.cpp server (the graph) rather than a
    transformers copy in the learner: when that is how the executor is served."""
    from mia.graph.models.spec import parse_model_spec

    return parse_model_spec(context.executor_model).backend == "llamacpp"


def private_judge_model(context: Context, model: Any, tokenizer: Any, base: Path) -> Any:
    """The reviewer panel's model for rollouts. A local judge runs on the learner's own frozen
    copy (so judging rollouts never takes the served model's lock); an API judge is used as is."""
    spec, _, max_tokens = context.model_for("judge")
    if is_closed_model(spec):
        from mia.graph.models import load_chat_model

        return load_chat_model(spec, temperature=0.0, max_tokens=max_tokens)
    from pydantic import PrivateAttr

    from mia.graph.models.local import LocalChatModel
    from mia.graph.models.weights import LoadedWeights

    class _PrivateLocal(LocalChatModel):
        _weights: Any = PrivateAttr(default=None)

        @property
        def backend(self) -> LoadedWeights:
            return self._weights

    device = str(getattr(model, "device", "cpu"))  # the frozen executor's device: no copy is moved or made
    judge = _PrivateLocal(
        model_name="learner-judge", model_path=str(base), device=device, temperature=0.0, max_tokens=max_tokens
    )
    judge._weights = LoadedWeights(str(base), device, model, tokenizer)
    return judge
