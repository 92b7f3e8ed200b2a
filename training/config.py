"""Training configuration: one YAML file per run (see training/configs/).

`grpo:` is passed to TRL's GRPOConfig as is (any GRPOConfig field), after our CPU-safe defaults;
everything else is ours: the policy, the data, the frozen partner, the budgets, LoRA, the rewards.
The whole file is validated by pydantic (unknown keys forbidden, types checked) before anything
loads, so a typo fails in a second with the key's path, not an hour into a run.
"""

from __future__ import annotations

from dataclasses import asdict, field, fields, is_dataclass
from pathlib import Path
from typing import Any, Literal, get_type_hints

from pydantic import ConfigDict, PositiveInt, TypeAdapter, ValidationError
from pydantic.dataclasses import dataclass as pydantic_dataclass

from mia.training.rewards import AccuracyMetric, ExecutorRewardWeights, PlannerRewardWeights

Stage = Literal["planner", "executor", "executor-sft", "alternate"]
#: Who generates a policy's samples: auto = the policy's GGUF on llama.cpp when there is one (an
#: embedded base: the weights the learner trains were de-quantised from it), else the torch copy.
SampleOn = Literal["auto", "learner", "served"]
#: which attempt of a right episode the executor SFT teaches (mia.training.sft_data.conversation_rows)
SftAttempts = Literal["first", "final"]
#: The policy and partners a config gets when it names none: the small embedded model that trains on a CPU
#: (the served defaults, graph/models/defaults.py, are for answering, not for a first training run).
DEFAULT_TRAINING_MODEL = "local:smollm2"
#: Every section of the YAML: unknown keys are an error, values are checked against the types.
_STRICT = ConfigDict(extra="forbid", arbitrary_types_allowed=True)


@pydantic_dataclass(config=_STRICT)
class DataConfig:
    """Where the questions come from, and which slice is training vs held-out evaluation."""

    path: str = ""  # a normalised QA JSONL(.gz) file (or a folder holding one)
    # None: offset/limit index the file's own order. An int: they index the seeded order that
    # `mia eval --seed` draws from (it evaluates the first n and warms up on the last w), so
    # offset >= n trains on questions that run never evaluates (mia.training.splits).
    seed: int | None = None
    offset: int = 0
    limit: int | None = 64
    eval_offset: int | None = None  # held-out slice for before/after evaluation
    eval_limit: int = 30
    trajectories: str | None = None  # the memory's trajectory log JSONL: recorded episodes as data
    trajectories_only_correct: bool = False
    memory_dir: str | None = None  # a MemoryStore folder: retrieved memories go into planner prompts
    namespace: str = "default"
    k_pos: int = 2
    k_neg: int = 2


@pydantic_dataclass(config=_STRICT)
class PlannerStageConfig:
    """Planner stage: the policy writes plans, a frozen executor carries them out."""

    executor_model: str = DEFAULT_TRAINING_MODEL  # frozen executor (spec); hf:<base>+<executor-adapter> after alternate
    episode_backend: Literal["local", "graph"] = "local"
    plan_max_words: int | None = None  # None: the graph plan node's own limit
    numbered_steps: bool = True  # format term: the plan is numbered steps, as the prompt asks
    max_replans: int = 0  # graph backend: reflection rounds (the paper's 1)
    graph_context: dict[str, Any] = field(default_factory=dict)  # extra Context fields (graph backend)
    # graph backend: a step's rollouts run this many at a time, so a llama.cpp executor batches
    # them on its parallel slots (the live policy still generates one reflection at a time)
    parallel_episodes: PositiveInt = 1
    # who samples the plans: llama.cpp with the LoRA of the step (planner_stage.PlannerRollout), or
    # TRL's own generation with the torch copy the trainer steps
    sample_on: SampleOn = "auto"
    # a MemoryStore folder: each question's best right rollout and one wrong one become memories
    # (with the plan pairs beside the run), so offline training feeds memory as test-time learning does
    memorise_rollouts: str | None = None


