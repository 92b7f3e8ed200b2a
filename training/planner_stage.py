"""Planner stage: the planner policy (the LoRA being trained) writes plans, a frozen executor
carries each plan out (through the real graph with a preset plan, or training's ReAct loop), and
the episode's outcome is the reward (0.7 final + 0.2 first + 0.05 format + 0.05 decision)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from mia.graph.protocol import served_plan
from mia.training.config import TrainConfig
from mia.training.episodes import Accuracy, EpisodeOutcome, EpisodeRunner
from mia.training.policy_chat import POLICY_SPEC, PolicyChatModel, PolicyHandle
from mia.training.react import ReactBudget, TurnBatch
from mia.training.rewards import CORRECT_AT, PlannerRewardWeights, plan_reward
from mia.training.served_react import ServedGeneration, served_generation

log = logging.getLogger(__name__)


def completion_text(completion: Any) -> str:
    """The text of a TRL completion (conversational list of messages, or a plain string)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion:
        return str(completion[-1].get("content", ""))
    return ""


class PlannerEpisodeReward:
    """GRPO reward function: run each sampled plan through the frozen executor and score it.

    Every rollout is appended to `rollouts.jsonl` (question, plan, answers, reward), which is
    also what the memory-to-weights loop and debugging read."""

    __name__ = "planner_reward"

    def __init__(
        self,
        runner: EpisodeRunner,
        weights: PlannerRewardWeights = PlannerRewardWeights(),
        log_path: Path | None = None,
        max_words: int | None = None,
        numbered: bool = True,
        policy: PolicyHandle | None = None,
        parallel: int = 1,
        memory: Any = None,
        namespace: str = "default",
    ) -> None:
        self.runner, self.weights, self.log_path = runner, weights, log_path
        self.max_words, self.numbered = max_words, numbered
        self.policy = policy
        self.parallel = max(1, int(parallel))
        self.memory, self.namespace = memory, namespace  # a training.online MemoryLoop, or None

    def bind_trainer(self, trainer: Any) -> None:
        """Called by run_trainer once the trainer exists: the graph's planner role is the live policy."""
        if self.policy is not None:
            self.policy.bind(trainer)

    def score(self, plan_text: str, outcome: EpisodeOutcome) -> float:
        """The planner reward of one plan given what it led to."""
        return plan_reward(plan_text, outcome, self.weights, self.max_words, self.numbered)

    def __call__(
        self,
        prompts: Sequence[Any],
        completions: Sequence[Any],
        question: Sequence[str],
        gold_answers: Sequence[Sequence[str]],
        paragraphs: Sequence[Sequence[dict]],
        **kwargs: Any,
    ) -> list[float]:
        items = list(zip(completions, question, gold_answers, paragraphs, strict=True))

        def episode(item: tuple[Any, str, Sequence[str], Sequence[dict]]) -> tuple[EpisodeOutcome, float]:
            completion, q, golds, paras = item
            started = time.perf_counter()
            # the episode runs the plan as serving would keep it (the format reward still sees all of it)
            plan = served_plan(completion_text(completion), q)
            return self.runner.run(q, plan, paras, golds), time.perf_counter() - started

        if self.parallel > 1 and len(items) > 1:
            with ThreadPoolExecutor(max_workers=min(self.parallel, len(items)), thread_name_prefix="rollout") as pool:
                done = list(pool.map(episode, items))
        else:
            done = [episode(item) for item in items]
        rewards, outcomes = [], []
        for (completion, q, golds, _), (outcome, seconds) in zip(items, done):
            text = completion_text(completion)
            reward = self.score(text, outcome)
            rewards.append(reward)
            outcomes.append(outcome)
            self._log(q, golds, text, outcome, reward, seconds, kwargs.get("trainer_state"))
        if self.memory is not None:
            self._memorise(items, outcomes, rewards)
        log_metric = kwargs.get("log_metric")
        if log_metric and outcomes:
            n = len(outcomes)
            log_metric("episode/acc_final", sum(o.acc_final for o in outcomes) / n)
            log_metric("episode/acc_first", sum(o.acc_first for o in outcomes) / n)
            log_metric("episode/tool_calls", sum(o.tool_calls for o in outcomes) / n)
            log_metric("episode/replanned", sum(o.replanned for o in outcomes) / n)
        return rewards

    def _memorise(
        self, items: Sequence[tuple[Any, ...]], outcomes: Sequence[EpisodeOutcome], rewards: Sequence[float]
    ) -> None:
        """Each question's rollouts (a GRPO group) through the memory loop: its best right rollout
        and one wrong one become memories, as test-time learning stores its rollouts."""
        from mia.training.online.episodes import OnlineEpisode
        from mia.training.online.policy import SampledPlan
        from mia.training.online.rollouts import Rollout

        groups: dict[str, tuple[Sequence[str], list[Rollout]]] = {}
        for (completion, q, golds, _), outcome, reward in zip(items, outcomes, rewards, strict=True):
            if outcome.error:
                continue
            rollout = Rollout(
                plan=SampledPlan(completion_text(completion), [], []),
                answer=outcome.answer,
                outcome="correct" if outcome.acc_final >= CORRECT_AT else "incorrect",
                reward=reward,
                turns=outcome.turns,
                observations=outcome.observations,
                tool_calls=outcome.tool_calls,
                feedback=f"Graded against the gold answer(s): accuracy {outcome.acc_final:.2f}.",
                accuracy=outcome.acc_final,
                trajectory=outcome.trajectory,
            )
            groups.setdefault(q, (golds, []))[1].append(rollout)
        for q, (golds, rollouts) in groups.items():
            episode = OnlineEpisode(question=q, gold_answers=list(golds), namespace=self.namespace)
            self.memory.absorb(episode, rollouts, source="offline-rollout")
        self.memory.end_batch(self.namespace)

    def _log(
        self,
        question: str,
        golds: Sequence[str],
        plan: str,
        outcome: EpisodeOutcome,
        reward: float,
        seconds: float,
        state: Any,
    ) -> None:
        if self.log_path is None:
            return
        record = {
            "step": getattr(state, "global_step", None),
            "question": question,
            "gold_answers": list(golds),
            "plan": plan,
            "answer": outcome.answer,
            "first_answer": outcome.first_answer,
            "acc_first": outcome.acc_first,
            "acc_final": outcome.acc_final,
            "replanned": outcome.replanned,
            "tool_calls": outcome.tool_calls,
            "reward": reward,
            "seconds": round(seconds, 2),
            "error": outcome.error,
        }
        with self.log_path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")


