"""Executor stage: the executor policy learns multi-turn tool use on plans from a frozen planner.

TRL 1.16 has multi-turn tool support (`tools=` / `environment_factory=`), but it needs a chat
template with native tool calling and parses calls with the tokenizer's response schema; MIA's
executor speaks a text protocol (`<tool_call>{json}</tool_call>`) that must match inference, and
small local models (SmolLM2) have no tool template. So we feed GRPOTrainer our own
`rollout_func`: it plays each episode with the policy (training.react), returns the token ids
with the tool responses masked out (`env_mask` 0), and hands the turns to the reward function
(0.7 accuracy + 0.2 tool use + 0.1 format). The turns are generated on llama.cpp with the LoRA of
the step where the policy's base has a GGUF (`executor.sample_on`, training/served_react.py), else
by the torch copy the trainer steps.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mia.training.config import TrainConfig
from mia.training.episodes import Accuracy
from mia.training.examples import QAExample
from mia.training.react import ReactBudget, Replanner, ReactRunner, SandboxSearch
from mia.training.rewards import CORRECT_AT, ExecutorRewardWeights, executor_format_ok, executor_reward, tool_use_score
from mia.training.served_react import ServedGeneration, served_generation

log = logging.getLogger(__name__)

#: (question, plan, trace so far) -> revised plan; `FrozenPlanner` is one.
PlanReviser = Callable[[str, str, str], str]


def _prompt_key(prompt: Any) -> str:
    """Rows are found again from their prompt (TRL hands the rollout function prompts only)."""
    return json.dumps(prompt, sort_keys=True) if not isinstance(prompt, str) else prompt


class ExecutorRollout:
    """TRL `rollout_func`: one policy episode per prompt, all played in lockstep (the prompts come
    already repeated num_generations times), token ids plus env_mask, and the turns for the reward."""

    def __init__(
        self,
        rows: Sequence[dict[str, Any]],
        budget: ReactBudget,
        search_top_k: int = 2,
        replanner: PlanReviser | None = None,
        accuracy: Any = None,
        served: ServedGeneration | None = None,
    ) -> None:
        self.paragraphs = {_prompt_key(r["prompt"]): r["paragraphs"] for r in rows}
        self.rows = {_prompt_key(r["prompt"]): r for r in rows}
        self.budget, self.search = budget, SandboxSearch(top_k=search_top_k)
        self.replanner, self.accuracy = replanner, accuracy
        self.served = served

    def _generate(self, trainer: Any) -> ServedGeneration | None:
        """The served generation, holding the policy's LoRA as it is now (saved and swapped in
        before each step's episodes), or None: the torch model generates."""
        return self.served.follow(trainer) if self.served is not None else None

    def _replan_hook(self, prompts: list[Any]) -> Replanner | None:
        """Once per episode, after its first answer: a wrong answer (accuracy < 0.5 against the gold
        answers) gets a revised plan from the frozen planner, and the episode continues (ref. 5.1)."""
        replanner, accuracy = self.replanner, self.accuracy
        if replanner is None or accuracy is None:
            return None

        def hook(i: int, episode: Any) -> str | None:
            row = self.rows.get(_prompt_key(prompts[i]))
            if row is None or accuracy(row["question"], episode.answer, row["gold_answers"]) >= CORRECT_AT:
                return None
            return replanner(row["question"], row.get("plan", ""), episode.trace()) or None

        return hook

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        model = trainer.accelerator.unwrap_model(trainer.model)
        budget = ReactBudget(**{**self.budget.__dict__, "temperature": trainer.temperature})
        runner = ReactRunner(model, trainer.processing_class, self.search, budget, generate=self._generate(trainer))
        was_training = model.training
        model.eval()
        out: dict[str, Any] = {
            "prompt_ids": [],
            "completion_ids": [],
            "logprobs": None,
            "env_mask": [],
            "episode_turns": [],
            "episode_answer": [],
            "episode_tool_calls": [],
            "episode_segments": [],
            "episode_first_attempt": [],
        }
        try:
            episodes = runner.run_many(
                [list(p) for p in prompts],
                [self.paragraphs.get(_prompt_key(p), []) for p in prompts],
                sample=True,
                replan=self._replan_hook(list(prompts)),
            )
            for ep in episodes:
                if not ep.completion_ids:  # an empty generation still needs one token for GRPO
                    ep.completion_ids, ep.env_mask = [trainer.processing_class.eos_token_id], [1]
                out["prompt_ids"].append(ep.prompt_ids)
                out["completion_ids"].append(ep.completion_ids)
                out["env_mask"].append(ep.env_mask)
                out["episode_turns"].append(ep.turns)
                out["episode_answer"].append(ep.answer or "")
                out["episode_tool_calls"].append(ep.tool_calls)
                out["episode_segments"].append(ep.segments())
                out["episode_first_attempt"].append(not ep.replanned)
        finally:
            if was_training:
                model.train()
        return out