@pydantic_dataclass(config=_STRICT)
class ExecutorStageConfig:
    """Executor stage: the policy learns multi-turn tool use on plans from a frozen planner."""

    planner_model: str = DEFAULT_TRAINING_MODEL  # frozen planner that writes the plans (once, cached)
    plan_max_tokens: int = 64
    plans_file: str | None = None  # JSONL {qid, plan} to reuse instead of generating
    replan: bool = True  # a wrong first answer gets one replan from the frozen planner (paper, ref. 5.1)
    # who plays the policy's episodes: llama.cpp with the LoRA of the step (training/served_react.py;
    # several times torch's speed on a CPU), or the torch copy the trainer steps
    sample_on: SampleOn = "auto"


@pydantic_dataclass(config=_STRICT)
class SftSettings:
    """Executor SFT (`mia train executor-sft`): rejection-sampled rows from logged episodes
    (mia.training.sft_data); `trainer:` is passed to TRL's SFTConfig as is."""

    episodes: list[str] = field(default_factory=list)  # glob patterns of results.jsonl(.gz) / trajectories.jsonl(.gz)
    exclude: list[str] = field(default_factory=list)  # episodes whose questions are never trained on (reported splits)
    plans_only: bool = False  # only episodes that were handed a plan (else planless right attempts too)
    max_tool_calls: int | None = 4  # the budget the episodes ran under: an attempt that used it all is skipped
    # first: the first attempt, when no later round changed its answer; final: the attempt that gave
    # the right answer, a second attempt after a late plan, a replan or the settled facts included
    attempts: SftAttempts = "first"
    # also a reading row for each wrong first answer whose own search results held a gold answer:
    # its served prompt, and an answer turn that quotes the sentences and gives it (reading_rows)
    reading: bool = False
    max_length: PositiveInt = 2048  # rows longer than this (tokens) are dropped, never truncated
    limit: int | None = None  # at most this many rows (in order), for a run that must fit a time slot
    trainer: dict[str, Any] = field(default_factory=dict)


@pydantic_dataclass(config=_STRICT)
class BudgetConfig:
    """Executor budgets inside an episode (tight on CPU so an episode takes seconds), and the
    served rules of its turns where they are sampled on llama.cpp (`executor.sample_on`): each turn
    constrained to the protocol's grammar, with no answer before `min_tool_calls` searches (as
    `Context.turn_grammar` and `Context.min_tool_calls` serve them). The torch loop samples freely."""

    max_tool_calls: int = 2
    max_turn_tokens: int = 96
    max_answer_tokens: int = 32
    search_top_k: int = 2
    min_tool_calls: int = 1
    turn_grammar: bool = True


@pydantic_dataclass(config=_STRICT)
class LoraSettings:
    """LoRA adapter of the policy."""

    r: int = 8
    alpha: int = 16
    dropout: float = 0.0
    target_modules: list[str] | str = field(default_factory=lambda: ["q_proj", "v_proj"])


@pydantic_dataclass(config=_STRICT)
class RewardConfig:
    """Reward weights (the paper's by default) and how accuracy is measured."""

    accuracy: AccuracyMetric = "f1"
    judge_model: str | None = None  # for accuracy: judge (the graph judge's ground-truth grader)
    planner: PlannerRewardWeights = field(default_factory=PlannerRewardWeights)
    executor: ExecutorRewardWeights = field(default_factory=ExecutorRewardWeights)


