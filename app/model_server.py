"""An OpenAI-compatible HTTP server over any mia model backend (`mia serve-model`).

Endpoints: POST /v1/chat/completions (plain and SSE streaming, `usage` included, also in a final
stream chunk when stream_options.include_usage), GET /v1/models, GET /health. The `model` field of a
request is accepted but ignored: the server serves the one spec it was started with. Tool calls go
through `bind_tools` of the backend (the local text protocol, or the provider's native tools).

Hostile or broken clients (following llama.cpp's server and vLLM): a malformed body is a 400 with an
OpenAI-style error naming the field (`model_server_schema.py`), a body over `max_body_bytes` a 413,
`max_tokens` over the context window a 400, a prompt that does not fit the window a 400 stating the
limit (the backend counts its tokens with the model's tokenizer before generating), and a client that
disconnects cancels its generation at the next token, streaming or not.

Load (as vLLM and llama.cpp's server under pressure): as many generations run at once as the backend
has parallel slots, the other admitted requests wait their turn in the event loop; at most
`max_pending` chat requests are in the server at once, and one more is refused at once with a 503
and `Retry-After`, so a burst is answered or cleanly refused, never left to time out. SIGTERM
stops accepting, lets the requests in flight finish for up to 5 s, then cancels them.

Keys (as vLLM's `--api-key`): with `api_key`, every /v1 request needs `Authorization: Bearer KEY`
(401 otherwise; /health stays open for probes). `serve` refuses a non-loopback host without a key
unless told `insecure`: a model on the network with no key is anyone's (docs/security.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import json
import socket
import sys
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.background import BackgroundTask
from starlette.requests import Request  # at module level: FastAPI resolves the endpoint's annotation here

from mia.app.model_server_schema import ChatRequest, RequestError, parse_request, to_langchain

#: Largest request body accepted (413 past it). 8 MiB holds far more text than any context window
#: served here (32k tokens are ~130 kB), so only abuse is refused.
MAX_BODY_BYTES = 8 * 1024 * 1024
#: Chat requests in the server at once (running or waiting for the backend); the next is a 503.
MAX_PENDING = 64
#: Generations at once for a backend that does not say its parallel slots (llama.cpp's say n_parallel).
DEFAULT_RUNNING = 4
#: Seconds SIGTERM waits for the requests in flight before it cancels them.
GRACEFUL_SHUTDOWN_S = 5


def _usage(meta: dict[str, Any] | None) -> dict[str, int]:
    meta = meta or {}
    i, o = int(meta.get("input_tokens", 0)), int(meta.get("output_tokens", 0))
    return {"prompt_tokens": i, "completion_tokens": o, "total_tokens": int(meta.get("total_tokens", i + o))}


def _tool_calls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "id": c.get("id") or f"call_{uuid.uuid4().hex[:24]}",
            "type": "function",
            "function": {"name": c["name"], "arguments": json.dumps(c.get("args", {}))},
        }
        for c in calls
    ]


def _error(
    status: int, message: str, kind: str = "invalid_request_error", param: str | None = None, code: str | None = None
) -> Any:
    """OpenAI's error body: {"error": {message, type, param, code}}."""
    from fastapi.responses import JSONResponse

    return JSONResponse(
        status_code=status, content={"error": {"message": message, "type": kind, "param": param, "code": code}}
    )


class ClientGone(Exception):
    """The client closed the connection; the generation it asked for was cancelled."""


async def _unless_disconnected(request: Any, work: Awaitable[Any], poll_s: float = 0.2) -> Any:
    """Await `work`, cancelling it as soon as the client disconnects (then raise ClientGone).

    A cancelled generation stops at its next token (the backends close their token stream), so an
    abandoned request frees its slot instead of generating to its max_tokens (llama.cpp's server
    and vLLM abort on disconnect the same way)."""
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=poll_s)
            if done:
                return task.result()
            if await request.is_disconnected():
                raise ClientGone
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


