"""LocalChatModel: a LangChain chat model over a transformers causal LM in this process.

Weights come from the shared cache in `weights.py` (one copy per folder and device); sampling
parameters and the active LoRA adapter are per instance. Generation holds the entry's lock, so
roles sharing weights take turns, and `set_adapter` swaps adapters atomically.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import Field

from mia.graph.models.errors import ContextLengthError
from mia.graph.models.penalties import LOCAL_NO_REPEAT_NGRAM, LOCAL_PRESENCE_PENALTY, hf_logits_processor
from mia.graph.models.text_model import Completion, GenParams, TextChatModel
from mia.graph.models.weights import LoadedWeights, check_adapter_dir, load_weights


class LocalChatModel(TextChatModel):
    """Chat model over a local transformers folder (+ optional LoRA adapter)."""

    model_path: str = Field(description="transformers model folder (save_pretrained output)")
    adapter_path: str | None = Field(default=None, description="peft LoRA adapter folder, if any")
    device: str = "cpu"
    # Small local models loop without these (measured in docs/graph.md); API backends are untouched.
    presence_penalty: float = LOCAL_PRESENCE_PENALTY
    no_repeat_ngram_size: int = LOCAL_NO_REPEAT_NGRAM

    @property
    def _llm_type(self) -> str:
        return "mia-local-transformers"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_path": self.model_path, "adapter_path": self.adapter_path, "device": self.device}

    @property
    def backend(self) -> LoadedWeights:
        """The loaded transformers model + tokenizer (loaded on first access, shared process-wide)."""
        return load_weights(self.model_path, self.device)

    @property
    def context_length(self) -> int | None:
        """The positions the model was trained for (its config), prompt and completion together."""
        return getattr(self.backend.model.config, "max_position_embeddings", None)

    def set_adapter(self, path: str | Path | None) -> None:
        """Switch this model to another LoRA adapter folder (None = base weights), atomically.

        The adapter is loaded while holding the model lock, and only then becomes active; a
        generation in progress finishes with the old one. Other instances sharing the same
        weights keep their own adapter choice.
        """
        weights = self.backend
        folder = str(check_adapter_dir(path)) if path is not None else None
        with weights.lock:
            if folder is not None:
                weights.ensure_adapter(folder)
            self.adapter_path = folder

    def _encode(self, weights: LoadedWeights, chat: list[dict[str, str]], prefill: str) -> Any:
        tok = weights.tokenizer
        prompt = tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=True) + prefill
        enc = tok(prompt, return_tensors="pt", add_special_tokens=False)
        limit = self.context_length
        if limit is not None and int(enc["input_ids"].shape[1]) >= limit:
            raise ContextLengthError(int(enc["input_ids"].shape[1]), limit)  # refused before any compute
        return enc.to(weights.device)

    def _gen_kwargs(self, weights: LoadedWeights, params: GenParams, n_prompt: int = 0) -> dict[str, Any]:
        tok = weights.tokenizer
        limit = self.context_length
        room = params.max_tokens if limit is None else max(1, min(params.max_tokens, limit - n_prompt))
        kwargs: dict[str, Any] = {
            "max_new_tokens": room,  # never past the context window (llama.cpp's server stops there too)
            "do_sample": params.temperature > 0,
            "pad_token_id": tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id,
        }
        if params.temperature > 0:
            kwargs.update(temperature=params.temperature, top_p=params.top_p, top_k=0)
        if params.stop:
            kwargs.update(stop_strings=list(params.stop), tokenizer=tok)
        if params.presence_penalty or params.no_repeat_ngram_size:
            from transformers import LogitsProcessorList

            kwargs["logits_processor"] = LogitsProcessorList(
                [hf_logits_processor(n_prompt, params.presence_penalty, params.no_repeat_ngram_size)]
            )
        return kwargs

    @staticmethod
    def _finish(weights: LoadedWeights, new_ids: list[int], max_new_tokens: int) -> str:
        eos = weights.tokenizer.eos_token_id
        return "length" if len(new_ids) >= max_new_tokens and (not new_ids or new_ids[-1] != eos) else "stop"

    def _complete(self, chat: list[dict[str, str]], prefill: str, params: GenParams) -> Completion:
        import torch

        weights = self.backend
        enc = self._encode(weights, chat, prefill)
        n_in = int(enc["input_ids"].shape[1])
        kwargs = self._gen_kwargs(weights, params, n_in)
        with weights.lock, weights.activate(self.adapter_path) as model, torch.inference_mode():
            out = model.generate(**enc, **kwargs)
        new_ids = out[0, n_in:].tolist()
        text = weights.tokenizer.decode(new_ids, skip_special_tokens=True)
        return Completion(text, n_in, len(new_ids), self._finish(weights, new_ids, kwargs["max_new_tokens"]))

    def _complete_stream(
        self, chat: list[dict[str, str]], prefill: str, params: GenParams
    ) -> Iterator[str | Completion]:
        import torch
        from transformers import StoppingCriteria, StoppingCriteriaList, TextIteratorStreamer

        weights = self.backend
        enc = self._encode(weights, chat, prefill)
        n_in = int(enc["input_ids"].shape[1])
        cancelled = threading.Event()
        ids: list[int] = []

        class _Counting(TextIteratorStreamer):
            def put(self, value: Any) -> None:
                if not (self.skip_prompt and self.next_tokens_are_prompt):
                    ids.extend(value.reshape(-1).tolist())
                super().put(value)

        class _Cancel(StoppingCriteria):
            def __call__(self, input_ids: Any, scores: Any, **kw: Any) -> Any:
                return torch.full((input_ids.shape[0],), cancelled.is_set(), dtype=torch.bool, device=input_ids.device)

        streamer = _Counting(weights.tokenizer, skip_prompt=True, skip_special_tokens=True, timeout=600)
        kwargs = self._gen_kwargs(weights, params, n_in)
        kwargs.update(streamer=streamer, stopping_criteria=StoppingCriteriaList([_Cancel()]))
        error: list[BaseException] = []

        def run(model: Any) -> None:
            try:
                with torch.inference_mode():
                    model.generate(**enc, **kwargs)
            except BaseException as err:  # noqa: BLE001 - re-raised in the consumer
                error.append(err)
                streamer.end()

        weights.lock.acquire()
        try:
            with weights.activate(self.adapter_path) as model:
                worker = threading.Thread(target=run, args=(model,), daemon=True)
                worker.start()
                try:
                    for piece in streamer:
                        if piece:
                            yield piece
                finally:
                    cancelled.set()
                    worker.join()
        finally:
            weights.lock.release()
        if error:
            raise error[0]
        yield Completion("", n_in, len(ids), self._finish(weights, ids, kwargs["max_new_tokens"]))
