"""A real `mia serve-model` app on a free port, in a thread of the test process (real HTTP, real
llama.cpp over the SmolLM2 GGUF), with a backend that records how each generation ended, so that a
test can tell a generation the server cancelled from one that ran to its end."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mia.graph.models.llamacpp import LlamaCppChatModel

#: A small window keeps every generation short (a runaway one ends within 1024 tokens).
N_CTX = 1024


class RecordingLlamaCpp(LlamaCppChatModel):
    """LlamaCppChatModel that records each generation: 'started', then 'closed' (its consumer went
    away before the end: cancelled) or 'finished' (it ran to its last token)."""

    def _complete_stream(self, chat: Any, prefill: str, params: Any) -> Iterator[Any]:
        inner = super()._complete_stream(chat, prefill, params)
        events = EVENTS
        try:
            for n, piece in enumerate(inner):
                if n == 0:
                    events.append("started")
                    STARTED.set()
                yield piece
            events.append("finished")
        except GeneratorExit:
            events.append("closed")
            raise
        finally:
            inner.close()
            ENDED.set()


EVENTS: list[str] = []
STARTED = threading.Event()
ENDED = threading.Event()


def reset_events() -> None:
    EVENTS.clear()
    STARTED.clear()
    ENDED.clear()


def smollm2_model() -> RecordingLlamaCpp:
    from mia.graph.models.embedded import ensure_gguf

    return RecordingLlamaCpp(
        model_name="llamacpp:smollm2",
        model_path=str(ensure_gguf("smollm2")),
        n_ctx=N_CTX,
        n_parallel=2,
        n_threads=1,
        max_tokens=16,
    )


@contextmanager
def running_server(model: Any, max_body_bytes: int = 256 * 1024, max_pending: int | None = None) -> Iterator[str]:
    """Serve `model` with uvicorn on a free port in a thread; yield the base URL (…/v1)."""
    import uvicorn

    from mia.app.model_server import MAX_PENDING, create_app

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(model, "llamacpp:smollm2", max_body_bytes, max_pending=max_pending or MAX_PENDING),
            log_level="warning",
            access_log=False,
        )
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "the model server did not start"
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def raw_post(url: str, body: bytes, extra_headers: str = "") -> socket.socket:
    """Send a POST over a plain socket and return the open socket (the test decides when to hang up)."""
    host, port = url.removeprefix("http://").split("/")[0].split(":")
    conn = socket.create_connection((host, int(port)), timeout=60)
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n{extra_headers}\r\n"
    )
    conn.sendall(head.encode() + body)
    return conn
