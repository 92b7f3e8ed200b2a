"""The learner's own copy of the planner (base + trainable LoRA): samples plans, takes GRPO steps,
saves adapters.

Why a private copy and not the served model: a training step must never hold the lock the
answer path generates under. The served `LocalChatModel` only sees the result, a saved adapter
folder, through `set_adapter` (an atomic swap).

Why a hand-written step and not `trl.GRPOTrainer`: TRL's trainer owns the data loop (it samples
its own prompts and needs a dataset up front), while here the batch arrives from the answer path
and the rollouts are already scored. The loss is the one TRL's `loss_type="dapo"` computes with
`beta=0` (the paper's setting, no KL) and one update per batch (on-policy: the importance
ratio is 1, so the clipped objective reduces to the group-normalised policy gradient), summed
over completion tokens and divided by their count.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mia.training.online.stopping import ShouldStop, check_stop, stopping_criteria

log = logging.getLogger(__name__)


@dataclass
class SampledPlan:
    """One sampled plan with the token ids GRPO needs."""

    text: str
    prompt_ids: list[int]
    completion_ids: list[int]


def group_advantages(rewards: Sequence[float], eps: float = 1e-4) -> list[float]:
    """GRPO's advantages: (r - mean) / (std + eps) inside one question's group (0 if all equal)."""
    n = len(rewards)
    if n == 0:
        return []
    mean = sum(rewards) / n
    var = sum((r - mean) ** 2 for r in rewards) / max(1, n - 1)
    std = var**0.5
    if std < 1e-8:
        return [0.0] * n
    return [(r - mean) / (std + eps) for r in rewards]


class FrozenBase:
    """A PEFT model seen with its adapter disabled: generates like the base model, trains nothing."""

    def __init__(self, peft_model: Any) -> None:
        self.peft_model = peft_model

    @property
    def device(self) -> Any:
        return next(self.peft_model.parameters()).device

    @property
    def dtype(self) -> Any:
        return self.peft_model.get_base_model().dtype

    def parameters(self) -> Any:
        return self.peft_model.parameters()

    def eval(self) -> FrozenBase:
        return self

    def generate(self, *args: Any, **kwargs: Any) -> Any:
        import torch

        was_training = self.peft_model.training
        self.peft_model.eval()
        try:
            with self.peft_model.disable_adapter(), torch.no_grad():
                return self.peft_model.generate(*args, **kwargs)
        finally:
            if was_training:
                self.peft_model.train()


class PlannerPolicy:
    """Base weights + a trainable LoRA; continues a given adapter or starts a fresh one."""

    def __init__(
        self,
        base: Path,
        adapter: Path | None,
        *,
        lora: Any,
        learning_rate: float,
        max_grad_norm: float = 1.0,
        seed: int = 0,
        device: str = "cpu",
        dtype: str = "float32",
    ) -> None:
        import torch
        from transformers import AutoModelForCausalLM

        from mia.training.policy import load_tokenizer, torch_dtype

        torch.manual_seed(seed)
        self.base, self.device, self.dtype, self.max_grad_norm = Path(base), device, dtype, max_grad_norm
        self.tokenizer = load_tokenizer(self.base)
        # the served planner's dtype (bf16 on a GPU): one half-precision copy, not an fp32 one; peft
        # keeps the LoRA weights themselves in fp32 (autocast_adapter_dtype), so the update is exact
        # Any: a peft model takes its place, and transformers' stubs type `.to` as unbound
        model: Any = AutoModelForCausalLM.from_pretrained(str(self.base), dtype=torch_dtype(dtype, device))
        if adapter is not None:
            from peft import PeftModel

            model = PeftModel.from_pretrained(model, str(adapter), is_trainable=True)
        else:
            from peft import LoraConfig, get_peft_model

            model = get_peft_model(
                model,
                LoraConfig(
                    r=lora.r,
                    lora_alpha=lora.alpha,
                    lora_dropout=lora.dropout,
                    target_modules=lora.target_modules,
                    task_type="CAUSAL_LM",
                ),
            )
        self.model = model.to(device)
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(self.params, lr=learning_rate, weight_decay=0.0)
        self.steps = 0
        # the adapter folder these weights equal (None: the base), or None with `unsaved` after a step:
        # who samples from a served copy asks whether that copy holds these weights (sampling.py)
        self.adapter_folder: Path | None = Path(adapter).resolve() if adapter is not None else None
        self.unsaved = False

    def frozen_base(self) -> FrozenBase:
        """The base weights without the LoRA, as a frozen model (the rollouts' executor and the
        private judge share them when they are the planner's own weights: no second copy)."""
        return FrozenBase(self.model)

    # ---------------------------------------------------------------- sampling
    def prompt_ids(self, messages: list[dict[str, str]]) -> list[int]:
        text = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def sample(
        self,
        messages: list[dict[str, str]],
        n: int,
        max_new_tokens: int,
        temperature: float = 1.0,
        should_stop: ShouldStop | None = None,
        stop: Sequence[str] = (),
    ) -> list[SampledPlan]:
        """n plans for one planner prompt (sampled, so that the group differs); a plan ends at
        `stop` (the plan node's stop strings, kept in the plan's tokens: the policy learns where a
        plan ends) or its end token; cut short at the next token once `should_stop()` (the caller
        then drops them: see `stopping`)."""
        ids = self.prompt_ids(messages)
        out = self.generate_from_prompt(
            ids,
            n,
            max_new_tokens=max_new_tokens,
            do_sample=True,
            temperature=temperature,
            top_p=1.0,
            top_k=0,
            stopping_criteria=stopping_criteria(should_stop),
            **({"stop_strings": list(stop), "tokenizer": self.tokenizer} if stop else {}),
        )
        plans = []
        eos, pad = self.tokenizer.eos_token_id, self.tokenizer.pad_token_id
        for row in out[:, len(ids) :].tolist():
            cut = []
            for tok in row:
                if tok == eos:  # keep the end token: the policy also learns when to stop
                    cut.append(tok)
                    break
                if tok == pad:
                    break
                cut.append(tok)
            plans.append(SampledPlan(self.tokenizer.decode(cut, skip_special_tokens=True).strip(), list(ids), cut))
        return plans

    def generate_from_prompt(self, ids: list[int], n: int, **generate_kwargs: Any) -> Any:
        """n continuations of one prompt that read the prompt once. `generate(num_return_sequences=n)`
        copies the prompt n times before the prefill, and the planner prompt (memories included)
        is most of a plan's tokens: here the prompt but its last token is run once, its KV cache
        is repeated n times, and generation goes on from there (the same distribution: the cache
        holds what n prefills would compute). Returns the token ids, prompt included, n rows."""
        import torch

        self.model.eval()
        with torch.no_grad():
            cache = None
            if len(ids) > 1:
                cache = self.model(
                    input_ids=torch.tensor([ids[:-1]], device=self.device), use_cache=True
                ).past_key_values
                cache.batch_repeat_interleave(n)
            input_ids = torch.tensor([ids] * n, device=self.device)
            return self.model.generate(
                input_ids=input_ids,
                attention_mask=torch.ones_like(input_ids),
                past_key_values=cache,
                pad_token_id=self.tokenizer.pad_token_id,
                **generate_kwargs,
            )

    # ---------------------------------------------------------------- learning
    def grpo_step(
        self, groups: Sequence[Sequence[tuple[SampledPlan, float]]], should_stop: ShouldStop | None = None
    ) -> dict[str, float]:
        """One GRPO update from scored groups (one group = one question's n plans). Polls
        `should_stop` between questions' backward passes: a stopped step leaves the weights as they
        were (`LearningStopped`; the gradients are dropped before the next step)."""
        import torch

        items = []
        for group in groups:
            advantages = group_advantages([r for _, r in group])
            items += [
                (plan, adv)
                for (plan, _), adv in zip(group, advantages, strict=True)
                if adv != 0.0 and plan.completion_ids
            ]
        rewards = [r for group in groups for _, r in group]
        stats = {
            "reward_mean": sum(rewards) / max(1, len(rewards)),
            "samples": float(len(items)),
            "loss": 0.0,
            "updated": 0.0,
        }
        if not items:  # every group tied: nothing to learn from this batch (GRPO's zero advantage)
            return stats
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        try:
            loss_value = self.accumulate_gradients(items, should_stop)
        except BaseException:
            self.optimizer.zero_grad(set_to_none=True)
            self.model.eval()
            raise
        grad_norm = torch.nn.utils.clip_grad_norm_(self.params, self.max_grad_norm)
        self.optimizer.step()
        self.unsaved = True
        self.model.eval()
        self.steps += 1
        stats.update(loss=loss_value, grad_norm=float(grad_norm), updated=1.0)
        return stats

    def accumulate_gradients(
        self, items: Sequence[tuple[SampledPlan, float]], should_stop: ShouldStop | None = None
    ) -> float:
        """Backpropagate the GRPO loss of (plan, advantage) items into the LoRA's gradients; returns
        the loss. DAPO's normalisation: the token sum over the batch's completion tokens.

        Why per prompt: a question's n plans share its planner prompt (memories and example included,
        most of each sequence's tokens). The prompt but its last token is run once with gradients,
        its KV cache repeated n times, and the n completions run on it as one right-padded batch:
        the same loss and gradients as n full passes (LoRA dropout is 0 by default; with dropout the
        prompt shares one mask), at about a third of the tokens."""
        import torch

        total_tokens = sum(len(plan.completion_ids) for plan, _ in items)
        groups: dict[tuple[int, ...], list[tuple[SampledPlan, float]]] = {}
        for plan, adv in items:
            groups.setdefault(tuple(plan.prompt_ids), []).append((plan, adv))
        loss_value = 0.0
        for prompt, members in groups.items():
            check_stop(should_stop)
            rows = [[prompt[-1], *plan.completion_ids] for plan, _ in members]
            width = max(len(row) for row in rows)
            pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
            ids = torch.tensor([row + [pad] * (width - len(row)) for row in rows], device=self.device)
            mask = torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in rows], device=self.device)
            cache = None
            if len(prompt) > 1:
                cache = self.model(
                    input_ids=torch.tensor([prompt[:-1]], device=self.device), use_cache=True
                ).past_key_values
                cache.batch_repeat_interleave(len(members))
                mask = torch.cat(
                    [torch.ones(len(members), len(prompt) - 1, dtype=mask.dtype, device=self.device), mask], 1
                )
            logits = self.model(
                input_ids=ids, attention_mask=mask, past_key_values=cache, use_cache=cache is not None
            ).logits
            loss = logits.new_zeros((), dtype=torch.float32)
            for i, (plan, adv) in enumerate(members):
                n = len(plan.completion_ids)
                target = ids[i, 1 : n + 1]
                logp = torch.log_softmax(logits[i, :n].float(), dim=-1).gather(1, target[:, None]).squeeze(1)
                loss = loss - adv * logp.sum() / total_tokens
            loss.backward()
            loss_value += float(loss.detach())
        return loss_value

    # ---------------------------------------------------------------- adapters
    def save(self, folder: Path) -> Path:
        """Save the LoRA (adapter_config.json + adapter_model.safetensors) into `folder`."""
        self.model.save_pretrained(str(folder))
        self.adapter_folder, self.unsaved = Path(folder).resolve(), False
        return folder

    def load_adapter_weights(self, folder: Path | None) -> None:
        """Reset the trainable LoRA to a saved version (after a rollback); None = zero update."""
        import torch
        from peft import set_peft_model_state_dict

        if folder is None:
            for name, param in self.model.named_parameters():
                if "lora_B" in name:
                    with torch.no_grad():
                        param.zero_()
        else:
            from safetensors.torch import load_file

            set_peft_model_state_dict(self.model, load_file(str(Path(folder) / "adapter_model.safetensors")))
        self.optimizer.state.clear()
        self.adapter_folder, self.unsaved = (Path(folder).resolve() if folder is not None else None), False
