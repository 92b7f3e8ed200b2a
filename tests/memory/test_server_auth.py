"""Credentials for a shared Chroma server: the client sends MIA_CHROMA_TOKEN (in either of Chroma's
two token headers) or MIA_CHROMA_BASIC_AUTH on every request. Two real servers check them: Chroma's
own Python server with its token and basic authentication on (`chroma_auth_server.py`), and, for
`chroma run`, whose Rust server checks nothing, a token-checking reverse proxy in front of it, as
docs/security.md advises."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

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


def test_basic_credentials_go_as_chroma_sends_them(monkeypatch) -> None:
    assert chroma_headers(basic="alice:pa:ss") == {"Authorization": "Basic YWxpY2U6cGE6c3M="}
    for bad in ("alice", ":pw", "alice:"):
        with pytest.raises(ValueError, match="USER:PASSWORD"):
            chroma_headers(basic=bad)
    monkeypatch.setenv("MIA_CHROMA_TOKEN", "t")
    monkeypatch.setenv("MIA_CHROMA_BASIC_AUTH", "alice:pw")
    with pytest.raises(ValueError, match="both set"):
        chroma_headers()
    assert chroma_headers("given") == {"Authorization": "Bearer given"}  # an argument overrides both


SECRET = "s3cret-pw"
SERVER_AUTH = {  # Chroma's server settings, from its environment, for each kind of credentials
    "token": {
        "CHROMA_SERVER_AUTHN_PROVIDER": "chromadb.auth.token_authn.TokenAuthenticationServerProvider",
        "CHROMA_SERVER_AUTHN_CREDENTIALS": TOKEN,
    },
    "x-chroma-token": {
        "CHROMA_SERVER_AUTHN_PROVIDER": "chromadb.auth.token_authn.TokenAuthenticationServerProvider",
        "CHROMA_SERVER_AUTHN_CREDENTIALS": TOKEN,
        "CHROMA_AUTH_TOKEN_TRANSPORT_HEADER": "X-Chroma-Token",
    },
    "basic": {"CHROMA_SERVER_AUTHN_PROVIDER": "chromadb.auth.basic_authn.BasicAuthenticationServerProvider"},
}
CLIENT_ENV = {  # what a user sets for mia, right and wrong
    "token": ({"MIA_CHROMA_TOKEN": TOKEN}, {"MIA_CHROMA_TOKEN": "not-" + TOKEN}),
    "x-chroma-token": (
        {"MIA_CHROMA_TOKEN": TOKEN, "MIA_CHROMA_AUTH_HEADER": "X-Chroma-Token"},
        {"MIA_CHROMA_TOKEN": TOKEN},  # the right token in the header this server does not read
    ),
    "basic": ({"MIA_CHROMA_BASIC_AUTH": f"alice:{SECRET}"}, {"MIA_CHROMA_BASIC_AUTH": "alice:wrong"}),
}


@pytest.fixture(scope="module", params=sorted(SERVER_AUTH))
def chroma_with_auth(request, tmp_path_factory) -> Iterator[dict]:
    """Chroma's Python server with its authentication on (token, token in X-Chroma-Token, basic)."""
    import bcrypt

    kind = request.param
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("MIA_CHROMA", "CHROMA_"))},
        "ANONYMIZED_TELEMETRY": "False",
        "IS_PERSISTENT": "TRUE",
        "PERSIST_DIRECTORY": str(tmp_path_factory.mktemp(f"chroma-{kind}")),
        **SERVER_AUTH[kind],
    }
    if kind == "basic":  # htpasswd-style USER:BCRYPT, as Chroma reads it
        env["CHROMA_SERVER_AUTHN_CREDENTIALS"] = "alice:" + bcrypt.hashpw(SECRET.encode(), bcrypt.gensalt()).decode()
    port = free_port()
    script = Path(__file__).with_name("chroma_auth_server.py")
    proc = subprocess.Popen(
        [sys.executable, str(script), str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )
    deadline = time.monotonic() + 90
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"Chroma's server did not start: {proc.communicate()[1].decode()[-2000:]}")
        time.sleep(0.2)
    yield {"kind": kind, "host": "127.0.0.1", "port": port}
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_a_chroma_server_with_auth_on_admits_only_the_right_credentials(
    chroma_with_auth, tmp_path, embedder, monkeypatch
) -> None:
    """Before issue 42.7 only a token could be sent: basic auth was refused whatever the user set."""
    kind, host, port = chroma_with_auth["kind"], chroma_with_auth["host"], chroma_with_auth["port"]
    for name in ("MIA_CHROMA_TOKEN", "MIA_CHROMA_AUTH_HEADER", "MIA_CHROMA_BASIC_AUTH"):
        monkeypatch.delenv(name, raising=False)
    right, wrong = CLIENT_ENV[kind]
    for env in ({}, wrong):
        with monkeypatch.context() as patch:
            for name, value in env.items():
                patch.setenv(name, value)
            with pytest.raises(MemoryStoreError, match="refused the credentials") as err:
                MemoryStore.open_http(host, port, log_dir=tmp_path / "log", embedder=embedder)
            assert "\n" not in str(err.value) and SECRET not in str(err.value)
    for name, value in right.items():
        monkeypatch.setenv(name, value)
    store = MemoryStore.open_http(host, port, log_dir=tmp_path / "log", embedder=embedder)
    try:
        ns = f"auth-{kind}"
        store.memorise(make_trajectory("Which river is longer, the Danube or the Rhine?", namespace=ns))
        assert store.retrieve("Is the Rhine longer than the Danube?", ns).positives
    finally:
        store.close()


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