async def _read_body(request: Any, limit: int) -> bytes:
    """The request body, refused past `limit` bytes (announced or streamed)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise RequestError(f"the body is {declared} bytes; the limit is {limit}", status=413)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise RequestError(f"the body is over the limit of {limit} bytes", status=413)
    return bytes(body)


def create_app(
    model: Any,
    model_id: str,
    max_body_bytes: int = MAX_BODY_BYTES,
    api_key: str | None = None,
    max_pending: int = MAX_PENDING,
) -> Any:
    """The FastAPI app serving `model` (a LangChain BaseChatModel) under the name `model_id`; with
    `api_key`, /v1 answers only requests that carry it as a bearer token."""
    from fastapi import FastAPI
    from fastapi.responses import StreamingResponse

    from mia.graph.models.errors import ContextLengthError

    app = FastAPI(title="mia model server", version="1")
    if api_key:
        expected = f"Bearer {api_key}".encode()

        @app.middleware("http")
        async def require_key(request: Request, call_next: Callable[[Request], Awaitable[Any]]) -> Any:
            if request.url.path.startswith("/v1"):
                given = request.headers.get("authorization", "").encode("utf-8", "replace")
                if not hmac.compare_digest(given, expected):  # constant time: the key is not guessed byte by byte
                    return _error(
                        401,
                        "Incorrect or missing API key: send 'Authorization: Bearer <key>' "
                        "(the key `mia serve-model` was started with).",
                        "authentication_error",
                        code="invalid_api_key",
                    )
            return await call_next(request)

    created = int(time.time())
    context: list[int | None] = []  # the model's context window, looked up once

    def context_length() -> int | None:
        if not context:
            context.append(getattr(model, "context_length", None))
        return context[0]

    def runnable_and_kwargs(req: ChatRequest) -> tuple[Any, dict[str, Any]]:
        kwargs: dict[str, Any] = {}
        for key in ("temperature", "top_p"):
            if getattr(req, key) is not None:
                kwargs[key] = getattr(req, key)
        limit, window = req.limit(), context_length()
        if limit is not None and window is not None and limit > window:
            raise RequestError(
                f"max_tokens is too large: {limit}. This model's maximum context length is {window} tokens "
                f"(prompt and completion together).",
                param="max_tokens",
                code="context_length_exceeded",
            )
        if limit is not None:
            kwargs["max_tokens"] = limit
        if req.stop:
            kwargs["stop"] = list(req.stop)
        runnable = model
        if req.tools:
            runnable = model.bind_tools(req.tool_dicts(), tool_choice=req.tool_choice_value())
        return runnable, kwargs

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok", "model": model_id}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": model_id, "object": "model", "created": created, "owned_by": "mia"}]}

    pending = 0  # chat requests admitted and not yet answered (a stream counts until it ends)
    # Generations at once: the backend's parallel slots. Why: each running generation waits for its
    # next chunk in a worker thread; with every admitted request started at once, 50 requests took
    # the event loop's few threads waiting on generations queued behind them, and the server stalled
    # until the clients timed out (bench/app/soak.md).
    slots = asyncio.Semaphore(max(1, int(getattr(model, "n_parallel", 0) or DEFAULT_RUNNING)))

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Any:
        nonlocal pending
        if pending >= max_pending:
            busy = _error(
                503,
                f"the server is busy ({max_pending} requests in progress); retry shortly",
                "server_error",
                code="server_busy",
            )
            busy.headers["Retry-After"] = "1"
            return busy
        pending += 1
        handed_to_stream, running = False, False

        def release() -> None:
            nonlocal pending
            if running:
                slots.release()
            pending -= 1

        try:
            await slots.acquire()  # waiting here holds no thread; a generation holds one per chunk
            running = True
            response = await answer(request)
            if isinstance(response, StreamingResponse):
                response.background = BackgroundTask(release)  # held until the stream ends
                handed_to_stream = True
            return response
        finally:
            if not handed_to_stream:
                release()

    async def answer(request: Request) -> Any:
        try:
            req = parse_request(await _read_body(request, max_body_bytes))
            messages = to_langchain(req.messages)
            runnable, kwargs = runnable_and_kwargs(req)
        except RequestError as err:
            return _error(err.status, str(err), param=err.param, code=err.code)
        except ValueError as err:  # e.g. tool_choice naming an unknown tool
            return _error(400, str(err).splitlines()[0] if str(err) else type(err).__name__)
        cid = f"chatcmpl-{uuid.uuid4().hex}"
        chunks = aiter(runnable.astream(messages, **kwargs))
        try:
            # The first chunk comes once the prompt is read: an over-long prompt is refused here,
            # with a 400, before any header is sent (also when streaming).
            first = await _unless_disconnected(request, anext(chunks, None))
            if not req.stream:
                rest = await _unless_disconnected(request, _collect(chunks))
        except ClientGone:
            await chunks.aclose()
            return _error(499, "the client closed the connection", "client_closed_request")
        except ContextLengthError as err:
            return _error(400, str(err), param="messages", code="context_length_exceeded")
        except Exception as err:  # noqa: BLE001 - a backend failure becomes an API error, not a crash
            return _error(500, f"{type(err).__name__}: {err}", "server_error")
        if req.stream:
            include_usage = bool(req.stream_options and req.stream_options.include_usage)
            return StreamingResponse(_sse(first, chunks, cid, model_id, include_usage), media_type="text/event-stream")
        parts = [c for c in [first, *rest] if c is not None]
        msg = sum(parts[1:], parts[0]) if parts else None
        finish = next(
            (
                (c.response_metadata or {}).get("finish_reason")
                for c in reversed(parts)
                if (c.response_metadata or {}).get("finish_reason")
            ),
            "stop",
        )
        message: dict[str, Any] = {"role": "assistant", "content": text_of_chunk(msg)}
        if msg is not None and msg.tool_calls:
            message["tool_calls"] = _tool_calls(msg.tool_calls)
            finish = "tool_calls"
        return {
            "id": cid,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model_id,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": _usage(msg.usage_metadata if msg is not None else None),
        }

    return app


def text_of_chunk(msg: Any) -> str:
    """The text of a LangChain message's content (a string or a list of content blocks)."""
    if msg is None or msg.content is None:
        return ""
    if isinstance(msg.content, str):
        return msg.content
    return "".join(
        p.get("text", "") if isinstance(p, dict) else str(p)
        for p in msg.content
        if not isinstance(p, dict) or p.get("type") == "text"
    )


