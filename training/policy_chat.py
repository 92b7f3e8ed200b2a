"""The planner policy being trained, as a chat model the graph can call.

Why: in planner GRPO with the graph backend, the reflection and the replan that decide part of a
plan's reward are the planner's job (the paper's planner reflects and replans), so they must come
from the live policy, current LoRA included, not from the frozen executor. `PolicyHandle` is
filled once the trainer exists; `PolicyChatModel` generates with whatever policy it holds.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from pydantic import ConfigDict, Field

from mia.graph.models.text_model import Completion, GenParams, TextChatModel

#: The spec under which the graph's planner role is the live policy (the Deps route it here).
POLICY_SPEC = "training-policy:planner"


@dataclass
class PolicyHandle:
    """The live policy (a transformers / PEFT model and its tokenizer), set when the trainer is built."""

    model: Any = None
    tokenizer: Any = None
    #: one generation at a time: parallel episodes share the policy (and its train/eval mode)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def bind(self, trainer: Any) -> None:
        """Take the trainer's model (LoRA included) and tokenizer."""
        self.model = trainer.accelerator.unwrap_model(trainer.model)
        self.tokenizer = trainer.processing_class


class PolicyChatModel(TextChatModel):
    """Greedy (or sampled) generation with the live policy; training mode is restored afterwards."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    handle: PolicyHandle = Field(default_factory=PolicyHandle)
    model_name: str = POLICY_SPEC

    @property
    def _llm_type(self) -> str:
        return "mia-training-policy"

    def _complete(self, chat: list[dict[str, str]], prefill: str, params: GenParams) -> Completion:
        import torch

        model, tok = self.handle.model, self.handle.tokenizer
        if model is None or tok is None:
            raise RuntimeError("the planner policy is not bound yet (PolicyHandle.bind(trainer))")
        prompt = tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=True) + prefill
        enc = tok(prompt, return_tensors="pt", add_special_tokens=False).to(model.device)
        n_in = int(enc["input_ids"].shape[1])
        kwargs: dict[str, Any] = {
            "max_new_tokens": params.max_tokens,
            "do_sample": params.temperature > 0,
            "pad_token_id": tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id,
        }
        if params.temperature > 0:
            kwargs.update(temperature=params.temperature, top_p=params.top_p)
        if params.stop:
            kwargs.update(stop_strings=list(params.stop), tokenizer=tok)
        with self.handle.lock:
            was_training = model.training
            model.eval()
            try:
                with torch.inference_mode():
                    out = model.generate(**enc, **kwargs)
            finally:
                if was_training:
                    model.train()
        new_ids = out[0, n_in:].tolist()
        return Completion(tok.decode(new_ids, skip_special_tokens=True), n_in, len(new_ids))
