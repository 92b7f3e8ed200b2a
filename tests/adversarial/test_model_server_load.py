"""Issue 42.1: `mia serve-model` under load, over real HTTP against llama.cpp serving SmolLM2. A burst
past the admission bound is answered or refused at once with a 503 and Retry-After (never left to
time out), a stream holds its place until it ends, and SIGTERM ends the process within the grace
period with a request still in flight. The soak figures (50 clients for 10 minutes) are a bench:
bench/app/soak_model_server.py."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

from mia.app.model_server import GRACEFUL_SHUTDOWN_S
from tests.adversarial import serving

pytestmark = [pytest.mark.server, pytest.mark.real_model]

LONG = {"messages": [{"role": "user", "content": "Count from 1 to 500, one number per line."}], "max_tokens": 300}
GOOD = {"messages": [{"role": "user", "content": "What is the capital of France?"}], "max_tokens": 4}


async def burst(url: str, n: int) -> list[httpx.Response]:
    async with httpx.AsyncClient(timeout=120) as client:
        return await asyncio.gather(*[client.post(f"{url}/chat/completions", json=LONG) for _ in range(n)])


def test_a_burst_past_the_bound_is_answered_or_refused_at_once() -> None:
    with serving.running_server(serving.smollm2_model(), max_pending=2) as url:
        started = time.monotonic()
        replies = asyncio.run(burst(url, 8))
        codes = sorted(r.status_code for r in replies)
        assert set(codes) <= {200, 503} and codes.count(200) >= 2 and codes.count(503) >= 1, codes
        for refused in (r for r in replies if r.status_code == 503):
            assert refused.headers["retry-after"] == "1"
            assert refused.json()["error"]["code"] == "server_busy"
        assert time.monotonic() - started < 110  # nothing waited for a client timeout
        ok = httpx.post(f"{url}/chat/completions", json=GOOD, timeout=60)  # and the server still answers
        assert ok.status_code == 200 and ok.json()["usage"]["completion_tokens"] > 0


def test_a_stream_holds_its_place_until_it_ends() -> None:
    with serving.running_server(serving.smollm2_model(), max_pending=1) as url:
        with httpx.stream("POST", f"{url}/chat/completions", json={**LONG, "stream": True}, timeout=120) as stream:
            lines = stream.iter_lines()
            assert next(lines).startswith("data: ")  # the stream is open
            busy = httpx.post(f"{url}/chat/completions", json=GOOD, timeout=60)
            assert busy.status_code == 503 and busy.headers["retry-after"] == "1"
            assert [line for line in lines if line.startswith("data: ")][-1] == "data: [DONE]"
        deadline = time.monotonic() + 30
        while (ok := httpx.post(f"{url}/chat/completions", json=GOOD, timeout=60)).status_code == 503:
            assert time.monotonic() < deadline, "the stream's place was never given back"
            time.sleep(0.1)
        assert ok.status_code == 200


def test_sigterm_with_a_request_in_flight_ends_within_the_grace_period(tmp_path) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    mia = os.path.join(os.path.dirname(sys.executable), "mia")
    server = subprocess.Popen(
        [mia, "serve-model", "--model", "llamacpp:smollm2", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert "Serving" in (server.stdout.readline() if server.stdout else "")
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        endless = {**LONG, "max_tokens": 2000}
        conn = serving.raw_post(f"http://127.0.0.1:{port}/v1", json.dumps(endless).encode())
        time.sleep(1.0)  # the generation is under way
        sent = time.monotonic()
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=GRACEFUL_SHUTDOWN_S + 10)
        assert time.monotonic() - sent < GRACEFUL_SHUTDOWN_S + 5
        conn.close()
        with pytest.raises(httpx.ConnectError):
            httpx.post(url, json=GOOD, timeout=5)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
