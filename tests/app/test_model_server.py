"""`mia serve-model` for real: a subprocess on a free port, driven over HTTP by langchain-openai
(the `openai-compatible` backend), with token usage, streaming and tool calls."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .served import serve_model

pytestmark = [pytest.mark.server, pytest.mark.real_model]


@pytest.fixture(scope="module")
def server_url(data_dir: Path) -> Iterator[str]:
    from mia.graph.models.convert import ensure_converted

    ensure_converted("smollm2", data_dir)  # convert here (once per machine), not inside the server's start-up
    with serve_model("--model", "local:smollm2", env={"MIA_DEVICE": "cpu", "OMP_NUM_THREADS": "1"}) as url:
        yield url


@pytest.fixture(scope="module")
def client(server_url: str):
    from mia.graph.models import load_chat_model

    return load_chat_model(f"openai-compatible:smollm2@{server_url}", max_tokens=16, timeout=120, max_retries=0)


def test_health_and_models(server_url: str) -> None:
    root = server_url.removesuffix("/v1")
    assert httpx.get(f"{root}/health", timeout=10).json() == {"status": "ok", "model": "local:smollm2"}
    models = httpx.get(f"{server_url}/models", timeout=10).json()
    assert [m["id"] for m in models["data"]] == ["local:smollm2"]


def test_completion_with_usage_over_http(client) -> None:
    msg = client.invoke("What is the capital of France?")
    assert type(client).__name__ == "ChatOpenAI"
    assert "Paris" in msg.content
    assert msg.usage_metadata["input_tokens"] > 10 and msg.usage_metadata["output_tokens"] > 0
    assert msg.response_metadata["finish_reason"] in ("stop", "length")


def test_streaming_with_usage_in_final_chunk(client) -> None:
    chunks = list(client.stream("What is the capital of France?"))
    text = "".join(str(c.content) for c in chunks)
    assert "Paris" in text and len(chunks) > 3
    usage = [c.usage_metadata for c in chunks if c.usage_metadata]
    assert usage and usage[-1]["output_tokens"] > 0 and usage[-1]["input_tokens"] > 10


def test_tool_calls_pass_through(client) -> None:
    from langchain_core.tools import tool

    @tool
    def search(query: str) -> str:
        """Search the encyclopedia."""
        return ""

    msg = client.bind_tools([search], tool_choice="search").invoke("Find who wrote Dracula.")
    assert [c["name"] for c in msg.tool_calls] == ["search"]
    assert isinstance(msg.tool_calls[0]["args"].get("query"), str)


def test_bad_request_is_a_clean_error(server_url: str) -> None:
    bad = httpx.post(
        f"{server_url}/chat/completions", json={"messages": [{"role": "robot", "content": "x"}]}, timeout=30
    )
    assert bad.status_code == 400 and "'robot'" in bad.json()["error"]["message"]
    empty = httpx.post(f"{server_url}/chat/completions", json={"messages": []}, timeout=30)
    assert empty.status_code == 400 and empty.json()["error"]["param"] == "messages"


def test_abandoned_stream_does_not_block_the_model(server_url: str, client) -> None:
    body = {
        "messages": [{"role": "user", "content": "Tell me a long story about a dragon."}],
        "stream": True,
        "max_tokens": 200,
    }
    with httpx.stream("POST", f"{server_url}/chat/completions", json=body, timeout=60) as resp:
        first = next(resp.iter_lines())
        assert first.startswith("data: ")
    # the client went away mid-generation; the next request must still be served (lock released)
    msg = client.invoke("What is the capital of France?", max_tokens=4)
    assert msg.usage_metadata["output_tokens"] > 0


def test_serve_model_rejects_a_bad_spec_at_once() -> None:
    from typer.testing import CliRunner

    from mia.app.cli import app

    result = CliRunner().invoke(app, ["serve-model", "--model", "gpt4", "--port", "0"])
    assert result.exit_code == 2
    assert "Unknown model spec 'gpt4'" in result.output


def test_transformers_backend_refuses_an_over_long_prompt_before_generating(server_url: str) -> None:
    """Issue 16.5: the prompt is counted with the model's tokenizer and refused with the limit
    (it used to be processed for 100 s); max_tokens past the window is refused too."""
    long = {"messages": [{"role": "user", "content": "word " * 9000}], "max_tokens": 4}
    resp = httpx.post(f"{server_url}/chat/completions", json=long, timeout=120)
    assert resp.status_code == 400, resp.text
    error = resp.json()["error"]
    assert error["code"] == "context_length_exceeded" and "8192" in error["message"]
    huge = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 10**9}
    resp = httpx.post(f"{server_url}/chat/completions", json=huge, timeout=120)
    assert resp.status_code == 400 and "8192" in resp.json()["error"]["message"]