def make_runner(
    cfg: TrainConfig,
    executor_spec: str | None = None,
    policy: PolicyHandle | None = None,
    planner: Any = None,
    **deps_parts: Any,
) -> EpisodeRunner:
    """The frozen executor of the planner stage, as the config asks (local loop or real graph).
    With the graph, the planner's reflection and replan come from the live policy: `planner` (the
    llama.cpp model serving the step's LoRA, when the plans are sampled there), else the torch
    policy through `policy`; `graph_context.planner_model` may name another planner model explicitly."""
    spec = executor_spec or cfg.planner.executor_model
    accuracy = Accuracy(cfg.reward.accuracy, cfg.reward.judge_model)
    budget = ReactBudget.of(cfg.budget)
    if cfg.planner.episode_backend == "graph":
        from mia.training.episodes import GraphEpisodeRunner

        policy = policy or PolicyHandle()
        overrides = {
            "executor_model": spec,
            "planner_model": POLICY_SPEC,
            "judge_model": cfg.planner.graph_context.get("judge_model", spec),
            "max_tool_calls": cfg.budget.max_tool_calls,
            "max_replans": cfg.planner.max_replans,
            "executor_max_tokens": cfg.budget.max_turn_tokens,
            "search_top_k": cfg.budget.search_top_k,
            **cfg.planner.graph_context,
        }
        live = planner if planner is not None else PolicyChatModel(handle=policy)
        return GraphEpisodeRunner(overrides, metric=accuracy, planner=live, **deps_parts)
    from mia.training.episodes import LocalEpisodeRunner
    from mia.training.policy import load_model, load_tokenizer, resolve_weights

    base, adapter = resolve_weights(spec)
    model = load_model(base, adapter, dtype=cfg.dtype, device=cfg.device)
    return LocalEpisodeRunner(
        model, load_tokenizer(base), budget, metric=accuracy, search_top_k=cfg.budget.search_top_k
    )


