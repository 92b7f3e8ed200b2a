"""Credentials for a shared Chroma server: the client sends MIA_CHROMA_TOKEN on every request, in
either of Chroma's two headers. Chroma 1.x's own server does not enforce auth, so, as docs/security.md
says, a token-checking reverse proxy stands in front of a real `chroma run` here."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from mia.memory import MemoryStore, MemoryStoreError
from mia.memory.config import chroma_headers

from .conftest import free_port, make_trajectory

pytestmark = pytest.mark.server

TOKEN = "tenant-token-123"


@pytest.fixture()
def proxy(chroma_server) -> Iterator[dict]:
    """A reverse proxy that forwards only requests carrying the token (either header) to the server."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    upstream = f"http://{chroma_server['host']}:{chroma_server['port']}"
    seen: list[str] = []

    async def forward(request: Request) -> Response:
        given = request.headers.get("x-chroma-token") or request.headers.get("authorization", "").removeprefix(
            "Bearer "
        )
        seen.append(given)
        if given != TOKEN:
            return JSONResponse({"error": "Unauthorized"}, status_code=401)
        async with httpx.AsyncClient(base_url=upstream, timeout=60) as client:
            reply = await client.request(
                request.method,
                request.url.path,
                params=request.query_params,
                content=await request.body(),
                headers={"content-type": request.headers.get("content-type", "application/json")},
            )
        return Response(reply.content, status_code=reply.status_code, media_type=reply.headers.get("content-type"))

    app = Starlette(routes=[Route("/{path:path}", forward, methods=["GET", "POST", "PUT", "DELETE", "PATCH"])])
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield {"host": "127.0.0.1", "port": port, "seen": seen}
    server.should_exit = True
    thread.join(10)


def test_the_token_goes_in_either_header() -> None:
    assert chroma_headers("t") == {"Authorization": "Bearer t"}
    assert chroma_headers("t", "x-chroma-token") == {"X-Chroma-Token": "t"}
    assert chroma_headers("") == {} and chroma_headers("  ") == {}
    with pytest.raises(ValueError, match="MIA_CHROMA_AUTH_HEADER"):
        chroma_headers("t", "Cookie")


@pytest.mark.parametrize("header", ["Authorization", "X-Chroma-Token"])
def test_a_store_behind_a_token_checking_proxy(proxy, tmp_path, embedder, monkeypatch, header) -> None:
    with pytest.raises(MemoryStoreError, match="refused"):
        MemoryStore.open_http(proxy["host"], proxy["port"], log_dir=tmp_path / "log", embedder=embedder)
    monkeypatch.setenv("MIA_CHROMA_TOKEN", TOKEN)
    monkeypatch.setenv("MIA_CHROMA_AUTH_HEADER", header)
    store = MemoryStore.open_http(proxy["host"], proxy["port"], log_dir=tmp_path / "log", embedder=embedder)
    try:
        ns = f"auth-{header.lower()}"
        store.memorise(make_trajectory("Which river is longer, the Danube or the Rhine?", namespace=ns))
        assert store.retrieve("Is the Rhine longer than the Danube?", ns).positives
    finally:
        store.close()
    assert proxy["seen"][-1] == TOKEN and len(proxy["seen"]) > 3  # every request carried it