class ExecutorEpisodeReward:
    """GRPO reward of the executor stage, computed from the rollout's turns."""

    __name__ = "executor_reward"

    def __init__(
        self, weights: ExecutorRewardWeights = ExecutorRewardWeights(), metric: Any = "f1", log_path: Path | None = None
    ) -> None:
        self.weights, self.log_path = weights, log_path
        self.accuracy = metric if isinstance(metric, Accuracy) else Accuracy(metric, max_chars=weights.max_answer_chars)

    def __call__(
        self,
        completions: Sequence[Any],
        gold_answers: Sequence[Sequence[str]],
        episode_turns: Sequence[Sequence[str]],
        episode_answer: Sequence[str],
        **kwargs: Any,
    ) -> list[float]:
        rewards, accs, tools, formats = [], [], [], []
        questions = kwargs.get("question") or [""] * len(gold_answers)
        n = len(gold_answers)
        segments = kwargs.get("episode_segments") or [[list(t)] for t in episode_turns]
        first = kwargs.get("episode_first_attempt") or [True] * n
        for q, golds, turns, answer, segs, first_try in zip(
            questions, gold_answers, episode_turns, episode_answer, segments, first, strict=True
        ):
            acc = self.accuracy(q, answer, golds)
            tool = tool_use_score([list(seg) for seg in segs])  # averaged over the segments around a replan
            fmt = executor_format_ok(list(turns))
            # the first-try bonus only when no replan was needed (after one, the final answer earns no bonus)
            rewards.append(executor_reward(acc, bool(first_try), tool, fmt, self.weights))
            accs.append(acc)
            tools.append(tool)
            formats.append(float(fmt))
        log_metric = kwargs.get("log_metric")
        if log_metric and rewards:
            n = len(rewards)
            log_metric("episode/accuracy", sum(accs) / n)
            log_metric("episode/tool_use", sum(tools) / n)
            log_metric("episode/format_ok", sum(formats) / n)
        if self.log_path is not None:
            state = kwargs.get("trainer_state")
            with self.log_path.open("a", encoding="utf-8") as fh:
                for q, golds, turns, answer, r in zip(
                    kwargs.get("question", [""] * len(rewards)),
                    gold_answers,
                    episode_turns,
                    episode_answer,
                    rewards,
                    strict=False,
                ):
                    fh.write(
                        json.dumps(
                            {
                                "step": getattr(state, "global_step", None),
                                "question": q,
                                "gold_answers": list(golds),
                                "turns": list(turns),
                                "answer": answer,
                                "reward": r,
                            }
                        )
                        + "\n"
                    )
        return rewards


def frozen_plans(
    cfg: TrainConfig, examples: Sequence[QAExample], out: Path, planner_spec: str | None = None
) -> list[str]:
    """Plans of the frozen planner for every question, generated once (greedy) and cached in
    `plans.jsonl`, so a resumed run and the alternate pipeline reuse them."""
    from tqdm.auto import tqdm

    from mia.training.prompts import planner_messages

    cache_path = Path(cfg.executor.plans_file) if cfg.executor.plans_file else out / "plans.jsonl"
    cached: dict[str, str] = {}
    if cache_path.is_file():
        for line in cache_path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rec = json.loads(line)
                cached[rec["qid"]] = rec["plan"]
    missing = [ex for ex in examples if ex.id not in cached]
    if missing:
        planner = FrozenPlanner(planner_spec or cfg.executor.planner_model, cfg)
        with cache_path.open("a", encoding="utf-8") as fh:
            for ex in tqdm(missing, desc="frozen planner: writing plans", unit="plan"):
                messages = planner_messages(ex.question, ex.memories, cfg.planner.plan_max_words)
                cached[ex.id] = planner.reply(messages, cfg.executor.plan_max_tokens)
                fh.write(json.dumps({"qid": ex.id, "question": ex.question, "plan": cached[ex.id]}) + "\n")
    return [cached[ex.id] for ex in examples]


