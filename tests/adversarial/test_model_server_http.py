"""Generated hostile requests to `mia serve-model` (real HTTP, real llama.cpp over SmolLM2): JSON
of the wrong types, huge and negative numbers, missing fields, lone surrogates, invalid UTF-8, deep
nesting, truncated and oversized bodies. Whatever arrives: never a 5xx, an OpenAI-style one-line
error on a 4xx, an answer within the client's timeout, and the server still answers a good request."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.adversarial import serving

pytestmark = [pytest.mark.server, pytest.mark.real_model]

BODY_LIMIT = 32 * 1024
GOOD: dict[str, Any] = {"messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 2}
TIMEOUT = 120  # per request: a hang fails the test rather than the suite

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([-1, 0, 10**9, 2**63, -(2**63), 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(["\ud800", "</tool_call>", "<tool_call>{", "{{", "\x00", "user", "tool", "function"]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)

# Hostile values for the fields the server reads; max_tokens is never a valid large number, so a
# request that happens to be valid stays a short generation.
FIELDS: dict[str, Any] = {
    "messages": st.one_of(
        json_values,
        st.lists(
            st.fixed_dictionaries(
                {"role": st.sampled_from(["user", "system", "assistant", "tool", "developer", "robot", ""])},
                optional={
                    "content": json_values,
                    "tool_calls": json_values,
                    "tool_call_id": json_values,
                    "name": json_values,
                },
            ),
            max_size=3,
        ),
    ),
    "max_tokens": st.one_of(json_values, st.sampled_from([-1, 0, 1, 2, 10**9, 2**63, "4", 2.5])),
    "max_completion_tokens": st.one_of(st.none(), st.sampled_from([-5, 0, 10**12, "x"])),
    "temperature": json_values,
    "top_p": json_values,
    "n": json_values,
    "stop": json_values,
    "stream": st.one_of(st.booleans(), json_values),
    "stream_options": json_values,
    "tools": st.one_of(
        json_values,
        st.lists(
            st.fixed_dictionaries(
                {"type": st.sampled_from(["function", "web", 5])},
                optional={
                    "function": st.one_of(
                        json_values,
                        st.fixed_dictionaries(
                            {},
                            optional={
                                "name": st.one_of(st.text(max_size=70), json_values),
                                "parameters": json_values,
                                "description": json_values,
                            },
                        ),
                    )
                },
            ),
            max_size=2,
        ),
    ),
    "tool_choice": st.one_of(json_values, st.sampled_from(["auto", "none", "required", "search"])),
    "model": json_values,
}


@st.composite
def requests(draw: st.DrawFn) -> bytes:
    """A good request with some fields replaced, removed or added, serialised (NaN allowed)."""
    body = dict(GOOD)
    for name in draw(st.lists(st.sampled_from(sorted(FIELDS)), max_size=4, unique=True)):
        body[name] = draw(FIELDS[name])
    for name in draw(st.lists(st.sampled_from(sorted(body)), max_size=1)):
        del body[name]
    if draw(st.booleans()) and body.get("max_tokens") not in (1, 2):
        body["max_tokens"] = 2  # keep a valid generation short
    return json.dumps(body).encode()


@st.composite
def raw_bodies(draw: st.DrawFn) -> bytes:
    """Bytes that are not a well-formed request: noise, truncation, invalid UTF-8, deep nesting."""
    good = json.dumps(GOOD).encode()
    kind = draw(st.sampled_from(["noise", "truncated", "bad-utf8", "deep", "deep-field", "big", "number"]))
    if kind == "noise":
        return draw(st.binary(max_size=200))
    if kind == "truncated":
        return good[: draw(st.integers(0, len(good) - 1))]
    if kind == "bad-utf8":
        at = draw(st.integers(0, len(good)))
        return (
            good[:at] + draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80"])) + good[at:]
        )
    if kind == "deep":
        n = draw(st.integers(500, 15_000))
        return draw(st.sampled_from([b"[", b'{"a":'])) * n
    if kind == "deep-field":
        n = draw(st.integers(500, 10_000))
        return b'{"messages": [{"role": "user", "content": ' + b"[" * n + b"]" * n + b'}], "max_tokens": 2}'
    if kind == "big":
        return (
            b'{"messages": [{"role": "user", "content": "' + b"a" * (BODY_LIMIT + draw(st.integers(1, 5000))) + b'"}]}'
        )
    digits = draw(st.integers(1, 6000))
    return b'{"max_tokens": 9' + b"9" * digits + b', "messages": [{"role": "user", "content": "x"}]}'


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serving.running_server(serving.smollm2_model(), max_body_bytes=BODY_LIMIT) as base:
        yield base


def check(url: str, body: bytes, client: httpx.Client) -> None:
    resp = client.post(f"{url}/chat/completions", content=body, headers={"content-type": "application/json"})
    assert resp.status_code < 500, (body[:300], resp.status_code, resp.text[:500])
    if resp.status_code >= 400:
        error = resp.json()["error"]
        assert error["message"] and "\n" not in error["message"], error
        assert "Traceback" not in resp.text
    elif resp.headers.get("content-type", "").startswith("text/event-stream"):
        assert resp.text.rstrip().endswith("data: [DONE]")
    else:
        assert resp.json()["choices"][0]["message"]["role"] == "assistant"


def still_serves(url: str) -> None:
    resp = httpx.post(f"{url}/chat/completions", json=GOOD, timeout=TIMEOUT)
    assert resp.status_code == 200 and resp.json()["usage"]["completion_tokens"] > 0, resp.text


def test_generated_requests_never_get_a_5xx(url: str) -> None:
    with httpx.Client(timeout=TIMEOUT) as client:

        @given(requests())
        def one(body: bytes) -> None:
            check(url, body, client)

        one()
    still_serves(url)


def test_generated_raw_bodies_never_get_a_5xx(url: str) -> None:
    with httpx.Client(timeout=TIMEOUT) as client:

        @given(raw_bodies())
        def one(body: bytes) -> None:
            check(url, body, client)

        one()
    still_serves(url)


def test_generated_junk_json_never_gets_a_5xx(url: str) -> None:
    with httpx.Client(timeout=TIMEOUT) as client:

        @given(json_values)
        def one(value: Any) -> None:
            check(url, json.dumps(value).encode(), client)

        one()
    still_serves(url)
