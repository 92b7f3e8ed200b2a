"""LlamaCppChatModel: a GGUF model served by llama.cpp's own server, in this process (xllamacpp).

Why this backend is the default for the embedded models: llama.cpp's server batches requests
across parallel slots (the roles and concurrent questions share one model), keeps each slot's
KV cache so a ReAct turn pays only for its new tokens, and runs Q4 weights several times faster
than transformers on a CPU. The text tool protocol, JSON mode, stop sequences, streaming and
usage are the ones of every in-process backend (`TextChatModel`).

One `xllamacpp.Server` per (GGUF, LoRA) per process, shared by every role and instance that names
it (`servers.py`). Prefills (forced tool calls, JSON mode) are sent as a final assistant message,
which llama.cpp continues.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from mia.graph.models.errors import BackendError, ContextLengthError
from mia.graph.models.penalties import LOCAL_PRESENCE_PENALTY
from mia.graph.models.servers import ServerKey, get_server
from mia.graph.models.text_model import Completion, GenParams, TextChatModel


class LlamaCppError(BackendError):
    """llama.cpp refused a request (an over-long prompt, a bad parameter)."""


def check_response(result: Any) -> dict[str, Any]:
    """A llama.cpp server's reply, or its error raised as ContextLengthError or LlamaCppError."""
    if not isinstance(result, dict):
        raise LlamaCppError(f"llama.cpp returned {type(result).__name__}, not a response object")
    if "error" in result:
        err = result["error"]
        if isinstance(err, dict) and err.get("type") == "exceed_context_size_error":
            # llama.cpp tokenises the prompt and refuses it before generating (its HTTP server's 400)
            raise ContextLengthError(int(err.get("n_prompt_tokens") or 0), int(err.get("n_ctx") or 0))
        message = err.get("message", err) if isinstance(err, dict) else err
        raise LlamaCppError(f"llama.cpp refused the request: {message}")
    return result


def _completion(text: str, usage: dict[str, Any], finish: str, timings: dict[str, Any]) -> Completion:
    """A Completion from llama.cpp's usage and timings (cache_n: prompt tokens the slot's cache served)."""
    return Completion(
        text,
        int(usage.get("prompt_tokens", 0)),
        int(usage.get("completion_tokens", 0)),
        finish,
        timings=timings,
        cached_tokens=int(timings.get("cache_n") or 0),
    )


