"""Issue 16, fault 5 and 7: each `mia serve-model` fault found, over real HTTP against llama.cpp
serving SmolLM2. Bad requests get a 4xx with an OpenAI-style error (never a 500), an over-long
prompt is refused with a 400 that states the limit, max_tokens and the body are bounded, and a
client that hangs up cancels its generation."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from tests.adversarial import serving

pytestmark = [pytest.mark.server, pytest.mark.real_model]

GOOD = {"messages": [{"role": "user", "content": "What is the capital of France?"}], "max_tokens": 4}
ENDLESS = {
    "messages": [{"role": "user", "content": "Count from 1 to 5000, one number per line."}],
    "max_tokens": serving.N_CTX - 64,
}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serving.running_server(serving.smollm2_model(), max_body_bytes=64 * 1024) as base:
        yield base


def post(url: str, body: object, **kw: object) -> httpx.Response:
    return httpx.post(f"{url}/chat/completions", json=body, timeout=120, **kw)


def assert_error(resp: httpx.Response, status: int, *words: str) -> dict:
    assert resp.status_code == status, resp.text
    err = resp.json()["error"]
    assert set(err) >= {"message", "type", "param", "code"} and "\n" not in err["message"]
    for word in words:
        assert word in err["message"] or word == err["param"], err
    return err


@pytest.mark.parametrize(
    ("change", "param"),
    [
        ({"max_tokens": -1}, "max_tokens"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_completion_tokens": -5}, "max_completion_tokens"),
        ({"temperature": -1}, "temperature"),
        ({"temperature": "hot"}, "temperature"),
        ({"n": 3}, "n"),
        ({"stop": ["a", "b", "c", "d", "e"]}, "stop"),
        ({"messages": [{"role": "user", "content": 5}]}, None),
        ({"messages": [{"role": "assistant", "content": "x", "tool_calls": 5}]}, None),
        ({"messages": [{"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]}]}, None),
        ({"messages": [{"role": "robot", "content": "x"}]}, None),
        ({"messages": [{"role": "tool", "content": "x"}]}, None),  # no tool_call_id
        ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}, None),
        ({"messages": []}, "messages"),
        ({"tools": [{"type": "function", "function": {}}]}, None),
        ({"tools": [{}]}, None),
        ({"tools": [{"type": "function", "function": {"name": "a b"}}]}, None),
        ({"tools": [{"type": "function", "function": {"name": "s", "parameters": {"type": 5}}}]}, None),
        ({"tools": 5}, "tools"),
        ({"tool_choice": "sometimes"}, None),
    ],
)
def test_malformed_fields_are_400_not_500(url: str, change: dict, param: str | None) -> None:
    err = assert_error(post(url, {**GOOD, **change}), 400)
    assert err["type"] == "invalid_request_error"
    if param:
        assert err["param"] == param


def test_tool_choice_must_name_a_given_tool(url: str) -> None:
    body = {
        **GOOD,
        "tools": [{"type": "function", "function": {"name": "search"}}],
        "tool_choice": {"type": "function", "function": {"name": "visit"}},
    }
    assert_error(post(url, body), 400, "visit")


@pytest.mark.parametrize(
    "raw",
    [
        b"[1]",
        b"null",
        b"{",
        b'{"messages": [',
        b"\xff\xfe{}",
        b'{"messages": "\xc3\x28"}',
        b"[" * 30_000 + b"]" * 30_000,
        b'{"max_tokens": 1' + b"0" * 5000 + b"}",
        b'{"temperature": NaN}',
    ],
)
def test_unparseable_bodies_are_400(url: str, raw: bytes) -> None:
    resp = httpx.post(f"{url}/chat/completions", content=raw, timeout=60, headers={"content-type": "application/json"})
    assert_error(resp, 400)


def test_a_lone_surrogate_is_replaced_not_a_crash(url: str) -> None:
    body = json.dumps({**GOOD, "messages": [{"role": "user", "content": "hi \ud800 there"}]})
    resp = httpx.post(
        f"{url}/chat/completions", content=body.encode(), timeout=60, headers={"content-type": "application/json"}
    )
    assert resp.status_code == 200, resp.text


def test_max_tokens_is_bounded_by_the_context(url: str) -> None:
    err = assert_error(post(url, {**GOOD, "max_tokens": 10**9}), 400, "max_tokens", str(serving.N_CTX))
    assert err["code"] == "context_length_exceeded"


@pytest.mark.parametrize("stream", [False, True])
def test_over_long_prompt_is_refused_with_the_limit(url: str, stream: bool) -> None:
    long = {"messages": [{"role": "user", "content": "word " * (2 * serving.N_CTX)}], "max_tokens": 4, "stream": stream}
    err = assert_error(post(url, long), 400, str(serving.N_CTX))
    assert err["code"] == "context_length_exceeded" and err["param"] == "messages"
    assert "maximum context length" in err["message"]


def test_oversized_body_is_413(url: str) -> None:
    huge = {**GOOD, "messages": [{"role": "user", "content": "x" * 100_000}]}
    assert_error(post(url, huge), 413, "limit")


def test_oversized_chunked_body_is_413(url: str) -> None:
    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit is counted as the body streams in
        yield b'{"messages": [{"role": "user", "content": "'
        for _ in range(100):
            yield b"x" * 1024
        yield b'"}]}'

    resp = httpx.post(
        f"{url}/chat/completions", content=chunks(), timeout=60, headers={"content-type": "application/json"}
    )
    assert_error(resp, 413, "limit")


@pytest.mark.parametrize(
    "extra",
    [{}, {"stream": True}, {"tools": [{"type": "function", "function": {"name": "search"}}]}],
    ids=["plain", "stream", "tools"],
)
def test_a_client_that_hangs_up_cancels_its_generation(url: str, extra: dict) -> None:
    serving.reset_events()
    conn = serving.raw_post(url, json.dumps({**ENDLESS, **extra}).encode())
    assert serving.STARTED.wait(120), "generation never started"
    conn.close()  # the client goes away mid-generation
    assert serving.ENDED.wait(120), "generation never ended"
    assert serving.EVENTS == ["started", "closed"], serving.EVENTS  # cancelled, not run to its end
    ok = post(url, GOOD)  # and the server still answers
    assert ok.status_code == 200 and ok.json()["usage"]["completion_tokens"] > 0


def test_good_requests_still_work(url: str) -> None:
    resp = post(url, {**GOOD, "max_tokens": 8})
    assert resp.status_code == 200
    body = resp.json()
    assert body["choices"][0]["message"]["content"] and body["usage"]["prompt_tokens"] > 5
    tool = {
        "type": "function",
        "function": {
            "name": "search",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
        },
    }
    called = post(url, {**GOOD, "max_tokens": 40, "tools": [tool], "tool_choice": "required"}).json()
    assert called["choices"][0]["finish_reason"] == "tool_calls"
    assert called["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "search"
    with httpx.stream(
        "POST",
        f"{url}/chat/completions",
        json={**GOOD, "stream": True, "stream_options": {"include_usage": True}},
        timeout=60,
    ) as resp:
        lines = [line for line in resp.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]" and json.loads(lines[-2][6:])["usage"]["completion_tokens"] > 0


def test_serve_model_bad_spec_is_one_line() -> None:
    from typer.testing import CliRunner

    from mia.app.cli import app

    result = CliRunner().invoke(app, ["serve-model", "--model", "foo:bar", "--port", "0"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Unknown model spec 'foo:bar'" in lines[0] and "llamacpp" in lines[0], result.output
