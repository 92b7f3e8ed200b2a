"""LlamaCppChatModel: a GGUF model through llama-cpp-python (extra `llamacpp`), ~4x faster than
transformers on CPU for SmolLM2. Same text tool protocol, JSON mode and usage as LocalChatModel.

The prompt is rendered with the GGUF's own chat template (llama-cpp-python's Jinja2 formatter),
then completed as raw text so that prefills (forced tool calls, JSON mode) work. One `Llama` per
(file, n_ctx) per process, each with a lock: a llama.cpp context is not thread-safe. The `Llama`
object lives in a module cache, not on the pydantic model (it would be lost by model_copy).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from mia.graph.models.errors import BackendNotInstalledError
from mia.graph.models.penalties import LOCAL_NO_REPEAT_NGRAM, LOCAL_PRESENCE_PENALTY, banned_next_tokens
from mia.graph.models.text_model import Completion, GenParams, TextChatModel

_CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


@dataclass
class _Loaded:
    llm: Any
    formatter: Any
    eos: str
    lock: threading.Lock = field(default_factory=threading.Lock)


_CACHE: dict[tuple[str, int], _Loaded] = {}
_CACHE_LOCK = threading.Lock()


def _import_llama_cpp() -> Any:
    try:
        import llama_cpp
    except ImportError as err:
        raise BackendNotInstalledError(
            "The 'llamacpp' backend needs llama-cpp-python: pip install 'mia-agent[llamacpp]' "
            "(on CPUs with AMX build it with GGML_NATIVE=OFF, see docs/backends.md)."
        ) from err
    return llama_cpp


def load_llama(path: str, n_ctx: int, n_threads: int | None) -> _Loaded:
    """Load a GGUF once per process (per context size)."""
    key = (path, n_ctx)
    with _CACHE_LOCK:
        if key in _CACHE:
            return _CACHE[key]
        llama_cpp = _import_llama_cpp()
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        llm = llama_cpp.Llama(model_path=path, n_ctx=n_ctx, n_threads=n_threads, n_threads_batch=n_threads, verbose=False)
        eos = llm.detokenize([llm.token_eos()], special=True).decode("utf-8", "ignore")
        bos = llm.detokenize([llm.token_bos()], special=True).decode("utf-8", "ignore")
        template = llm.metadata.get("tokenizer.chat_template") or _CHATML
        loaded = _Loaded(llm, Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos), eos)
        _CACHE[key] = loaded
        return loaded


class LlamaCppChatModel(TextChatModel):
    """Chat model over a GGUF file with llama.cpp."""

    model_path: str
    n_ctx: int = 4096
    n_threads: int | None = None
    # llama.cpp's own presence penalty (over its last 64 tokens); see penalties.py for the transformers one.
    presence_penalty: float = LOCAL_PRESENCE_PENALTY
    no_repeat_ngram_size: int = LOCAL_NO_REPEAT_NGRAM

    @property
    def _llm_type(self) -> str:
        return "mia-llamacpp"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_path": self.model_path, "n_ctx": self.n_ctx}

    @property
    def backend(self) -> Any:
        """The loaded llama_cpp.Llama (shared process-wide)."""
        return load_llama(self.model_path, self.n_ctx, self.n_threads).llm

    def _call(self, chat: list[dict[str, str]], prefill: str, params: GenParams, stream: bool) -> tuple[_Loaded, list[int], Any]:
        loaded = load_llama(self.model_path, self.n_ctx, self.n_threads)
        prompt = loaded.formatter(messages=chat).prompt + prefill
        tokens = loaded.llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
        greedy = params.temperature <= 0
        kwargs = dict(
            max_tokens=params.max_tokens, temperature=0.0 if greedy else params.temperature,
            top_p=1.0 if greedy else params.top_p, top_k=1 if greedy else 0, min_p=0.0,
            stop=[*params.stop, loaded.eos] if loaded.eos else list(params.stop), stream=stream,
            presence_penalty=params.presence_penalty, repeat_penalty=1.0, frequency_penalty=0.0,
        )
        if params.no_repeat_ngram_size:
            kwargs["logits_processor"] = _no_repeat_processor(len(tokens), params.no_repeat_ngram_size)
        return loaded, tokens, kwargs

    def _complete(self, chat: list[dict[str, str]], prefill: str, params: GenParams) -> Completion:
        loaded, tokens, kwargs = self._call(chat, prefill, params, stream=False)
        with loaded.lock:
            out = loaded.llm.create_completion(prompt=tokens, **kwargs)
        choice, usage = out["choices"][0], out["usage"]
        return Completion(choice["text"], usage["prompt_tokens"], usage["completion_tokens"],
                          choice.get("finish_reason") or "stop")

    def _complete_stream(
        self, chat: list[dict[str, str]], prefill: str, params: GenParams
    ) -> Iterator[str | Completion]:
        loaded, tokens, kwargs = self._call(chat, prefill, params, stream=True)
        parts: list[str] = []
        finish = "stop"
        with loaded.lock:
            for chunk in loaded.llm.create_completion(prompt=tokens, **kwargs):
                choice = chunk["choices"][0]
                finish = choice.get("finish_reason") or finish
                if choice["text"]:
                    parts.append(choice["text"])
                    yield choice["text"]
        text = "".join(parts)
        n_out = len(loaded.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)) if text else 0
        yield Completion("", len(tokens), n_out, finish)


def _no_repeat_processor(n_prompt: int, n: int) -> Any:
    """llama-cpp-python logits processor banning repeated generated n-grams."""
    from llama_cpp import LogitsProcessorList

    def ban(input_ids: Any, scores: Any) -> Any:
        banned = banned_next_tokens(list(input_ids[n_prompt:]), n)
        if banned:
            scores[sorted(banned)] = float("-inf")
        return scores

    return LogitsProcessorList([ban])