class PlannerRollout:
    """TRL `rollout_func` of the planner stage when llama.cpp samples the plans (`planner.sample_on`):
    the step's LoRA is served (`ServedGeneration.follow`), each prompt is rendered with the policy's
    chat template into its token ids, and the plans come back as the ids llama.cpp sampled, at the
    trainer's temperature and top_p, up to its completion length or its end (then ending with the
    tokenizer's end token, `served_react.finished`)."""

    def __init__(self, served: ServedGeneration) -> None:
        self.served = served

    def prompt_ids(self, prompt: Any, tokenizer: Any, template_kwargs: dict[str, Any]) -> list[int]:
        text = (
            prompt
            if isinstance(prompt, str)
            else tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False, **template_kwargs)
        )
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        tokenizer, args = trainer.processing_class, trainer.args
        template_kwargs = dict(getattr(args, "chat_template_kwargs", None) or {})
        ids = [self.prompt_ids(p, tokenizer, template_kwargs) for p in prompts]
        turns = TurnBatch(ids, int(args.max_completion_length), True, float(args.temperature), float(args.top_p))
        plans = self.served.follow(trainer)(turns)
        eos = tokenizer.eos_token_id
        return {  # an empty plan still needs one token for GRPO
            "prompt_ids": ids,
            "completion_ids": [plan or [eos] for plan in plans],
            "logprobs": None,
        }


def train_planner(
    cfg: TrainConfig,
    *,
    executor_spec: str | None = None,
    resume: bool = True,
    max_steps: int | None = None,
    output_dir: Path | None = None,
    extra_reward_funcs: Sequence[Any] = (),
):
    """Run the planner stage; returns a StageResult (adapter folder, steps, final reward).
    `extra_reward_funcs` (TRL reward functions) are added to the episode reward, e.g. shaping."""
    from mia.training.data import load_training_examples, planner_rows, to_dataset
    from mia.training.trainer_setup import make_policy, run_trainer

    out = Path(output_dir or cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    examples = load_training_examples(cfg)
    dataset = to_dataset(planner_rows(examples, max_words=cfg.planner.plan_max_words))
    model, tokenizer, peft_config, base = make_policy(cfg)
    policy = PolicyHandle()
    served = served_generation("planner", cfg.base_model, cfg.planner.sample_on, tokenizer, out / "served-adapter", ())
    # with served plans the reflection and the replan come from the same server (the step's LoRA,
    # swapped in before the step's plans), on its parallel slots instead of one torch call at a time
    runner = make_runner(cfg, executor_spec, policy, planner=served.chat if served is not None else None)
    store = memory = None
    if cfg.planner.memorise_rollouts:
        from mia.memory import MemoryStore
        from mia.training.online.memory_loop import MemoryLoop

        store = MemoryStore.open(cfg.planner.memorise_rollouts)
        memory = MemoryLoop(store, out, seed=cfg.seed)
    reward = PlannerEpisodeReward(
        runner,
        cfg.reward.planner,
        log_path=out / "rollouts.jsonl",
        max_words=cfg.planner.plan_max_words,
        numbered=cfg.planner.numbered_steps,
        policy=policy,
        parallel=cfg.planner.parallel_episodes if cfg.planner.episode_backend == "graph" else 1,
        memory=memory,
        namespace=cfg.data.namespace,
    )
    rollout = PlannerRollout(served) if served is not None else None
    try:
        return run_trainer(
            cfg,
            "planner",
            out,
            reward_funcs=[reward, *extra_reward_funcs],
            dataset=dataset,
            model=model,
            tokenizer=tokenizer,
            peft_config=peft_config,
            base=base,
            resume=resume,
            max_steps=max_steps,
            rollout_func=rollout,
            extra_meta={
                "role": "planner",
                "frozen_executor": executor_spec or cfg.planner.executor_model,
                "episode_backend": cfg.planner.episode_backend,
                "questions": len(examples),
                "memorised_into": cfg.planner.memorise_rollouts,
            },
        )
    finally:
        if store is not None:
            store.close()
