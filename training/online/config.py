"""Settings of test-time learning (defaults: the paper's TTRL where a CPU can afford it)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal, get_args

from mia.graph.models.errors import BackendError
from mia.graph.models.spec import parse_model_spec
from mia.training.config import BudgetConfig, LoraSettings
from mia.training.rewards import AccuracyMetric, PlannerRewardWeights


Dtype = Literal["auto", "float32", "bfloat16", "float16"]


@dataclass
class OnlineConfig:
    """One test-time learning session."""

    batch_questions: int = 4  # K: a GRPO update after every K answered questions (paper: 32)
    rollouts: int = 4  # n plans sampled per question (paper: 4)
    learning_rate: float = 1e-5  # paper 1e-6 for an 8B full fine-tune; a LoRA on 135M needs more
    plan_max_tokens: int = 48
    plan_max_words: int = 40
    temperature: float = 1.0
    max_grad_norm: float = 1.0
    ground_truth: bool = True  # False: the reviewer panel's verdict is the reward
    metric: AccuracyMetric = "f1"
    weights: PlannerRewardWeights = field(default_factory=PlannerRewardWeights)
    nogt_verdict_weight: float = 0.9  # paper's no-GT reward: 0.9 * [arbiter correct] + 0.1 * format
    budget: BudgetConfig = field(default_factory=BudgetConfig)  # the rollouts' frozen executor
    lora: LoraSettings = field(default_factory=LoraSettings)
    consolidate_every: int = 2  # batches between memory consolidations (0: never)
    # Served answers per version compared by the rollback rule. None: batch_questions, the most a
    # version can serve before the next update replaces it (a longer window never fills: no rollback).
    rollback_window: int | None = None
    rollback_tolerance: float = 0.05
    store_rollouts: bool = True  # the bidirectional loop: rollouts become memories
    # between: the learner pauses while a question is answered (training/online/gate.py), so answers
    # run at full speed on a small CPU; background: it runs beside the answers (a GPU, spare cores)
    schedule: Literal["between", "background"] = "between"
    # the learner's copy of the planner: auto = the served planner's (fp32 on a CPU, bf16 on a GPU);
    # on a CPU with AVX-512 BF16 the executor SFT stepped 2.3x faster in bfloat16 than in fp32
    # (results/training/README.md); peft keeps the LoRA weights themselves in fp32 either way
    dtype: Dtype = "auto"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.batch_questions < 1 or self.rollouts < 2:
            raise ValueError("test-time learning needs batch_questions >= 1 and rollouts >= 2 (GRPO compares a group)")
        if self.schedule not in ("between", "background"):
            raise ValueError(f"schedule must be 'between' or 'background', not {self.schedule!r}")
        if self.dtype not in get_args(Dtype):
            raise ValueError(f"dtype must be {', '.join(get_args(Dtype))}, not {self.dtype!r}")
        if self.rollback_window is None:
            self.rollback_window = self.batch_questions
        if not 1 <= self.rollback_window <= self.batch_questions:
            raise ValueError(
                f"rollback_window={self.rollback_window} must be between 1 and batch_questions={self.batch_questions}: "
                "a version serves at most batch_questions answers before the next update replaces it, so a "
                "longer window never fills and rollback could never fire"
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