@pydantic_dataclass(config=_STRICT)
class TrainConfig:
    """A whole training run."""

    name: str = "run"
    base_model: str = DEFAULT_TRAINING_MODEL  # the policy's base; hf:<dir>+<adapter> continues an adapter
    output_dir: str = "runs/training/run"
    device: str = "cpu"
    dtype: str = "float32"
    seed: int = 0
    # Torch CPU threads. On a shared machine 1 is several times faster than the default: with
    # more processes than cores, OpenMP threads spin-wait on each other (measured 6-10x).
    torch_threads: int | None = None
    # Stop a stage cleanly (checkpoint + adapter) after this many minutes; None: no limit.
    time_limit_minutes: float | None = None
    data: DataConfig = field(default_factory=DataConfig)
    planner: PlannerStageConfig = field(default_factory=PlannerStageConfig)
    executor: ExecutorStageConfig = field(default_factory=ExecutorStageConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    lora: LoraSettings = field(default_factory=LoraSettings)
    reward: RewardConfig = field(default_factory=RewardConfig)
    grpo: dict[str, Any] = field(default_factory=dict)
    sft: SftSettings = field(default_factory=SftSettings)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> TrainConfig:
        """Build from a (YAML) dict; an unknown key or a wrong type is a ValueError naming its path."""
        if not isinstance(raw or {}, dict):
            raise ValueError(f"config: expected a mapping, got {type(raw).__name__}")
        try:
            return _ADAPTER.validate_python(raw or {})
        except ValidationError as err:
            raise ValueError(_explain(err)) from None

    @classmethod
    def from_yaml(cls, path: str | Path, overrides: dict[str, Any] | None = None) -> TrainConfig:
        """Load a YAML config; `overrides` ({"grpo.max_steps": 3, ...}) are applied on top."""
        import yaml

        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"training config not found: {path}")
        raw = yaml.safe_load(path.read_text()) or {}
        for dotted, value in (overrides or {}).items():
            node = raw
            *parents, leaf = dotted.split(".")
            for key in parents:
                node = node.setdefault(key, {})
            node[leaf] = value
        return cls.from_dict(raw)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (saved next to the checkpoints, so a run documents itself)."""
        return asdict(self)

    def _trainer_args(
        self, output_dir: Path, own: dict[str, Any], user: dict[str, Any], max_steps: int | None
    ) -> dict[str, Any]:
        """What both TRL configs share (CPU-safe: no bf16 autocast, no gradient checkpointing,
        use_cpu), then the stage's own defaults, then the YAML's section, then --max-steps."""
        on_cpu = self.device == "cpu"
        if self.torch_threads:
            import torch

            torch.set_num_threads(int(self.torch_threads))
        args: dict[str, Any] = {
            "output_dir": str(output_dir),
            "report_to": "none",
            "logging_steps": 1,
            "save_strategy": "steps",
            "save_steps": 10,
            "save_total_limit": 2,
            "seed": self.seed,
            "use_cpu": on_cpu,
            "bf16": False if on_cpu else self.dtype == "bfloat16",
            "fp16": False,
            "gradient_checkpointing": not on_cpu,
            "disable_tqdm": False,
            **own,
            **user,
        }
        if max_steps is not None:
            args["max_steps"] = max_steps
        return args

    def grpo_args(self, output_dir: Path, max_steps: int | None = None) -> Any:
        """TRL GRPOConfig under whatever `grpo:` says (no KL term by default)."""
        from trl import GRPOConfig

        own = {"beta": 0.0, "remove_unused_columns": False}
        return GRPOConfig(**self._trainer_args(output_dir, own, self.grpo, max_steps))

    def sft_args(self, output_dir: Path, max_steps: int | None = None) -> Any:
        """TRL SFTConfig under whatever `sft.trainer:` says: the loss on the completion (the
        executor's turn) only."""
        from trl import SFTConfig

        own = {
            "completion_only_loss": True,
            "max_length": None,  # rows are already cut to sft.max_length by dropping, never truncating
            "per_device_train_batch_size": 1,
            "num_train_epochs": 1,
            "learning_rate": 1e-4,
        }
        return SFTConfig(**self._trainer_args(output_dir, own, self.sft.trainer, max_steps))


_ADAPTER = TypeAdapter(TrainConfig)


def _section(path: tuple[Any, ...]) -> type | None:
    """The config class at a key path (to list the keys it knows)."""
    cls: Any = TrainConfig
    for key in path:
        hints = get_type_hints(cls) if is_dataclass(cls) else {}
        cls = hints.get(key)
        if cls is None:
            return None
    return cls if isinstance(cls, type) and is_dataclass(cls) else None


def _explain(err: ValidationError) -> str:
    """One line per problem: `config.planner.exectuor_model: unknown key (known: ...)`."""
    lines = []
    for problem in err.errors():
        loc = tuple(problem.get("loc") or ())
        where = ".".join(["config", *map(str, loc)])
        if problem["type"] in ("unexpected_keyword_argument", "extra_forbidden"):
            section = _section(loc[:-1])
            known = f" (known: {', '.join(f.name for f in fields(section))})" if section else ""
            lines.append(f"{where}: unknown key{known}")
        else:
            lines.append(f"{where}: {problem['msg']}")
    return "invalid training config: " + "; ".join(lines)