class FrozenPlanner:
    """The frozen planner, greedy, loaded on first use: the plans the executor is trained on, and
    the replan after a wrong answer. A `llamacpp:` spec runs on llama.cpp, as the graph serves the
    planner (on a 2-core CPU several times the fp32 torch copy's 2 tokens/s); any other trainable
    spec in torch."""

    def __init__(self, spec: str, cfg: TrainConfig, max_new_tokens: int = 128) -> None:
        self.spec, self.cfg, self.max_new_tokens = spec, cfg, max_new_tokens
        self._model: Any = None
        self._tok: Any = None

    def reply(self, messages: list[dict[str, str]], max_new_tokens: int) -> str:
        """The planner's greedy reply to a conversation, after its last `</think>`."""
        from mia.graph.models.spec import parse_model_spec
        from mia.graph.protocol import after_last_think

        if parse_model_spec(self.spec).backend == "llamacpp":
            text = self._served_reply(messages, max_new_tokens)
        else:
            text = self._torch_reply(messages, max_new_tokens)
        return after_last_think(text).strip()

    def _served_reply(self, messages: list[dict[str, str]], max_new_tokens: int) -> str:
        from mia.graph.models import load_chat_model
        from mia.graph.nodes.calls import text_of
        from mia.graph.nodes.plan import to_messages

        if self._model is None:
            self._model = load_chat_model(self.spec, temperature=0.0)
        return text_of(self._model.invoke(to_messages(messages), max_tokens=max_new_tokens))

    def _torch_reply(self, messages: list[dict[str, str]], max_new_tokens: int) -> str:
        import torch

        from mia.training.policy import load_model, load_tokenizer, resolve_weights

        if self._model is None:
            base, adapter = resolve_weights(self.spec)
            self._model = load_model(base, adapter, dtype=self.cfg.dtype, device=self.cfg.device)
            self._tok = load_tokenizer(base)
        ids = self._tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
        with torch.no_grad():
            gen = self._model.generate(
                **ids.to(self._model.device),
                max_new_tokens=max_new_tokens,
                do_sample=False,
                pad_token_id=self._tok.pad_token_id,
            )
        return str(self._tok.decode(gen[0, ids["input_ids"].shape[1] :], skip_special_tokens=True))

    def __call__(self, question: str, plan: str, trace: str) -> str:
        from mia.training.prompts import replan_conversation

        messages = replan_conversation(question, plan, trace, max_words=self.cfg.planner.plan_max_words)
        return self.reply(messages, self.max_new_tokens)


def train_executor(
    cfg: TrainConfig,
    *,
    planner_spec: str | None = None,
    resume: bool = True,
    max_steps: int | None = None,
    output_dir: Path | None = None,
):
    """Run the executor stage; returns a StageResult (adapter folder, steps, final reward)."""
    from mia.training.data import executor_rows, load_training_examples, to_dataset
    from mia.training.trainer_setup import make_policy, run_trainer

    out = Path(output_dir or cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    examples = load_training_examples(cfg)
    plans = frozen_plans(cfg, examples, out, planner_spec)
    rows = executor_rows(examples, plans)
    budget = ReactBudget.of(cfg.budget)
    model, tokenizer, peft_config, base = make_policy(cfg)
    accuracy = Accuracy(cfg.reward.accuracy, cfg.reward.judge_model, cfg.reward.executor.max_answer_chars)
    replanner = FrozenPlanner(planner_spec or cfg.executor.planner_model, cfg) if cfg.executor.replan else None
    served = served_generation("executor", cfg.base_model, cfg.executor.sample_on, tokenizer, out / "served-adapter")
    rollout = ExecutorRollout(
        rows,
        budget,
        cfg.budget.search_top_k,
        replanner=replanner,
        accuracy=accuracy,
        served=served,
    )
    reward = ExecutorEpisodeReward(cfg.reward.executor, accuracy, log_path=out / "rollouts.jsonl")
    return run_trainer(
        cfg,
        "executor",
        out,
        reward_funcs=[reward],
        dataset=to_dataset(rows),
        model=model,
        tokenizer=tokenizer,
        peft_config=peft_config,
        base=base,
        resume=resume,
        rollout_func=rollout,
        max_steps=max_steps,
        extra_meta={
            "role": "executor",
            "frozen_planner": planner_spec or cfg.executor.planner_model,
            "questions": len(examples),
        },
    )
