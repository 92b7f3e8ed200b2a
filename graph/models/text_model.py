"""Shared chat-model logic for the backends that generate plain text in this process
(transformers and llama.cpp): the tool protocol, stop sequences, JSON mode, usage metadata.

A subclass only turns chat dicts into text: `_complete` (whole answer) and `_complete_stream`
(text deltas, then one final `Completion` with the token counts).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, ClassVar

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda, RunnableMap, RunnablePassthrough
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field

from mia.graph.protocol import JSONRepairError, parse_json_loose
from mia.graph.models.prompts import prompts
from mia.graph.models.special_tokens import neutralise_special_tokens
from mia.graph.models.tool_protocol import (
    CLOSE,
    object_prefill,
    parse_tool_output,
    prefill_for,
    schema_example,
    to_chat_dicts,
    tool_names,
    tools_system_prompt,
)


@dataclass
class Completion:
    """One finished generation: the raw text (prefill excluded) and its token counts."""

    text: str
    input_tokens: int
    output_tokens: int
    finish_reason: str = "stop"
    timings: dict[str, Any] = field(default_factory=dict)  # backend timings (llama.cpp: prompt_n, cache_n, ms)
    cached_tokens: int = 0  # prompt tokens served from the backend's prompt cache (llama.cpp's cache_n)

    def usage(self) -> dict[str, Any]:
        """LangChain's usage_metadata, with the prompt-cache hits as `input_token_details.cache_read`."""
        usage: dict[str, Any] = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.input_tokens + self.output_tokens,
        }
        if self.cached_tokens:
            usage["input_token_details"] = {"cache_read": self.cached_tokens}
        return usage


@dataclass
class GenParams:
    """Sampling parameters of one call (instance defaults overridden by call kwargs)."""

    temperature: float
    top_p: float
    max_tokens: int
    stop: list[str]
    presence_penalty: float = 0.0
    no_repeat_ngram_size: int = 0
    grammar: str | None = None  # GBNF the output must match (backends with `supports_grammar`)


def truncate_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """Cut `text` at the earliest stop sequence; (text, cut)."""
    cuts = [i for i in (text.find(s) for s in stop if s) if i != -1]
    return (text[: min(cuts)], True) if cuts else (text, False)


def _held_back(text: str, stop: Sequence[str]) -> int:
    """How many trailing chars could still be the start of a stop sequence (not yet safe to emit)."""
    keep = 0
    for s in stop:
        for n in range(min(len(s) - 1, len(text)), 0, -1):
            if text.endswith(s[:n]):
                keep = max(keep, n)
                break
    return keep