class LlamaCppChatModel(TextChatModel):
    """Chat model over a GGUF file (and optionally a GGUF LoRA adapter) through llama.cpp."""

    model_path: str = Field(description="GGUF file of the base model")
    adapter_path: str | None = Field(default=None, description="GGUF LoRA adapter file, if any")
    n_ctx: int = Field(default=8192, description="context tokens per parallel slot")
    n_parallel: int = Field(default=4, description="parallel slots (concurrent requests batched together)")
    n_threads: int | None = Field(default=None, description="CPU threads; None: all cores")
    # llama.cpp's own presence penalty over the generated tokens; see penalties.py.
    presence_penalty: float = LOCAL_PRESENCE_PENALTY
    supports_grammar: ClassVar[bool] = True  # llama.cpp's GBNF sampler

    @property
    def _llm_type(self) -> str:
        return "mia-llamacpp"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_path": self.model_path, "adapter_path": self.adapter_path, "n_ctx": self.n_ctx}

    @property
    def context_length(self) -> int:
        """Tokens one request may use (prompt + completion): one slot's share of the context."""
        return self.n_ctx

    @property
    def key(self) -> ServerKey:
        return ServerKey(self.model_path, self.adapter_path, self.n_ctx, self.n_parallel, self.n_threads)

    @property
    def backend(self) -> Any:
        """The shared xllamacpp.Server (started on first use)."""
        return get_server(self.key)

    def set_adapter(self, path: str | Path | None) -> None:
        """Serve another LoRA adapter (a GGUF LoRA file or a PEFT folder, converted once; None: the
        base). The new server is started first, then swapped in: a request in flight finishes on
        the old one, the next one uses the new one."""
        adapter = None
        if path is not None:
            adapter = Path(path).expanduser().resolve()
            if adapter.is_dir():
                from mia.graph.models.lora_gguf import ensure_lora_gguf

                adapter = ensure_lora_gguf(adapter, Path(self.model_path))
        new = str(adapter) if adapter is not None else None
        get_server(self.key._replace(adapter=new))
        self.adapter_path = new

    def _request(self, chat: list[dict[str, str]], prefill: str, params: GenParams, stream: bool) -> dict[str, Any]:
        messages: list[dict[str, str]] = [dict(m) for m in chat]
        if prefill:
            messages.append({"role": "assistant", "content": prefill})
        greedy = params.temperature <= 0
        request: dict[str, Any] = {
            "messages": messages,
            "max_tokens": params.max_tokens,
            "cache_prompt": True,
            "temperature": 0.0 if greedy else params.temperature,
            "top_p": 1.0 if greedy else params.top_p,
            "top_k": 1 if greedy else 0,
            "min_p": 0.0,
            "presence_penalty": params.presence_penalty,
            "repeat_penalty": 1.0,
            "frequency_penalty": 0.0,
            "stream": stream,
        }
        if params.stop:
            request["stop"] = list(params.stop)
        if params.grammar:
            request["grammar"] = params.grammar
        if stream:
            request["stream_options"] = {"include_usage": True}
        return request

    @staticmethod
    def _strip_prefill(text: str, prefill: str) -> str:
        # llama.cpp returns the continued assistant message with its prefill; callers add it back.
        return text[len(prefill) :] if prefill and text.startswith(prefill) else text

    def _complete(self, chat: list[dict[str, str]], prefill: str, params: GenParams) -> Completion:
        server = get_server(self.key)
        out = check_response(server.handle_chat_completions(self._request(chat, prefill, params, stream=False)))
        choice, usage = out["choices"][0], out.get("usage") or {}
        text = self._strip_prefill(choice["message"].get("content") or "", prefill)
        return _completion(text, usage, choice.get("finish_reason") or "stop", out.get("timings") or {})

    def _complete_stream(
        self, chat: list[dict[str, str]], prefill: str, params: GenParams
    ) -> Iterator[str | Completion]:
        server = get_server(self.key)
        pieces: queue.Queue[Any] = queue.Queue()
        cancelled = threading.Event()
        _END = object()

        def on_chunk(chunk: Any) -> bool:
            pieces.put(chunk)
            return cancelled.is_set()  # True asks llama.cpp to stop generating

        def run() -> None:
            try:
                result = server.handle_chat_completions(self._request(chat, prefill, params, stream=True), on_chunk)
                if isinstance(result, dict) and "error" in result:
                    check_response(result)
            except BaseException as err:  # noqa: BLE001 - re-raised in the consumer
                pieces.put(err)
            finally:
                pieces.put(_END)

        worker = threading.Thread(target=run, daemon=True, name="mia-llamacpp-stream")
        worker.start()
        usage: dict[str, Any] = {}
        timings: dict[str, Any] = {}
        finish, seen = "stop", ""
        try:
            while (chunk := pieces.get()) is not _END:
                if isinstance(chunk, BaseException):
                    raise chunk
                chunk = check_response(chunk)
                usage = chunk.get("usage") or usage
                timings = chunk.get("timings") or timings
                for choice in chunk.get("choices") or []:
                    finish = choice.get("finish_reason") or finish
                    delta = (choice.get("delta") or {}).get("content") or ""
                    if delta:
                        # drop an echoed prefill at the start of the stream
                        if len(seen) < len(prefill):
                            seen += delta
                            if prefill.startswith(seen):
                                continue
                            delta, seen = self._strip_prefill(seen, prefill), prefill
                        yield delta
        finally:
            cancelled.set()
        yield _completion("", usage, finish, timings)
