"""Settings of test-time learning (defaults: the paper's TTRL where a CPU can afford it)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal, get_args

from mia.graph.context import Context
from mia.graph.models.errors import BackendError
from mia.graph.models.spec import parse_model_spec
from mia.training.config import BudgetConfig, LoraSettings, SampleOn
from mia.training.online.registry import RollbackPolicy
from mia.training.rewards import AccuracyMetric, PlannerRewardWeights


Dtype = Literal["auto", "float32", "bfloat16", "float16"]
Schedule = Literal["between", "background"]


@dataclass
class OnlineConfig:
    """One test-time learning session."""

    batch_questions: int = 4  # K: a GRPO update after every K answered questions (paper: 32)
    rollouts: int = 4  # n plans sampled per question (paper: 4)
    learning_rate: float = 1e-5  # paper 1e-6 for an 8B full fine-tune; a LoRA on 135M needs more
    # The plans are sampled from the prompt the plan node serves (its word limit, its stop strings)
    # and played with the served executor's budget, so the planner learns the plans it is asked for
    # where they are carried out. A cap of 128 tokens: the served hop plans of the tuning split were
    # 52-59 tokens at the median and 107 at most but for one runaway (results/ladder-tune/*/default-v1);
    # the first Qwen test-time run, at 48 tokens and a 40-word prompt, cut most plans mid-step.
    plan_max_tokens: int = 128
    plan_max_words: int | None = None  # None: the plan node's own limit (builder.PLAN_WORDS)
    temperature: float = 1.0
    # who samples the plans: auto = the served planner when llama.cpp serves it (the same weights and
    # adapter; 192 s a batch against 509-551 s in fp32 torch on 2 cores: training/online/sampling.py),
    # else the learner's copy
    sample_on: SampleOn = "auto"
    max_grad_norm: float = 1.0
    ground_truth: bool = True  # False: the reviewer panel's verdict is the reward
    metric: AccuracyMetric = "f1"
    weights: PlannerRewardWeights = field(default_factory=PlannerRewardWeights)
    nogt_verdict_weight: float = 0.9  # paper's no-GT reward: 0.9 * [arbiter correct] + 0.1 * format
    # the rollouts' frozen executor; None: the served executor's (the Context's max_tool_calls,
    # search_top_k, executor_max_tokens): see `rollout_budget`
    budget: BudgetConfig | None = None
    lora: LoraSettings = field(default_factory=LoraSettings)
    consolidate_every: int = 2  # batches between memory consolidations (0: never)
    # Served answers per version compared by the rollback rule. None: batch_questions, the most a
    # version can serve before the next update replaces it (a longer window never fills: no rollback).
    rollback_window: int | None = None
    rollback_tolerance: float = 0.05
    rollback_alpha: float | None = 0.05  # the drop must also pass a permutation test (RollbackPolicy)
    store_rollouts: bool = True  # the bidirectional loop: rollouts become memories
    # between: the learner pauses while a question is answered (training/online/gate.py), so answers
    # run at full speed on a small CPU; background: it runs beside the answers (a GPU, spare cores)
    schedule: Schedule = "between"
    # the learner's copy of the planner: auto = the served planner's (fp32 on a CPU, bf16 on a GPU);
    # on a CPU with AVX-512 BF16 the executor SFT stepped 2.3x faster in bfloat16 than in fp32
    # (results/training/README.md); peft keeps the LoRA weights themselves in fp32 either way
    dtype: Dtype = "auto"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.plan_max_tokens < 1:
            raise ValueError(f"plan_max_tokens must be at least 1, not {self.plan_max_tokens}")
        if self.batch_questions < 1 or self.rollouts < 2:
            raise ValueError("test-time learning needs batch_questions >= 1 and rollouts >= 2 (GRPO compares a group)")
        for name, allowed in (("schedule", Schedule), ("sample_on", SampleOn), ("dtype", Dtype)):
            if getattr(self, name) not in get_args(allowed):
                raise ValueError(f"{name} must be {', '.join(get_args(allowed))}, not {getattr(self, name)!r}")
        if self.rollback_window is None:
            self.rollback_window = self.batch_questions
        if not 1 <= self.rollback_window <= self.batch_questions:
            raise ValueError(
                f"rollback_window={self.rollback_window} must be between 1 and batch_questions={self.batch_questions}: "
                "a version serves at most batch_questions answers before the next update replaces it, so a "
                "longer window never fills and rollback could never fire"
            )

    def rollback_policy(self) -> RollbackPolicy:
        """The registry's rollback rule from these settings (the window filled in above)."""
        assert self.rollback_window is not None  # __post_init__ fills it from batch_questions
        return RollbackPolicy(self.rollback_window, self.rollback_tolerance, self.rollback_alpha)


def rollout_budget(cfg: OnlineConfig, context: Context) -> BudgetConfig:
    """The rollouts' executor budget: `cfg.budget` when set, else the served executor's own, so a
    sampled plan is scored as the graph would carry it out (a forced answer gets a whole turn too)."""
    if cfg.budget is not None:
        return cfg.budget
    return BudgetConfig(
        max_tool_calls=context.max_tool_calls,
        max_turn_tokens=context.executor_max_tokens,
        max_answer_tokens=context.executor_max_tokens,
        search_top_k=context.search_top_k,
    )


NESTED = ("budget", "lora", "weights")  # dataclass fields, set in Python rather than as KEY=VALUE


def online_config(overrides: dict[str, Any], ground_truth: bool = True) -> OnlineConfig:
    """OnlineConfig from flat `key: value` overrides (`mia eval --online KEY=VALUE`, an eval config's
    `online`): an unknown or nested key is refused in one line naming the keys there are."""
    scalar = sorted(f.name for f in fields(OnlineConfig) if f.name not in NESTED and f.name != "ground_truth")
    unknown = sorted(set(overrides) - set(scalar))
    if unknown:
        raise ValueError(
            f"unknown test-time learning setting(s) {', '.join(unknown)}; the settings are: {', '.join(scalar)}"
        )
    try:
        return OnlineConfig(ground_truth=ground_truth, **overrides)
    except TypeError as err:
        raise ValueError(f"test-time learning settings: {err}") from None


def is_closed_model(spec: str) -> bool:
    """True for planner specs whose weights cannot be trained here (an API, a server, a bare GGUF):
    not ModelSpec.trainable, and a spec that does not parse is not trainable either."""
    try:
        return not parse_model_spec(spec).trainable
    except BackendError:
        return True
