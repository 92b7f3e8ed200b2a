"""An OpenAI-compatible HTTP server over any mia model backend (`mia serve-model`).

Endpoints: POST /v1/chat/completions (plain and SSE streaming, `usage` included, also in a final
stream chunk when stream_options.include_usage), GET /v1/models, GET /health. The `model` field of a
request is accepted but ignored: the server serves the one spec it was started with. Tool calls go
through `bind_tools` of the backend (the local text protocol, or the provider's native tools).
"""

from __future__ import annotations

import json
import socket
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ChatRequest(BaseModel):
    """The subset of the OpenAI chat-completions request that mia honours (the rest is ignored)."""

    model_config = ConfigDict(extra="allow")

    model: str | None = None
    messages: list[dict[str, Any]] = Field(min_length=1)
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    stop: str | list[str] | None = None
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: Any = None
    n: int = 1


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")


def to_langchain(messages: list[dict[str, Any]]) -> list[Any]:
    """OpenAI-format message dicts -> LangChain messages (tool calls and tool results included)."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    out: list[Any] = []
    for m in messages:
        role = m.get("role")
        if role in ("system", "developer"):
            out.append(SystemMessage(_text(m.get("content"))))
        elif role == "user":
            out.append(HumanMessage(_text(m.get("content"))))
        elif role == "assistant":
            calls = []
            for c in m.get("tool_calls") or []:
                fn = c.get("function") or {}
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except json.JSONDecodeError:
                    args = {"_raw": fn.get("arguments")}
                calls.append({"name": fn.get("name", ""), "args": args, "id": c.get("id")})
            out.append(AIMessage(_text(m.get("content")), tool_calls=calls))
        elif role == "tool":
            out.append(ToolMessage(_text(m.get("content")), tool_call_id=m.get("tool_call_id") or ""))
        else:
            raise ValueError(f"unsupported message role {role!r}")
    return out


def _usage(meta: dict[str, Any] | None) -> dict[str, int]:
    meta = meta or {}
    i, o = int(meta.get("input_tokens", 0)), int(meta.get("output_tokens", 0))
    return {"prompt_tokens": i, "completion_tokens": o, "total_tokens": int(meta.get("total_tokens", i + o))}


def _tool_calls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"id": c.get("id") or f"call_{uuid.uuid4().hex[:24]}", "type": "function",
         "function": {"name": c["name"], "arguments": json.dumps(c.get("args", {}))}}
        for c in calls
    ]


def create_app(model: Any, model_id: str) -> Any:
    """The FastAPI app serving `model` (a LangChain BaseChatModel) under the name `model_id`."""
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse, StreamingResponse

    app = FastAPI(title="mia model server", version="1")
    created = int(time.time())

    def runnable_and_kwargs(req: ChatRequest) -> tuple[Any, dict[str, Any]]:
        kwargs: dict[str, Any] = {}
        for key in ("temperature", "top_p"):
            if getattr(req, key) is not None:
                kwargs[key] = getattr(req, key)
        if req.max_completion_tokens or req.max_tokens:
            kwargs["max_tokens"] = req.max_completion_tokens or req.max_tokens
        if req.stop:
            kwargs["stop"] = [req.stop] if isinstance(req.stop, str) else list(req.stop)
        runnable = model
        if req.tools:
            choice = req.tool_choice
            if isinstance(choice, dict):
                choice = (choice.get("function") or {}).get("name") or choice
            runnable = model.bind_tools(req.tools, tool_choice=choice)
        return runnable, kwargs

    def error(status: int, message: str, kind: str) -> Any:
        return JSONResponse(status_code=status, content={"error": {"message": message, "type": kind}})

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok", "model": model_id}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": model_id, "object": "model", "created": created, "owned_by": "mia"}]}

    @app.post("/v1/chat/completions")
    async def chat(req: ChatRequest) -> Any:
        if req.n != 1:
            return error(400, "only n=1 is supported", "invalid_request_error")
        try:
            messages = to_langchain(req.messages)
        except ValueError as err:
            return error(400, str(err), "invalid_request_error")
        runnable, kwargs = runnable_and_kwargs(req)
        cid = f"chatcmpl-{uuid.uuid4().hex}"
        if req.stream:
            include_usage = bool((req.stream_options or {}).get("include_usage"))
            return StreamingResponse(
                _sse(runnable, messages, kwargs, cid, model_id, include_usage), media_type="text/event-stream"
            )
        try:
            msg = await runnable.ainvoke(messages, **kwargs)
        except Exception as err:  # noqa: BLE001 - a backend failure becomes an API error, not a crash
            return error(500, f"{type(err).__name__}: {err}", "server_error")
        message: dict[str, Any] = {"role": "assistant", "content": _text(msg.content)}
        finish = (msg.response_metadata or {}).get("finish_reason") or "stop"
        if msg.tool_calls:
            message["tool_calls"] = _tool_calls(msg.tool_calls)
            finish = "tool_calls"
        return {
            "id": cid, "object": "chat.completion", "created": int(time.time()), "model": model_id,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": _usage(msg.usage_metadata),
        }

    return app


async def _sse(
    runnable: Any, messages: list[Any], kwargs: dict[str, Any], cid: str, model_id: str, include_usage: bool
) -> AsyncIterator[str]:
    """OpenAI-style SSE: role delta, content/tool-call deltas, a finish chunk, optional usage chunk."""
    base = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()), "model": model_id}

    def event(choices: list[dict[str, Any]], **extra: Any) -> str:
        return "data: " + json.dumps({**base, "choices": choices, **extra}) + "\n\n"

    yield event([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
    usage: dict[str, int] = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    finish, n_calls = "stop", 0
    try:
        async for chunk in runnable.astream(messages, **kwargs):
            for key, value in (chunk.usage_metadata or {}).items():
                if key in usage:
                    usage[key] += int(value)
            finish = (chunk.response_metadata or {}).get("finish_reason") or finish
            delta: dict[str, Any] = {}
            text = _text(chunk.content)
            if text:
                delta["content"] = text
            if chunk.tool_call_chunks:
                delta["tool_calls"] = [
                    {"index": tc.get("index") if tc.get("index") is not None else n_calls + i,
                     "id": tc.get("id"), "type": "function",
                     "function": {"name": tc.get("name"), "arguments": tc.get("args") or ""}}
                    for i, tc in enumerate(chunk.tool_call_chunks)
                ]
                n_calls += len(chunk.tool_call_chunks)
                finish = "tool_calls"
            if delta:
                yield event([{"index": 0, "delta": delta, "finish_reason": None}])
    except Exception as err:  # noqa: BLE001 - report in-band; the status line is already sent
        yield "data: " + json.dumps({"error": {"message": f"{type(err).__name__}: {err}", "type": "server_error"}}) + "\n\n"
    yield event([{"index": 0, "delta": {}, "finish_reason": finish}])
    if include_usage:
        yield event([], usage=_usage(usage))
    yield "data: [DONE]\n\n"


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    return sock


def serve(spec: str, host: str = "127.0.0.1", port: int = 8000,
          announce: Callable[[str], None] | None = None, log_level: str = "warning") -> None:
    """Load `spec`, bind host:port (0 = a free port) and serve until interrupted.

    `announce(url)` runs once the server accepts connections (default: print the URL).
    """
    import uvicorn

    from mia.graph.models import load_chat_model

    model = load_chat_model(spec)
    if hasattr(model, "backend"):
        model.backend  # load the weights now, so the first request is not slow  # noqa: B018
    sock = _bind(host, port)
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{sock.getsockname()[1]}/v1"
    say = announce or (lambda u: print(f"Serving {spec} at {u}  (OpenAI-compatible; Ctrl-C stops)", flush=True))

    class _Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            say(url)

    server = _Server(uvicorn.Config(create_app(model, spec), log_level=log_level, access_log=False))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        sys.stdout.flush()