class TextChatModel(BaseChatModel):
    """Base for in-process text generators; see the module docstring."""

    model_name: str = Field(default="local", description="The spec string this model was built from.")
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 256
    stop: list[str] | None = None
    presence_penalty: float = Field(
        default=0.0, description="subtracted from the logits of tokens already generated (paper: 1.1)"
    )
    no_repeat_ngram_size: int = Field(default=0, description="ban repeating a generated n-gram of this size; 0: off")

    #: Whether `_complete` honours `GenParams.grammar` (constrained decoding). A backend without it
    #: refuses a grammar rather than ignore it: the caller relies on the output's shape.
    supports_grammar: ClassVar[bool] = False

    @property
    def context_length(self) -> int | None:
        """Tokens one request may use, prompt and completion together (None: unknown)."""
        return None

    # ---- to implement -------------------------------------------------------------------
    def _complete(self, chat: list[dict[str, str]], prefill: str, params: GenParams) -> Completion:
        raise NotImplementedError

    def _complete_stream(
        self, chat: list[dict[str, str]], prefill: str, params: GenParams
    ) -> Iterator[str | Completion]:
        """Yield text deltas, then one Completion (its text may be empty). Default: no streaming."""
        done = self._complete(chat, prefill, params)
        yield done.text
        yield Completion(
            "", done.input_tokens, done.output_tokens, done.finish_reason, done.timings, done.cached_tokens
        )

    # ---- plumbing ---------------------------------------------------------------------------
    def _params(self, stop: list[str] | None, kwargs: dict[str, Any]) -> GenParams:
        max_tokens = kwargs.get("max_tokens") or kwargs.get("max_new_tokens") or self.max_tokens
        temperature = kwargs.get("temperature")
        top_p = kwargs.get("top_p")
        grammar = kwargs.get("grammar") or None
        if grammar and not self.supports_grammar:
            raise ValueError(f"{type(self).__name__} cannot constrain decoding with a grammar")
        return GenParams(
            temperature=float(self.temperature if temperature is None else temperature),
            top_p=float(self.top_p if top_p is None else top_p),
            max_tokens=int(max_tokens),
            stop=[s for s in [*(self.stop or []), *(stop or [])] if s],
            presence_penalty=float(kwargs.get("presence_penalty", self.presence_penalty) or 0.0),
            no_repeat_ngram_size=int(kwargs.get("no_repeat_ngram_size", self.no_repeat_ngram_size) or 0),
            grammar=grammar,
        )

    def _prepare(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> tuple[list[dict[str, str]], str, GenParams, list[str]]:
        """Chat dicts, prefill, params and bound tool names for one call."""
        params = self._params(stop, kwargs)
        tools = kwargs.get("tools") or []
        tool_choice = kwargs.get("tool_choice")
        extra, prefill = "", str(kwargs.get("prefill") or "")
        if tools and tool_choice != "none":
            extra = tools_system_prompt(tools, tool_choice)
            prefill = prefill_for(tool_choice, tools) or prefill
            params.stop.append(CLOSE)
        elif kwargs.get("json_schema") is not None:
            schema = kwargs["json_schema"]
            extra = prompts()["json_mode"]["instruction"].format(
                schema=json.dumps(schema), example=schema_example(schema)
            )
            prefill = prefill or object_prefill(kwargs["json_schema"])
        else:
            tools = []
        # message text is data to the chat template: no control tokens from documents or users
        chat = [{**m, "content": neutralise_special_tokens(m["content"])} for m in to_chat_dicts(messages, extra)]
        return chat, prefill, params, tool_names(tools)

    def _message(self, text: str, done: Completion, names: list[str], params: GenParams) -> AIMessage:
        text, cut = truncate_at_stop(text, params.stop)
        finish = "stop" if cut else done.finish_reason
        usage = done.usage()
        meta: dict[str, Any] = {"model_name": self.model_name, "finish_reason": finish}
        if done.timings:
            meta["timings"] = done.timings
        if names:
            content, calls, invalid = parse_tool_output(text, names)
            if calls:
                meta["finish_reason"] = "tool_calls"
            return AIMessage(
                content=content,
                tool_calls=calls,
                invalid_tool_calls=invalid,
                usage_metadata=usage,
                response_metadata=meta,
            )
        return AIMessage(content=text, usage_metadata=usage, response_metadata=meta)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        chat, prefill, params, names = self._prepare(messages, stop, kwargs)
        done = self._complete(chat, prefill, params)
        message = self._message(prefill + done.text, done, names, params)
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        # Generation is blocking CPU/GPU work; the per-model lock lives in the subclass.
        return await asyncio.to_thread(self._generate, messages, stop, None, **kwargs)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        # Like BaseChatModel's default (each step in a thread), but the sync generator is closed
        # when the consumer goes away (a client disconnect), which ends generation and frees the lock.
        iterator = self._stream(messages, stop, None, **kwargs)
        try:
            while True:
                item = await asyncio.to_thread(next, iterator, None)  # None: exhausted (never a chunk)
                if item is None:
                    break
                if run_manager and item.text:
                    await run_manager.on_llm_new_token(item.text, chunk=item)
                yield item
        finally:
            try:
                await asyncio.to_thread(iterator.close)
            except ValueError:  # still running in its thread (cancelled mid-step): closed when collected
                pass

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Generator[ChatGenerationChunk, None, None]:
        chat, prefill, params, names = self._prepare(messages, stop, kwargs)
        if names:  # a tool call is only meaningful once complete: generate, then emit one chunk
            # generated through the stream (not `_complete`), so a consumer that goes away stops it
            text, done = "", Completion("", 0, 0)
            pieces = self._complete_stream(chat, prefill, params)
            try:
                for piece in pieces:
                    if isinstance(piece, Completion):
                        done = piece
                        break
                    text += piece
                    # an empty chunk per piece: each step of a consumer's iteration is one token, so a
                    # consumer that goes away (a client disconnect) can close this generator at once
                    yield ChatGenerationChunk(message=AIMessageChunk(content=""))
            finally:
                pieces.close()  # type: ignore[attr-defined]
            message = self._message(prefill + text + done.text, done, names, params)
            chunks = [
                tool_call_chunk(name=c["name"], args=json.dumps(c["args"]), id=c["id"], index=i)
                for i, c in enumerate(message.tool_calls)
            ]
            yield ChatGenerationChunk(
                message=AIMessageChunk(
                    content=message.content,
                    tool_call_chunks=chunks,
                    usage_metadata=message.usage_metadata,
                    response_metadata=message.response_metadata,
                    chunk_position="last",
                )
            )
            return
        emitted, pending, finish = "", prefill, None
        pieces = self._complete_stream(chat, prefill, params)
        try:
            for piece in pieces:
                if isinstance(piece, Completion):
                    done = piece
                    break
                pending += piece
                text, cut = truncate_at_stop(emitted + pending, params.stop)
                if cut:
                    delta, pending, finish = text[len(emitted) :], "", "stop"
                else:
                    safe = len(pending) - _held_back(emitted + pending, params.stop)
                    delta, pending = pending[:safe], pending[safe:]
                if delta:
                    emitted += delta
                    if run_manager:
                        run_manager.on_llm_new_token(delta)
                    yield ChatGenerationChunk(message=AIMessageChunk(content=delta))
                if cut:
                    done = next((p for p in pieces if isinstance(p, Completion)), Completion("", 0, 0))
                    break
            else:
                done = Completion("", 0, 0)
        finally:
            pieces.close()  # type: ignore[attr-defined]
        tail = truncate_at_stop(emitted + pending, params.stop)[0][len(emitted) :]
        usage = done.usage()
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content=tail,
                usage_metadata=usage,
                response_metadata={
                    "model_name": self.model_name,
                    "finish_reason": finish or done.finish_reason,
                    **({"timings": done.timings} if done.timings else {}),
                },
                chunk_position="last",
            )
        )

    # ---- tools and structured output ------------------------------------------------------
    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable | BaseTool],
        *,
        tool_choice: str | dict | bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools: their schemas go into the system prompt, replies are parsed for <tool_call>.

        tool_choice: None/'auto' (the model decides), 'none', 'any'/'required'/True, or a tool name.
        """
        formatted = [convert_to_openai_tool(t) for t in tools]
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def with_structured_output(
        self,
        schema: dict[str, Any] | type,
        *,
        include_raw: bool = False,
        method: str = "json_mode",
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, dict[str, Any] | BaseModel]:
        """Structured output by JSON mode (schema in the prompt, '{' prefilled, lenient parse)
        or by a forced tool call (method='function_calling')."""
        if kwargs:
            raise ValueError(f"Unsupported arguments: {sorted(kwargs)}")
        is_model = isinstance(schema, type) and issubclass(schema, BaseModel)
        tool = convert_to_openai_tool(schema)
        name = tool["function"]["name"]
        llm: Runnable[LanguageModelInput, AIMessage]
        if method in ("json_mode", "json_schema"):
            llm = self.bind(json_schema=tool["function"].get("parameters", {}))
        elif method == "function_calling":
            llm = self.bind_tools([tool], tool_choice=name)
        else:
            raise ValueError(f"method must be 'json_mode', 'json_schema' or 'function_calling', not {method!r}")

        def parse(message: AIMessage) -> Any:
            if message.tool_calls:
                data: Any = message.tool_calls[0]["args"]
            else:
                try:
                    data = parse_json_loose(str(message.content))
                except JSONRepairError as err:
                    raise OutputParserException(
                        f"The model did not answer with JSON for {name}: {err}", llm_output=str(message.content)
                    ) from err
            if not is_model:
                return data
            try:
                return schema.model_validate(data)  # type: ignore[union-attr]
            except Exception as err:
                raise OutputParserException(
                    f"The model's JSON does not fit {name}: {err}", llm_output=json.dumps(data)
                ) from err

        parser = RunnableLambda(parse)
        if not include_raw:
            return llm | parser
        with_parsed = RunnablePassthrough.assign(
            parsed=itemgetter("raw") | parser, parsing_error=lambda _: None
        ).with_fallbacks([RunnablePassthrough.assign(parsed=lambda _: None)], exception_key="parsing_error")
        return RunnableMap(raw=llm) | with_parsed