async def _collect(chunks: AsyncIterator[Any]) -> list[Any]:
    return [c async for c in chunks]


async def _sse(
    first: Any, chunks: AsyncGenerator[Any, None], cid: str, model_id: str, include_usage: bool
) -> AsyncIterator[str]:
    """OpenAI-style SSE: role delta, content/tool-call deltas, a finish chunk, optional usage chunk."""
    base = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()), "model": model_id}

    def event(choices: list[dict[str, Any]], **extra: Any) -> str:
        return "data: " + json.dumps({**base, "choices": choices, **extra}) + "\n\n"

    async def all_chunks() -> AsyncIterator[Any]:
        if first is not None:
            yield first
        async for chunk in chunks:
            yield chunk

    yield event([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
    usage: dict[str, int] = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    finish, n_calls = "stop", 0
    try:
        async for chunk in all_chunks():
            for key, value in (chunk.usage_metadata or {}).items():
                if key in usage:
                    usage[key] += int(value)
            finish = (chunk.response_metadata or {}).get("finish_reason") or finish
            delta: dict[str, Any] = {}
            text = text_of_chunk(chunk)
            if text:
                delta["content"] = text
            if chunk.tool_call_chunks:
                delta["tool_calls"] = [
                    {
                        "index": tc.get("index") if tc.get("index") is not None else n_calls + i,
                        "id": tc.get("id"),
                        "type": "function",
                        "function": {"name": tc.get("name"), "arguments": tc.get("args") or ""},
                    }
                    for i, tc in enumerate(chunk.tool_call_chunks)
                ]
                n_calls += len(chunk.tool_call_chunks)
                finish = "tool_calls"
            if delta:
                yield event([{"index": 0, "delta": delta, "finish_reason": None}])
    except Exception as err:  # noqa: BLE001 - report in-band; the status line is already sent
        yield (
            "data: "
            + json.dumps({"error": {"message": f"{type(err).__name__}: {err}", "type": "server_error"}})
            + "\n\n"
        )
    finally:
        await chunks.aclose()  # a client that went away stops the generation here
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


class InsecureHostError(ValueError):
    """A non-loopback host without a key: the model would be served to the whole network."""


def is_loopback(host: str) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1); a name other than localhost
    counts as reachable from the network."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_host(host: str, api_key: str | None, insecure: bool = False) -> None:
    """Raise InsecureHostError for a host other processes on the network can reach, with no key."""
    if not api_key and not insecure and not is_loopback(host):
        raise InsecureHostError(
            f"refusing to serve on {host} without a key: anyone who can reach it could use the model. "
            "Pass --api-key (or set MIA_MODEL_SERVER_API_KEY), or --insecure to serve it open anyway."
        )


def serve(
    spec: str,
    host: str = "127.0.0.1",
    port: int = 8000,
    announce: Callable[[str], None] | None = None,
    log_level: str = "warning",
    max_body_bytes: int = MAX_BODY_BYTES,
    api_key: str | None = None,
    insecure: bool = False,
    max_pending: int = MAX_PENDING,
) -> None:
    """Load `spec`, bind host:port (0 = a free port) and serve until interrupted.

    `announce(url)` runs once the server accepts connections (default: print the URL). A host
    off this machine needs `api_key` (or `insecure`), checked before the model loads.
    """
    import uvicorn

    from mia.graph.models import load_chat_model

    check_host(host, api_key, insecure)

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

    server = _Server(
        uvicorn.Config(
            create_app(model, spec, max_body_bytes, api_key, max_pending),
            log_level=log_level,
            access_log=False,
            timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
        )
    )
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        sys.stdout.flush()
