"""Nobody in without a key: `mia serve-model --api-key` guards /v1 with a bearer key, a host off
this machine without a key is refused (unless --insecure), and the openai-compatible backend sends
MIA_MODEL_SERVER_API_KEY. The app over a fake model in-process, then the real server and client."""

from __future__ import annotations

import os
import subprocess
import sys

import httpx
import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from starlette.testclient import TestClient

from mia.app.model_server import InsecureHostError, check_host, create_app, is_loopback

from .served import serve_model

BODY = {"model": "x", "messages": [{"role": "user", "content": "Hi?"}]}


def _client(api_key: str | None) -> TestClient:
    model = GenericFakeChatModel(messages=iter([AIMessage(content="Hello there.")] * 4))
    return TestClient(create_app(model, "fake", api_key=api_key))


def test_a_key_guards_every_v1_route_and_leaves_health_open() -> None:
    client = _client("s3cret")
    for headers in (
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": "s3cret"},
        {"Authorization": "Bearer s3cret "},
    ):
        for resp in (
            client.get("/v1/models", headers=headers),
            client.post("/v1/chat/completions", json=BODY, headers=headers),
        ):
            assert resp.status_code == 401, (headers, resp.text)
            assert resp.json()["error"]["code"] == "invalid_api_key"
    ok = {"Authorization": "Bearer s3cret"}
    assert client.get("/v1/models", headers=ok).json()["data"][0]["id"] == "fake"
    reply = client.post("/v1/chat/completions", json=BODY, headers=ok)
    assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"] == "Hello there."
    assert client.get("/health").status_code == 200  # probes need no key
    assert _client(None).get("/v1/models").status_code == 200  # no key configured: open, as before


@pytest.mark.parametrize(
    "host,loopback",
    [
        ("127.0.0.1", True),
        ("127.3.2.1", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.0.0.5", False),
        ("example.org", False),
    ],
)
def test_only_loopback_hosts_may_go_without_a_key(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
    if loopback:
        check_host(host, None)
    else:
        with pytest.raises(InsecureHostError, match="--api-key"):
            check_host(host, None)
        check_host(host, "k")
        check_host(host, None, insecure=True)


def test_the_cli_refuses_an_open_host_without_a_key_before_loading_anything() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mia.app.cli",
            "serve-model",
            "--model",
            "llamacpp:smollm2",
            "--host",
            "0.0.0.0",
            "--port",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "MIA_MODEL_SERVER_API_KEY": ""},
    )
    assert out.returncode == 2 and "refusing to serve on 0.0.0.0 without a key" in out.stderr, out.stderr


@pytest.mark.server
@pytest.mark.real_model
def test_the_real_server_and_client_share_the_key_from_the_environment(data_dir, monkeypatch) -> None:
    from mia.graph.models import load_chat_model
    from mia.graph.models.embedded import ensure_gguf

    ensure_gguf("smollm2")  # fetched here, not inside the server's start-up
    with serve_model(
        "--model", "llamacpp:smollm2", env={"MIA_MODEL_SERVER_API_KEY": "env-key", "MIA_LLAMACPP_THREADS": "1"}
    ) as url:
        assert httpx.get(f"{url}/models", timeout=10).status_code == 401
        monkeypatch.setenv("MIA_MODEL_SERVER_API_KEY", "env-key")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-self-hosted-servers")
        client = load_chat_model(f"openai-compatible:smollm2@{url}", max_tokens=8, timeout=120, max_retries=0)
        assert client.invoke("What is the capital of France?").usage_metadata["output_tokens"] > 0
        monkeypatch.delenv("MIA_MODEL_SERVER_API_KEY")  # OPENAI_API_KEY alone is the wrong key here
        stranger = load_chat_model(f"openai-compatible:smollm2@{url}", max_tokens=8, timeout=120, max_retries=0)
        with pytest.raises(Exception, match="401|invalid_api_key"):
            stranger.invoke("What is the capital of France?")
